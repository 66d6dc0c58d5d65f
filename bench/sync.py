"""Sync over a folder (issue 27): how long a change takes to be searchable on another
device (Mnemo's part, beyond the folder sync's own delay), and joining a collection of
10k / 100k memories, from the logs and from a snapshot; quiet and with one core busy.

    .venv/bin/python -m bench.sync [--sizes 10000 100000] [--trials 20]

- change → searchable: two running apps (two Runners, default 2 s poll) on two databases
  sharing one folder directly (as a network share would, so the folder sync's own delay is
  not in it); the time from the write on one until the other's runner reports the memory
  arrived (it is then found by keywords), per trial;
- joining: a device with N memories (bench.speed's synthetic collection) sets sync up (its
  first pass writes every memory), then a fresh device joins: from the logs, and again
  after the first device compacted (from its snapshot); the folder's size; and a keyword
  search on the new device right after (found at once; vectors follow in the backfill).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.report import busy_core, code_sides, record, run_child

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _engine(root: Path, name: str):
    from app.core.engine import Engine
    from app.core.settings import Settings

    return Engine(Settings(root / f"{name}.json"), root / name / "mnemo.db")


def change_to_searchable(trials: int) -> list[float]:
    """Seconds from a write on one device to the other's runner having applied it."""
    from app.core.runner import Listener, Runner
    from tests.word_model import WordModel

    root = Path(tempfile.mkdtemp(prefix="mnemo-sync-bench-"))
    folder = root / "shared"
    model = WordModel()
    arrived: dict[str, float] = {}
    event = threading.Event()

    class Heard(Listener):
        def written_elsewhere(self, changes) -> None:
            for change in changes:
                for memory_id in change.ids:
                    arrived.setdefault(memory_id, time.perf_counter())
            event.set()

    def runner(name: str, listener: Listener) -> Runner:
        from app.core.engine import Engine
        from app.core.settings import Settings

        settings, database = root / f"{name}.json", root / name / "mnemo.db"
        database.parent.mkdir(parents=True)
        with Engine(Settings(settings), database, model) as engine:
            engine.sync.init(str(folder), name)
        run = Runner(
            lambda: Engine(Settings(settings), database, model), listener=listener, load_model=False
        )
        run.start()
        return run

    laptop, desktop = runner("laptop", Listener()), runner("desktop", Heard())
    took = []
    try:
        for trial in range(trials):
            text = f"Trial {trial}: the parcel locker code is behind the {trial}th door."
            memory = laptop.submit(
                lambda e, t=text: e.remember(t, embed=False).memory, writes=True
            ).result(30)
            written = time.perf_counter()
            deadline = written + 60
            while memory.id not in arrived and time.perf_counter() < deadline:
                event.wait(0.05)
                event.clear()
            took.append(arrived.get(memory.id, float("nan")) - written)
            found = desktop.submit(lambda e, t=text: e.recall(t, mode="keyword").results).result(30)
            assert found and found[0].memory.id == memory.id
            time.sleep(0.3 + (trial % 7) * 0.25)  # writes at moments spread over the poll
    finally:
        laptop.stop(30)
        desktop.stop(30)
        shutil.rmtree(root, ignore_errors=True)
    return took


# One side of a join, in a child process on the code of `code` (this checkout, or the code
# before: its sync API was Engine.sync_init/sync_compact), timed the same way
JOIN_CHILD = """
import json, os, shutil, sys, tempfile, time
from pathlib import Path
source, root = Path(sys.argv[1]), Path(tempfile.mkdtemp(prefix="mnemo-sync-join-"))
from app.core.engine import Engine
def call(engine, name, *args):
    part = getattr(engine, "sync", None)
    if part is None:
        return getattr(engine, "sync_" + name)(*args)
    return getattr(part, name)(*args)
def size(path):
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
out = {}
try:
    shutil.copytree(source, root / "first")
    folder = root / "shared"
    os.environ["MNEMO_HOME"] = str(root / "first")
    with Engine() as first:
        started = time.perf_counter()
        call(first, "init", str(folder), "first")
        out["setup"] = time.perf_counter() - started
        out["folder_mb"] = size(folder) / 2**20
        for how in ("logs", "snapshot"):
            if how == "snapshot":
                started = time.perf_counter()
                call(first, "compact")
                out["compact"] = time.perf_counter() - started
                out["folder_mb_compacted"] = size(folder) / 2**20
            os.environ["MNEMO_HOME"] = str(root / f"join-{how}")
            with Engine() as joiner:
                started = time.perf_counter()
                call(joiner, "init", str(folder), f"join-{how}")
                out[f"join_{how}"] = time.perf_counter() - started
            os.environ["MNEMO_HOME"] = str(root / "first")
finally:
    shutil.rmtree(root, ignore_errors=True)
print(json.dumps(out))
"""


def collection(size: int) -> Path:
    """bench.speed's synthetic collection of `size` memories (built once, cached)."""
    from app.core import paths
    from app.core.model.embedder import inspect_model
    from bench.speed import build

    source = CACHE / f"sync-{size}" / "source"
    if not (source / "data" / "mnemo.db").exists():
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir(parents=True)
        info = inspect_model(paths.DEFAULT_MODEL)
        build(size, source, info.model_id, info.dimension)
    return source


