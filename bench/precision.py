"""Precision at size: does recall say *nothing* and *weak* when that is the truth, in a
collection of real size and mixed content (issue 41)?

    .venv/bin/python -m bench.precision [--sizes 300,1000,5000] [--half tune|check|all]
        [--record] [--no-busy]

One collection of mixed content, cut to each size: the personal set (56 notes of one
person's life and work, tests/core/data/recall_eval/), a shell notebook (2,410 notes, one per
command, made from Debian's man-page descriptions: tests/core/data/precision/notebook.json)
and 2,534 of SciFact's biomedical abstracts (../shared/data/scifact: those judged for
the 100 claims asked, and others drawn at random). Every size holds the personal
notes, every notebook note and abstract that answers a question, and as much of the rest
(notebook and abstracts alike) as fills it. The whole collection is embedded once and
cached in bench/.cache; each size is a copy with the rest purged.

Questions, each through `Engine.recall` with the shipped defaults (limit 10):
- answerable: the personal set's 73, the notebook's 80 (notebook_questions.json), 100 of
  SciFact's test claims (their judged abstracts are in every size);
- off-topic: the personal set's 41 and the tuning set's 70, the tester's holdout 40, and 120
  written for this collection (offtopic.json: far, personal, shares-a-word);
- near-topic: 40 questions about a detail never stored on a topic the personal notes hold
  (neartopic.json): nothing or a weak or partial match is right, *strong* is not.
The new sets were written by a helper who read no search code and ran no search; each is
split in a tuning half (tuned on) and a check half (measured only): `--half`.

Per size and system: answer in the top 5, answerable questions left empty, off-topic
questions answered with nothing, and how often a result banded *strong* (in the top 5) is
an answer. Systems: Mnemo hybrid, keyword, semantic, and plain BM25 (rank_bm25, which never
says nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import busy_core, record

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "core" / "data"
PRECISION = DATA / "precision"
PERSONAL = DATA / "recall_eval"
SCIFACT = HERE.parent.parent / "shared" / "data" / "scifact"
SCIFACT_QUERIES = 100
ABSTRACTS = 2534  # with the 56 notes and 2,410 commands: 5,000 memories
SIZES = (300, 1000, 5000)


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class Question:
    query: str
    kind: str  # answerable | offtopic | near
    source: str  # personal | notebook | scifact | tuning | holdout | mixed | near
    half: str  # tune | check
    answers: frozenset[str] = frozenset()


@dataclass
class Collection:
    records: list[dict]  # {"id", "title", "text", "tags", "category"}
    required: set[str]  # ids every size holds
    questions: list[Question] = field(default_factory=list)


def _scifact() -> tuple[list[dict], dict[str, str], dict[str, set[str]]]:
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open(encoding="utf-8")]
    claims = {q["_id"]: q["text"] for q in map(json.loads, (SCIFACT / "queries.jsonl").open())}
    qrels: dict[str, set[str]] = {}
    with (SCIFACT / "qrels" / "test.tsv").open() as f:
        next(f)
        for line in f:
            qid, did, score = line.split()
            if int(score) > 0:
                qrels.setdefault(qid, set()).add(did)
    return corpus, claims, qrels


def collection() -> Collection:
    """Every record and question of the mixed collection."""
    records, required, questions = [], set(), []
    for line in (PERSONAL / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            m = json.loads(line)
            records.append(
                {
                    "id": "p:" + m["id"],
                    "title": m["title"],
                    "text": m["text"],
                    "tags": m.get("tags", []),
                    "category": m.get("category"),
                }
            )
            required.add("p:" + m["id"])
    for m in _json(PRECISION / "notebook.json"):
        records.append(
            {
                "id": "n:" + m["id"],
                "title": m["title"],
                "text": m["text"],
                "tags": [],
                "category": None,
            }
        )
    corpus, claims, qrels = _scifact()
    chosen = sorted(qrels, key=int)
    random.Random(41).shuffle(chosen)
    chosen = sorted(chosen[:SCIFACT_QUERIES], key=int)
    judged = {d for qid in chosen for d in qrels[qid]}
    others = [d for d in corpus if d["_id"] not in judged]
    random.Random(5000).shuffle(others)
    kept = [d for d in corpus if d["_id"] in judged] + others[: ABSTRACTS - len(judged)]
    for d in sorted(kept, key=lambda d: int(d["_id"])):
        records.append(
            {
                "id": "s:" + d["_id"],
                "title": d["title"],
                "text": d["text"] or d["title"],
                "tags": [],
                "category": None,
            }
        )
    personal_queries = _json(PERSONAL / "queries.json")
    for i, q in enumerate(personal_queries["real"]):
        answers = frozenset("p:" + a for a in q["answers"])
        questions.append(Question(q["query"], "answerable", "personal", _half(i), answers))
    for i, q in enumerate(personal_queries["nothing"]):
        questions.append(Question(q["query"], "offtopic", "personal", _half(i)))
    for q in _json(PERSONAL / "tuning_offtopic.json")["nothing"]:
        # its 'near' questions ask of a stored topic: answering them is no fault, strong is
        kind = "near" if q["kind"] == "near" else "offtopic"
        questions.append(Question(q["query"], kind, "tuning", "tune"))
    for q in _json(PERSONAL / "holdout_offtopic.json")["nothing"]:
        questions.append(Question(q["query"], "offtopic", "holdout", "check"))
    written = PRECISION / "notebook_questions.json"
    for q in _json(written)["real"] if written.exists() else []:
        answers = frozenset("n:" + a for a in q["answers"])
        required |= answers
        questions.append(Question(q["query"], "answerable", "notebook", q["half"], answers))
    for q in _json(PRECISION / "offtopic.json")["nothing"]:
        questions.append(Question(q["query"], "offtopic", "mixed:" + q["kind"], q["half"]))
    for q in _json(PRECISION / "neartopic.json")["near"]:
        questions.append(Question(q["query"], "near", "near", q["half"]))
    for i, qid in enumerate(chosen):
        answers = frozenset("s:" + d for d in qrels[qid])
        required |= answers
        questions.append(Question(claims[qid], "answerable", "scifact", _half(i), answers))
    return Collection(records, required, questions)


def _half(i: int) -> str:
    return "tune" if i % 2 == 0 else "check"


def subset(c: Collection, size: int) -> set[str]:
    """The ids a collection of `size` holds: the required ones, then the rest in a fixed
    random order (notebook notes and abstracts mixed)."""
    rest = [r["id"] for r in c.records if r["id"] not in c.required]
    random.Random(size).shuffle(rest)
    return c.required | set(rest[: max(size - len(c.required), 0)])


def _home_of(c: Collection) -> Path:
    from app.core import paths
    from app.core.labels import METHOD
    from app.core.model.embedder import inspect_model

    model_id = inspect_model(paths.DEFAULT_MODEL).model_id.replace("@", "-")
    digest = hashlib.sha256(json.dumps(c.records, sort_keys=True).encode()).hexdigest()[:12]
    return HERE / ".cache" / f"mixed-{digest}-{model_id}-{METHOD}"


def _full(c: Collection) -> Path:
    """The whole collection imported and embedded (cached)."""
    home = _home_of(c)
    if (home / ".complete").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    os.environ["MNEMO_HOME"] = str(home)
    from app.core.engine import Engine
    from app.core.memory import Memory

    engine = Engine()
    memories = [
        Memory(
            id="",
            title=r["title"],
            text=r["text"],
            tags=r["tags"],
            category=r["category"] or "note",
            references=[r["id"]],
            source="import",
        )
        for r in c.records
    ]
    for start in range(0, len(memories), 500):
        engine._store.insert_many(memories[start : start + 500])
    started = time.perf_counter()
    done = engine.backfill(
        batch_size=64, progress=lambda n, t: print(f"\rembedding {n}/{t}", end="", flush=True)
    )
    print(f"\nembedded {done} memories in {time.perf_counter() - started:.0f} s")
    engine.close()
    (home / ".complete").write_text("")
    return home


def engine_of(c: Collection, size: int):
    """An Engine on a copy of the whole collection with everything outside `size` purged."""
    full = _full(c)
    home = full.parent / f"{full.name}-size{size}"
    if not (home / ".complete").exists():
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(full, home)
        (home / ".complete").unlink()
        os.environ["MNEMO_HOME"] = str(home)
        from app.core.engine import Engine

        engine = Engine()
        keep = subset(c, size)
        gone = [m.id for m in engine._store.iter_all() if m.references[0] not in keep]
        if gone:
            engine._store.purge(gone)
        engine.close()
        (home / ".complete").write_text("")
    os.environ["MNEMO_HOME"] = str(home)
    from app.core.engine import Engine

    return Engine()


@dataclass
class Outcome:
    """What one system gave each question: the set ids of its results, best first, and
    the band of each."""

    ranked: list[list[str]]
    bands: list[list[str]]
    ms: float = 0.0


def run_mnemo(engine, questions: list[Question], mode: str) -> Outcome:
    ranked, bands, started = [], [], time.perf_counter()
    for q in questions:
        result = engine.recall(q.query, mode=mode, limit=10, track=False)
        ranked.append([r.memory.references[0] for r in result.results])
        bands.append([str(r.band) for r in result.results])
    return Outcome(ranked, bands, 1000 * (time.perf_counter() - started) / len(questions))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def run_bm25(c: Collection, keep: set[str], questions: list[Question]) -> Outcome:
    from rank_bm25 import BM25Okapi

    records = [r for r in c.records if r["id"] in keep]
    ids = [r["id"] for r in records]
    index = BM25Okapi([_words(r["title"] + " " + r["text"]) for r in records])
    ranked = []
    for q in questions:
        scores = index.get_scores(_words(q.query))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])[:10]
        ranked.append([ids[i] for i in order if scores[i] > 0])
    return Outcome(ranked, [[] for _ in ranked])


@dataclass
class Score:
    answerable: int = 0
    top5: float = 0.0  # an answer in the top 5
    empty: float = 0.0  # answerable left with nothing
    offtopic: int = 0
    nothing: float = 0.0  # off-topic answered with nothing
    near: int = 0
    near_strong: float = 0.0  # near-topic with a strong result
    strong: int = 0  # results banded strong in a top 5
    strong_right: int = 0
    misses: dict[str, list[str]] = field(default_factory=dict)

    def row(self) -> tuple:
        share = lambda x, n: f"{x / n:.1%}" if n else "–"  # noqa: E731
        return (
            f"{self.top5 / self.answerable:.3f}" if self.answerable else "–",
            share(self.empty, self.answerable),
            share(self.nothing, self.offtopic),
            share(self.near_strong, self.near),
            f"{share(self.strong_right, self.strong)} of {self.strong}",
        )


def score(questions: list[Question], outcome: Outcome, abstains: bool = True) -> Score:
    s = Score()
    for q, ranked, bands in zip(questions, outcome.ranked, outcome.bands, strict=True):
        for got, band in zip(ranked[:5], bands[:5], strict=False):
            if band == "strong":
                s.strong += 1
                s.strong_right += got in q.answers
                if got not in q.answers:
                    s.misses.setdefault("strong, not an answer", []).append(
                        f"{q.source} {q.query!r} -> {got}"
                    )
        if q.kind == "answerable":
            s.answerable += 1
            s.top5 += bool(set(ranked[:5]) & q.answers)
            s.empty += not ranked
            if not ranked:
                s.misses.setdefault("answerable, empty", []).append(f"{q.source} {q.query!r}")
        elif q.kind == "offtopic":
            s.offtopic += 1
            s.nothing += not ranked
            if ranked and abstains:
                s.misses.setdefault("off-topic, answered", []).append(
                    f"{q.source} {q.query!r} -> {ranked[0]} {bands[0] if bands else ''}"
                )
        else:
            s.near += 1
            s.near_strong += bool(bands) and bands[0] == "strong"
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--half", choices=("tune", "check", "all"), default="tune")
    parser.add_argument("--modes", default="hybrid,keyword,semantic,bm25")
    parser.add_argument("--misses", action="store_true", help="print every miss (hybrid)")
    parser.add_argument("--no-busy", action="store_true")
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    c = collection()
    questions = [q for q in c.questions if args.half in ("all", q.half)]
    modes = args.modes.split(",")
    rows = []
    for size in map(int, args.sizes.split(",")):
        keep = subset(c, size)
        engine = engine_of(c, size)
        for mode in modes:
            if mode == "bm25":
                outcome = run_bm25(c, keep, questions)
                label = "plain BM25 (rank_bm25)"
            else:
                outcome = run_mnemo(engine, questions, mode)
                label = f"Mnemo {mode}"
            s = score(questions, outcome, abstains=mode != "bm25")
            busy = "–"
            if mode == "hybrid" and not args.no_busy:
                with busy_core():
                    busy = f"{run_mnemo(engine, questions, mode).ms:.1f}"
            ms = f"{outcome.ms:.1f}" if mode != "bm25" else "–"
            rows.append((f"{len(keep):,}", label, *s.row(), ms, busy))
            print(" | ".join(map(str, rows[-1])), flush=True)
            if args.misses and mode == "hybrid":
                for kind, lines in s.misses.items():
                    print(f"  {kind} ({len(lines)}):")
                    for line in lines:
                        print("    " + line)
        engine.close()
    if args.record:
        n = {k: sum(q.kind == k for q in questions) for k in ("answerable", "offtopic", "near")}
        record(
            f"Search quality: precision at size ({args.half} half)",
            [
                "memories",
                "system",
                "answer in the top 5",
                "answerable left empty",
                "off-topic answered with nothing",
                "near-topic with a strong first result",
                "strong results that are answers",
                "ms/query, quiet",
                "ms/query, one core busy",
            ],
            rows,
            note=f"bench/precision.py, {args.half} half: {n['answerable']} answerable, "
            f"{n['offtopic']} off-topic and {n['near']} near-topic questions asked of a mixed "
            "collection (personal notes, a shell notebook from man pages, SciFact abstracts) "
            "cut to each size. Goals (issue 41, at 5,000): off-topic answered with nothing "
            "≥ 80 %, answerable left empty ≤ 2 %, strong results right ≥ 90 %. The code "
            "before issue 41's decision and bands (commit 8ac85dd, same day, same "
            "databases), hybrid, check half at 300 / 1,000 / 5,000: off-topic answered "
            "with nothing 56.7 / 35.8 / 16.7 %, near-topic with a strong first result 85 / "
            "90 / 90 %, strong results that are answers 65.3 / 50.2 / 29.6 %, answer in the "
            "top 5 0.968 / 0.952 / 0.905, answerable left empty 1.6 / 0 / 0 %; tuning half: "
            "61.0 / 42.6 / 23.5 %, 68.6 / 80.0 / 85.7 %, 65.2 / 50.6 / 31.6 %, 0.984 / 0.969 "
            "/ 0.929, 1.6 / 0.8 / 0 %. Issue 41's first round (commit 4b9ded9, same "
            "databases), hybrid, check half: off-topic answered with nothing 66.7 / 58.3 / "
            "50.0 %, near-topic with a strong first result 35 / 30 / 50 %, strong results that "
            "are answers 89.9 / 83.5 / 60.3 %, answer in the top 5 0.968 / 0.952 / 0.905, "
            "answerable left empty 1.6 / 0 / 0 %; tuning half: 72.1 / 69.9 / 63.2 %, 40.0 / "
            "45.7 / 48.6 %, 84.8 / 78.9 / 65.7 %, 0.976 / 0.961 / 0.921, 2.4 / 1.6 / 0.8 %. "
            "The check half was looked at during the first round's design (one "
            "constant, PERSONAL_LIFT, was chosen after seeing it): it is not pristine; the "
            "second round was tuned on the tuning half only. "
            "SciFact's judgements name about one abstract per claim and the notebook's up to "
            "four commands, so a strong result judged wrong may still answer.",
        )


if __name__ == "__main__":
    main()
