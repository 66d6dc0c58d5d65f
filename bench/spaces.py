"""Team spaces (issue 45): a device's file of lines after many edits of one shared memory,
with and without compaction, and sharing many memories in one pass against a pass each;
quiet and with one core busy.

    .venv/bin/python -m bench.spaces [--edits 5 20 50] [--kb 200] [--share 200]

- edits: Alice shares one memory of `--kb` KB in a space with Bob and edits it N times, a
  pass after each; then her file's size, and the time of one more pass of hers and of
  Bob's (reading the whole folder and folding it). "without" turns compaction off (every
  edit's whole copy stays, as before issue 45's compaction); "with" is the app as it is.
- share: Alice shares `--share` small memories in the space: all in one pass
  (`Spaces.share_many`, what the manager's Share in space does now) or one pass each
  (`Spaces.share` per memory, what it did before).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.report import busy_core, record


def _engines(root: Path):
    from app.core.engine import Engine
    from tests.word_model import WordModel

    model = WordModel()
    alice = Engine(database=root / "alice.db", embedder=model)
    bob = Engine(database=root / "bob.db", embedder=model)
    folder = root / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", bob.spaces.id(), "bob")
    bob.spaces.join(invitation, folder)
    return alice, bob, folder


def _text(n: int, kb: int) -> str:
    words = " ".join(f"step{i} checks the staging host before the deploy" for i in range(kb * 20))
    return f"Version {n} of the runbook. {words}"[: kb * 1024]


def edits(n: int, kb: int, compact: bool) -> tuple[float, float, float]:
    """(Alice's file in MB, her pass in s, Bob's pass in s) after `n` edits."""
    from app.core.space import compaction, lines

    root = Path(tempfile.mkdtemp(prefix="mnemo-spaces-bench-"))
    was = compaction.worth_it
    if not compact:
        compaction.worth_it = lambda dead, total, cap: False
    try:
        alice, bob, folder = _engines(root)
        memory = alice.remember(_text(0, kb), force=True).memory.id
        alice.spaces.share(memory, "team")
        for i in range(1, n + 1):
            alice.edit(memory, text=_text(i, kb))
            alice.spaces.sync("team")
        size = (folder / lines.LINES / lines.file_name(alice.spaces.id())).stat().st_size
        start = time.perf_counter()
        alice.spaces.sync("team")
        hers = time.perf_counter() - start
        start = time.perf_counter()
        bob.spaces.sync("team")
        his = time.perf_counter() - start
        assert bob.get(memory).text == _text(n, kb)
        alice.close()
        bob.close()
        return size / 2**20, hers, his
    finally:
        compaction.worth_it = was
        shutil.rmtree(root, ignore_errors=True)


def share(count: int, at_once: bool) -> float:
    """Seconds to share `count` memories in the space (their lines written)."""
    root = Path(tempfile.mkdtemp(prefix="mnemo-spaces-bench-"))
    try:
        alice, bob, _ = _engines(root)
        ids = [
            alice.remember(
                f"Service {i} of the platform runs on port {3000 + i}", force=True
            ).memory.id
            for i in range(count)
        ]
        start = time.perf_counter()
        if at_once:
            alice.spaces.share_many(ids, "team")
        else:
            for memory_id in ids:
                alice.spaces.share(memory_id, "team")
        took = time.perf_counter() - start
        assert len(alice.spaces.shared(ids)) == count
        alice.close()
        bob.close()
        return took
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, nargs="+", default=[5, 20, 50])
    parser.add_argument("--kb", type=int, default=200)
    parser.add_argument("--share", type=int, default=200)
    parser.add_argument("--no-record", action="store_true", help="print, do not record")
    args = parser.parse_args()
    os.environ["MNEMO_HOME"] = tempfile.mkdtemp(prefix="mnemo-spaces-home-")  # (never yours)
    rows, shares = [], []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            for n in args.edits:
                for compact in (False, True):
                    size, hers, his = edits(n, args.kb, compact)
                    row = (n, "with" if compact else "without", load, f"{size:.2f}",
                           f"{hers:.2f}", f"{his:.2f}")  # fmt: skip
                    print(row)
                    rows.append(row)
            for at_once in (False, True):
                took = share(args.share, at_once)
                row = (args.share, "one pass" if at_once else "a pass each", load, f"{took:.2f}")
                print(row)
                shares.append(row)
    if args.no_record:
        return
    record(
        "Team spaces: a device's file after many edits",
        ["edits", "compaction", "load", "file (MB)", "her pass (s)", "Bob's pass (s)"],
        rows,
        note=(
            f"One shared memory of {args.kb} KB edited N times by Alice, a pass after each "
            "(`bench/spaces.py`); her file's size, then one more pass of hers and of Bob's. "
            "'without': compaction turned off (every whole copy kept, as before)."
        ),
    )
    record(
        "Team spaces: sharing many memories",
        ["memories", "how", "load", "seconds"],
        shares,
        note=(
            "Alice shares N short memories in a space: one pass for them all "
            "(`Spaces.share_many`, the manager's Share in space) or a pass each (before)."
        ),
    )


if __name__ == "__main__":
    main()