def joining(size: int) -> dict[str, float]:
    """The first device's setup, a join from the logs, a compaction, a join from it."""
    source = collection(size)
    root = Path(tempfile.mkdtemp(prefix="mnemo-sync-join-"))
    out: dict[str, float] = {}
    try:
        shutil.copytree(source, root / "first")
        folder = root / "shared"
        os.environ["MNEMO_HOME"] = str(root / "first")
        from app.core.engine import Engine

        with Engine() as first:
            started = time.perf_counter()
            first.sync.init(str(folder), "first")
            out["setup"] = time.perf_counter() - started
            out["folder_mb"] = _size(folder) / 2**20
            for how in ("logs", "snapshot"):
                if how == "snapshot":
                    started = time.perf_counter()
                    first.sync.compact()
                    out["compact"] = time.perf_counter() - started
                    out["folder_mb_compacted"] = _size(folder) / 2**20
                os.environ["MNEMO_HOME"] = str(root / f"join-{how}")
                with Engine() as joiner:
                    started = time.perf_counter()
                    result = joiner.sync.init(str(folder), f"join-{how}")
                    out[f"join_{how}"] = time.perf_counter() - started
                    assert result.applied == size, (result.applied, size)
                    started = time.perf_counter()
                    found = joiner.recall(f"note {size // 2}", mode="keyword").results
                    out[f"keyword_{how}_ms"] = (time.perf_counter() - started) * 1000
                    assert found
                os.environ["MNEMO_HOME"] = str(root / "first")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument(
        "--before",
        metavar="REV",
        help="also join with the code at git revision REV, alternating, in the same run "
        "(a separate table; the latency and join tables above are skipped)",
    )
    args = parser.parse_args()
    if args.before:
        against(args.before, args.sizes)
        return
    latency_rows, join_rows = [], []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            took = sorted(change_to_searchable(args.trials))
            p50 = statistics.median(took)
            p95 = took[min(len(took) - 1, round(0.95 * (len(took) - 1)))]
            print(f"{load}: change → searchable p50 {p50:.2f} s, p95 {p95:.2f} s")
            latency_rows.append(
                (load, args.trials, f"{p50:.2f} s", f"{p95:.2f} s", f"{max(took):.2f} s")
            )
            for size in args.sizes:
                j = joining(size)
                print(load, size, {k: round(v, 2) for k, v in j.items()})
                join_rows.append(
                    (
                        f"{size:,}",
                        load,
                        f"{j['setup']:.1f} s",
                        f"{j['join_logs']:.1f} s",
                        f"{j['compact']:.1f} s",
                        f"{j['join_snapshot']:.1f} s",
                        f"{j['folder_mb']:.0f} / {j['folder_mb_compacted']:.0f} MB",
                        f"{j['keyword_logs_ms']:.0f} ms",
                    )
                )
    record(
        "Sync: a change on one device, searchable on another",
        ["load", "trials", "p50", "p95", "max"],
        latency_rows,
        "Two running apps (Runners, the default 2 s poll) on two databases sharing one folder "
        "directly: the time from a write on one to the other having applied it (then found "
        "by keywords; by meaning once its backfill embedded it). A folder sync adds its own "
        "delay: Syncthing with a 1 s watcher delay moved a file in about 1 s here (its "
        "default watcher delay is 10 s).",
    )
    record(
        "Sync: joining a collection",
        [
            "memories",
            "load",
            "first device's setup",
            "join from logs",
            "compact",
            "join from snapshot",
            "folder (logs / after compaction)",
            "keyword search at once",
        ],
        join_rows,
        "bench.speed's synthetic collection on the first device; a fresh device joins with "
        "`sync init` (no embedding: vectors follow in the backfill, 165 short notes/s here). "
        "The join from a snapshot follows the first device's `mnemo sync compact`; the "
        "folder then holds the snapshot and the logs (kept while the device that joined from "
        "them has written no snapshot of its own). Plain files (the folder not encrypted).",
    )


def against(before: str, sizes: list[int]) -> None:
    """Setup, joins and compaction with this code and the code at `before`, each side in
    a child process, alternating, quiet and with one core busy."""
    rows = []
    with code_sides(before) as sides:
        for load in ("quiet", "one core busy"):
            with busy_core() if load != "quiet" else contextlib.nullcontext():
                for size in sizes:
                    source = collection(size)
                    got = {
                        name: run_child(code, source, JOIN_CHILD, str(source))
                        for name, code in sides
                    }
                    for name, j in got.items():
                        print(load, size, name, {k: round(v, 2) for k, v in j.items()})
                        rows.append(
                            (
                                f"{size:,}",
                                load,
                                name,
                                f"{j['setup']:.1f} s",
                                f"{j['join_logs']:.1f} s",
                                f"{j['compact']:.1f} s",
                                f"{j['join_snapshot']:.1f} s",
                                f"{j['folder_mb']:.0f} / {j['folder_mb_compacted']:.0f} MB",
                            )
                        )
    record(
        "Sync: joining, against the code before",
        [
            "memories",
            "load",
            "code",
            "first device's setup",
            "join from logs",
            "compact",
            "join from snapshot",
            "folder (logs / after compaction)",
        ],
        rows,
        f"The same joins with this code and with the code at {before}, one after the other "
        "in one run, each in a child process. Issue 40 made every device sign each line it "
        "writes (Ed25519, libsodium) and check each line it reads, and a secret check that "
        "catches far more (prose in many languages, seed phrases) runs on every record "
        "written and read.",
    )


if __name__ == "__main__":
    main()
