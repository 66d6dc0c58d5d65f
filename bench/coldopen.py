"""Cold open, disk and memory of a large collection (issue 24, item 4).

For each tier of bench.speed's synthetic memories (random unit vectors, stored as Mnemo
stores them):

- **disk**: bytes a memory of the database, the copy beside it, and both;
- **build**: a start with no copy on disk (an upgrade, or a copy found damaged) reads every
  vector from the database and writes the int8 copy; its peak RSS (VmHWM) against the
  steady RSS of a start that maps the copy and has answered 20 searches (goal: ≤ 1.2×);
- **cold open**: a new process, the page cache dropped (`/proc/sys/vm/drop_caches` as
  root, else `posix_fadvise(DONTNEED)` on every file of the collection and the model), from
  the moment Mnemo is imported to its first hybrid result (model loaded, database opened,
  the copy mapped and scanned, the keyword stage, ranking), and to the first vector-only
  result (the index alone, as the vector peers below are timed). Goals: hybrid ≤ 300 ms
  at 100k, ≤ 1 s at 1M.
- the vector peers of bench/peers.py, built once on the same vectors, saved to disk and
  opened cold the same way in a new process of the peers' venv: open to first result.

    python -m bench.coldopen [--sizes 100000 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.report import busy_core, record, run_child

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUERY = "parser error handling"  # one of bench.speed's queries, answered at every tier
# a word no memory holds: the plan's typo check reads the model's word list (about 30 ms)
UNKNOWN = "parser error handlng"
BEFORE = (  # measured once, by hand, before issue 24's item 4
    "Before (the code at d52098b, the same machine on 2026-11-26, measured by hand with the "
    'query "the cache warms after a deploy"): 4,610 bytes a memory at 100k (the vectors '
    "stored twice, in float32); cold first hybrid result 448-488 ms at 100k; peak RSS 361 MB "
    "against 195 steady (529 against 235 for a start that read the database)."
)
PEER_NAMES = ("faiss flat", "sqlite-vec", "LanceDB (no index)")

CHILD = r"""
import json, os, sys, time
started = time.perf_counter()
from app.core import paths
from app.core.engine import Engine
from app.core.model.embedder import Embedder
imported = time.perf_counter()
mode = sys.argv[1]
if mode == "vectors":  # the index alone, a query vector given (as the peers are timed)
    import numpy as np
    from app.core.model.embedder import inspect_model
    engine = Engine()  # no model loaded: the index needs only its id and dimension
    info = inspect_model(paths.DEFAULT_MODEL)
    from app.core.search.vectors import VectorIndex
    from app.core.vault import cipher
    index = VectorIndex(info.model_id, info.dimension, cipher.vector_copy(engine._db.path))
    index.refresh(engine._store)
    q = np.random.default_rng(1).standard_normal(info.dimension).astype(np.float32)
    hits, _ = index.top(q / np.linalg.norm(q), 10)
    first = time.perf_counter()
    found = len(hits)
else:
    embedder = Embedder.load(paths.DEFAULT_MODEL)
    engine = Engine(embedder=embedder)
    found = len(engine.recall(sys.argv[2], track=False).results)
    first = time.perf_counter()
    index = engine.vector_index()
    if mode == "steady":  # a start that has answered 20 searches: its resident memory
        for i in range(20):
            engine.recall(f"{sys.argv[2]} {i}", track=False)
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
print(json.dumps({
    "import_ms": (imported - started) * 1000,
    "first_ms": (first - imported) * 1000,
    "found": found,
    "loaded_from": index.loaded_from,
    "rss_mb": status("VmRSS"),
    "hwm_mb": status("VmHWM"),
}))
"""


def drop_cache(files: list[Path]) -> str:
    """Drop these files' pages from the page cache: all of it when we may, else each file's
    (clean pages go; `sync` first writes the dirty ones)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return "drop_caches"
    except OSError:
        pass
    for path in files:
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "fadvise"


