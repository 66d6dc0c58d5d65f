"""Conversational memory: does recall find the turn or the session that answers a question?

    .venv/bin/python -m bench.conversations [--data ../realtalk] [--units session turn]
        [--chats 1,3,5,7,9] [--peer-code DIR] [--record]

The data is REALTALK (Lee et al., 2025; github.com/danny911kr/REALTALK): ten real 21-day
messaging conversations between two people, 16–25 sessions each, with about 70 questions a
conversation whose evidence turns are known (multi-hop, temporal — many name a date —
and open-domain). Get it with `git clone https://github.com/danny911kr/REALTALK` and copy
its `data/Chat_*.json` into `../realtalk/` (never its `data/locomo/`: LoCoMo is the project's
held-out acceptance set and is not read here).

Each conversation is its own collection, stored as a user or an agent would store it: one
memory per session ("Emi: …" lines) or one memory per turn, through `mnemo import` of a
JSONL file whose `created_at` is the session's date (a date lives in when a memory was made,
never in its words), then embedded by `backfill`. Each question goes through
`Engine.recall` with the default settings; R@k is the share of a question's evidence
(sessions or turns) in the top k. The peer in the same run is plain BM25 (rank_bm25's
BM25Okapi over lower-cased words of the same memories). `--peer-code DIR` also runs an
earlier checkout of Mnemo (e.g. a `git worktree` of the code before issue 20) in a
subprocess on its own databases, as shipped and with its relevance floor lifted.

Odd conversations (1, 3, 5, 7, 9) are the tuning half; even ones are checked only.
Databases are cached in bench/.cache (keyed by data, unit, model and code).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = Path(os.environ.get("MNEMO_REALTALK", HERE.parent.parent / "realtalk"))
TUNING = (1, 3, 5, 7, 9)
KS = (5, 10)
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
NAMES_A_DATE = re.compile(
    rf"\b(\d{{1,2}}(st|nd|rd|th)?\s+{_MONTH}|{_MONTH}\s+\d{{1,2}}\b|(19|20)\d\d\b|"
    r"(yesterday|today|tomorrow|last (week|month|year|night|weekend)|\d+ (days|weeks) ago|"
    r"(spring|summer|autumn|fall|winter) (of )?(19|20)\d\d))",
    re.I,
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain"}


def chats(data: Path, numbers: list[int] | None = None) -> list[tuple[int, dict]]:
    """The conversations (number, parsed file) of `data`, never LoCoMo's copies."""
    found = []
    for path in sorted(data.glob("Chat_*.json")):
        number = int(path.name.split("_")[1])
        if numbers is None or number in numbers:
            found.append((number, json.loads(path.read_text(encoding="utf-8"))))
    if not found:
        raise SystemExit(f"no REALTALK conversations in {data} (see this module's docstring)")
    return sorted(found)


def _stamp(value: str) -> str:
    """REALTALK's '29.12.2023, 22:42:04' as an ISO UTC stamp."""
    return datetime.strptime(value.strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC).isoformat()


def sessions(chat: dict) -> list[tuple[int, str, list[dict]]]:
    """(number, ISO date, turns with text) of each session, in order."""
    out = []
    for key in chat:
        m = re.fullmatch(r"session_(\d+)", key)
        if m:
            n = int(m.group(1))
            turns = [t for t in chat[key] if (t.get("clean_text") or "").strip()]
            out.append((n, _stamp(chat[f"session_{n}_date_time"]), turns))
    return sorted(out)


def memories(chat: dict, unit: str, threads: bool = False) -> tuple[list[dict], dict[str, str]]:
    """JSONL records of one conversation as `unit` memories, and the unit id of each turn."""
    names = chat["name"]
    pair = f"{names['speaker_1']} and {names['speaker_2']}"
    records, unit_of = [], {}
    for n, date, turns in sessions(chat):
        if unit == "session":
            lines = [f"{t['speaker']}: {t['clean_text'].strip()}" for t in turns]
            if not lines:
                continue
            rid = f"s{n}"
            records.append(
                {
                    "id": rid,
                    "title": f"{pair}, session {n}",
                    "text": "\n".join(lines),
                    "created_at": date,
                    "updated_at": date,
                    "source": "chat",
                }
            )
            for t in turns:
                unit_of[t["dia_id"]] = rid
        else:
            for i, t in enumerate(turns):
                rid = f"t{n}-{i}"
                record = {
                    "id": rid,
                    "text": f"{t['speaker']}: {t['clean_text'].strip()}",
                    "created_at": date,
                    "updated_at": date,
                    "source": "chat",
                }
                if threads:
                    record["thread"] = f"session {n}"
                records.append(record)
                unit_of[t["dia_id"]] = rid
    return records, unit_of


