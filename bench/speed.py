"""Speed at 1k / 10k / 100k memories: recall latency per mode, remember, backfill, load, RSS.

    .venv/bin/python -m bench.speed [--sizes 1000 10000 100000] [--st-python PATH]

Synthetic memories: 20-60 words drawn from a Zipf-distributed vocabulary, with random unit
vectors stored under the real model's id (vector values do not change search speed, and
embedding 100k texts would take 11 minutes). Import and backfill throughput is measured
separately on real text with the real model (`--throughput-only` for that section alone).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.report import record

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUERIES = [
    "deploy rollback failed",
    "parser error handling",
    "database migration lock",
    "memory leak in worker",
    "retry network timeout",
    "cache invalidation strategy",
    "test flaky integration",
    "config file format",
    "user login session expired",
    "build pipeline slow",
    "index query performance",
    "queue backlog alert",
]


def _vocabulary(rng) -> list[str]:
    base = (
        "deploy rollback parser error handling database migration lock memory leak worker "
        "retry network timeout cache invalidation strategy test flaky integration config "
        "file format user login session expired build pipeline slow index query "
        "performance queue backlog alert server client request response latency storage "
        "disk backup restore schema table column row transaction commit branch merge "
        "release version package dependency module function class method interface"
    ).split()
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "fu"]
    extra = sorted({"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(4000)})
    # Topic words sit at Zipf ranks 200+, like real topic words; the head of the
    # distribution is filler that appears in almost every memory (see COMMON_QUERIES).
    return extra[:200] + base + extra[200:]


def synthetic_texts(n: int, chunk: int = 100_000) -> Iterator[list[tuple[str, str]]]:
    """(text, title) of n synthetic memories in chunks: 20-60 words from the Zipf
    vocabulary, drawn for a whole chunk at once (a word at a time took 25 minutes at 1M)."""
    rng = np.random.default_rng(n)
    vocab = _vocabulary(rng)
    cdf = np.cumsum(1 / np.arange(1, len(vocab) + 1))
    cdf /= cdf[-1]
    for start in range(0, n, chunk):
        count = min(chunk, n - start)
        lengths = rng.integers(20, 61, size=count)
        drawn = np.minimum(
            np.searchsorted(cdf, rng.random(int(lengths.sum())), side="right"), len(vocab) - 1
        )
        words = [vocab[i] for i in drawn.tolist()]
        ends = np.cumsum(lengths).tolist()
        rows, begin = [], 0
        for i, end in enumerate(ends):
            rows.append(
                (
                    f"note {start + i}: " + " ".join(words[begin:end]),
                    " ".join(words[begin : begin + 6]),
                )
            )
            begin = end
        yield rows


def build(n: int, home: Path, model_id: str | None, dim: int) -> dict:
    """A database of n synthetic memories with random unit vectors (none without a
    `model_id`), cached on disk by the caller; how long each part took, in seconds."""
    from app.core import paths
    from app.core.storage.db import Database, now
    from app.core.storage.vector_rows import VECTOR_DTYPE

    os.environ["MNEMO_HOME"] = str(home)
    db = Database(paths.database_path())
    stamp = now()
    took = {"texts_s": 0.0, "insert_s": 0.0, "vectors_s": 0.0}
    seq = 0
    started = time.perf_counter()
    for rows in synthetic_texts(n):
        took["texts_s"] += time.perf_counter() - started
        started = time.perf_counter()
        with db.write() as conn:
            conn.executemany(
                "INSERT INTO memories(id, content_hash, text, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    (f"{seq + i:016x}", f"{seq + i:016x}", text, title, stamp, stamp)
                    for i, (text, title) in enumerate(rows)
                ),
            )
        seq += len(rows)
        took["insert_s"] += time.perf_counter() - started
        started = time.perf_counter()
    if model_id is not None:
        rng = np.random.default_rng(n + 1)
        for begin in range(0, n, 100_000):
            count = min(100_000, n - begin)
            vecs = rng.normal(size=(count, dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            stored = vecs.astype(VECTOR_DTYPE)  # as VectorRows.save writes them
            with db.write() as conn:
                conn.executemany(
                    "INSERT INTO embeddings(memory_id, chunk, model_id, content_hash, vector) "
                    "VALUES (?, 0, ?, '', ?)",
                    ((f"{begin + i:016x}", model_id, stored[i].tobytes()) for i in range(count)),
                )
        took["vectors_s"] = time.perf_counter() - started
    db.close()
    return took


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def measure_size(n: int) -> dict:
    """Run in a child process: every per-size number for a database of n memories."""
    from app.core import paths
    from app.core.model.embedder import Embedder

    started = time.perf_counter()
    embedder = Embedder.load(paths.DEFAULT_MODEL)
    model_load = time.perf_counter() - started
    home = HERE / ".cache" / f"speed-{n}-{embedder.info.model_id.replace('@', '-')}"
    built = {}
    if not (home / "data" / "mnemo.db").exists():
        shutil.rmtree(home, ignore_errors=True)
        built = build(n, home, embedder.info.model_id, embedder.info.dimension)
    work = Path(tempfile.mkdtemp(prefix="mnemo-bench-"))
    shutil.copytree(home, work / "home")
    os.environ["MNEMO_HOME"] = str(work / "home")
    from app.core.engine import Engine

    engine = Engine(embedder=embedder)
    started = time.perf_counter()
    engine.vector_index()  # from the database, then written beside it
    index_load = time.perf_counter() - started
    engine.close()
    engine = Engine(embedder=embedder)
    started = time.perf_counter()
    index = engine.vector_index()  # the next start: the memory-mapped copy
    mapped_load = time.perf_counter() - started
    assert index.loaded_from == "cache", index.loaded_from
    out = {
        **built,
        "n": n,
        "model_load_ms": model_load * 1000,
        "index_load_ms": index_load * 1000,
        "index_mapped_ms": mapped_load * 1000,
    }
    matches = [
        engine._db.query(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
            (engine._store.keywords.plan(q).expression,),
        )[0][0]
        for q in QUERIES
    ]
    out["query_match_share"] = statistics.median(matches) / n
    vocab = _vocabulary(np.random.default_rng(n))
    common = " ".join(vocab[:3])  # the three most frequent words: every memory matches
    for label, query in (("common_keyword", common), ("common_hybrid", common)):
        mode = label.split("_")[1]
        engine.recall(query, mode=mode, track=False)
        times = []
        for _ in range(20):
            t = time.perf_counter()
            engine.recall(query, mode=mode, track=False)
            times.append((time.perf_counter() - t) * 1000)
        out[f"{label}_p50_ms"] = pct(times, 50)
    for mode in ("keyword", "semantic", "hybrid"):
        engine.recall(QUERIES[0], mode=mode, track=False)  # warm
        times = []
        for _ in range(5):
            for q in QUERIES:
                t = time.perf_counter()
                engine.recall(q, mode=mode, track=False)
                times.append((time.perf_counter() - t) * 1000)
        out[f"{mode}_p50_ms"], out[f"{mode}_p95_ms"] = pct(times, 50), pct(times, 95)

    out.update(stages(engine))
    if n <= 100_000:  # at 1M, context scores a million memories per call: measured below 1M
        out.update(context_p50(engine))
    out.update(remember_p50(engine, n))
    out["rss_mb"] = rss_mb()
    engine.close()
    if n == 10_000:
        out["cold_cli_recall_s"] = cold_cli(work)
    shutil.rmtree(work, ignore_errors=True)
    return out


def float_matrix(engine) -> np.ndarray:
    """Every stored vector of the engine's model as one float32 matrix (a peer's scan)."""
    from app.core.storage.vector_rows import decode_vectors

    dim = engine.embedder.info.dimension
    rows = engine._store.vectors.rows(engine.model_id)
    return decode_vectors([blob for _, seq, blob in rows if seq is not None], dim)


def stages(engine, queries: list[str] = QUERIES) -> dict:
    """Median ms of each stage of a hybrid recall, and the vector stage's exact float32
    scan (before issue 10's int8 scan) as a peer in the same run."""
    from app.core.storage.store import Filters

    embedder, store, index = engine.embedder, engine._store, engine.vector_index()
    minimum = engine.settings["min_similarity"]
    exact_rows = float_matrix(engine)  # the peer: a float32 scan of the same rows
    times: dict[str, list[float]] = {k: [] for k in ("embed", "fts", "vectors", "exact", "fetch")}
    for _ in range(5):
        for q in queries:
            t = time.perf_counter()
            qvec = embedder.embed_query(q)
            times["embed"].append(time.perf_counter() - t)
            t = time.perf_counter()
            plan = store.keywords.plan(q)
            keyword = []
            if plan.expression:
                keyword = store.keywords.search(plan.expression, Filters(), 50)
            times["fts"].append(time.perf_counter() - t)
            t = time.perf_counter()
            hits, _ = index.top(qvec, 50, None, minimum)
            times["vectors"].append(time.perf_counter() - t)
            t = time.perf_counter()
            scores = exact_rows @ qvec
            np.argpartition(scores, len(scores) - 50)[-50:] if len(scores) > 50 else scores
            times["exact"].append(time.perf_counter() - t)
            t = time.perf_counter()
            store.by_seqs(dict.fromkeys([s for s, _ in hits] + [s for s, _ in keyword]))
            times["fetch"].append(time.perf_counter() - t)
    return {f"stage_{k}_ms": 1000 * statistics.median(v) for k, v in times.items()}


def context_p50(engine) -> dict:
    engine.context(query="deploy pipeline parser errors", track=False)  # warm
    times = []
    for q in QUERIES:
        t = time.perf_counter()
        engine.context(query=q, limit=20, track=False)
        times.append((time.perf_counter() - t) * 1000)
    return {"context_p50_ms": pct(times, 50)}


def remember_p50(engine, n: int) -> dict:
    times = []
    for i in range(30 if n <= 100_000 else 5):
        t = time.perf_counter()
        engine.remember(
            f"Benchmark memory {i}: the cache warms after deploy number {i * 13}", force=True
        )
        times.append((time.perf_counter() - t) * 1000)
    return {"remember_p50_ms": pct(times, 50), "remember_p95_ms": pct(times, 95)}


def cold_cli(work: Path) -> float:
    cold = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "app", "recall", "deploy rollback failed", "--no-track"],
            cwd=REPO,
            check=True,
            capture_output=True,
            env={**os.environ, "MNEMO_HOME": str(work / "home")},
        )
        cold.append(time.perf_counter() - t)
    return statistics.median(cold)