def _child(home: Path, mode: str, query: str = QUERY) -> dict:
    return run_child(REPO, home, CHILD, mode, query)


def _files(home: Path) -> list[Path]:
    from app.core import paths

    return [p for p in home.rglob("*") if p.is_file()] + [Path(paths.DEFAULT_MODEL)]


def _sizes(home: Path) -> tuple[int, int]:
    db = sum(p.stat().st_size for p in (home / "data").glob("mnemo.db*") if p.is_file())
    copy = sum(p.stat().st_size for p in (home / "data" / "mnemo.db.vectors").glob("*"))
    return db, copy


def tier(n: int) -> Path:
    """bench.speed's tier of n memories (built once into bench/.cache)."""
    from app.core import paths
    from app.core.model.embedder import inspect_model
    from bench import speed

    info = inspect_model(paths.DEFAULT_MODEL)
    home = HERE / ".cache" / f"speed-{n}-{info.model_id.replace('@', '-')}"
    if not (home / "data" / "mnemo.db").exists():
        shutil.rmtree(home, ignore_errors=True)
        speed.build(n, home, info.model_id, info.dimension)
    return home


def measure(n: int, runs: int, load: str) -> dict:
    home = tier(n)
    work = Path(tempfile.mkdtemp(prefix="mnemo-cold-"))
    try:
        shutil.copytree(home, work / "home")
        shutil.rmtree(work / "home" / "data" / "mnemo.db.vectors", ignore_errors=True)
        built = _child(work / "home", "build")  # no copy: read, quantized, written
        assert built["loaded_from"] == "database", built
        steady = _child(work / "home", "steady")
        assert steady["loaded_from"] == "cache", steady
        db, copy = _sizes(work / "home")
        cold, unknown, vectors, how = [], [], [], ""
        for _ in range(runs):
            how = drop_cache(_files(work / "home"))
            got = _child(work / "home", "hybrid")
            assert got["loaded_from"] == "cache" and got["found"], got
            cold.append(got)
            how = drop_cache(_files(work / "home"))
            unknown.append(_child(work / "home", "hybrid", UNKNOWN))
            how = drop_cache(_files(work / "home"))
            vectors.append(_child(work / "home", "vectors"))
        return {
            "n": n,
            "load": load,
            "db_per": db / n,
            "copy_per": copy / n,
            "build_hwm": built["hwm_mb"],
            "steady_rss": steady["rss_mb"],
            "hybrid_ms": statistics.median(c["first_ms"] for c in cold),
            "hybrid_max": max(c["first_ms"] for c in cold),
            "import_ms": statistics.median(c["import_ms"] for c in cold),
            "unknown_ms": statistics.median(c["first_ms"] for c in unknown),
            "vectors_ms": statistics.median(v["first_ms"] for v in vectors),
            "how": how,
            "work": work,
        }
    except Exception:
        shutil.rmtree(work, ignore_errors=True)
        raise


def peers_built(work: Path, data: Path) -> None:
    """Save the collection's vectors for the peers and let them build their stores there
    (bench/peer_cold.py in the peers' venv), once for both loads."""
    import numpy as np

    from app.core.storage.db import Database
    from app.core.storage.store import Store
    from app.core.storage.vector_rows import decode_vectors
    from bench import peers

    if (data / "vectors.npy").exists():
        return
    store = Store(Database(work / "home" / "data" / "mnemo.db"))
    rows = store.vectors.rows(store.db.get_meta("model_id"))
    dim = len(rows[0][2]) // 2
    matrix = decode_vectors([b for _, seq, b in rows if seq], dim)
    del rows
    store.db.close()
    np.save(data / "vectors.npy", matrix)
    del matrix
    subprocess.run(
        [str(peers.python()), "-P", str(HERE / "peer_cold.py"), "build", str(data)], check=True
    )
    (data / "vectors.npy").write_bytes(b"")  # built: their stores hold the vectors now


