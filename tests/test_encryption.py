"""Encryption at rest (issue 26, ADR 0014): the real cipher (apsw-sqlite3mc), a real Secret
Service (gnome-keyring on a private D-Bus, tests/secret_service.py) and the passphrase path,
through the CLI in real subprocesses and the Engine in-process."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.errors import InputError, KeyringLockedError, NoKeyError, WrongKeyError
from app.core.runner import Runner
from app.core.vault import keys
from tests.conftest import REPO, run_cli, wait
from tests.secret_service import SKIP_REASON, has_secret_service, secret_service

PASSPHRASE = "correct horse battery"


def _marker() -> str:
    return "ZQX" + secrets.token_hex(6).upper()


def _files_holding(marker: str, *folders: Path) -> list[str]:
    """Every file under `folders` whose raw bytes hold the marker (UTF-8 or UTF-16)."""
    needles = [marker.encode(), marker.encode("utf-16-le")]
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if any(n in data for n in needles):
                    found.append(str(path))
    return found


def _fill(engine: Engine, marker: str) -> list[str]:
    ids = []
    for n, text in enumerate(
        [
            f"{marker} the spare key of the flat is under the blue flower pot",
            f"{marker} Dr Okafor said to take the tablets with food, twice a day",
            f"{marker} the quarterly numbers go to Ingrid before the board meeting",
        ]
    ):
        result = engine.remember(
            text,
            title=f"{marker} title {n}",
            tags=f"{marker.lower()}tag,private",
            project=f"{marker}-project",
            source=f"{marker}-source",
            reasoning=f"{marker} because",
            references=f"https://example.org/{marker}",
        )
        ids.append(result.memory.id)
    return ids


def test_encrypted_database_and_everything_beside_it_hold_no_memory_content(
    engine, mnemo_home, monkeypatch
):
    """A marker in every field is in no file under MNEMO_HOME after encrypt, remember,
    recall, backfill, a snapshot and a close (the vector copy written before is gone)."""
    from app.core.search import vectors as vector_module

    monkeypatch.setattr(vector_module, "QUANTIZE_ABOVE", 0)  # a copy for four memories
    marker = _marker()
    _fill(engine, marker)
    engine.close()  # writes the memory-mapped vector copy beside the database
    vectors = paths.database_path().with_name("mnemo.db.vectors")
    assert any(vectors.iterdir()), "the plain database keeps a vector copy"
    (clear,) = vectors.glob("*.q8.npy")
    first_row = np.load(clear, mmap_mode="r")[0].tobytes()
    assert _files_holding(marker, mnemo_home), "the marker is findable before (the test works)"

    engine = Engine(embedder=engine.embedder)
    recovery = engine.vault.encrypt("passphrase", PASSPHRASE)
    assert engine.vault.encrypted
    keys.remember_passphrase(paths.database_path(), PASSPHRASE)
    engine.remember(f"{marker} added after, with its own title", title=f"{marker} late")
    hits = engine.recall("where is the spare key of the flat").results
    assert hits and marker in hits[0].memory.text
    engine.backfill()
    engine.vault.backup()
    engine.close()

    assert _files_holding(marker, mnemo_home) == []
    # the vector copy is sealed: no clear vector file, and its bytes hold no vector row
    assert not list(vectors.glob("*.q8.npy")), "no clear vector copy beside an encrypted one"
    assert not list(vectors.glob("*.scale.npy"))
    (sealed,) = vectors.glob("*.q8.sealed")
    assert first_row[:32] not in sealed.read_bytes()
    assert len(recovery.split("-")) == 11
    again = Engine(embedder=engine.embedder)
    try:
        assert again.vault.encrypted and again.count() == 4
        assert again.vector_index().loaded_from == "cache"  # the sealed copy, unsealed
    finally:
        again.close()
    assert _files_holding(marker, mnemo_home) == []


def test_encrypt_rotate_decrypt_keep_every_memory_and_the_old_key_no_longer_opens(
    word_engine, mnemo_home
):
    ids = _fill(word_engine, "ROUND")
    before = {m.id: (m.text, m.title, m.tags) for m in word_engine.listing(limit=10)}
    db_path = paths.database_path()

    first = keys.parse_recovery(word_engine.vault.encrypt("passphrase", PASSPHRASE))
    keys.remember_passphrase(db_path, PASSPHRASE)
    second = keys.parse_recovery(word_engine.vault.rotate_key())
    assert first != second
    assert {m.id: (m.text, m.title, m.tags) for m in word_engine.listing(limit=10)} == before
    with pytest.raises(WrongKeyError):
        Engine.unlock(keys.recovery_text(first), "passphrase", PASSPHRASE)
    word_engine.vault.decrypt()
    assert not word_engine.vault.encrypted
    assert db_path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert sorted(m.id for m in word_engine.listing(limit=10)) == sorted(ids)
    assert {m.id: (m.text, m.title, m.tags) for m in word_engine.listing(limit=10)} == before


def test_each_missing_or_wrong_key_is_its_own_one_line_message(mnemo_home, tmp_path):
    """CLI in subprocesses: no passphrase, a wrong one, a lost key file, a newer key file."""
    home_env = {"MNEMO_HOME": str(mnemo_home)}
    assert run_cli("remember", "a note to lock away", env=home_env).returncode == 0
    done = run_cli("encrypt", "--passphrase", env={**home_env, "MNEMO_PASSPHRASE": PASSPHRASE})
    assert done.returncode == 0, done.stderr
    recovery = next(
        line.strip() for line in done.stdout.decode().splitlines() if line.count("-") == 10
    )

    def error(env: dict) -> str:
        out = run_cli("list", env={**home_env, **env})
        assert out.returncode == 1 and out.stdout == b""
        lines = out.stderr.decode().strip().splitlines()
        assert len(lines) == 1, lines  # one line, no traceback
        return lines[0]

    assert "none was given: set MNEMO_PASSPHRASE" in error({})
    assert "the passphrase does not open the database" in error({"MNEMO_PASSPHRASE": "nope"})
    empty = tmp_path / "empty"
    empty.write_text("")
    assert "is empty" in error({"MNEMO_PASSPHRASE_FILE": str(empty)})

    key_file = keys.key_file(paths.database_path())
    saved = key_file.read_bytes()
    key_file.unlink()  # a new machine: the database copied without its key file
    assert "its key file mnemo.db.key is missing: on a new machine, run mnemo unlock" in error({})
    data = json.loads(saved)
    key_file.write_text(json.dumps({**data, "version": 99}))
    assert "encrypted by a newer Mnemo" in error({"MNEMO_PASSPHRASE": PASSPHRASE})
    key_file.unlink()

    # The recovery key opens it again; sealed by a new passphrase this time
    rec = tmp_path / "recovery.txt"
    rec.write_text(recovery + "\n")
    unlocked = run_cli(
        "unlock",
        "--recovery-key-file",
        str(rec),
        "--passphrase",
        env={**home_env, "MNEMO_PASSPHRASE": "a brand new one"},
    )
    assert unlocked.returncode == 0, unlocked.stderr
    listed = run_cli("list", env={**home_env, "MNEMO_PASSPHRASE": "a brand new one"})
    assert b"a note to lock away" in listed.stdout
    rec.write_text(recovery.replace(recovery[3], "A" if recovery[3] != "A" else "B") + "\n")
    typo = run_cli("unlock", "--recovery-key-file", str(rec), env=home_env)
    assert typo.returncode == 1 and b"not a Mnemo recovery key" in typo.stderr


def test_exports_and_the_mirror_are_refused_while_encrypted_unless_the_user_says_so(
    word_engine, tmp_path
):
    _fill(word_engine, "EXPORTED")
    mirror = tmp_path / "mirror"
    word_engine.apply_settings({"mirror_dir": str(mirror)})
    with pytest.raises(InputError, match="turn it off first"):
        word_engine.vault.encrypt("passphrase", PASSPHRASE)
    assert not word_engine.vault.encrypted
    word_engine.apply_settings({"mirror_dir": ""})
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    keys.remember_passphrase(paths.database_path(), PASSPHRASE)
    with pytest.raises(InputError, match="mirror would write every memory in the clear"):
        word_engine.apply_settings({"mirror_dir": str(mirror)})
    with pytest.raises(InputError, match="export --plain"):
        word_engine.export_to(tmp_path / "out.jsonl")
    with pytest.raises(InputError, match="export --plain"):
        list(word_engine.export())
    assert not (tmp_path / "out.jsonl").exists()
    assert word_engine.export_to(tmp_path / "out.jsonl", plain=True) == 3


def test_a_snapshot_restores_with_counts_and_keeps_the_database_before(word_engine, mnemo_home):
    ids = _fill(word_engine, "SNAP")
    word_engine.vault.encrypt("passphrase", PASSPHRASE)
    keys.remember_passphrase(paths.database_path(), PASSPHRASE)
    snap = word_engine.vault.backup()
    assert snap.path.read_bytes()[:16] != b"SQLite format 3\x00"  # encrypted like the database
    word_engine.forget(ids[:2])
    word_engine.remember("written after the snapshot")
    second = word_engine.vault.rotate_key()  # the snapshot keeps the key of its time
    checked = word_engine.vault.check_backup(snap.path)
    assert checked.counts == {"memories": 3, "trashed": 0}
    aside, found = word_engine.vault.restore_backup(checked)
    assert found == {"memories": 3, "trashed": 0}
    assert sorted(m.id for m in word_engine.listing(limit=10)) == sorted(ids)
    # restored under the current key: the new recovery key opens it
    Engine.unlock(second, "passphrase", PASSPHRASE)
    before = Engine(database=aside, embedder=word_engine.embedder)
    try:
        assert before.count() == 2  # the database before the restore, kept whole
    finally:
        before.close()
    damaged = mnemo_home / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    with pytest.raises(InputError):
        word_engine.vault.check_backup(damaged)


def test_an_open_runner_lets_go_while_another_process_encrypts_and_reopens_after(
    word_model, mnemo_home
):
    """The tray app, an MCP server and the hook helper each hold an Engine on a Runner:
    `mnemo encrypt` in another process asks them to let go, and their next call works on
    the encrypted file (they have the passphrase from the environment)."""
    engine = Engine(embedder=word_model)
    engine.remember("held open by a long-lived process")
    runner = Runner(lambda: engine, load_model=False)
    runner.poll_s = 0.2
    runner.start()
    assert runner.submit(lambda e: e.count()).result(timeout=30) == 1
    os.environ["MNEMO_PASSPHRASE"] = PASSPHRASE  # (the fixture removes it again)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "app", "encrypt", "--passphrase"],
            capture_output=True,
            cwd=REPO,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert runner.submit(lambda e: e.count()).result(timeout=30) == 1
        assert runner.submit(lambda e: e.vault.encrypted).result(timeout=30)
        runner.submit(lambda e: e.remember("written after the switch")).result(timeout=30)
    finally:
        runner.stop()
        engine.close()
    out = run_cli("list", env={"MNEMO_PASSPHRASE": PASSPHRASE})
    assert b"written after the switch" in out.stdout


def test_a_switch_waits_for_a_process_that_does_not_let_go_and_changes_nothing(
    word_engine, monkeypatch
):
    """A connection that is not a Runner's (another program, an old Mnemo) keeps the file
    open: the switch gives up with who holds it, and the file is as it was."""
    from app.core.vault import cipher

    word_engine.remember("still plain")
    monkeypatch.setattr(cipher, "EXCLUSIVE_WAIT_S", 1.0)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import apsw,sys,time; c=apsw.Connection(sys.argv[1]); "
            "c.execute('select count(*) from memories').fetchall(); print('open', flush=True); "
            "time.sleep(60)",
            str(paths.database_path()),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline() == b"open\n"
        with pytest.raises(Exception, match="still has the database open"):
            word_engine.vault.encrypt("passphrase", PASSPHRASE)
    finally:
        holder.kill()
        holder.wait()
    assert not word_engine.vault.encrypted
    assert word_engine.count() == 1
    assert paths.database_path().read_bytes()[:16] == b"SQLite format 3\x00"
    assert not keys.KeyFile.read(paths.database_path()).encrypted


@pytest.mark.skipif(not has_secret_service(), reason=SKIP_REASON)
def test_the_key_lives_in_a_real_secret_service_and_a_locked_one_says_so(mnemo_home, tmp_path):
    home_env = {"MNEMO_HOME": str(mnemo_home)}
    assert run_cli("remember", "kept by gnome-keyring", env=home_env).returncode == 0
    with secret_service(tmp_path) as env:
        done = run_cli("encrypt", env={**home_env, **env})
        assert done.returncode == 0, done.stderr
        assert b"kept in the OS keyring" in done.stdout
        listed = run_cli("list", env={**home_env, **env})
        assert b"kept by gnome-keyring" in listed.stdout, listed.stderr
        entry = keys.KeyFile.read(paths.database_path()).current
        assert entry.store == "keyring" and entry.sealed is None
        assert b"kept by" not in keys.key_file(paths.database_path()).read_bytes()
        # no D-Bus: one line naming what is missing and the way out
        no_bus = {k: v for k, v in env.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
        out = run_cli("list", env={**home_env, **no_bus})
        assert out.returncode == 1
        assert b"no D-Bus session" in out.stderr and b"mnemo unlock" in out.stderr
    with secret_service(tmp_path / "locked", unlocked=False) as env:
        # a locked keyring (another keyring here: the key is not in it, but it is locked)
        out = run_cli("list", env={**home_env, **env})
        assert out.returncode == 1
        assert b"the keyring is locked" in out.stderr, out.stderr


@pytest.mark.skipif(not has_secret_service(), reason=SKIP_REASON)
def test_a_locked_keyring_is_a_locked_error_in_process(mnemo_home, tmp_path, monkeypatch):
    with secret_service(tmp_path, unlocked=False) as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        import keyring
        from keyring.backends import SecretService

        keyring.set_keyring(SecretService.Keyring())  # as keyring picks it with this bus
        try:
            with pytest.raises(KeyringLockedError, match="keyring is locked"):
                keys.from_keyring("0" * 16)
        finally:
            keyring.core._keyring_backend = None


def test_a_keyring_that_would_keep_the_key_in_a_file_is_refused(monkeypatch):
    import keyring
    from keyring.backends import fail

    class PlainFile(fail.Keyring):  # stands for keyrings.alt's file backends
        priority = 1

    PlainFile.__module__ = "keyrings.alt.file"
    monkeypatch.setattr(keyring, "get_keyring", lambda: PlainFile())
    backend, why = keys.secret_store()
    assert backend is None and "keyrings.alt.file" in why
    with pytest.raises(NoKeyError):
        keys.store_in_keyring(keys.new_key())


def test_recovery_text_survives_typos_of_case_and_spacing_and_catches_others():
    key = keys.new_key()
    text = keys.recovery_text(key)
    assert keys.parse_recovery(text.lower().replace("-", " ")) == key
    wrong = text[:20] + ("A" if text[20] != "A" else "B") + text[21:]
    with pytest.raises(InputError):
        keys.parse_recovery(wrong)


def test_two_switches_at_once_one_is_refused(word_engine):
    from app.core.vault import cipher, handoff

    word_engine.remember("one at a time")
    word_engine.close()
    db_path = paths.database_path()
    entered, leave = threading.Event(), threading.Event()

    def hold():
        with handoff.hold(db_path, "restore"):
            entered.set()
            leave.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        wait(entered.is_set, 10, "the first switch")
        with pytest.raises(Exception, match="already switching the database"):
            cipher.encrypt(db_path, "passphrase", PASSPHRASE)
    finally:
        leave.set()
        t.join()
    cipher.encrypt(db_path, "passphrase", PASSPHRASE)
    assert keys.KeyFile.read(db_path).encrypted


def test_the_desktop_app_on_an_encrypted_database_writes_no_memory_content_anywhere(
    engine, mnemo_home
):
    """A marker in every field; the real app started and stopped (offscreen) with the
    passphrase in its environment, a remember and a recall by the CLI while it runs: no file
    under MNEMO_HOME (data, logs, cache, settings, state) holds the marker afterwards."""
    marker = _marker()
    _fill(engine, marker)
    engine.vault.encrypt("passphrase", PASSPHRASE)
    engine.close()
    env = {
        **os.environ,
        "MNEMO_HOME": str(mnemo_home),
        "MNEMO_PASSPHRASE": PASSPHRASE,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(mnemo_home / "xdg-data"),
        "XDG_CONFIG_HOME": str(mnemo_home / "xdg-config"),
    }
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "MNEMO_MODEL"):
        env.pop(name, None)

    def status() -> dict | None:
        run = subprocess.run(
            [sys.executable, "-m", "app", "status"], cwd=REPO, env=env, capture_output=True
        )
        return json.loads(run.stdout) if run.returncode == 0 else None

    app = subprocess.Popen(
        [sys.executable, "-m", "app", "gui"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait(lambda: (status() or {}).get("model") == "ready", 60, "the app's model")
        cli = {k: env[k] for k in ("MNEMO_HOME", "MNEMO_PASSPHRASE")}
        stored = run_cli("remember", f"{marker} told to the running app", env=cli)
        assert stored.returncode == 0, stored.stderr
        found = run_cli("recall", "boiler tablets spare key", env=cli)
        assert marker.encode() in found.stdout
        wait(lambda: (status() or {}).get("backfill", [0, 0])[1] == 0, 60, "the backfill")
    finally:
        app.terminate()
        assert app.wait(30) == 0
    assert (mnemo_home / "state").exists() or (mnemo_home / "log").exists()
    assert _files_holding(marker, mnemo_home) == []


def _mcp(env: dict):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "app", "mcp"], cwd=REPO, env=env
    )


def _tool_text(result) -> str:
    return result.content[0].text


def test_an_agents_mcp_server_lets_go_for_encrypt_and_answers_after(mnemo_home):
    """A real MCP server (stdio, the SDK's client) holds the database open; `mnemo encrypt`
    in another process asks it to let go; its next tool call reads the encrypted file."""
    import asyncio

    from mcp import Client

    env = {"MNEMO_HOME": str(mnemo_home), "MNEMO_PASSPHRASE": PASSPHRASE}

    async def session() -> None:
        async with Client(_mcp(env)) as client:
            stored = await client.call_tool(
                "store_memory",
                {
                    "name": "Pin the CI image",
                    "description": "Pin the CI base image by digest.",
                    "reasoning": "A moving tag broke the release build twice.",
                    "category": "patterns",
                },
            )
            assert not stored.is_error, _tool_text(stored)
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "app", "encrypt", "--passphrase"],
                capture_output=True,
                cwd=REPO,
                env={**os.environ, **env},
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            found = await client.call_tool("search_memory", {"query": "CI base image digest"})
            assert not found.is_error, _tool_text(found)
            assert "Pin the CI" in _tool_text(found)

    asyncio.run(session())
    assert keys.KeyFile.read(paths.database_path()).encrypted


@pytest.mark.skipif(not has_secret_service(), reason=SKIP_REASON)
def test_an_mcp_server_says_why_it_is_locked_and_opens_once_unlocked(mnemo_home, tmp_path):
    """The key is not in this keyring (a new machine): each tool call fails with one line
    saying so; `mnemo unlock` with the recovery key puts it there and the same server
    answers the next call, without a restart."""
    import asyncio

    from mcp import Client

    home_env = {"MNEMO_HOME": str(mnemo_home)}
    assert (
        run_cli("remember", "my locker is number 4711 in the basement", env=home_env).returncode
        == 0
    )
    done = run_cli("encrypt", "--passphrase", env={**home_env, "MNEMO_PASSPHRASE": PASSPHRASE})
    recovery = next(
        line.strip() for line in done.stdout.decode().splitlines() if line.count("-") == 10
    )
    keys.key_file(paths.database_path()).unlink()  # copied to a machine without its key
    (tmp_path / "rk").write_text(recovery)
    with secret_service(tmp_path) as bus:
        env = {**home_env, **bus}

        async def session() -> None:
            async with Client(_mcp(env)) as client:
                failed = await client.call_tool("search_memory", {"query": "which locker"})
                assert failed.is_error
                assert "mnemo unlock" in _tool_text(failed)
                assert "\n" not in _tool_text(failed).strip()
                unlocked = await asyncio.to_thread(
                    run_cli, "unlock", "--recovery-key-file", str(tmp_path / "rk"), env=env
                )
                assert unlocked.returncode == 0, unlocked.stderr
                assert b"OS keyring" in unlocked.stdout
                found = await client.call_tool("search_memory", {"query": "which locker"})
                assert not found.is_error, _tool_text(found)
                assert "4711" in _tool_text(found)

        asyncio.run(session())


def test_every_file_of_encryption_and_snapshots_is_ours_alone_whatever_the_umask(
    word_engine, mnemo_home
):
    """Key file, marks, locks, snapshots, their key files and the database kept aside by a
    restore: 0600, in 0700 folders, under umask 000 (a second local user reads nothing)."""
    old = os.umask(0)
    try:
        word_engine.remember("private under any umask")
        word_engine.vault.encrypt("passphrase", PASSPHRASE)
        snap = word_engine.vault.backup()
        word_engine.vault.restore_backup(word_engine.vault.check_backup(snap.path))
        word_engine.vault.rotate_key()
    finally:
        os.umask(old)
    seen = []
    for path in mnemo_home.rglob("*"):  # (MNEMO_HOME itself is the user's folder)
        mode = path.stat().st_mode & 0o777
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        else:
            assert mode == 0o600, (path, oct(mode))
        seen.append(path.name)
    for name in ("mnemo.db.key", "mnemo.db.switch-lock", snap.path.name, snap.path.name + ".key"):
        assert name in seen, (name, seen)
    assert any(n.startswith("mnemo.db.before-restore-") for n in seen), seen
    assert any(n.startswith("mnemo.db.before-restore-") and n.endswith(".key") for n in seen)


def test_the_sealed_vector_copy_is_rebuilt_after_a_new_key_or_damage_and_doctor_checks_it(
    engine, mnemo_home, monkeypatch
):
    from app.core.search import vectors as vector_module

    monkeypatch.setattr(vector_module, "QUANTIZE_ABOVE", 0)  # a copy for four memories
    _fill(engine, "SEALED")
    engine.vault.encrypt("passphrase", PASSPHRASE)
    engine.close()

    def reopen() -> tuple[str, list]:
        again = Engine(embedder=engine.embedder)
        try:
            source = again.vector_index().loaded_from
            return source, [what for ok, what in again.health() if not ok]
        finally:
            again.close()

    assert reopen() == ("database", [])  # read once from the database, then sealed
    assert reopen() == ("cache", [])
    rotating = Engine(embedder=engine.embedder)
    rotating.vault.rotate_key()
    rotating.close()
    assert reopen()[0] == "database"  # the old key's copy does not open: rebuilt
    assert reopen()[0] == "cache"
    vectors = paths.database_path().with_name("mnemo.db.vectors")
    (sealed,) = vectors.glob("*.q8.sealed")
    data = bytearray(sealed.read_bytes())
    data[len(data) // 2] ^= 0xFF
    sealed.write_bytes(bytes(data))
    assert reopen()[0] == "database"  # a changed byte: its tag fails, rebuilt


def test_the_periodic_snapshot_comes_when_due_and_only_after_a_change(word_engine, mnemo_home):
    word_engine.remember("snapshotted daily")
    word_engine.apply_settings({"backup_every_hours": 1})
    first = word_engine.vault.backup_if_due()
    assert first is not None and len(word_engine.vault.backups()) == 1
    assert word_engine.vault.backup_if_due() is None  # younger than an hour
    old = time.time() - 7200  # the snapshot is two hours old now, and nothing was written
    os.utime(first.path, (old, old))
    renamed = first.path.with_name(
        "mnemo-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime(old)) + ".000000Z.db"
    )
    os.replace(first.path, renamed)
    os.replace(keys.key_file(first.path), keys.key_file(renamed))
    for part in paths.database_path().parent.glob("mnemo.db*"):
        if part.is_file():
            os.utime(part, (old - 60, old - 60))
    assert word_engine.vault.backup_if_due() is None  # nothing changed since: not taken again
    word_engine.remember("a change")
    assert word_engine.vault.backup_if_due() is not None
    assert len(word_engine.vault.backups()) == 2
