"""Peers run on Mnemo's own texts, in a venv of their own (issue 24, item 6).

    .venv/bin/python -m bench.peers --venv    # make bench/.cache/peers-venv and say what is in it

The peers are installed from PyPI at the versions below into bench/.cache/peers-venv (made
once; nothing of theirs is imported by Mnemo's own process). Each is run in a child process
of that venv on the very database the Mnemo side of the same bench reads, and reports CPU
milliseconds of its own process, so a busy core weighs on both sides alike.

- tantivy: the keyword floor reference of bench/keywords.py (block-max WAND over BM25,
  English stemming as FTS5's porter tokenizer does);
- the vector stage (`python -m bench.peers`): faiss flat (exact), usearch exact, sqlite-vec
  (exact, vec0), LanceDB without an index (exact) and Chroma (HNSW, approximate), each
  given Mnemo's own vectors of a collection and the same query vectors, one thread where
  the peer lets it be set; each built once, then timed quiet and with one core busy
  (Chroma up to 100,000 vectors: its graph takes minutes to build past that). Each
  side's best 50 memories are checked against an exact float32 scan (recall@50) and timed
  in CPU ms (median); Mnemo's is `VectorIndex.top` (the float32 scan up to 20,000
  memories, past them the int8 scan with exact rescoring).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".cache" / "peers-venv"
PEERS = (
    "tantivy==0.27.0",
    "faiss-cpu==1.15.1",
    "usearch==2.26.6",
    "sqlite-vec==0.1.9",
    "lancedb==0.40.0",
    "chromadb==1.5.9",
    "apsw==3.54.1.0",  # sqlite-vec loads into it (this Python's sqlite3 loads no extension)
    "onnx==1.23.2",  # bench.embedding writes the bundled model as ONNX (peer_onnx.py) …
    "gguf==0.19.0",  # … from the GGUF's weights; onnxruntime and tokenizers come with Chroma
    "numpy",
)

TANTIVY = r"""
import json, os, sqlite3, statistics, sys, time
import tantivy

db, where, k, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
queries = json.loads(sys.stdin.read())
schema = tantivy.SchemaBuilder().add_text_field("text", tokenizer_name="en_stem").build()
built = 0.0
if not os.path.exists(os.path.join(where, "done")):
    os.makedirs(where, exist_ok=True)
    started = time.perf_counter()
    index = tantivy.Index(schema, path=where, reuse=False)
    writer = index.writer(heap_size=500_000_000, num_threads=1)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for (text,) in conn.execute("SELECT title || ' ' || text FROM memories ORDER BY seq"):
        writer.add_document(tantivy.Document(text=text))
    writer.commit()
    writer.wait_merging_threads()
    built = time.perf_counter() - started
    open(os.path.join(where, "done"), "w").write("ok")
index = tantivy.Index.open(where)
index.reload()
searcher = index.searcher()
parsed = {q: index.parse_query(q, ["text"]) for q in queries}
for q in queries:  # warm
    searcher.search(parsed[q], k, count=False)
times = {q: [] for q in queries}
for _ in range(rounds):
    for q in queries:
        started = time.process_time()
        searcher.search(parsed[q], k, count=False)
        times[q].append((time.process_time() - started) * 1000)
print(json.dumps({"built_s": built, "ms": {q: statistics.median(v) for q, v in times.items()}}))
"""


VECTORS = HERE / "peer_vectors.py"  # run by the peers' venv


def python() -> Path:
    """The peers' venv interpreter, made once from PyPI."""
    interpreter = VENV / "bin" / "python"
    if not interpreter.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    missing = subprocess.run(
        [
            str(interpreter),
            "-c",
            "import tantivy, faiss, usearch, sqlite_vec, lancedb, chromadb, apsw, onnx, gguf",
        ],
        capture_output=True,
    ).returncode
    if missing:
        subprocess.run([str(interpreter), "-m", "pip", "install", "-q", *PEERS], check=True)
    return interpreter


