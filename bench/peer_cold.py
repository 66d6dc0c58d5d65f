"""Run in the peers' venv by bench/coldopen.py: the vector peers saved to disk, then opened
cold in a new process.

    peer_cold.py build DIR          save faiss, sqlite-vec and LanceDB stores of DIR/vectors.npy
    peer_cold.py open PEER DIR      open one of them, answer one query: JSON ms and disk bytes
"""

import json
import os
import sys
import time

started = time.perf_counter()
import numpy as np  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")
mode, rest = sys.argv[1], sys.argv[2:]


def disk(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


if mode == "build":
    work = rest[0]
    X = np.load(os.path.join(work, "vectors.npy")).astype(np.float32)
    import faiss

    index = faiss.IndexFlatIP(X.shape[1])
    index.add(X)
    faiss.write_index(index, os.path.join(work, "faiss.index"))
    del index
    import apsw
    import sqlite_vec

    conn = apsw.Connection(os.path.join(work, "v.db"))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute(
        f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{X.shape[1]}] distance_metric=cosine)"
    )
    with conn:
        conn.executemany(
            "INSERT INTO v(rowid, embedding) VALUES (?, ?)",
            ((i, X[i].tobytes()) for i in range(len(X))),
        )
    conn.close()
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(os.path.join(work, "lance"))
    vec = pa.FixedSizeListArray.from_arrays(pa.array(X.reshape(-1)), X.shape[1])
    db.create_table("v", pa.table({"id": pa.array(np.arange(len(X))), "vector": vec}))
    print(json.dumps({"built": True}))
else:
    peer, work = rest
    q = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    q /= np.linalg.norm(q)
    if peer == "faiss flat":
        import faiss

        faiss.omp_set_num_threads(1)
        imported = time.perf_counter()
        index = faiss.read_index(os.path.join(work, "faiss.index"))
        found = index.search(q[None, :], 10)[1][0].tolist()
        path = os.path.join(work, "faiss.index")
    elif peer == "sqlite-vec":
        import apsw
        import sqlite_vec

        imported = time.perf_counter()
        conn = apsw.Connection(os.path.join(work, "v.db"))
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        found = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM v WHERE embedding MATCH ? AND k = 10 ORDER BY distance",
                (q.tobytes(),),
            )
        ]
        path = os.path.join(work, "v.db")
    else:
        import lancedb

        imported = time.perf_counter()
        table = lancedb.connect(os.path.join(work, "lance")).open_table("v")
        found = [r["id"] for r in table.search(q).metric("dot").limit(10).to_list()]
        path = os.path.join(work, "lance")
    first = time.perf_counter()
    print(json.dumps({"ms": (first - imported) * 1000, "found": len(found), "disk": disk(path)}))