def throughput_texts() -> dict[str, list[str]]:
    """Real English text from SciFact: short notes (an abstract's first sentence, 8-30
    words) and 256-token passages (abstracts that fill one window of the model)."""
    import re

    from app.core import paths
    from app.core.model.embedder import Embedder

    embedder = Embedder.load(paths.DEFAULT_MODEL)
    short, long = [], []
    with (REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl").open() as f:
        for line in f:
            text = json.loads(line)["text"]
            first = re.split(r"(?<=\.)\s", text)[0]
            if len(short) < 400 and 8 <= len(first.split()) <= 30:
                short.append(first)
            sequences = embedder.document_sequences(text)
            if len(long) < 60 and len(sequences) == 1 and len(sequences[0]) >= 230:
                long.append(text)
            if len(short) == 400 and len(long) == 60:
                break
    embedder.close()
    return {"short notes": short, "256-token passages": long}


def _backfill_rate(texts: list[str]) -> float:
    """Memories/s of the real backfill (vectors, labels, writes) on a fresh database."""
    from app.core.engine import Engine
    from app.core.memory import Memory

    home = Path(tempfile.mkdtemp(prefix="mnemo-throughput-"))
    os.environ["MNEMO_HOME"] = str(home)
    engine = Engine()
    engine._store.insert_many([Memory(id="", text=t) for t in texts])
    assert engine.embedder is not None  # the model loads outside the timing
    started = time.perf_counter()
    done = engine.backfill()
    rate = done / (time.perf_counter() - started)
    engine.close()
    shutil.rmtree(home, ignore_errors=True)
    return rate


def _phrase_by_phrase_rate(texts: list[str]) -> float:
    """The peer, in the same run: vectors in batches of 32 and then labels the way they
    were made before issue 10, each memory's 30 candidate phrases embedded on their own
    (no database writes, which favours it)."""
    from app.core import labels, paths
    from app.core.model.embedder import Embedder

    embedder = Embedder.load(paths.DEFAULT_MODEL)
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        batch = texts[start : start + 32]
        for text, vectors in zip(batch, embedder.embed_documents(batch), strict=True):
            doc = vectors.mean(axis=0)
            doc /= np.linalg.norm(doc)
            cands = labels.candidates(text)
            phrases = np.vstack([v[0] for v in embedder.embed_documents(cands)])
            labels.mmr(doc, phrases, labels.MAX_LABELS)
    rate = len(texts) / (time.perf_counter() - started)
    embedder.close()
    return rate


def throughput() -> list[tuple]:
    """Backfill memories/s, labels included, quiet and with one core busy, against the
    phrase-by-phrase labels of before in the same run."""
    from bench.report import busy_core

    texts = throughput_texts()
    rows = []
    for load in ("quiet", "one core busy"):
        with busy_core() if load == "one core busy" else contextlib.nullcontext():
            for label, items in texts.items():
                now = _backfill_rate(items)
                before = _phrase_by_phrase_rate(items)
                rows.append(
                    (label, len(items), load, f"{now:.1f}", f"{before:.1f}", f"{now / before:.1f}×")
                )
                print(f"{load:<14} {label:<20} now {now:.1f}/s   before {before:.1f}/s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument(
        "--throughput-only", action="store_true", help="only the backfill throughput section"
    )
    parser.add_argument(
        "--recall-only",
        action="store_true",
        help="only the int8 path against the exact scan on SciFact (bench.quality's database)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--build", type=int, nargs="+", help="only build these tiers afresh, timed (item 5)"
    )
    args = parser.parse_args()
    if args.build:
        return record_builds(args.build)
    if args.child:
        print(json.dumps(measure_size(args.child)))
        return
    if args.throughput_only:
        return record_throughput()
    if args.recall_only:
        return record_recall(vector_stage_recall())
    results = []
    for n in args.sizes:
        run = subprocess.run(
            [sys.executable, "-m", "bench.speed", "--child", str(n)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(run.stdout.strip().splitlines()[-1])
        results.append(result)
        print(json.dumps(result))
    rows = []
    for r in results:
        rows.append(
            (
                f"{r['n']:,}",
                f"{100 * r['query_match_share']:.1f} %",
                *(
                    f"{r[f'{m}_p50_ms']:.1f} / {r[f'{m}_p95_ms']:.1f}"
                    for m in ("keyword", "semantic", "hybrid")
                ),
                f"{r['remember_p50_ms']:.1f}",
                f"{r['context_p50_ms']:.1f}" if "context_p50_ms" in r else "—",
                f"{r['index_load_ms']:.0f} / {r['index_mapped_ms']:.1f}",
                f"{r['rss_mb']:.0f}",
                f"{r['common_keyword_p50_ms']:.1f} / {r['common_hybrid_p50_ms']:.1f}",
            )
        )
    cold = next((r["cold_cli_recall_s"] for r in results if "cold_cli_recall_s" in r), None)
    load = statistics.median(r["model_load_ms"] for r in results)
    record(
        "Speed: warm in-process recall, remember, memory",
        [
            "memories",
            "memories a query matches",
            "keyword p50/p95 ms",
            "semantic p50/p95 ms",
            "hybrid p50/p95 ms",
            "remember p50 ms",
            "context p50 ms",
            "vector load ms: database / mapped copy",
            "RSS MB",
            "worst case: 3 most common words, keyword / hybrid p50 ms",
        ],
        rows,
        note=(
            f"Model load {load:.0f} ms (goal ≤ 150). "
            + (f"Cold `mnemo recall` process at 10k: {cold:.2f} s (goal ≤ 0.8). " if cold else "")
            + "Goals: hybrid p50 ≤ 10 ms at 10k and ≤ 40 ms at 100k; RSS ≤ 600 MB at "
            "100k; `mnemo context` ≤ 100 ms at 10k (local computation: query embedding, "
            "scoring every memory, selection; no model load). Synthetic text, random unit "
            "vectors (see bench/speed.py). Issue 10's goals: hybrid p50 ≤ 5 / 15 / 100 ms at "
            "10k / 100k / 1M; RSS ≤ 400 MB at 100k, ≤ 1.5 GB at 1M."
        ),
        keep_others=True,  # `--sizes 10000` keeps the other sizes' rows, dated
    )
    real = real_tier()
    if real:
        print(json.dumps(real))
        results_for_stages = [*results, {**real, "label": f"{real['n']:,} (SciFact sentences)"}]
    else:
        results_for_stages = results
    record(
        "Speed: the stages of a hybrid recall",
        [
            "memories",
            "query embedding",
            "keywords (FTS5)",
            "vectors: int8 scan + exact rescoring",
            "vectors: exact float32 scan (before, same run)",
            "ratio",
            "fetching the memories",
            "whole recall p50",
        ],
        [
            (
                r.get("label", f"{r['n']:,}"),
                f"{r['stage_embed_ms']:.1f}",
                f"{r['stage_fts_ms']:.1f}",
                f"{r['stage_vectors_ms']:.1f}",
                f"{r['stage_exact_ms']:.1f}",
                f"{r['stage_exact_ms'] / r['stage_vectors_ms']:.1f}×"
                if r["n"] >= 20_000
                else "— (both exact)",
                f"{r['stage_fetch_ms']:.1f}",
                f"{r['hybrid_p50_ms']:.1f}",
            )
            for r in results_for_stages
        ],
        note="Median ms per stage over the same 12 queries × 5, in the process of the table "
        "above; the SciFact row is 10,000 sentences of SciFact's abstracts embedded by the "
        "bundled model (labels included), searched with 12 of SciFact's queries (its whole "
        "recall p50 over 60 of them). The int8 scan is used past 20,000 memories (below, "
        "both columns are the float32 scan); it includes the crowd (mean, spread) the score "
        "is calibrated against, from at most 16,384 memories. The rest of a recall is ranking.",
        keep_others=True,
    )
    rows = vector_stage_recall()
    if real:
        rows.append(
            (
                f"SciFact sentences, {real['n']:,} memories",
                300,
                f"{real['recall_at_10']:.4f}",
                "",
                f"{real['f16_recall_at_10']:.4f} / —",
                "",
            )
        )
    record_recall(rows)
    record_throughput()


def record_recall(rows: list[tuple]) -> None:
    if rows:
        record(
            "Vector stage: int8 scan against the exact scan, on real embeddings",
            [
                "collection",
                "queries",
                "recall@10",
                "recall@50",
                "float16 rows alone: recall@10 / @50",
                "largest cosine error of a hit",
            ],
            rows,
            note="SciFact's 5,183 abstracts embedded by the bundled model (bench.quality's "
            "database) and its 300 queries; the int8 path forced on (QUANTIZE_ABOVE = 0), "
            "its candidates rescored from the float16 rows the database stores. The truth: "
            "an exact float32 scan of the vectors the model gives (each memory embedded "
            "again, before any storage). 'float16 rows alone': an exact scan of the stored "
            "rows, the storage's own loss. Goals: recall@10 ≥ 0.99 (issue 10), 1.00 with "
            "one stored copy of each vector (issue 24).",
        )


def record_builds(sizes: list[int]) -> None:
    """Build each tier afresh into bench/.cache (what `measure_size` reuses), timed: the
    texts drawn, their rows and FTS5 index written, the random vectors written, then the
    first start's vector index (read from the database, the int8 copy written beside it)."""
    from app.core import paths
    from app.core.engine import Engine
    from app.core.model.embedder import Embedder

    embedder = Embedder.load(paths.DEFAULT_MODEL)
    rows = []
    for n in sizes:
        home = HERE / ".cache" / f"speed-{n}-{embedder.info.model_id.replace('@', '-')}"
        shutil.rmtree(home, ignore_errors=True)
        started = time.perf_counter()
        took = build(n, home, embedder.info.model_id, embedder.info.dimension)
        index_started = time.perf_counter()
        engine = Engine(embedder=embedder)
        engine.vector_index()
        engine.close()
        took["index_s"] = time.perf_counter() - index_started
        total = time.perf_counter() - started
        size = sum(f.stat().st_size for f in home.rglob("*") if f.is_file()) / 1e9
        row = (
            f"{n:,}",
            f"{took['texts_s']:.0f}",
            f"{took['insert_s']:.0f}",
            f"{took['vectors_s']:.0f}",
            f"{took['index_s']:.0f}",
            f"{total / 60:.1f}",
            f"{size:.2f}",
        )
        print(row, flush=True)
        rows.append(row)
    record(
        "Speed: building the bench tiers",
        [
            "memories",
            "texts drawn s",
            "rows + FTS5 index written s",
            "vectors written s",
            "first vector index (read, int8 copy written) s",
            "total minutes",
            "on disk GB",
        ],
        rows,
        note="bench.speed's synthetic memories with random vectors, built afresh by "
        "`python -m bench.speed --build N` (quiet machine). Goal (issue 24, item 5): the 1M "
        "tier in under 10 minutes; before, drawing the words one memory at a time, it took "
        "over 25.",
        keep_others=True,
    )


def real_collection(n: int = 10_000) -> Path | None:
    """A database of n sentences from SciFact's abstracts, embedded (labels included) by
    the real model through the real backfill; cached. None without the SciFact data."""
    import re

    from app.core import paths
    from app.core.model.embedder import inspect_model

    corpus = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    if not corpus.exists():
        return None
    model_id = inspect_model(paths.DEFAULT_MODEL).model_id
    from app.core.labels import METHOD

    home = HERE / ".cache" / f"real-{n}-{model_id.replace('@', '-')}-{METHOD}"
    if (home / "done").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    sentences = []
    with corpus.open() as f:
        for line in f:
            for sentence in re.split(r"(?<=\.)\s+", json.loads(line)["text"]):
                if 6 <= len(sentence.split()) <= 60:
                    sentences.append(sentence)
            if len(sentences) >= n:
                break
    os.environ["MNEMO_HOME"] = str(home)
    from app.core.engine import Engine
    from app.core.memory import Memory

    engine = Engine()
    engine._store.insert_many([Memory(id="", text=t) for t in sentences[:n]])
    started = time.perf_counter()
    done = engine.backfill(batch_size=64)
    print(f"embedded {done} SciFact sentences in {time.perf_counter() - started:.0f} s")
    engine.close()
    (home / "done").touch()
    return home


def real_tier(n: int = 10_000) -> dict | None:
    """Stages and recall of a hybrid search on real text with real vectors, SciFact's
    queries; and recall@10 of the int8 path (forced on) against the exact scan."""
    home = real_collection(n)
    if home is None:
        return None
    from app.core.engine import Engine

    work = Path(tempfile.mkdtemp(prefix="mnemo-real-"))
    shutil.copytree(home, work / "home")
    os.environ["MNEMO_HOME"] = str(work / "home")
    engine = Engine()
    queries_file = REPO.parent / "shared" / "data" / "scifact" / "queries.jsonl"
    queries = [json.loads(line)["text"] for line in queries_file.open()][:300]
    engine.recall(queries[0], track=False)
    times = []
    for q in queries[:60]:
        t = time.perf_counter()
        engine.recall(q, track=False)
        times.append((time.perf_counter() - t) * 1000)
    out = {"n": len(engine.vector_index()), "hybrid_p50_ms": pct(times, 50)}
    out.update(stages(engine, queries[:12]))
    engine.close()
    # the truth embedded once, kept beside the cached collection
    got = int8_against_truth(work / "home", queries, 10, home / "truth.npz")
    out["recall_at_10"] = got["int8 10"]
    out["f16_recall_at_10"] = got["f16 10"]
    shutil.rmtree(work, ignore_errors=True)
    return out


def truth_vectors(engine, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """(memory seq per row, float32 rows) as the model gives them for every live memory,
    before any storage (float16) or int8: the reference recall is measured against.
    Embedded once (minutes), kept in `cache`."""
    if cache.exists():
        saved = np.load(cache)
        return saved["seqs"], saved["rows"]
    seqs = [r[0] for r in engine._db.query(
        "SELECT seq FROM memories WHERE deleted_at IS NULL ORDER BY seq")]  # fmt: skip
    memories = engine._store.by_seqs(seqs)
    owner, rows = [], []
    for start in range(0, len(seqs), 32):
        batch = seqs[start : start + 32]
        texts = [memories[seq].embed_text for seq in batch]
        for seq, chunks in zip(batch, engine.embedder.embed_documents(texts), strict=True):
            owner += [seq] * len(chunks)
            rows.append(np.asarray(chunks, dtype=np.float32))
    owner, matrix = np.array(owner, dtype=np.int64), np.concatenate(rows)
    np.savez(cache, seqs=owner, rows=matrix)
    return owner, matrix


def exact_top(owner: np.ndarray, rows: np.ndarray, qvec: np.ndarray, k: int) -> list:
    """The k best memories (seq, best-chunk cosine) of an exact scan of these rows."""
    seqs, inverse = np.unique(owner, return_inverse=True)
    best = np.full(len(seqs), -np.inf, dtype=np.float32)
    np.maximum.at(best, inverse, rows @ qvec.astype(np.float32))
    order = np.argsort(-best, kind="stable")[:k]
    return [(int(seqs[i]), float(best[i])) for i in order]


def int8_against_truth(home: Path, queries: list[str], k: int, truth: Path) -> dict:
    """Recall@10 and @k of Mnemo's vector stage, the int8 path forced on (QUANTIZE_ABOVE =
    0), against an exact float32 scan of the model's own vectors (`truth_vectors`); the
    same for an exact scan of the float16 rows the database stores (the storage's own
    loss); and the largest cosine difference of a hit."""
    from app.core.engine import Engine
    from app.core.search import vectors
    from app.core.storage.vector_rows import decode_vectors

    os.environ["MNEMO_HOME"] = str(home)
    quantize = vectors.QUANTIZE_ABOVE
    vectors.QUANTIZE_ABOVE = 0
    engine = Engine()
    try:
        index = engine.vector_index()
        assert index.quantized
        owner, rows = truth_vectors(engine, truth)
        stored = engine._store.vectors.rows(engine.model_id)
        stored_owner = np.array([seq for _, seq, _ in stored if seq is not None])
        stored_rows = decode_vectors([b for _, seq, b in stored if seq is not None], index.dim)
        found = {"int8 10": [], f"int8 {k}": [], "f16 10": [], f"f16 {k}": []}
        worst = 0.0
        for text in queries:
            qvec = engine.embedder.embed_query(text)
            truth = exact_top(owner, rows, qvec, k)
            fast, _ = index.top(qvec, k)
            half = exact_top(stored_owner, stored_rows, qvec, k)
            for name, got in (("int8", fast), ("f16", half)):
                for n in (10, k):
                    same = {s for s, _ in got[:n]} & {s for s, _ in truth[:n]}
                    found[f"{name} {n}"].append(len(same) / max(1, min(n, len(truth))))
            cos = dict(truth)
            worst = max([worst, *(abs(c - cos[s]) for s, c in fast if s in cos)])
        out = {name: float(np.mean(v)) for name, v in found.items()}
        out.update(n=len(index), worst=worst)
        return out
    finally:
        engine.close()
        vectors.QUANTIZE_ABOVE = quantize


def vector_stage_recall() -> list[tuple]:
    """recall@10/@50 of the int8 scan (with rescoring from the float16 rows) against the
    exact float32 scan of the model's own vectors, on SciFact's abstracts."""
    from app.core.labels import METHOD

    caches = sorted((HERE / ".cache").glob(f"scifact-*-{METHOD}"))
    queries_file = REPO.parent / "shared" / "data" / "scifact" / "queries.jsonl"
    if not caches or not queries_file.exists():
        print("no SciFact database: run `python -m bench.quality` first")
        return []
    queries = [json.loads(line)["text"] for line in queries_file.open()][:300]
    got = int8_against_truth(caches[-1], queries, 50, caches[-1] / "truth.npz")
    return [
        (
            f"SciFact, {got['n']:,} memories",
            len(queries),
            f"{got['int8 10']:.4f}",
            f"{got['int8 50']:.4f}",
            f"{got['f16 10']:.4f} / {got['f16 50']:.4f}",
            f"{got['worst']:.1e}",
        )
    ]


def record_throughput() -> None:
    record(
        "Speed: import and backfill throughput (labels included)",
        ["texts", "count", "load", "now: memories/s", "before: memories/s", "ratio"],
        throughput(),
        note="Real SciFact text and the real model. Now: `Engine.backfill` on a fresh "
        "database, vectors and labels from one forward pass, written to the database. "
        "Before (measured in the same run): the same vectors, then each memory's 30 candidate "
        "phrases embedded on their own for its labels (no writes). Goals (issue 10): "
        "≥ 150 short notes/s and ≥ 20 passages/s quiet.",
    )


if __name__ == "__main__":
    main()
