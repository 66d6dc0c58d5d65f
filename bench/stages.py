"""Where the time of a search stage goes, part by part (issue 24, items 2 and 3: what is
left between each stage and its reference).

    .venv/bin/python -m bench.stages [--runs 8]

CPU ms of this thread, medians over bench.speed's 12 queries (keywords) or 8 random unit
queries (vectors) and `--runs` rounds, quiet and with one core busy.

- **Keyword stage at 10k** (bench.keywords' collection, its word counts and answers
  forgotten before each query, as there): the plan (`KeywordIndex.plan`), of it the count
  of each word's memories (one fts5vocab query), the search (`KeywordIndex.search`), of it
  the FTS5 query alone with its two bm25() a row (the text's own score for the labels'
  share) and with one; bare FTS5 (one bm25(), the 200 rows Mnemo reads) is the reference.
- **Vector stage at 300k and 1M** (bench.vectors' collections): `VectorIndex.top`, of it the
  int8 scan (`_approximate`: NumKong's kernel and the scaling), the kernel alone, and the
  exact rescoring of the 256 best (`exact`, timed inside `top`: its rows are read from the
  database after the scan went through the whole int8 copy, and the same call on a warm
  cache beside it); the floor is one pass over the int8 copy (bench.vectors).
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

from bench.keywords import _home as keywords_home
from bench.report import busy_core, record
from bench.speed import QUERIES
from bench.vectors import _home as vectors_home

K = 50


def _cpu(fn) -> float:
    started = time.thread_time()
    fn()
    return (time.thread_time() - started) * 1000


def _keyword_rows(runs: int, load: str) -> list[tuple]:
    from app.core.storage.db import Database
    from app.core.storage.keywords import KEYWORD_COLUMN_WEIGHTS, _bm25_weights
    from app.core.storage.store import Filters, Store

    home, _ = keywords_home(10_000)  # bench.keywords' collection, built once if missing
    work = Path(tempfile.mkdtemp(prefix="mnemo-bench-"))
    shutil.copytree(home, work / "home")
    os.environ["MNEMO_HOME"] = str(work / "home")
    db = Database(work / "home" / "data" / "mnemo.db")
    store = Store(db)
    full, text = _bm25_weights(KEYWORD_COLUMN_WEIGHTS)
    ranked = (
        "SELECT rowid, -bm25(memories_fts, {}) AS full{} FROM memories_fts "
        "WHERE memories_fts MATCH ? ORDER BY full DESC, rowid LIMIT 200"
    )
    sql = {
        "FTS5 query of the search: two bm25() a row": ranked.format(
            full, f", -bm25(memories_fts, {text})"
        ),
        "the same with one bm25() a row": ranked.format(full, ""),
        "bare FTS5: one bm25(), 200 rows (the reference)": (
            "SELECT rowid, bm25(memories_fts) AS r FROM memories_fts "
            "WHERE memories_fts MATCH ? ORDER BY r LIMIT 200"
        ),
    }
    parts: dict[str, list[float]] = {
        "keyword stage (plan + search)": [],
        "plan": [],
        "plan: each word's count of memories (fts5vocab)": [],
        "search": [],
        **{name: [] for name in sql},
    }
    vocab = "SELECT term, doc FROM temp.mnemo_vocab WHERE term IN ({})"
    try:
        for _ in range(runs):
            for q in QUERIES:
                store.keywords.lexicon._docs_at = None  # as bench.keywords: the query typed afresh
                store.keywords._keyword_version = None
                held = {}
                plan_ms = _cpu(lambda q=q, held=held: held.update(plan=store.keywords.plan(q)))
                plan = held["plan"]
                search_ms = _cpu(
                    lambda p=plan: store.keywords.search(
                        p.expression, Filters(), K, common_only=p.common_only, parts=p.parts
                    )
                )
                parts["plan"].append(plan_ms)
                parts["search"].append(search_ms)
                parts["keyword stage (plan + search)"].append(plan_ms + search_ms)
                stems = [s for p in plan.phrases for s in p.stems]
                marks = ",".join("?" * len(stems))
                parts["plan: each word's count of memories (fts5vocab)"].append(
                    _cpu(lambda s=stems, m=marks: db.query(vocab.format(m), s))
                )
                for name, statement in sql.items():
                    parts[name].append(
                        _cpu(lambda s=statement, p=plan: db.query(s, (p.expression,)))
                    )
    finally:
        db.close()
        shutil.rmtree(work, ignore_errors=True)
    reference = statistics.median(parts["bare FTS5: one bm25(), 200 rows (the reference)"])
    return [
        (
            "10,000",
            "keywords",
            name,
            load,
            f"{statistics.median(v):.3f}",
            f"{statistics.median(v) / reference:.2f}x",
        )  # fmt: skip
        for name, v in parts.items()
    ]


def _vector_parts(index, runs: int) -> dict[str, list[float]]:
    """The CPU ms of each part of `index.top` over 8 random unit queries, `runs` times."""
    from app.core.search import vectors

    rng = np.random.default_rng(3)
    queries = rng.standard_normal((8, index.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    parts: dict[str, list[float]] = {
        "vector stage (VectorIndex.top)": [],
        "int8 scan (kernel and scaling)": [],
        "exact rescoring of 256, inside the stage": [],
        "the same rescoring, warm": [],
        "NumKong's int8 kernel alone": [],
        "floor: one pass over the int8 copy": [],
    }
    shipped_exact, shipped_scan = index.exact, index._approximate

    def timed(fn, name):
        def inner(*args):
            started = time.thread_time()
            try:
                return fn(*args)
            finally:
                parts[name].append((time.thread_time() - started) * 1000)

        return inner

    rows8 = index._q8_block(0, index._n)
    for _ in range(runs):
        for q in queries:
            index.exact = timed(shipped_exact, "exact rescoring of 256, inside the stage")
            index._approximate = timed(shipped_scan, "int8 scan (kernel and scaling)")
            try:
                parts["vector stage (VectorIndex.top)"].append(_cpu(lambda q=q: index.top(q, 10)))
            finally:
                index.exact, index._approximate = shipped_exact, shipped_scan
            pick = vectors.largest(index._approximate(q)[1], vectors.RESCORE)
            index.exact(q, pick)  # its rows now in the caches
            parts["the same rescoring, warm"].append(_cpu(lambda q=q, p=pick: index.exact(q, p)))
            one = np.rint(q / (np.abs(q).max() / 127)).astype(np.int8)[None, :]
            parts["NumKong's int8 kernel alone"].append(
                _cpu(
                    lambda o=one: vectors.numkong.cdist(
                        o, rows8, metric="dot", threads=1, out_dtype="float32"
                    )
                )  # fmt: skip
            )
            parts["floor: one pass over the int8 copy"].append(
                _cpu(lambda: rows8.view(np.int64).sum())
            )
    return parts


def _vector_rows(sizes: list[int], runs: int, load: str) -> list[tuple]:
    from app.core.engine import Engine

    rows = []
    for n in sizes:
        os.environ["MNEMO_HOME"] = str(vectors_home(n))  # bench.vectors', built if missing
        engine = Engine()
        try:
            index = engine.vector_index()
            index.prepare()
            parts = _vector_parts(index, runs)
        finally:
            engine.close()
        floor = statistics.median(parts["floor: one pass over the int8 copy"])
        rows += [
            (
                f"{n:,}",
                "vectors",
                name,
                load,
                f"{statistics.median(v):.3f}",
                f"{statistics.median(v) / floor:.2f}x",
            )  # fmt: skip
            for name, v in parts.items()
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300_000, 1_000_000])
    args = parser.parse_args()
    rows = []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            for row in _keyword_rows(args.runs, load) + _vector_rows(args.sizes, args.runs, load):
                print(" | ".join(row), flush=True)
                rows.append(row)
    record(
        "Where a stage's time goes (keywords at 10k, vectors at 300k and 1M)",
        [
            "memories",
            "stage",
            "part",
            "load",
            "CPU ms p50",
            "/ the reference (keywords: bare FTS5; vectors: the floor)",
        ],  # fmt: skip
        rows,
        note=__doc__.split("\n\n", 2)[2].strip(),
    )


if __name__ == "__main__":
    main()
