"""The keyword stage against bare FTS5 and tantivy (issue 24, item 2).

    .venv/bin/python -m bench.keywords [--sizes 10000 100000 300000 1000000] [--rounds 5]

bench.speed's synthetic memories (20-60 words of a Zipf vocabulary; topic words at ranks
200+), texts only, built once into bench/.cache/keywords-N. Per query, CPU ms of this
process (median over rounds), quiet and with one core busy:

- **Mnemo**: the keyword stage of a recall, `KeywordIndex.plan` and `KeywordIndex.search`
  for 50, with its word counts and answers forgotten before each query (a query typed
  afresh; typing again hits both);
- **before**: the same with every match ranked (`parts=None`: not narrowed), the code before
  issue 24's item 2;
- **bare FTS5**: one `bm25()` and ORDER BY over the same expression, for the 200 rows Mnemo
  reads (its 50 and the rows re-ranked for labels: 4 × 50; 50 more when the trash holds
  any, and here it holds none) and for 50;
- **tantivy** (bench.peers, its own venv): the same texts and words, best 50 by BM25 with
  block-max WAND, the floor reference.

Ordinary queries are bench.speed's 12; "common words" is the three most frequent words of
the vocabulary (every memory holds them). The agreement column is how many of the best 50
of the narrowed search are among the best 50 with every match ranked (mean over queries).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import peers
from bench.report import busy_core, record
from bench.speed import QUERIES, _vocabulary, build

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
K = 50


def _home(n: int) -> tuple[Path, float | None]:
    """(the cached home of n synthetic memories, seconds to build it or None if cached)."""
    home = CACHE / f"keywords-{n}"
    if (home / "done").exists():
        return home, None
    shutil.rmtree(home, ignore_errors=True)
    started = time.perf_counter()
    build(n, home, None, 0)
    took = time.perf_counter() - started
    (home / "done").write_text(f"{took:.1f}\n")
    return home, took


def _cpu_ms(fn) -> float:
    started = time.process_time()
    fn()
    return (time.process_time() - started) * 1000


def _measure(store, queries: list[str], rounds: int) -> dict[str, dict[str, list[float]]]:
    from app.core.storage.store import Filters

    plans = {q: store.keywords.plan(q) for q in queries}
    sides: dict[str, dict[str, list[float]]] = {
        s: {q: [] for q in queries} for s in ("mnemo", "wall", "before", "bare250", "bare50")
    }

    def stage(q: str, narrow: bool) -> None:
        store.keywords.lexicon._docs_at = None  # word counts forgotten: the query typed afresh
        store.keywords._keyword_version = None  # and no answer kept
        plan = store.keywords.plan(q)
        if plan.expression:
            store.keywords.search(
                plan.expression,
                Filters(),
                K,
                common_only=plan.common_only,
                parts=plan.parts if narrow else None,
            )

    bare = (
        "SELECT rowid, bm25(memories_fts) AS r FROM memories_fts "
        "WHERE memories_fts MATCH ? ORDER BY r LIMIT ?"
    )
    for q in queries:  # warm
        stage(q, True)
    for _ in range(rounds):
        for q in queries:
            expression = plans[q].expression
            wall = time.perf_counter()
            sides["mnemo"][q].append(_cpu_ms(lambda: stage(q, True)))  # noqa: B023
            sides["wall"][q].append((time.perf_counter() - wall) * 1000)
            sides["before"][q].append(_cpu_ms(lambda: stage(q, False)))  # noqa: B023
            for side, k in (("bare250", 4 * K), ("bare50", K)):
                sides[side][q].append(
                    _cpu_ms(lambda: store.db.query(bare, (expression, k)))  # noqa: B023
                )
    return sides


def _agreement(store, queries: list[str]) -> float:
    from app.core.storage.store import Filters

    same = []
    for q in queries:
        plan = store.keywords.plan(q)
        store.keywords._keyword_version = None
        narrowed = store.keywords.search(plan.expression, Filters(), K, parts=plan.parts)
        whole = store.keywords.search(plan.expression, Filters(), K, parts=None)
        same.append(len({s for s, _ in narrowed} & {s for s, _ in whole}))
    return statistics.mean(same)


def _p50(per_query: dict[str, list[float]]) -> float:
    return statistics.median(v for values in per_query.values() for v in values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000, 1_000_000]
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from app.core.storage.db import Database
    from app.core.storage.store import Store

    rows, builds = [], []
    for n in args.sizes:
        home, took = _home(n)
        if took is not None:
            builds.append(f"{n:,}: {took:.0f} s")
        common = " ".join(_vocabulary(np.random.default_rng(n))[:3])  # as bench.speed draws
        work = Path(tempfile.mkdtemp(prefix="mnemo-bench-"))
        shutil.copytree(home, work / "home")
        os.environ["MNEMO_HOME"] = str(work / "home")
        db = Database(work / "home" / "data" / "mnemo.db")
        store = Store(db)
        tantivy_index = CACHE / f"tantivy-{n}"
        agreement = _agreement(store, QUERIES)
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for label, queries in (("ordinary", QUERIES), ("common words", [common])):
                    sides = _measure(store, queries, args.rounds if label == "ordinary" else 20)
                    peer = peers.tantivy(db.path, tantivy_index, queries, K, args.rounds)
                    if peer["built_s"]:
                        builds.append(f"tantivy {n:,}: {peer['built_s']:.0f} s")
                    mnemo, bare250 = _p50(sides["mnemo"]), _p50(sides["bare250"])
                    tantivy = statistics.median(peer["ms"].values())
                    row = (
                        f"{n:,}",
                        label,
                        load,
                        f"{_p50(sides['wall']):.2f} / {mnemo:.2f}",
                        f"{_p50(sides['before']):.2f}",
                        f"{bare250:.2f}",
                        f"{_p50(sides['bare50']):.2f}",
                        f"{tantivy:.2f}",
                        f"{mnemo / bare250:.2f}x",
                        f"{mnemo / max(tantivy, 1e-3):.0f}x",
                        f"{agreement:.1f} of 50" if label == "ordinary" else "",
                    )
                    print(row, flush=True)
                    rows.append(row)
        db.close()
        shutil.rmtree(work, ignore_errors=True)
    note = __doc__.split("\n\n", 2)[2].strip()
    if builds:
        note += "\n\nBuilt in this run: " + "; ".join(builds) + "."
    record(
        "Keyword stage: against bare FTS5 and tantivy",
        [
            "memories",
            "queries",
            "load",
            "Mnemo: wall / CPU ms p50",
            "before (every match ranked) CPU ms",
            "bare FTS5, 200 rows, CPU ms",
            "bare FTS5, 50 rows, CPU ms",
            "tantivy, 50, CPU ms",
            "Mnemo / bare FTS5 (200)",
            "Mnemo / tantivy",
            "best 50 as with every match ranked",
        ],
        rows,
        note=note,
    )


if __name__ == "__main__":
    main()
