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
from app.core.vault import backups, cipher
db, action = Path(sys.argv[1]), sys.argv[2]
print("go", flush=True)
if action == "encrypt":
    cipher.encrypt(db, "passphrase", sys.argv[3])
elif action == "rotate":
    cipher.rotate(db)
elif action == "decrypt":
    cipher.decrypt(db)
else:
    backups.take(db, keep=3)
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
    for round_ in range(ROUNDS * 2):
        if round_ >= ROUNDS and min(seen.values()) >= 3:
            break  # (on a busy machine kills land later: more rounds until each switch had 3)
        if round_ >= ROUNDS and encrypted and seen["encrypt"] < 3:
            finished, _ = _run(db, "decrypt", None)  # back to plain: an encrypt comes next
            assert finished
            encrypted = _opens_whole(db, word_model)
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


MARK = "ZQXLEFTOVERTEXT"


def _holding_text(folder) -> list[str]:
    """Every file under `folder` whose bytes hold a memory's text in the clear."""
    return [
        str(p)
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and MARK.encode() in p.read_bytes()
    ]


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace (apt: strace)")
def test_no_memory_stays_in_the_clear_after_a_killed_decrypt_once_any_command_runs(
    word_model, mnemo_home, tmp_path, monkeypatch
):
    """Issue 40, 1: a decrypt killed after its clear copy was written (at each rename and
    fsync, and at random moments) left every memory in plain text beside the encrypted
    database, and `stats`, `remember`, `doctor` went on as if nothing were there. The next
    command of any process now overwrites and removes it."""
    monkeypatch.setenv("MNEMO_PASSPHRASE", PASSPHRASE)
    engine = Engine(embedder=word_model)
    try:
        for n in range(200):
            engine.remember(f"{MARK} note {n}: the amber harbor", embed=False)
    finally:
        engine.close()
    db = paths.database_path()
    assert _run(db, "encrypt", None)[0]
    steps = _steps(db, "decrypt", tmp_path)
    if not _encrypted(db):
        assert _run(db, "encrypt", None)[0]
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    points = [("fsync", n) for n in range(1, steps["fsync"] + 1)]
    points += [(name, 1) for name in steps if name.startswith("rename")]
    points += [(None, rng.uniform(0.05, 0.6)) for _ in range(4)]
    left_behind = 0
    for name, when in points:
        if name is None:
            finished, _ = _run(db, "decrypt", when)
        else:
            inject = _strace(f"-einject={name}:signal=KILL:when={when}")
            finished, _ = _run(db, "decrypt", None, inject)
        left_behind += bool(list(db.parent.glob(".mnemo.db.*.switch*")))
        # the next command, in another process
        done = subprocess.run(
            [sys.executable, "-m", "app", "stats"], capture_output=True, cwd=REPO, timeout=120
        )
        assert done.returncode == 0, done.stderr.decode()
        assert not list(db.parent.glob(".mnemo.db.*")), (name, when)
        if _encrypted(db):
            assert _holding_text(mnemo_home) == [], (name, when)
        else:
            assert _run(db, "encrypt", None)[0]
    assert left_behind >= 2, "no round killed the decrypt while its clear copy was there"


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace (apt: strace)")
def test_an_encrypt_killed_before_its_snapshots_were_done_is_finished_by_the_next_command(
    word_model, mnemo_home, tmp_path, monkeypatch
):
    """Issue 40, 1: `encrypt` encrypts the clear snapshots after the database; killed in
    between (at each rename), the snapshots stayed in the clear for good."""
    monkeypatch.setenv("MNEMO_PASSPHRASE", PASSPHRASE)
    engine = Engine(embedder=word_model)
    try:
        for n in range(100):
            engine.remember(f"{MARK} note {n}: the cedar fjord", embed=False)
    finally:
        engine.close()
    db = paths.database_path()
    assert _run(db, "snapshot", None)[0]
    steps = _steps(db, "encrypt", tmp_path)
    killed_between = 0
    for n in range(1, steps["rename"] + 1):
        if _encrypted(db):
            assert _run(db, "decrypt", None)[0]
            for old in (db.parent / "backups").glob("mnemo-*"):
                old.unlink()
            assert _run(db, "snapshot", None)[0]  # in the clear, like the database
        inject = _strace(f"-einject=rename:signal=KILL:when={n}")
        finished, _ = _run(db, "encrypt", None, inject)
        assert not finished
        if _encrypted(db) and _holding_text(db.parent / "backups"):
            killed_between += 1
        done = subprocess.run(
            [sys.executable, "-m", "app", "stats"], capture_output=True, cwd=REPO, timeout=120
        )
        assert done.returncode == 0, done.stderr.decode()
        if _encrypted(db):
            assert _holding_text(mnemo_home) == [], n
            assert not cipher.encrypting_mark(db).exists()
    assert killed_between >= 1, "no kill landed between the database and its snapshots"


def test_an_open_by_another_process_during_encrypt_leaves_its_mark(word_model, mnemo_home):
    """Review of issue 40: `encrypt` put up its mark before it took the hand-off lock; an
    open in that moment (any process) removed the mark as a dead encrypt's, and a kill
    after that left the snapshots in the clear for good."""
    import threading

    engine = Engine(embedder=word_model)
    engine.remember("A note before the encryption.", embed=False)
    engine.close()
    db = paths.database_path()
    entered, go_on = threading.Event(), threading.Event()
    real = cipher.replace

    def slow_replace(*args, **kwargs):
        entered.set()
        go_on.wait(30)
        return real(*args, **kwargs)

    cipher.replace = slow_replace
    try:
        worker = threading.Thread(target=cipher.encrypt, args=(db, "passphrase", PASSPHRASE))
        worker.start()
        assert entered.wait(30)
        cipher.clean_after_crash(db)  # what any other process's open does
        assert cipher.encrypting_mark(db).exists()
        go_on.set()
        worker.join(60)
    finally:
        cipher.replace = real
        go_on.set()
    assert not cipher.encrypting_mark(db).exists()  # done: taken down by encrypt itself
