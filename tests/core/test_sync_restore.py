"""A restore (or a copied data folder) on a device that syncs converges (issue 40, item
4): the device stays itself, takes the folder's history again, purged stays purged, and
status never says "in sync" while the stores differ. Real engines, real snapshots, real
files; the copied home runs the CLI on another machine id (a mount namespace)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from app.core.engine import Engine
from app.core.errors import NotFoundError
from app.core.settings import Settings
from app.core.storage.store import Filters
from app.core.sync.fold import SYNCED
from tests.conftest import REPO, run_cli
from tests.sync_devices import approve_waiting

ALL = Filters(include_deleted=True)


def device(tmp_path, name, word_model) -> Engine:
    return Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)


def state(engine: Engine) -> dict:
    return {
        m.id: (*(repr(getattr(m, f)) for f in SYNCED), m.observation_count)
        for m in engine.listing(ALL, limit=100_000)
    }


def settle(*engines, rounds: int = 3) -> None:
    for _ in range(rounds):
        for engine in engines:
            engine.sync.now()


@pytest.fixture
def pair(tmp_path, word_model):
    folder = tmp_path / "shared"
    p1, p2 = device(tmp_path, "p1", word_model), device(tmp_path, "p2", word_model)
    ids = [
        p1.remember(f"Note {n}: the harbour opens at {n} o'clock.", embed=False).memory.id
        for n in range(6)
    ]
    p1.sync.init(str(folder), "p1")
    p2.sync.init(str(folder), "p2")
    approve_waiting(p1)
    yield p1, p2, ids
    p1.close()
    p2.close()


def test_restoring_a_snapshot_on_a_device_that_syncs_brings_back_what_was_written_since(pair):
    """Before: p1 kept the old text and the live memory, p2 the edit and the trash, and
    both said "Changes here not written yet: 0 … Wrote 0 operations; read 0" for good."""
    p1, p2, ids = pair
    snap = p1.vault.backup()
    p1.edit(ids[0], text="Note 0: the harbour opens at seven now.")
    p1.forget([ids[1]])
    p2.edit(ids[2], text="Note 2: edited on p2 after the snapshot.")
    settle(p1, p2)
    p1.vault.restore_backup(p1.vault.check_backup(snap.path))
    assert p1.sync.status()["rebuilding"]  # never "in sync" meanwhile
    settle(p1, p2)
    assert state(p1) == state(p2)
    assert p1.get(ids[0]).text == "Note 0: the harbour opens at seven now."
    assert p1.get(ids[1]).deleted_at is not None
    assert p1.get(ids[2]).text == "Note 2: edited on p2 after the snapshot."
    status = p1.sync.status()
    assert not status["rebuilding"] and status["pending"] == 0
    assert [d["name"] for d in p2.sync.status()["devices"]].count("p1") == 1  # no ghost
    assert p1.sync.now().written == 0  # nothing old was sent over what was newer


def test_a_snapshot_from_before_sync_was_on_brings_nothing_purged_back(tmp_path, word_model):
    """Before: it brought purged memories back on every device, and left a second device
    named like the first that was never pruned."""
    folder = tmp_path / "shared"
    p1, p2 = device(tmp_path, "p1", word_model), device(tmp_path, "p2", word_model)
    gone = p1.remember("A note that will be purged.", embed=False).memory.id
    stays = p1.remember("A note that stays.", embed=False).memory.id
    snap = p1.vault.backup()  # sync not set up yet
    p1.sync.init(str(folder), "p1")
    p2.sync.init(str(folder), "p2")
    approve_waiting(p1)
    p2.purge([gone])
    settle(p1, p2)
    p1.vault.restore_backup(p1.vault.check_backup(snap.path))
    settle(p1, p2)
    for engine in (p1, p2):
        with pytest.raises(NotFoundError):
            engine.get(gone)
        assert engine.get(stays).text == "A note that stays."
    assert state(p1) == state(p2)
    names = [d["name"] for d in p2.sync.status()["devices"]]
    assert sorted(names) == ["p1", "p2"], names
    p1.close()
    p2.close()


def test_restoring_over_a_damaged_database_converges(pair, tmp_path):
    """The database before fails its integrity check (writes refused): the restore still
    keeps the device itself and converges."""
    import apsw

    p1, p2, ids = pair
    snap = p1.vault.backup()
    p1.edit(ids[3], text="Note 3: written after the snapshot.")
    settle(p1, p2)
    path = p1.database_path
    p1.close()
    real = "CREATE INDEX memories_updated ON memories(updated_at)"
    for sql in (  # an index built by another column than it says: it no longer matches
        "CREATE INDEX memories_updated ON memories(title)",
        "REINDEX memories_updated",
        real,
    ):
        conn = apsw.Connection(str(path))
        if sql.startswith("CREATE"):
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'memories_updated'", (sql,))
        else:
            conn.execute(sql)
        conn.close()
    p1 = device(tmp_path, "p1", p2.embedder)
    assert not all(ok for ok, _ in p1.health())  # damaged: marked, writes refused
    p1.vault.restore_backup(p1.vault.check_backup(snap.path))
    settle(p1, p2)
    assert state(p1) == state(p2)
    assert p1.get(ids[3]).text == "Note 3: written after the snapshot."
    assert [d["name"] for d in p2.sync.status()["devices"]].count("p1") == 1
    p1.close()


def _unshare_ok() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind /dev/null /etc/machine-id"],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.mark.skipif(not _unshare_ok(), reason="needs a mount namespace (root, unshare)")
def test_a_data_folder_copied_to_another_machine_becomes_a_new_device(tmp_path):
    """Before: the copy wrote under the same device id as the original, and the devices
    stayed different with a clean status. Now it takes a new id and key (a person approves
    it), keeps the changes made on it since its last pass, and all converge."""
    laptop, copy, folder = tmp_path / "laptop", tmp_path / "copy", tmp_path / "shared"
    other_machine = tmp_path / "machine-id"
    other_machine.write_text("0123456789abcdef0123456789abcdef\n")

    def mnemo(home, *args, elsewhere=False):
        command = [sys.executable, "-m", "app", *args]
        if elsewhere:  # the same command on a machine with another id
            script = f'mount --bind {other_machine} /etc/machine-id && exec "$@"'
            command = ["unshare", "-m", "sh", "-c", script, "sh", *command]
        done = subprocess.run(
            command, capture_output=True, cwd=REPO, env={**_env(), "MNEMO_HOME": str(home)}
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    mnemo(laptop, "remember", "The laptop's note from before the copy.")
    mnemo(laptop, "sync", "init", str(folder), "--name", "laptop", "--no-embed")
    shutil.copytree(laptop, copy)
    mnemo(copy, "remember", "Written on the copy, on the new machine.", elsewhere=True)
    out = mnemo(copy, "sync", "now", "--no-embed", elsewhere=True)
    assert out
    mine = json.loads(mnemo(laptop, "sync", "status", "--json"))["device"]
    theirs = json.loads(mnemo(copy, "sync", "status", "--json", elsewhere=True))["device"]
    assert theirs != mine  # a new device
    mnemo(laptop, "sync", "devices", "approve", theirs, "--no-embed")
    for _ in range(2):
        mnemo(copy, "sync", "now", "--no-embed", elsewhere=True)
        mnemo(laptop, "sync", "now", "--no-embed")
    texts = {
        json.loads(line)["text"] for line in mnemo(laptop, "export", "--include-trash").splitlines()
    }
    copied = {
        json.loads(line)["text"]
        for line in mnemo(copy, "export", "--include-trash", elsewhere=True).splitlines()
    }
    assert (
        texts
        == copied
        == {
            "The laptop's note from before the copy.",
            "Written on the copy, on the new machine.",
        }
    )


def _env() -> dict:
    import os

    return dict(os.environ)


def test_the_cli_says_when_a_restored_database_waits_for_its_next_pass(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "shared"
    env = {"MNEMO_HOME": str(home)}
    assert run_cli("remember", "A note.", env=env).returncode == 0
    assert run_cli("sync", "init", str(folder), "--no-embed", env=env).returncode == 0
    assert run_cli("backup", env=env).returncode == 0
    snap = next((home / "data" / "backups").glob("mnemo-*.db"))
    assert run_cli("restore", str(snap), env=env).returncode == 0
    status = run_cli("sync", "status", env=env).stdout.decode()
    assert "restored from a snapshot" in status and "not written yet: 0" not in status