def tantivy(db: Path, index: Path, queries: list[str], k: int, rounds: int) -> dict:
    """{"built_s": seconds to index the database's texts (0 when already indexed),
    "ms": {query: median CPU ms of the best k}}, from tantivy in the peers' venv."""
    out = subprocess.run(
        [str(python()), "-c", TANTIVY, str(db), str(index), str(k), str(rounds)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def vectors(vectors_file: Path, queries_file: Path, k: int, rounds: int, peers: list[str]) -> dict:
    """{peer: {"ms", "hits" (per query, the best k memories), "built_s", "disk_mb"}} of the
    vector peers on the saved vectors (with their owners beside them) and queries."""
    out = subprocess.run(
        [
            str(python()),
            "-P",  # not bench/ first on the path: its secrets.py would shadow the stdlib's
            str(VECTORS),
            str(vectors_file),
            str(queries_file),
            str(k),
            str(rounds),
            ",".join(peers),
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise RuntimeError(f"the vector peers failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


VECTOR_PEERS = ["faiss", "usearch", "sqlite-vec", "lancedb", "chroma"]


def _collections(sizes: list[int]) -> list[tuple[str, Path]]:
    """(label, Mnemo home) of the collections compared: bench.speed's tiers (random unit
    vectors, one a memory) and SciFact's 5,183 abstracts embedded by the bundled model
    (bench.quality's database: real vectors, long abstracts in several chunks)."""
    out = []
    for n in sizes:
        found = sorted((HERE / ".cache").glob(f"speed-{n}-all*"))
        if found:
            out.append((f"{n:,} (random vectors)", found[0]))
        else:
            print(f"bench.speed's {n:,} tier is missing: python -m bench.speed --build {n}")
    real = sorted((HERE / ".cache").glob("scifact-*token-vectors-3"))
    if real:
        out.append(("5,183 (SciFact, real vectors)", real[0]))
    return out


def compare_vectors(sizes: list[int], rounds: int, k: int = 50) -> list[tuple]:
    """Mnemo's vector stage and the peers' on the same vectors and queries, quiet and with
    one core busy: one table row a side."""
    import contextlib
    import shutil
    import statistics
    import tempfile
    import time

    import numpy as np

    from bench.report import busy_core

    rows = []
    for label, home in _collections(sizes):
        work = Path(tempfile.mkdtemp(prefix="mnemo-peers-"))
        shutil.copytree(home, work / "home")
        import os

        os.environ["MNEMO_HOME"] = str(work / "home")
        from app.core import paths
        from app.core.engine import Engine
        from app.core.model.embedder import Embedder
        from app.core.storage.vector_rows import decode_vectors

        embedder = Embedder.load(paths.DEFAULT_MODEL)
        engine = Engine(embedder=embedder)
        index = engine.vector_index()
        pairs = engine._db.query(
            "SELECT m.seq, e.vector FROM embeddings e JOIN memories m ON m.id = e.memory_id "
            "WHERE e.model_id = ? AND m.deleted_at IS NULL ORDER BY e.rowid",
            (embedder.info.model_id,),
        )
        owner = np.array([seq for seq, _ in pairs], dtype=np.int64)
        matrix = decode_vectors([blob for _, blob in pairs], embedder.info.dimension)
        del pairs
        texts = [
            "deploy rollback failed", "parser error handling", "database migration lock",
            "memory leak in worker", "retry network timeout", "cache invalidation strategy",
            "vitamin D deficiency and bone density", "gene expression in tumour cells",
            "antibiotic resistance in bacteria", "sleep and memory consolidation",
            "insulin signalling in obesity", "immune response to viral infection",
            "build pipeline slow", "index query performance", "queue backlog alert",
            "protein folding and disease",
        ]  # fmt: skip
        queries = np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32)
        np.save(work / "vectors.npy", matrix)
        np.save(work / "vectors.owner.npy", owner)
        np.save(work / "queries.npy", queries)
        exact = []
        for q in queries:  # the truth: an exact float32 scan, best chunk of each memory
            order = np.argsort(-(matrix @ q))
            seen: list[int] = []
            for r in order:
                if int(owner[r]) not in seen:
                    seen.append(int(owner[r]))
                if len(seen) == k:
                    break
            exact.append(seen)
        del matrix
        timings: dict[str, list[float]] = {"quiet": [], "one core busy": []}
        hits: list[list[int]] = []
        for q in queries:  # warm: the mapped copy's pages read once
            index.top(q, k)
        for load in timings:
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for _ in range(rounds):
                    for q in queries:
                        t = time.process_time()
                        found, _ = index.top(q, k)
                        timings[load].append((time.process_time() - t) * 1000)
                        if len(hits) < len(queries):
                            hits.append([seq for seq, _ in found])
        peers = vectors(work / "vectors.npy", work / "queries.npy", k, rounds, VECTOR_PEERS)

        def recall(found: list[list[int]], truth: list[list[int]] = exact) -> float:
            return statistics.mean(
                len(set(f) & set(e)) / len(e) for f, e in zip(found, truth, strict=True)
            )

        for load, times in timings.items():
            ours = statistics.median(times)
            rows.append(
                (
                    label,
                    load,
                    "Mnemo (VectorIndex.top)",
                    f"{ours:.2f}",
                    "1.0x",
                    f"{recall(hits):.3f}",
                    "",
                    "",
                )
            )
            for name, got in peers.items():
                theirs = got["ms"][load]
                rows.append(
                    (
                        label,
                        load,
                        name,
                        f"{theirs:.2f}",
                        f"{theirs / ours:.1f}x",
                        f"{recall(got['hits']):.3f}",
                        f"{got['built_s']:.0f}" if load == "quiet" else "",
                        f"{got['disk_mb']:.0f}" if load == "quiet" else "",
                    )
                )
            for row in rows[-len(peers) - 1 :]:
                print(row, flush=True)
        engine.close()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", action="store_true", help="make the peers' venv and list it")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.venv:
        from bench.report import record

        rows = compare_vectors(args.sizes, args.rounds)
        record(
            "Vector stage: against peers on the same vectors",
            [
                "collection",
                "load",
                "side",
                "best 50, CPU ms p50",
                "peer / Mnemo",
                "recall@50 (exact scan)",
                "peer build s",
                "peer disk MB",
            ],
            rows,
            note=__doc__.split("\n\n", 2)[2].strip()
            + " Chroma and LanceDB may use more threads than one; CPU ms counts them all.",
        )
        return
    if args.venv:
        listing = subprocess.run(
            [str(python()), "-m", "pip", "list", "--format=freeze"],
            capture_output=True,
            text=True,
            check=True,
        )
        print(listing.stdout)


if __name__ == "__main__":
    main()