def questions(chat: dict, unit_of: dict[str, str]) -> list[dict]:
    """Each question with the set of unit ids holding its evidence (those with none left out)."""
    out = []
    for q in chat["qa"]:
        evidence = {unit_of[e] for e in q.get("evidence", []) if e in unit_of}
        if evidence:
            out.append(
                {
                    "question": q["question"],
                    "evidence": sorted(evidence),
                    "category": CATEGORIES.get(q.get("category"), str(q.get("category"))),
                    "dated": bool(NAMES_A_DATE.search(q["question"])),
                }
            )
    return out


_DAY_ASKS = (
    "What did we talk about on {day} {month} {year}?",
    "What topic did we discuss on {month} {day}, {year}?",
    "On {month} {day} {year}, what did we chat about?",
    "What did we talk about on {day}.{mm}.{year}?",
)
_ENDS_ASKS = {
    "first": "What did we talk about in our first conversation?",
    "last": "What was our last conversation about?",
}


def day_questions(chat: dict, unit_of: dict[str, str]) -> list[dict]:
    """Questions written here, from the dates alone: each session's day named (four
    wordings in turn), its units the evidence ("what did we talk about on 7 January 2024");
    and the first and the last conversation. A day with two sessions has both."""
    by_day: dict[str, set[str]] = {}
    for _n, date, turns in sessions(chat):
        units = {unit_of[t["dia_id"]] for t in turns if t["dia_id"] in unit_of}
        by_day.setdefault(date[:10], set()).update(units)
    out = []
    for i, (day, units) in enumerate(sorted(by_day.items())):
        when = datetime.fromisoformat(day)
        ask = _DAY_ASKS[i % len(_DAY_ASKS)].format(
            day=when.day, month=when.strftime("%B"), year=when.year, mm=f"{when.month:02d}"
        )
        out.append({"question": ask, "evidence": sorted(units), "category": "day"})
    days = sorted(by_day)
    for end, day in (("first", days[0]), ("last", days[-1])):
        out.append(
            {"question": _ENDS_ASKS[end], "evidence": sorted(by_day[day]), "category": "day"}
        )
    for q in out:
        q["dated"], q["generated"] = True, True
    return out


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25_ranking(records: list[dict], qs: list[dict], k: int) -> list[list[str]]:
    """The top k unit ids per question by plain BM25 (rank_bm25's BM25Okapi)."""
    from rank_bm25 import BM25Okapi

    ids = [r["id"] for r in records]
    index = BM25Okapi([_words(r.get("title", "") + " " + r["text"]) for r in records])
    out = []
    for q in qs:
        scores = index.get_scores(_words(q["question"]))
        order = sorted(range(len(ids)), key=lambda i: -scores[i])[:k]
        out.append([ids[i] for i in order if scores[i] > 0])
    return out


# ---- the worker: runs in this process, or in a subprocess on another checkout ------------
def _code_tag() -> str:
    import app

    root = Path(app.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.joinpath("core").glob("*.py")):
        if path.name in ("migrations.py", "labels.py", "embedder.py", "memory.py", "db.py"):
            digest.update(path.read_bytes())  # what the stored database depends on
    return digest.hexdigest()[:10]


def _engine(records: list[dict], key: str):
    """An Engine on a cached database holding `records`, embedded."""
    from app.core import paths
    from app.core.labels import METHOD
    from app.core.model.embedder import inspect_model

    model_id = inspect_model(paths.DEFAULT_MODEL).model_id.replace("@", "-")
    digest = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()[:12]
    home = HERE / ".cache" / f"conv-{key}-{digest}-{model_id}-{METHOD}-{_code_tag()}"
    os.environ["MNEMO_HOME"] = str(home)  # read by app.core.paths at each call
    from app.core.engine import Engine

    engine = Engine()
    if not (home / ".complete").exists():
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        engine.import_paths([Path(f.name)])
        os.unlink(f.name)
        engine.backfill(batch_size=32)
        (home / ".complete").write_text("")
    return engine


