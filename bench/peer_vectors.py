"""Run in the peers' venv by bench/peers.py: the vector peers on saved vectors."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
vectors_file, queries_file, k, rounds, only = (
    sys.argv[1],
    sys.argv[2],
    int(sys.argv[3]),
    int(sys.argv[4]),
    sys.argv[5].split(","),
)
X = np.load(vectors_file, mmap_mode="r").astype(np.float32)
Q = np.load(queries_file).astype(np.float32)
owner = np.load(vectors_file.replace(".npy", ".owner.npy"))
wide = k * 4  # chunks asked for, so k distinct memories come back
out = {}


def memories(rows):
    seen = []
    for r in rows:
        m = int(owner[int(r)])
        if m not in seen:
            seen.append(m)
        if len(seen) == k:
            break
    return seen


def timed(handle, search):
    times, hits = [], []
    for _ in range(rounds):
        for q in Q:
            t = time.process_time()
            rows = search(handle, q)
            times.append((time.process_time() - t) * 1000)
            if len(hits) < len(Q):
                hits.append(memories(rows))
    return statistics.median(times), hits


def run(name, build, search):
    """Built once, then timed quiet and with another process busy on one core."""
    work = tempfile.mkdtemp(prefix="peer-")
    try:
        started = time.perf_counter()
        handle = build(work)
        built = time.perf_counter() - started
        for q in Q[:2]:
            search(handle, q)
        quiet, hits = timed(handle, search)
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            busy, _ = timed(handle, search)
        finally:
            spinner.kill()
            spinner.wait()
        disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(work) for f in fs)
        out[name] = {
            "ms": {"quiet": quiet, "one core busy": busy},
            "hits": hits,
            "built_s": built,
            "disk_mb": disk / 1e6,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


if "faiss" in only:
    import faiss

    faiss.omp_set_num_threads(1)

    def build(work):
        index = faiss.IndexFlatIP(X.shape[1])
        index.add(X)
        return index

    run("faiss flat", build, lambda index, q: index.search(q[None, :], wide)[1][0])
if "usearch" in only:
    from usearch.index import MetricKind
    from usearch.index import search as usearch_search

    run(
        "usearch exact",
        lambda work: X,
        lambda data, q: usearch_search(data, q, wide, MetricKind.IP, exact=True, threads=1).keys,
    )
if "sqlite-vec" in only:
    import apsw  # the interpreter's sqlite3 may not load extensions
    import sqlite_vec

    def build(work):
        conn = apsw.Connection(os.path.join(work, "v.db"))
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.execute(
            "CREATE VIRTUAL TABLE v USING vec0("
            f"embedding float[{X.shape[1]}] distance_metric=cosine)"
        )
        with conn:
            conn.executemany(
                "INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                ((i, X[i].tobytes()) for i in range(len(X))),
            )
        return conn

    run(
        "sqlite-vec",
        build,
        lambda conn, q: [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (q.tobytes(), wide),
            )
        ],
    )
if "lancedb" in only:
    import lancedb
    import pyarrow as pa

    def build(work):
        db = lancedb.connect(os.path.join(work, "lance"))
        vec = pa.FixedSizeListArray.from_arrays(pa.array(X.reshape(-1)), X.shape[1])
        return db.create_table("v", pa.table({"id": pa.array(np.arange(len(X))), "vector": vec}))

    run(
        "LanceDB (no index)",
        build,
        lambda t, q: [
            r["id"]
            for r in t.search(q).metric("dot").limit(wide).select(["id", "_distance"]).to_list()
        ],
    )
if "chroma" in only and len(X) <= 100_000:  # its HNSW build: minutes past that
    import chromadb

    def build(work):
        client = chromadb.PersistentClient(path=os.path.join(work, "chroma"))
        col = client.create_collection(
            "vectors", metadata={"hnsw:space": "ip", "hnsw:num_threads": 1}
        )
        for s in range(0, len(X), 5000):
            col.add(
                ids=[str(i) for i in range(s, min(s + 5000, len(X)))], embeddings=X[s : s + 5000]
            )
        return col

    run(
        "Chroma (HNSW)",
        build,
        lambda col, q: [
            int(i) for i in col.query(query_embeddings=[q], n_results=wide, include=[])["ids"][0]
        ],
    )
print(json.dumps(out))
