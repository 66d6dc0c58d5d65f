"""kill -9 during encrypt, decrypt, rotate and a snapshot, at random points (issue 26): after
every round the database opens with one key, holds every memory and passes its checks."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.storage.db import Database
from app.core.vault import cipher
from tests.conftest import REPO

PASSPHRASE = "kill nine times"
ROUNDS = 52
MEMORIES = 3000

CHILD = """
import sys
from pathlib import Path
from app.core.vault import cipher, snapshot
db, action = Path(sys.argv[1]), sys.argv[2]
print("go", flush=True)
if action == "encrypt":
    cipher.encrypt(db, "passphrase", sys.argv[3])
elif action == "rotate":
    cipher.rotate(db)
elif action == "decrypt":
    cipher.decrypt(db)
else:
    snapshot.take(db, keep=3)
print("done", flush=True)
"""


@pytest.fixture
def filled(word_model, mnemo_home, tmp_path, monkeypatch):
    """A database of MEMORIES memories (a few MB: a switch takes a measurable while)."""
    return _fill(word_model, tmp_path, monkeypatch, MEMORIES)


@pytest.fixture
def small(word_model, mnemo_home, tmp_path, monkeypatch):
    """A database of 300 memories: where a kill lands is chosen, not timed."""
    return _fill(word_model, tmp_path, monkeypatch, 300)


def _fill(word_model, tmp_path, monkeypatch, memories: int):
    monkeypatch.setenv("MNEMO_PASSPHRASE", PASSPHRASE)
    rng = random.Random(26)
    words = "amber basil cedar delta ember fjord garnet harbor iris juniper kelp lumen".split()
    source = tmp_path / "bulk.jsonl"
    with source.open("w", encoding="utf-8") as f:
        for n in range(memories):
            text = f"note {n}: " + " ".join(rng.choice(words) for _ in range(120))
            f.write(json.dumps({"text": text, "title": f"note {n}"}) + "\n")
    engine = Engine(embedder=word_model)
    try:
        engine.import_paths([source])
        engine.backfill()
        assert engine.count() == memories
    finally:
        engine.close()
    return paths.database_path()


# The steps that make a switch durable: a kill -9 at each one of them (strace injects it
# right at the system call, so no window between two steps is left to chance)
DURABLE = "fsync,fdatasync,rename,renameat,renameat2,link,linkat,unlink,unlinkat"


def _strace(*options: str) -> list[str]:
    return ["strace", "-f", "-qq", "-e", f"trace={DURABLE}", *options, "--"]


def _steps(db, action: str, tmp_path) -> dict[str, int]:
    """How many times a full run of `action` makes each durable call (strace counts them)."""
    log = tmp_path / f"{action}.strace"
    finished, _ = _run(db, action, None, _strace("-o", str(log)))
    assert finished
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines():
        name = line.split(None, 1)[-1].split("(", 1)[0]
        if name in DURABLE.split(","):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _run(db, action: str, kill_after: float | None, prefix=()) -> tuple[bool, float]:
    """Run one switch in a child; kill -9 it `kill_after` s after it starts (None: let it
    finish; `prefix`: run it under strace). Whether it finished, and how long it ran."""
    child = subprocess.Popen(
        [*prefix, sys.executable, "-c", CHILD, str(db), action, PASSPHRASE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ},
    )
    if child.stdout.readline() != b"go\n":  # killed on its way in (under strace)
        child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, child.returncode
        return False, 0.0
    started = time.monotonic()
    if kill_after is not None:
        try:
            child.wait(kill_after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
    out, err = child.communicate(timeout=120)
    ran = time.monotonic() - started
    finished = child.returncode == 0 and out.endswith(b"done\n")
    assert finished or child.returncode == -signal.SIGKILL, err.decode()
    return finished, ran


def _opens_whole(db, word_model, memories: int = MEMORIES) -> bool:
    """The database opens (with the key file's current or previous key), holds every
    memory, and passes doctor's checks; whether it is encrypted."""
    database = Database(db)
    try:
        assert database.query("PRAGMA quick_check") == [("ok",)]
        encrypted = database.encrypted
    finally:
        database.close()
    engine = Engine(embedder=word_model)
    try:
        assert engine.count() == memories
        failed = [what for ok, what in engine.health() if not ok]
        assert failed == [], failed
    finally:
        engine.close()
    return encrypted


def test_kill_nine_at_random_points_of_every_switch_leaves_one_key_that_opens_all(
    filled, word_model
):
    db = filled
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    took = {}
    # one full run of each action first: how long a switch takes here
    for action in ("encrypt", "rotate", "snapshot", "decrypt"):
        finished, took[action] = _run(db, action, None)
        assert finished
    encrypted = _opens_whole(db, word_model)
    assert not encrypted
    killed = finished_rounds = 0
    seen = {"encrypt": 0, "rotate": 0, "decrypt": 0, "snapshot": 0}
    for _ in range(ROUNDS):
        action = rng.choice(["rotate", "decrypt", "snapshot"]) if encrypted else "encrypt"
        seen[action] += 1
        finished, _ = _run(db, action, rng.uniform(0, took[action] * 1.3))
        if finished:
            finished_rounds += 1
        else:
            killed += 1
        encrypted = _opens_whole(db, word_model)
        if finished and action in ("encrypt", "rotate"):
            assert encrypted
        if finished and action == "decrypt":
            assert not encrypted
    assert killed >= ROUNDS // 3, (killed, finished_rounds, took)
    assert min(seen.values()) >= 3, seen
    # what a killed switch left behind goes with the next one
    cipher.leftovers(db)
    assert not list(db.parent.glob(".mnemo.db.*"))


def _encrypted(db) -> bool:
    return db.read_bytes()[:16] != b"SQLite format 3\x00"


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace (apt: strace)")
def test_kill_nine_at_each_durable_step_of_every_switch_leaves_one_key_that_opens_all(
    small, word_model, tmp_path
):
    """Every rename and fsync of each switch (the steps whose order makes it safe), and the
    first and last of its other durable calls (SQLite's own journal and WAL syncs)."""
    db = small
    rounds = 0
    for action in ("encrypt", "rotate", "snapshot", "decrypt"):
        wants_plain = action == "encrypt"
        for name, count in _steps(db, action, tmp_path).items():
            every = name.startswith(("rename", "link")) or name == "fsync"
            for n in sorted({1, count} if not every else range(1, count + 1)):
                if _encrypted(db) is wants_plain:  # not the state it starts from
                    assert _run(db, "decrypt" if wants_plain else "encrypt", None)[0]
                inject = _strace(f"-einject={name}:signal=KILL:when={n}")
                finished, _ = _run(db, action, None, inject)
                rounds += 1
                encrypted = _opens_whole(db, word_model, 300)
                if finished:
                    assert encrypted is (action != "decrypt")
    assert rounds >= 30, rounds