def run_worker(spec: dict) -> dict:
    """Rank every question of every conversation with the Engine; ids of the top 10."""
    if spec.get("lift_floor"):
        import app.core.search.recall as recall_module

        recall_module.FLOOR = -1.0  # the code before issue 20 cut results under its floor
    out = {}
    for job in spec["jobs"]:
        engine = _engine(job["records"], job["key"])
        ranked, answered, elapsed = [], 0, 0.0
        for q in job["questions"]:
            started = time.perf_counter()
            result = engine.recall(q, limit=10, track=False)
            elapsed += time.perf_counter() - started
            ranked.append([r.memory.id for r in result.results])
        nothing = []
        for q in job.get("nothing", []):
            result = engine.recall(q, limit=10, track=False)
            answered += bool(result.results)
            nothing.append(len(result.results))
        out[job["key"]] = {
            "ranked": ranked,
            "ms": 1000 * elapsed / max(len(job["questions"]), 1),
            "offtopic_answered": answered,
        }
        engine.close()
    return out


def _run_elsewhere(code: Path, spec: dict) -> dict:
    """`run_worker` in a subprocess importing Mnemo from another checkout."""
    env = dict(os.environ, PYTHONPATH=str(code))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", f.name],
            env=env,
            cwd=code,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"the run on {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


# ---- scoring -----------------------------------------------------------------------------
def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    """Share of the evidence in the top k."""
    return len(set(ranked[:k]) & set(evidence)) / len(evidence)


def day_share(ranked: list[str], evidence: list[str], k: int = 5) -> float:
    """Share of the top k from the day asked about, of what that day could fill."""
    return len(set(ranked[:k]) & set(evidence)) / min(k, len(evidence))


def summary(ranked: list[list[str]], qs: list[dict]) -> dict:
    """R@5, R@10, the share of questions with no result and with fewer than 5, by slice."""

    def of(selected):
        n = len(selected)
        if not n:
            return None
        row = {
            f"R@{k}": sum(recall_at(ranked[i], qs[i]["evidence"], k) for i in selected) / n
            for k in KS
        }
        row["empty"] = sum(not ranked[i] for i in selected) / n
        row["under5"] = sum(len(ranked[i]) < 5 for i in selected) / n
        row["n"] = n
        return row

    every = [i for i in range(len(qs)) if not qs[i].get("generated")]
    out = {"all": of(every)}
    out["names a date"] = of([i for i in every if qs[i]["dated"]])
    asked = [i for i in range(len(qs)) if qs[i].get("generated")]
    if asked:
        out["day"] = {
            "n": len(asked),
            "hit@5": sum(bool(set(ranked[i][:5]) & set(qs[i]["evidence"])) for i in asked)
            / len(asked),
            "share@5": sum(day_share(ranked[i], qs[i]["evidence"]) for i in asked) / len(asked),
        }
    for name in CATEGORIES.values():
        out[name] = of([i for i in every if qs[i]["category"] == name])
    return out


