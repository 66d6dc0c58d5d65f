"""Encryption at rest (issue 26): what it costs at 100k memories, encrypted against plain in
the same run, quiet and with one core busy.

    .venv/bin/python -m bench.encryption [--size 100000] [--runs 3]

- keyword and hybrid recall p50 / p95 (60 different queries, so no answer comes from the
  store's cache), the real model embedding the queries;
- opening the database to the first hybrid result, in a fresh process (the model already
  loaded there: the same for both); a plain database maps its vector copy, an encrypted one
  unseals its sealed copy into memory (and, as a second row, reads every vector from the
  encrypted database when there is no copy);
- importing 2,000 memories (JSONL, no embedding), a snapshot, and encrypting in place;
- unencrypted, apsw-sqlite3mc against plain apsw (its own venv in bench/.cache) on the
  same FTS5 query: "no measurable slowdown for users who never encrypt".

The collection is bench.speed's synthetic one (cached in bench/.cache/encryption-N).
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
from pathlib import Path

import numpy as np

from bench.report import busy_core, record

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".cache"
PASSPHRASE = "bench passphrase"
PLAIN_APSW = "apsw==3.54.1.0"  # the apsw Mnemo locked before issue 26


def _queries(n: int = 60) -> list[str]:
    from bench.speed import _vocabulary

    rng = np.random.default_rng(7)
    vocab = _vocabulary(rng)[200:320]  # topic words, not the filler at the head
    return [" ".join(rng.choice(vocab, size=2, replace=False)) for _ in range(n)]


def _homes(size: int) -> tuple[Path, Path]:
    """The plain home (built once) and a fresh encrypted copy of it; and the encrypt time."""
    from app.core import paths
    from app.core.model.embedder import inspect_model
    from bench.speed import build

    plain = CACHE / f"encryption-{size}" / "plain"
    if not (plain / "data" / "mnemo.db").exists():
        shutil.rmtree(plain, ignore_errors=True)
        plain.mkdir(parents=True)
        info = inspect_model(paths.DEFAULT_MODEL)
        started = time.perf_counter()
        build(size, plain, info.model_id, info.dimension)
        print(f"built {size:,} memories in {time.perf_counter() - started:.0f} s")
    return plain, plain.parent / "encrypted"


def _encrypt_copy(plain: Path, encrypted: Path) -> float:
    from app.core.vault import cipher

    shutil.rmtree(encrypted, ignore_errors=True)
    shutil.copytree(plain, encrypted)
    db = encrypted / "data" / "mnemo.db"
    started = time.perf_counter()
    cipher.encrypt(db, "passphrase", PASSPHRASE)
    return time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def _recall_ms(engine, queries: list[str], mode: str | None) -> list[float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        engine.recall(q, mode=mode, limit=10, track=False)
        times.append(1000 * (time.perf_counter() - started))
    return times


OPEN = """
import sys, time, os
from pathlib import Path
from app.core.engine import Engine
from app.core.model.embedder import Embedder
from app.core import paths
from app.core.vault import keys
embedder = Embedder.load(paths.DEFAULT_MODEL)
db = Path(sys.argv[1])
keys.remember_passphrase(db, sys.argv[2])
started = time.perf_counter()
engine = Engine(database=db, embedder=embedder)
engine.recall("deploy rollback failed", limit=10, track=False)
print(1000 * (time.perf_counter() - started))
"""


def _open_ms(db: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", OPEN, str(db), PASSPHRASE],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "MNEMO_HOME": str(db.parent.parent)},
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _import_s(passphrase: str | None) -> float:
    """Import 2,000 memories into a copy of nothing (a fresh home, encrypted or not)."""
    from app.core.engine import Engine
    from app.core.vault import cipher, keys

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "bulk.jsonl"
        with source.open("w", encoding="utf-8") as f:
            for n in range(2000):
                f.write(json.dumps({"text": f"imported note {n} about deploy rollback"}) + "\n")
        db = Path(tmp) / "home" / "data" / "mnemo.db"
        db.parent.mkdir(parents=True)
        Engine(database=db, embedder=None).close()
        if passphrase:
            cipher.encrypt(db, "passphrase", passphrase)
            keys.remember_passphrase(db, passphrase)
        engine = Engine(database=db)
        try:
            started = time.perf_counter()
            engine.import_paths([source])
            return time.perf_counter() - started
        finally:
            engine.close()


def _snapshot_s(db: Path) -> float:
    from app.core.vault import backups

    started = time.perf_counter()
    snap = backups.take(db, keep=1)
    took = time.perf_counter() - started
    snap.path.unlink()
    (snap.path.parent / (snap.path.name + ".key")).unlink()
    return took


PEER = """
import sys, time, apsw, statistics
conn = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
queries = sys.argv[2:]
times = []
for _ in range(3):
    for q in queries:
        started = time.perf_counter()
        conn.execute("SELECT rowid, bm25(memories_fts) AS r FROM memories_fts "
                     "WHERE memories_fts MATCH ? ORDER BY r LIMIT 50", (q,)).fetchall()
        times.append(1000 * (time.perf_counter() - started))
