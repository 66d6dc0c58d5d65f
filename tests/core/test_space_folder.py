"""A space's folder on disk (issue 45, ADR 0026): one file of signed events per device,
read as data. Whatever someone planted there is skipped and said once, and the rest is
read; and this device's epoch keys are kept in its database, encrypted with it when it is.
Real files, real keys, a real encrypted database."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.core import paths
from app.core.engine import Engine
from app.core.errors import InputError
from app.core.space import keys
from app.core.space.folder import SpaceFolder, file_name
from app.core.space.membership import Record
from app.core.vault import keys as vault_keys

ALICE, BOB, MALLORY = (keys.DeviceKey.new() for _ in range(3))


@pytest.fixture
def shared(tmp_path) -> tuple[SpaceFolder, Record]:
    """Alice's space with Bob admitted, each one's events in its own file of the folder."""
    record, _ = Record.create(ALICE, "team", "alice")
    record.admit(ALICE, BOB.public, "bob")
    folder = SpaceFolder(SpaceFolder.check(tmp_path / "team"))
    folder.prepare({"mnemo_space": 1, "id": record.space})
    folder.write_own(ALICE.public, list(record.events.values()))
    return folder, record


def named(record: Record) -> dict[str, list[str]]:
    """Each person's devices, by the name Alice opens for them."""
    names = record.names(ALICE)
    return {names[p]: ds for p, ds in record.fold().persons().items()}


def read(folder: SpaceFolder, record: Record) -> tuple[Record, list[str]]:
    fresh = Record(record.space, record.root)
    return fresh, folder.read(fresh).problems


def test_each_device_writes_one_private_file_and_another_device_reads_it(shared):
    folder, record = shared
    (path,) = (folder.root / "members").iterdir()
    assert path.name == file_name(ALICE.public) and len(path.stem) == 64
    if os.name == "posix":
        assert path.stat().st_mode & 0o777 == 0o600
    fresh, problems = read(folder, record)
    assert problems == [] and set(fresh.events) == set(record.events)
    assert named(fresh) == {"alice": [ALICE.public], "bob": [BOB.public]}


def test_planted_lines_are_skipped_and_said_once_and_the_rest_is_read(shared):
    folder, record = shared
    members = folder.root / "members"
    alices = members / file_name(ALICE.public)
    event = next(iter(record.events.values()))
    # GIVEN, in Alice's file: a cut line, a line of Bob's, an unsigned one, another space's
    unsigned = {k: v for k, v in event.items() if k != "sig"}
    bobs = BOB.sign({**unsigned, "author": BOB.public}, b"mnemo space event\0")
    other = {**event, "space": "0" * 32}
    with alices.open("a") as f:
        for line in ('{"v": 1, "spa', json.dumps(bobs), json.dumps(unsigned), json.dumps(other)):
            f.write(line + "\n")
    # a conflict copy a folder sync made (read too), a note and a link (neither opened)
    conflict = members / (file_name(BOB.public)[:-6] + ".sync-conflict-20261129-1.jsonl")
    conflict.write_text(json.dumps(MALLORY.sign({"v": 1}, b"x")) + "\n")
    (members / "README.txt").write_text("not ours")
    (members / file_name(MALLORY.public)).symlink_to("/etc/passwd")
    # WHEN the folder is read
    fresh, problems = read(folder, record)
    # THEN each bad line is said once, with its file and line, and the record is whole
    whys = [p.split(": ", 1)[1] for p in problems]
    assert sorted(whys) == sorted(
        [
            "not JSON, skipped",
            "written by another device than the file's, skipped",
            "an event not signed by the device it names, skipped",
            "an event of another space, skipped",
            "written by another device than the file's, skipped",
            "not a regular file, not read",
        ]
    ), problems
    assert any(" line 6:" in p for p in problems)  # (the create and admit are lines 1, 2)
    assert set(fresh.events) == set(record.events)
    assert named(fresh) == {"alice": [ALICE.public], "bob": [BOB.public]}


def test_a_file_too_large_is_not_read_and_says_so(shared, monkeypatch):
    folder, record = shared
    from app.core.space import folder as module

    monkeypatch.setattr(module, "MAX_FILE_BYTES", 100)
    _, problems = read(folder, record)
    assert len(problems) == 1 and "not read" in problems[0]


def test_a_folder_that_is_missing_or_not_one_is_a_clear_error(tmp_path):
    record, _ = Record.create(ALICE, "team", "alice")
    with pytest.raises(InputError, match="is missing"):
        SpaceFolder(tmp_path / "gone").read(record)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        SpaceFolder.check(tmp_path / "file")
    with pytest.raises(InputError, match="cannot create the folder"):
        SpaceFolder(tmp_path / "file" / "team").prepare()


def test_a_members_folder_swapped_for_a_link_is_neither_read_nor_written_through(shared, tmp_path):
    folder, record = shared
    elsewhere = tmp_path / "elsewhere"
    (folder.root / "members").rename(elsewhere)
    (folder.root / "members").symlink_to(elsewhere)
    fresh, problems = read(folder, record)
    assert problems == ["members is a link, not a folder: not read"] and fresh.events == {}
    with pytest.raises(InputError, match="is a link"):
        folder.write_own(BOB.public, [])
    assert not (elsewhere / file_name(BOB.public)).exists()


def _files_holding(needle: bytes, folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize("encrypted", [False, True])
def test_epoch_keys_are_kept_as_the_sync_key_is(word_model, mnemo_home, tmp_path, encrypted):
    # GIVEN a database, encrypted or not
    engine = Engine(embedder=word_model)
    if encrypted:
        engine.vault.encrypt("passphrase", "correct horse battery")
        vault_keys.remember_passphrase(paths.database_path(), "correct horse battery")
    # WHEN it makes a space and invites a device (whose key this test holds)
    engine.spaces.create("team", tmp_path / "team", "alice")
    invitation, _ = engine.spaces.invite("team", BOB.public, "bob")
    engine.close()
    key = keys.open_invitation(BOB, invitation)["key"]
    # THEN the epoch key is in the database's files only when they are in the clear
    found = _files_holding(key.hex().encode(), mnemo_home)
    assert bool(found) is not encrypted, found
    assert _files_holding(key, tmp_path / "team") == []  # the folder holds it sealed only
