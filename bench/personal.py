"""The personal evaluation set: does recall find the answer, and say "nothing" when it should?

    .venv/bin/python -m bench.personal

56 memories of one person's life and work, 73 real queries with their answers (exact,
paraphrased, identifiers, typos, questions) and 41 queries that match nothing (random
letters, keyboard mashes, unrelated questions), in tests/core/data/recall_eval/. The set was
written before any tuning by someone who had not seen the ranking code; its queries are
never edited to fit results. tests/core/test_recall_eval.py holds the goals; this prints
the numbers and every miss. Scores come from the shipped defaults, hybrid mode.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "core" / "data" / "recall_eval"


@dataclass
class PersonalScore:
    """hit@1, hit@3, MRR over the real queries; the share of nothing-queries answered
    with nothing; and what went wrong, query by query."""

    real: int = 0
    nothing: int = 0
    hit1: float = 0.0
    hit3: float = 0.0
    mrr: float = 0.0
    abstained: float = 0.0
    misses: list[str] = field(default_factory=list)
    holdout: int = 0  # off-topic questions a tester wrote after tuning (holdout_offtopic.json)
    holdout_abstained: float = 0.0
    holdout_answered: list[str] = field(default_factory=list)
    # Tuning sets of issue 20 (tuned on): paraphrases, and off-topic questions
    paraphrases: int = 0
    paraphrase_answered: float = 0.0  # share answered at all
    paraphrase_hit3: float = 0.0
    offtopic: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind → (nothing, of)


def load() -> tuple[list[dict], dict]:
    """The memories and the queries of the set."""
    memories = [
        json.loads(line)
        for line in (DATA / "memories.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    queries = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))
    return memories, queries


def fill(engine) -> dict[str, str]:
    """Remember every memory of the set through the engine; their Mnemo ids by set id."""
    memories, _ = load()
    ids = {}
    for m in memories:
        result = engine.remember(
            m["text"], title=m["title"], category=m["category"], tags=m["tags"], force=True
        )
        ids[m["id"]] = result.memory.id
    return ids


def evaluate(engine, ids: dict[str, str], limit: int = 10) -> PersonalScore:
    """Run every query of the set (without counting recalls) and score the answers."""
    _, queries = load()
    by_mnemo = {v: k for k, v in ids.items()}
    score = PersonalScore(real=len(queries["real"]), nothing=len(queries["nothing"]))
    for q in queries["real"]:
        result = engine.recall(q["query"], limit=limit, track=False)
        got = [by_mnemo.get(r.memory.id) for r in result.results]
        answers = set(q["answers"])
        rank = next((i + 1 for i, g in enumerate(got) if g in answers), None)
        score.hit1 += rank == 1
        score.hit3 += rank is not None and rank <= 3
        score.mrr += 1 / rank if rank else 0.0
        if rank != 1:
            pairs = zip(got, result.results[:3], strict=False)
            top = ", ".join(f"{g} {r.score:.2f}" for g, r in pairs)
            score.misses.append(f"real ({q['kind']}) {q['query']!r}: rank {rank} [{top}]")
    for q in queries["nothing"]:
        result = engine.recall(q["query"], limit=limit, track=False)
        score.abstained += not result.results
        if result.results:
            top = ", ".join(
                f"{by_mnemo.get(r.memory.id)} {r.score:.2f}" for r in result.results[:2]
            )
            score.misses.append(f"nothing ({q['kind']}) {q['query']!r}: shown [{top}]")
    holdout = json.loads((DATA / "holdout_offtopic.json").read_text(encoding="utf-8"))
    score.holdout = len(holdout["nothing"])
    for q in holdout["nothing"]:
        result = engine.recall(q["query"], limit=limit, track=False)
        score.holdout_abstained += not result.results
        if result.results:
            top = result.results[0]
            score.holdout_answered.append(
                f"{q['query']!r}: {by_mnemo.get(top.memory.id)} {top.score:.2f}"
            )
    score.holdout_abstained /= score.holdout
    paraphrases = json.loads((DATA / "tuning_paraphrases.json").read_text("utf-8"))["real"]
    score.paraphrases = len(paraphrases)
    for q in paraphrases:
        got = [by_mnemo.get(r.memory.id) for r in engine.recall(q["query"], track=False).results]
        score.paraphrase_answered += bool(got) / len(paraphrases)
        score.paraphrase_hit3 += bool(set(got[:3]) & set(q["answers"])) / len(paraphrases)
    offtopic = json.loads((DATA / "tuning_offtopic.json").read_text("utf-8"))["nothing"]
    for q in offtopic:
        nothing = not engine.recall(q["query"], track=False).results
        done, of = score.offtopic.get(q["kind"], (0, 0))
        score.offtopic[q["kind"]] = (done + nothing, of + 1)
    score.hit1 /= score.real
    score.hit3 /= score.real
    score.mrr /= score.real
    score.abstained /= score.nothing
    return score


def run() -> PersonalScore:
    """The set in a fresh, temporary Mnemo home with the default model."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["MNEMO_HOME"] = home
        from app.core.engine import Engine

        engine = Engine()
        try:
            return evaluate(engine, fill(engine))
        finally:
            engine.close()


def main() -> None:
    score = run()
    for miss in score.misses:
        print(miss)
    print(
        f"{score.real} real queries: hit@1 {score.hit1:.3f}, hit@3 {score.hit3:.3f}, "
        f"MRR {score.mrr:.3f}; {score.nothing} nothing-queries: "
        f"{score.abstained:.1%} answered with nothing"
    )
    for answered in score.holdout_answered:
        print("holdout answered: " + answered)
    print(
        f"holdout: {score.holdout} off-topic questions written after tuning, "
        f"{score.holdout_abstained:.1%} answered with nothing"
    )
    print(
        f"tuning paraphrases: {score.paraphrases}, {score.paraphrase_answered:.1%} answered, "
        f"hit@3 {score.paraphrase_hit3:.3f}; tuning off-topic answered with nothing: "
        + ", ".join(f"{k} {n}/{of}" for k, (n, of) in score.offtopic.items())
    )


if __name__ == "__main__":
    main()