def offtopic_queries() -> list[str]:
    """Questions about nothing a chat holds (the personal set's tuning off-topic set)."""
    path = HERE.parent / "tests" / "core" / "data" / "recall_eval" / "tuning_offtopic.json"
    return [q["query"] for q in json.loads(path.read_text(encoding="utf-8"))["nothing"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--units", nargs="+", default=["session", "turn"])
    parser.add_argument("--chats", default=None, help="e.g. 1,3,5 (default: all ten)")
    parser.add_argument("--peer-code", type=Path, default=None)
    parser.add_argument("--threads", action="store_true", help="turns carry a thread id")
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        spec = json.loads(args.worker.read_text())
        print(json.dumps(run_worker(spec)))
        return
    numbers = [int(x) for x in args.chats.split(",")] if args.chats else None
    nothing = offtopic_queries()
    table = []
    for unit in args.units:
        jobs, qs_all, bm25_all, split = [], [], [], []
        for number, chat in chats(args.data, numbers):
            records, unit_of = memories(chat, unit, threads=args.threads and unit == "turn")
            qs = questions(chat, unit_of) + day_questions(chat, unit_of)
            key = f"realtalk{number}-{unit}" + ("-threads" if args.threads else "")
            jobs.append(
                {
                    "key": key,
                    "records": records,
                    "questions": [q["question"] for q in qs],
                    "nothing": nothing,
                }
            )
            qs_all.append(qs)
            bm25_all.append(bm25_ranking(records, qs, 10))
            split.append("tuning" if number in TUNING else "check")
        systems = {"Mnemo (this code)": run_worker({"jobs": jobs})}
        if args.peer_code is not None:
            old = [dict(j, nothing=nothing) for j in jobs]
            for j in old:
                j["records"] = [{k: v for k, v in r.items() if k != "thread"} for r in j["records"]]
            systems["Mnemo before (as shipped)"] = _run_elsewhere(args.peer_code, {"jobs": old})
            systems["Mnemo before (floor lifted)"] = _run_elsewhere(
                args.peer_code, {"jobs": old, "lift_floor": True}
            )
        for half in ("tuning", "check", "all"):
            chosen = [i for i in range(len(jobs)) if half == "all" or split[i] == half]
            if not chosen:
                continue
            qs = [q for i in chosen for q in qs_all[i]]
            rows = {}
            for name, result in systems.items():
                ranked = [r for i in chosen for r in result[jobs[i]["key"]]["ranked"]]
                rows[name] = summary(ranked, qs)
                off = sum(result[jobs[i]["key"]]["offtopic_answered"] for i in chosen)
                rows[name]["offtopic"] = off / (len(nothing) * len(chosen))
                rows[name]["ms"] = sum(result[jobs[i]["key"]]["ms"] for i in chosen) / len(chosen)
            rows["plain BM25 (rank_bm25)"] = summary([r for i in chosen for r in bm25_all[i]], qs)
            for name, row in rows.items():
                a, d = row["all"], row["names a date"]
                line = (
                    f"{unit:<7} {half:<6} {name:<30} R@5 {a['R@5']:.3f} R@10 {a['R@10']:.3f} "
                    f"empty {a['empty']:.1%} <5 {a['under5']:.1%} | date-named (n={d['n']}) "
                    f"R@5 {d['R@5']:.3f}"
                )
                for cat in CATEGORIES.values():
                    line += f" | {cat} {row[cat]['R@5']:.3f}" if row.get(cat) else ""
                if row.get("day"):
                    day = row["day"]
                    line += (
                        f" | asks for a day (n={day['n']}) hit@5 {day['hit@5']:.3f} "
                        f"share@5 {day['share@5']:.3f}"
                    )
                if "offtopic" in row:
                    line += f" | off-topic answered {row['offtopic']:.1%}"
                print(line)
                table.append(
                    (unit, half, name, a, d, row.get("day"), row.get("offtopic"), row.get("ms"))
                )
    if args.record:
        from bench.report import record

        record(
            "Search quality: conversations (REALTALK)",
            [
                "unit",
                "half",
                "system",
                "R@5",
                "R@10",
                "no result",
                "fewer than 5",
                "R@5, questions naming a date",
                "asks for a day: hit@5 / share of the top 5 from it",
                "off-topic questions answered",
                "ms/query",
            ],
            [
                (
                    unit,
                    half,
                    name,
                    f"{a['R@5']:.3f}",
                    f"{a['R@10']:.3f}",
                    f"{a['empty']:.1%}",
                    f"{a['under5']:.1%}",
                    f"{d['R@5']:.3f} (n={d['n']})",
                    "–" if day is None else f"{day['hit@5']:.3f} / {day['share@5']:.3f}",
                    "–" if off is None else f"{off:.1%}",
                    "–" if ms is None else f"{ms:.1f}",
                )
                for unit, half, name, a, d, day, off, ms in table
            ],
            note="REALTALK's ten conversations, each its own collection, stored one memory per "
            "session or per turn with the session's date as `created_at`; every question "
            "through `Engine.recall` with default settings, R@k = share of its evidence in the "
            "top k. Tuning half: conversations 1, 3, 5, 7, 9 (the ranking was tuned on them); "
            "check half: 2, 4, 6, 8, 10 (measured only). Off-topic: the 70 questions of "
            "tests/core/data/recall_eval/tuning_offtopic.json asked of each conversation. "
            "Asks for a day: questions written here from the dates alone (each session's day "
            "in four wordings, 'what did we talk about on 7 January 2024', '… on 07.01.2024', "
            "and the first and the last conversation), evidence every unit of that day; the "
            "code before issue 41's item 3 (commit ca4439b, same run): hit@5 per session "
            "0.370 tuning / 0.286 check, per turn 0.444 / 0.371, share of the top 5 from the "
            "day per turn 0.148 / 0.128.",
        )


if __name__ == "__main__":
    main()
