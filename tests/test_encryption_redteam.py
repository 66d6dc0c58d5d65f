"""What a red team found in encryption at rest (issue 26), each fixed with a test that
failed before: an interrupt after the new file was in place, other names of the file,
clear copies left beside an encrypted database, opening during a switch, tracebacks."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

import pytest

from app.core import paths
from app.core.errors import InputError, NoKeyError
from app.core.storage.db import Database
from app.core.vault import cipher, keys
from tests.conftest import REPO, run_cli

PASSPHRASE = "red team passphrase"


def test_an_interrupt_after_the_new_file_is_in_place_keeps_the_key_that_opens_it(
    word_engine, monkeypatch
):
    """Ctrl+C while the old clear file was being overwritten (after the rename) used to put
    the old key back in the key file: the database then opened with no key at all."""
    word_engine.remember("kept through an interrupt")
    word_engine.close()
    db = paths.database_path()

    def interrupted(fd):
        os.close(fd)
        raise KeyboardInterrupt  # what Python raises on SIGINT, at this exact point

    monkeypatch.setattr(cipher, "_overwrite", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cipher.encrypt(db, "passphrase", PASSPHRASE)
    assert keys.KeyFile.read(db).encrypted
    keys.forget_passphrases()
    with pytest.raises(NoKeyError, match="encrypted with a passphrase"):  # not "missing"
        Database(db)
    keys.remember_passphrase(db, PASSPHRASE)  # the next command, given the passphrase
    again = Database(db)
    try:
        assert again.encrypted
        assert again.query("SELECT count(*) FROM memories") == [(1,)]
    finally:
        again.close()


def test_ctrl_c_during_encrypt_waits_so_an_encrypted_database_always_had_its_key_shown(
    word_engine, tmp_path
):
    """A real SIGINT at spread points of `mnemo encrypt`: either nothing changed, or the
    database is encrypted and the recovery key was printed."""
    for n in range(300):
        word_engine.remember(f"note {n}: " + " ".join(secrets.token_hex(4) for _ in range(60)))
    word_engine.close()
    db = paths.database_path()
    env = {**os.environ, "MNEMO_PASSPHRASE": PASSPHRASE}
    for delay in (0.05, 0.3, 0.5, 0.7, 0.9, 1.2):
        child = subprocess.Popen(
            [sys.executable, "-m", "app", "encrypt", "--passphrase"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(delay)  # (the point is to land anywhere: a spread of times, not a wait)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
        encrypted = keys.KeyFile.read(db).encrypted
        if encrypted:
            assert b"Recovery key" in out, (delay, out)
            keys.forget_passphrases()
            os.environ["MNEMO_PASSPHRASE"] = PASSPHRASE
            try:
                cipher.decrypt(db)
            finally:
                del os.environ["MNEMO_PASSPHRASE"]
        opened = Database(db)
        try:
            assert opened.query("SELECT count(*) FROM memories") == [(300,)]
        finally:
            opened.close()


def test_a_database_with_another_name_is_not_switched_and_the_other_copy_is_untouched(
    word_engine, tmp_path
):
    word_engine.remember("the user's own hard-linked copy")
    word_engine.close()
    db = paths.database_path()
    other = tmp_path / "my-copy.db"
    os.link(db, other)
    before = other.read_bytes()
    with pytest.raises(InputError, match="another name"):
        cipher.encrypt(db, "passphrase", PASSPHRASE)
    assert other.read_bytes() == before and not keys.KeyFile.read(db).encrypted
    os.unlink(other)
    # a symbolic link: the file it points to would have stayed in the clear
    real = tmp_path / "real.db"
    os.replace(db, real)
    db.symlink_to(real)
    with pytest.raises(InputError, match="symbolic link"):
        cipher.encrypt(db, "passphrase", PASSPHRASE)
    assert real.read_bytes()[:16] == b"SQLite format 3\x00"


def test_encrypt_also_encrypts_the_clear_snapshots_and_the_database_kept_by_a_restore(
    word_engine, mnemo_home
):
    word_engine.remember("SNAPMARKER in a snapshot taken before encryption")
    snap = word_engine.vault.backup()
    aside, _ = word_engine.vault.restore_backup(word_engine.vault.check_backup(snap.path))
    assert b"SNAPMARKER" in snap.path.read_bytes() and b"SNAPMARKER" in aside.read_bytes()
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    held = [p for p in mnemo_home.rglob("*") if p.is_file() and b"SNAPMARKER" in p.read_bytes()]
    assert held == []
    assert keys.KeyFile.read(snap.path).encrypted and keys.KeyFile.read(aside).encrypted
    assert word_engine.vault.check_backup(snap.path).counts["memories"] == 1


def test_opening_while_switches_run_never_lands_on_the_file_being_replaced(word_engine):
    """Connections opened over and over while the key is rotated: each one opens (waiting
    while a switch runs), none sees a wrong key, a read-only file or a missing one."""
    word_engine.remember("read while the key changes")
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    os.environ["MNEMO_PASSPHRASE"] = PASSPHRASE
    problems, stop = [], threading.Event()

    def opener():
        while not stop.is_set():
            try:
                db = Database(paths.database_path())
                try:
                    assert db.query("SELECT count(*) FROM memories") == [(1,)]
                finally:
                    db.close()
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                problems.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=opener) for _ in range(2)]
    try:
        word_engine.close()
        for t in threads:
            t.start()
        for _ in range(4):
            cipher.rotate(paths.database_path())
    finally:
        stop.set()
        for t in threads:
            t.join()
        del os.environ["MNEMO_PASSPHRASE"]
    assert problems == []


def test_odd_inputs_are_one_line_each(word_engine, mnemo_home, tmp_path):
    home = {"MNEMO_HOME": str(mnemo_home)}
    word_engine.remember("odd inputs")
    recovery = word_engine.vault.encrypt("passphrase", PASSPHRASE)
    snap = word_engine.vault.backup()
    word_engine.close()
    pw = {**home, "MNEMO_PASSPHRASE": PASSPHRASE}

    def one_line(*args, env=pw) -> str:
        out = run_cli(*args, env=env)
        lines = out.stderr.decode().strip().splitlines()
        assert out.returncode == 1 and len(lines) == 1, (args, out.stderr)
        return lines[0]

    truncated = tmp_path / "cut.db"
    truncated.write_bytes(snap.path.read_bytes()[:8192])
    assert "not a Mnemo database or snapshot" in one_line("restore", str(truncated))
    assert "is the database itself" in one_line("restore", str(paths.database_path()))
    other = keys.recovery_text(keys.new_key())
    (tmp_path / "rk").write_text(other)
    line = one_line("unlock", "--recovery-key-file", str(tmp_path / "rk"))
    assert "that recovery key does not open" in line
    # a key file damaged into parameters scrypt refuses
    key_file = keys.key_file(paths.database_path())
    data = json.loads(key_file.read_text())
    saved = key_file.read_text()
    data["current"]["sealed"]["nonce"] = "AA=="
    key_file.write_text(json.dumps(data))
    assert "damaged" in one_line("list")
    key_file.write_text(saved)
    # a passphrase that is not UTF-8: a line, not a traceback
    assert "does not open" in one_line("list", env={**home, "MNEMO_PASSPHRASE": "\udcff"})
    # no database yet on a new machine: unlock says so
    (tmp_path / "rk").write_text(recovery)
    empty = {"MNEMO_HOME": str(tmp_path / "new-machine"), "MNEMO_PASSPHRASE": PASSPHRASE}
    assert "no database at" in one_line(
        "unlock", "--recovery-key-file", str(tmp_path / "rk"), env=empty
    )
    # global options before `hook`: still the hook (exit 0, nothing on stdout but JSON)
    pf = tmp_path / "pass"
    pf.write_text(PASSPHRASE + "\n")
    hooked = run_cli("--passphrase-file", str(pf), "hook", "prompt", input=b"{}", env=home)
    assert hooked.returncode == 0, hooked.stderr


def test_a_passphrase_from_a_pipe_is_read_once_for_the_whole_command(word_engine, mnemo_home):
    word_engine.remember("a pipe gives its passphrase once")
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    word_engine.close()
    script = f'exec {sys.executable} -m app --passphrase-file <(printf "%s\\n" "$P") backup'
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=REPO,
        env={**os.environ, "MNEMO_HOME": str(mnemo_home), "P": PASSPHRASE},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"Snapshot written (encrypted" in done.stdout


def test_a_fifo_nobody_writes_to_is_not_waited_on_forever(word_engine, mnemo_home, tmp_path):
    word_engine.remember("no writer")
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    word_engine.close()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    out = run_cli("--passphrase-file", str(fifo), "list", env={"MNEMO_HOME": str(mnemo_home)})
    assert out.returncode == 1 and b"is empty" in out.stderr
    assert time.monotonic() - started < 60


def test_rotating_to_a_new_passphrase_takes_it_from_mnemo_new_passphrase(word_engine):
    word_engine.remember("a new passphrase")
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    word_engine.close()
    env = {"MNEMO_PASSPHRASE": PASSPHRASE, "MNEMO_NEW_PASSPHRASE": "the new passphrase"}
    done = run_cli("encrypt", "--rotate", "--passphrase", env=env)
    assert done.returncode == 0, done.stderr
    assert run_cli("list", env={"MNEMO_PASSPHRASE": "the new passphrase"}).returncode == 0
    old = run_cli("list", env={"MNEMO_PASSPHRASE": PASSPHRASE})
    assert old.returncode == 1 and b"does not open" in old.stderr