print(statistics.median(times), apsw.sqlite_lib_version())
"""


def _plain_apsw() -> Path:
    """A venv with only the plain apsw build (PyPI), made once in bench/.cache."""
    venv = CACHE / "apsw-plain-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PLAIN_APSW], check=True)
    return python


def _fts_ms(python: Path, db: Path, queries: list[str]) -> tuple[float, str]:
    words = [" OR ".join(f'"{w}"' for w in q.split()) for q in queries]
    out = subprocess.run(
        [str(python), "-c", PEER, str(db), *words], capture_output=True, text=True, check=True
    )
    median, version = out.stdout.split()
    return float(median), version


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh-process opens per side")
    args = parser.parse_args()
    os.environ["MNEMO_HOME"] = tempfile.mkdtemp(prefix="mnemo-bench-")  # never the user's
    from app.core import paths
    from app.core.engine import Engine
    from app.core.model.embedder import Embedder
    from app.core.vault import keys

    plain, encrypted = _homes(args.size)
    encrypt_s = _encrypt_copy(plain, encrypted)
    print(f"encrypted {args.size:,} memories in place in {encrypt_s:.1f} s")
    dbs = {"plain": plain / "data" / "mnemo.db", "encrypted": encrypted / "data" / "mnemo.db"}
    keys.remember_passphrase(dbs["encrypted"], PASSPHRASE)
    embedder = Embedder.load(paths.DEFAULT_MODEL)
    queries = _queries()
    rows = []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            times: dict[str, dict[str, list[float]]] = {
                side: {"keyword": [], "hybrid": [], "open": [], "snapshot": []} for side in dbs
            }
            engines = {side: Engine(database=db, embedder=embedder) for side, db in dbs.items()}
            for engine in engines.values():
                engine.recall("warm up", track=False)
            for _ in range(3):  # interleaved: the machine's drift hits both sides alike
                for side, engine in engines.items():
                    times[side]["keyword"] += _recall_ms(engine, queries, "keyword")
                    times[side]["hybrid"] += _recall_ms(engine, queries, None)
            for engine in engines.values():
                engine.close()
            uncopied = []  # the encrypted side with no sealed copy: every vector from SQLite
            for _ in range(args.runs):
                for side, db in dbs.items():
                    times[side]["open"].append(_open_ms(db))
                    times[side]["snapshot"].append(_snapshot_s(db))
                copy = dbs["encrypted"].with_name("mnemo.db.vectors")
                shutil.rmtree(copy, ignore_errors=True)
                uncopied.append(_open_ms(dbs["encrypted"]))  # (it seals a copy again)
            for what, label in (
                ("keyword", "keyword recall p50 / p95 ms"),
                ("hybrid", "hybrid recall p50 / p95 ms"),
            ):
                p, e = times["plain"][what], times["encrypted"][what]
                rows.append(
                    (
                        f"{args.size:,}",
                        load,
                        label,
                        f"{_pct(p, 50):.1f} / {_pct(p, 95):.1f}",
                        f"{_pct(e, 50):.1f} / {_pct(e, 95):.1f}",
                        f"{_pct(e, 50) / _pct(p, 50):.2f}",
                    )
                )
            for what, label, unit in (
                ("open", "open to the first hybrid result, ms (median)", 1),
                ("snapshot", "a snapshot (VACUUM INTO, checked), s (median)", 1),
            ):
                p = statistics.median(times["plain"][what]) * unit
                e = statistics.median(times["encrypted"][what]) * unit
                rows.append((f"{args.size:,}", load, label, f"{p:.1f}", f"{e:.1f}", f"{e / p:.2f}"))
            p, e = statistics.median(times["plain"]["open"]), statistics.median(uncopied)
            rows.append(
                (
                    f"{args.size:,}",
                    load,
                    "open to the first hybrid result without the sealed vector copy "
                    "(every vector read from the encrypted database), ms (median)",
                    f"{p:.1f}",
                    f"{e:.1f}",
                    f"{e / p:.2f}",
                )
            )
            plain_import = _import_s(None)
            enc_import = _import_s(PASSPHRASE)
            rows.append(
                (
                    "2,000",
                    load,
                    "import (JSONL, no embedding), s",
                    f"{plain_import:.2f}",
                    f"{enc_import:.2f}",
                    f"{enc_import / plain_import:.2f}",
                )
            )
            mc, mc_version = _fts_ms(Path(sys.executable), dbs["plain"], queries)
            peer, peer_version = _fts_ms(_plain_apsw(), dbs["plain"], queries)
            rows.append(
                (
                    f"{args.size:,}",
                    load,
                    f"unencrypted FTS5 query, ms (median): plain apsw (SQLite {peer_version}) "
                    f"in the plain column, apsw-sqlite3mc (SQLite {mc_version}) in the other",
                    f"{peer:.2f}",
                    f"{mc:.2f}",
                    f"{mc / peer:.2f}",
                )
            )
    rows.append(
        (
            f"{args.size:,}",
            "quiet",
            "encrypting in place (mnemo encrypt), s",
            "",
            f"{encrypt_s:.1f}",
            "",
        )
    )
    record(
        "Encryption at rest: what it costs",
        ["memories", "load", "what", "plain", "encrypted", "encrypted / plain"],
        rows,
        "bench.encryption: bench.speed's synthetic collection (random unit vectors), the real "
        "model embedding 60 different two-word queries, each side three times, interleaved. "
        "The encrypted side is keyed through a passphrase (scrypt, once per process, "
        "included in its open); a keyring gives the key in about 25 ms instead. Issue 26's "
        "goal: hybrid p50 within 15 % of unencrypted at 100k.",
    )


if __name__ == "__main__":
    main()
