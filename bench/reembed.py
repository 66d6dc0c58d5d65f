"""Resident memory while a model switch's vectors arrive (issue 24, item 4: RSS never above
1.2× steady during any build).

    .venv/bin/python -m bench.reembed [--sizes 100000 1000000] [--before REV]

A model switch re-embeds every memory; the index reads the new rows batch by batch as the
backfill writes them (at each search, and when the backfill says it wrote). Re-embedding a
million memories takes hours here, so the arrival is replayed: the index reads the cached
tier of bench.vectors (n memories with random unit vectors in a real database) through a
Store that shows it the rows up to a watermark moved by 2% of them at a time, and searches
after each move. Everything else is the real index and database.

- **peak**: the child's VmHWM over the whole arrival (then it writes the copy, as a close
  does);
- **steady**: a new child that maps that copy and answered 20 searches, its VmRSS (the
  memory the collection needs once the switch is done);
- the same arrival with the code of `--before` (a git revision checked out into a temporary
  worktree, registered in this repository's .git until the bench ends), in the same run.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench.report import code_sides, record, run_child
from bench.vectors import _home

STEPS = 50  # the watermark moves by 2% of the rows at a time

CHILD = r"""
import json, os, sys, time
import numpy as np
from app.core import paths
from app.core.engine import Engine
from app.core.model.embedder import inspect_model
from app.core.search.vectors import VectorIndex
from app.core.storage.store import Store
from app.core.vault import cipher

mode, steps = sys.argv[1], int(sys.argv[2])
info = inspect_model(paths.DEFAULT_MODEL)
engine = Engine()  # no model loaded: the index needs only its id and dimension
real = engine._store
NEW = hasattr(real, "vectors")  # issue 43: the vectors' rows are `store.vectors`
top, generation = real.vectors.watermark() if NEW else real.vector_watermark()


class Visible:
    # The real vector rows, showing those up to `visible` (a re-embed's rows as written)
    def __init__(self, rows, visible):
        self._rows, self._visible = rows, visible

    def __getattr__(self, name):
        return getattr(self._rows, name)

    def watermark(self):
        return self._visible(), generation

    def count(self, model_id):
        sql = "SELECT count(*) FROM embeddings WHERE model_id = ? AND rowid <= ?"
        return self._rows.db.query(sql, (model_id, self._visible()))[0][0]

    def rows(self, model_id, after_rowid=0, limit=-1):
        rows = self._rows.rows(model_id, after_rowid, limit)
        return [r for r in rows if r[0] <= self._visible()]


class Arriving(Store):
    # The real store, showing the rows up to `visible` (before issue 43 the Store read them)
    def __init__(self):
        self.__dict__.update(real.__dict__)
        self.visible = 0
        if NEW:
            self.vectors = Visible(real.vectors, lambda: self.visible)

    def vector_watermark(self):
        return self.visible, generation

    def vector_count(self, model_id):
        sql = "SELECT count(*) FROM embeddings WHERE model_id = ? AND rowid <= ?"
        return self.db.query(sql, (model_id, self.visible))[0][0]

    def vector_rows(self, model_id, after_rowid=0, limit=-1):
        rows = Store.vector_rows(self, model_id, after_rowid, limit)
        return [r for r in rows if r[0] <= self.visible]


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024


store = Arriving() if mode == "arrive" else real
index = VectorIndex(info.model_id, info.dimension, cipher.vector_copy(engine._db.path))
rng = np.random.default_rng(1)
q = rng.standard_normal(info.dimension).astype(np.float32)
q /= np.linalg.norm(q)
started = time.perf_counter()
if mode == "arrive":
    for step in range(1, steps + 1):
        store.visible = top * step // steps
        index._moved_at = None  # (nothing is written here: the rows "arrive" by the step)
        index.refresh(store)
        index.top(q, 10)
    arrival_s = time.perf_counter() - started
    hwm = status("VmHWM")
    index.save(store)  # as a close does: the copy the next start maps
else:
    index.refresh(store)
    for _ in range(20):
        index.top(q, 10)
    arrival_s, hwm = 0.0, status("VmHWM")
print(json.dumps({"rows": len(index), "loaded_from": index.loaded_from, "hwm_mb": hwm,
                  "rss_mb": status("VmRSS"), "arrival_s": arrival_s}))
"""


def _side(code_root: Path, n: int) -> dict:
    """The arrival and the steady start after it, on a copy of the tier without its copy."""
    work = Path(tempfile.mkdtemp(prefix="mnemo-reembed-"))
    try:
        shutil.copytree(_home(n), work / "home")
        shutil.rmtree(work / "home" / "cache", ignore_errors=True)  # no vector copy yet
        arrive = run_child(code_root, work / "home", CHILD, "arrive", str(STEPS))
        steady = run_child(code_root, work / "home", CHILD, "steady", str(STEPS))
        assert steady["loaded_from"] == "cache" and steady["rows"] == arrive["rows"], steady
        return {"peak": arrive["hwm_mb"], "steady": steady["rss_mb"], "s": arrive["arrival_s"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--before", default=None, help="a git revision to compare with")
    args = parser.parse_args()
    rows = []
    with code_sides(args.before) as sides:
        for n in args.sizes:
            for label, code in sides:
                got = _side(code, n)
                rows.append(
                    (
                        f"{n:,}",
                        label,
                        f"{got['peak']:.0f}",
                        f"{got['steady']:.0f}",
                        f"{got['peak'] / got['steady']:.2f}x",
                        f"{got['s']:.1f}",
                    )
                )
                print(" | ".join(rows[-1]), flush=True)
    record(
        "Memory while a model switch's vectors arrive",
        [
            "memories",
            "code",
            "peak RSS during the arrival, MB",
            "steady RSS after, MB",
            "peak / steady",
            "arrival s",
        ],
        rows,
        note="The rows of a model switch arrive as the backfill writes them; the index reads "
        f"them at each search. Replayed: bench.vectors' tier (random unit vectors in a real "
        f"database) shown to the index {STEPS} times, 2% more of its rows each time, a "
        "search after each; peak is the child's VmHWM over the arrival, steady the VmRSS of "
        "a new start that maps the copy written at the end and answered 20 searches. The "
        "same with the code before issue 24's growth in parts, in the same run. Goal "
        "(issue 24): peak ≤ 1.2× steady.",
    )


if __name__ == "__main__":
    main()