def peers_cold(data: Path, runs: int) -> list[tuple[str, float, int]]:
    """(peer, median ms from import to first result, bytes on disk) of the vector peers
    built in `data`, each opened cold in a new process of the peers' venv, `runs` times."""
    from bench import peers

    out = []
    for name in PEER_NAMES:
        times, size = [], 0
        for _ in range(runs):
            drop_cache([p for p in data.rglob("*") if p.is_file()])
            got = subprocess.run(
                [str(peers.python()), "-P", str(HERE / "peer_cold.py"), "open",
                 name.split(" (")[0], str(data)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            answer = json.loads(got.stdout.strip().splitlines()[-1])
            assert answer["found"] == 10, answer
            times.append(answer["ms"])
            size = answer["disk"]
        out.append((name, statistics.median(times), size))
    return out


def _rows(n: int, args, load: str, data: Path) -> list[tuple]:
    got = measure(n, args.runs, load)
    try:
        peer_rows = []
        if not args.no_peers:
            if load == "quiet":  # built quiet, before anything of theirs is timed
                peers_built(got["work"], data)
            peer_rows = peers_cold(data, args.runs)
    finally:
        shutil.rmtree(got["work"], ignore_errors=True)
    print(got, peer_rows, flush=True)
    rows = [
        (
            f"{n:,}",
            load,
            "Mnemo",
            f"{got['hybrid_ms']:.0f} (max {got['hybrid_max']:.0f}); "
            f"a word no memory holds: {got['unknown_ms']:.0f}",
            f"{got['vectors_ms']:.0f}",
            "1.0x",
            f"{got['db_per']:,.0f} + {got['copy_per']:,.0f} = "
            f"{got['db_per'] + got['copy_per']:,.0f}",
            f"{got['build_hwm']:.0f} / {got['steady_rss']:.0f} = "
            f"{got['build_hwm'] / got['steady_rss']:.2f}x",
        )
    ]
    for name, ms, size in peer_rows:
        rows.append(
            (
                f"{n:,}",
                load,
                name,
                "",
                f"{ms:.0f}",
                f"{ms / got['vectors_ms']:.1f}x",
                f"{size / n:,.0f} (vectors only)",
                "",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    for n in args.sizes:
        tier(n)
    rows = []
    data = {n: Path(tempfile.mkdtemp(prefix=f"mnemo-cold-peers-{n}-")) for n in args.sizes}
    try:
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for n in args.sizes:
                    rows += _rows(n, args, load, data[n])
    finally:
        for folder in data.values():
            shutil.rmtree(folder, ignore_errors=True)
    record(
        "Cold open, disk and memory of a large collection",
        [
            "memories",
            "load",
            "side",
            "cold open to first hybrid result, ms (median of runs)",
            "cold open to first vector result, ms",
            "vector: peer / Mnemo",
            "bytes a memory on disk: database + copy = total",
            "build peak RSS / steady RSS, MB",
        ],
        rows,
        note=f"`python -m bench.coldopen --runs {args.runs}`: bench.speed's synthetic tiers "
        "(random unit vectors; texts of about 45 words). Cold: a new process after the page "
        "cache was dropped (drop_caches as root), timed from the moment Mnemo's modules are "
        "imported (imports are not counted: about 0.2-0.35 s of Python for both sides) to the "
        "first hybrid result (the model loaded, the database opened, the int8 copy mapped "
        "and scanned, keywords, ranking), and to the first vector-only result (the index "
        "given a query vector, as the peers are timed). Build: a start with no copy (an "
        "upgrade, a damaged copy) reads every vector from the database and writes the copy: "
        "its peak RSS against the RSS of a start that maps the copy and answered 20 searches. "
        "Peers: saved by bench/peer_cold.py on the same vectors and opened cold in a new "
        "process of their venv; their disk is their vectors alone (no texts, no keyword "
        "index). Goals (issue 24): ≤ 2.5 KB a memory at 100k, build RSS ≤ 1.2× steady, cold "
        "hybrid ≤ 300 ms at 100k and ≤ 1 s at 1M. " + BEFORE,
    )


if __name__ == "__main__":
    main()
