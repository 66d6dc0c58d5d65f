"""Encrypted sync folders (issue 27): with a sync key, no memory text, field or id is in
the folder's files (logs, snapshots); a device without the key, or with another, is
refused in one line and nothing changes; with it, it converges; a changed byte is a
skipped line, reported; an encrypted database encrypts its sync files by default. Real
engines and files; the word model."""

from __future__ import annotations

import pytest

from app.core.engine import Engine
from app.core.errors import InputError, NotFoundError
from app.core.settings import Settings
from tests.conftest import run_cli
from tests.sync_devices import approve_waiting

MARKER = "Zanzibar-quokka-7731 lives in the attic."


def _device(tmp_path, name, word_model) -> Engine:
    return Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)


def _folder_bytes(folder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_a_sealed_folder_holds_no_memory_and_opens_only_with_its_key(tmp_path, word_model):
    folder = tmp_path / "shared"
    laptop = _device(tmp_path, "laptop", word_model)
    kept = laptop.remember(MARKER, tags=["quokka-tag"], embed=False).memory
    laptop.sync.init(str(folder), "laptop", encrypt=True)
    laptop.sync.compact()
    key = laptop.sync.key()
    assert key and laptop.sync.status()["sealed"]
    raw = _folder_bytes(folder)
    for secret in (b"Zanzibar", b"quokka", kept.id.encode()):
        assert secret not in raw  # not the text, a tag, nor the id (a hash of the text)

    desktop = _device(tmp_path, "desktop", word_model)
    with pytest.raises(InputError, match="--key"):
        desktop.sync.init(str(folder), "desktop")
    other = laptop.sync.key().replace(key[:5], "AAAAA")
    with pytest.raises(InputError):
        desktop.sync.init(str(folder), "desktop", key=other)
    assert not desktop.sync.configured() and desktop.count() == 0  # nothing changed
    desktop.sync.init(str(folder), "desktop", key=key)
    assert desktop.get(kept.id).text == MARKER
    # the desktop's own writes are sealed too, and reach the laptop
    note = desktop.remember("A second note from the desktop.", embed=False).memory
    desktop.sync.now()
    approve_waiting(laptop)
    laptop.sync.now()
    assert laptop.get(note.id).text == "A second note from the desktop."
    assert b"second note" not in _folder_bytes(folder)
    laptop.close()
    desktop.close()


def test_a_changed_byte_is_a_skipped_line_and_the_rest_arrives(tmp_path, word_model):
    folder = tmp_path / "shared"
    laptop = _device(tmp_path, "laptop", word_model)
    first = laptop.remember("The first of two notes.", embed=False).memory
    laptop.sync.init(str(folder), "laptop", encrypt=True)
    second = laptop.remember("The second of two notes.", embed=False).memory
    laptop.sync.now()
    log = next(folder.rglob("ops-*.jsonl"))
    lines = log.read_bytes().splitlines(keepends=True)
    tampered = bytearray(lines[0])
    at = tampered.index(b'"sealed":') + 20  # (inside its base64, whatever the layout)
    tampered[at] = ord("A") if tampered[at] != ord("A") else ord("B")
    log.write_bytes(bytes(tampered) + b"".join(lines[1:]))
    desktop = _device(tmp_path, "desktop", word_model)
    desktop.sync.init(str(folder), "desktop", key=laptop.sync.key())
    problems = [p["what"] for p in desktop.sync.status()["problems"]]
    # (the signature over the sealed line no longer verifies: skipped before it is opened)
    assert any("does not open" in p or "not signed by" in p for p in problems)
    assert desktop.get(second.id).text == "The second of two notes."
    with pytest.raises(NotFoundError):
        desktop.get(first.id)  # its put was the changed line
    laptop.close()
    desktop.close()


def test_an_encrypted_database_encrypts_its_sync_files_and_the_cli_shows_the_key(
    tmp_path, mnemo_home
):
    env = {"MNEMO_PASSPHRASE": "a passphrase for sync"}
    assert run_cli("remember", MARKER, env=env).returncode == 0
    assert run_cli("encrypt", "--passphrase", env=env).returncode == 0
    folder = tmp_path / "shared"
    done = run_cli("sync", "init", str(folder), "--name", "laptop", "--no-embed", env=env)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert "encrypted" in out
    key = run_cli("sync", "key", env=env).stdout.decode().strip()
    assert key and key in out and key.count("-") >= 10
    assert b"Zanzibar" not in _folder_bytes(folder)
    # a plain folder from an encrypted database needs --plain
    plain = run_cli("sync", "init", str(tmp_path / "other"), "--no-embed", env=env)
    assert plain.returncode == 0  # a new folder: encrypted by default, no question
    assert "not encrypted" not in plain.stdout.decode()


def test_encrypting_says_the_plain_sync_folder_still_holds_every_memory(tmp_path, mnemo_home):
    """Issue 40, 5: after `encrypt`, the old plain sync folder still held every memory in
    the clear and nothing said so: not `encrypt`, not the refusal to sync there, not the
    move to a new encrypted folder."""
    env = {"MNEMO_PASSPHRASE": "a passphrase for sync"}
    assert run_cli("remember", MARKER, env=env).returncode == 0
    old = tmp_path / "plain"
    assert run_cli("sync", "init", str(old), "--no-embed", env=env).returncode == 0
    done = run_cli("encrypt", "--passphrase", env=env)
    assert done.returncode == 0
    assert f"the sync folder {old} still holds your memories in the clear" in (done.stderr.decode())
    refused = run_cli("sync", "now", "--no-embed", env=env)
    assert refused.returncode == 1
    assert f"{old} already holds what was written there in the clear" in (refused.stderr.decode())
    moved = run_cli("sync", "init", str(tmp_path / "sealed"), "--no-embed", env=env)
    assert moved.returncode == 0, moved.stderr.decode()
    assert f"the sync folder {old} still holds your memories in the clear" in (
        moved.stderr.decode()
    )
