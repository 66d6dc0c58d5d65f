"""A database that is not the one that wrote its device's logs takes the folder's history
again (issue 40, item 4): after `mnemo restore` of a snapshot, and when the data folder was
copied to another machine. Without this, the device's record of what it had synced (from
the snapshot's time) said "nothing to do" while the stores differed for good.

- **Restore.** What identifies the device in the folder (its id, keys, whom it trusts) is
  carried from the database before into the restored one, so it stays the same device (no
  second device named like the first); and the restored one is marked to *rebuild*: its
  next pass forgets what it had synced and reads every log again, its own included, so
  what was written since the snapshot comes back, and what was purged stays purged.
- **A copy on another machine** (the database remembers the machine it syncs from) becomes
  a new device with a new key (a person approves it, as any new device); the device it was
  copied from stays trusted for what it wrote; the changes made on the copy since its last
  pass are kept and written on top of what the folder says.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import socket
from pathlib import Path

import apsw

from app.core.storage.db import Database

# What makes this database the same device in the folder (kept across a restore)
IDENTITY = (
    "sync_device",
    "sync_folder_id",
    "sync_device_by_folder",
    "sync_key",
    "sync_key_id",
    "sync_plain",
    "sync_sign_key",
    "sync_signed_from",
    "sync_removed",
    "sync_machine",
    "sync_founder",
    "spaces",  # the team spaces it is in and their keys (`space/spaces.py`): its own events
    # and the keys sealed to it are in the spaces' folders, but not where those folders are
)
# What a pass recorded of its progress through the folder (forgotten by a rebuild)
PROGRESS_TABLES = ("sync_ops", "sync_memories", "sync_files", "sync_waiting", "sync_problems")
PROGRESS_META = (
    "sync_journal",
    "sync_floor",
    "sync_start",
    "sync_held_at_snapshot",
    "sync_skipping",
    "sync_conflicts",
    "sync_pruned_for",
)


def machine_id() -> str:
    """Which machine this is, as a short hash (the OS's machine id; the host name where
    there is none): a database copied to another machine notices it."""
    for name in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            text = Path(name).read_text(encoding="ascii", errors="replace").strip()
            if text:
                return hashlib.sha256(b"mnemo machine\0" + text.encode()).hexdigest()[:16]
    return hashlib.sha256(b"mnemo host\0" + socket.gethostname().encode()).hexdigest()[:16]


def carry(copy: apsw.Connection, before: apsw.Connection) -> None:
    """Before a restored database is put in place: it keeps being this device (the identity
    and trust decisions of the database before, when it can be read) and takes the folder's
    history again at its next pass."""
    with contextlib.suppress(apsw.Error):  # a database before that cannot be read: the
        rows = before.execute(  # snapshot's own identity stays
            f"SELECT key, value FROM _metadata WHERE key IN ({', '.join('?' * len(IDENTITY))})",
            IDENTITY,
        ).fetchall()
        devices = before.execute(
            "SELECT id, key, state, name, since, by FROM sync_devices"
        ).fetchall()
        if rows:
            copy.execute(
                f"DELETE FROM _metadata WHERE key IN ({', '.join('?' * len(IDENTITY))})", IDENTITY
            )
            copy.executemany("INSERT INTO _metadata(key, value) VALUES (?, ?)", rows)
            copy.execute("DELETE FROM sync_devices")
            copy.executemany("INSERT INTO sync_devices VALUES (?, ?, ?, ?, ?, ?)", devices)
    head = copy.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchall()[0][0]
    for key, value in (("sync_rebuild", "1"), ("sync_restored_journal", str(head))):
        copy.execute(
            "INSERT INTO _metadata(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def due(db: Database) -> bool:
    """Whether this database must take the folder's history again before anything else is
    done with the folder (restored, or on another machine than its last pass)."""
    was = db.get_meta("sync_machine")
    return db.get_meta("sync_rebuild") is not None or (
        was is not None and was != machine_id() and db.get_meta("sync_device") is not None
    )


def begin(db: Database, name: str) -> bool:
    """Start a rebuild if this database was restored or copied to another machine since its
    last pass (forget what it had synced; a copy takes a new device id and key); whether a
    rebuild is under way. Cheap when neither: one look at two values."""
    from app.core.sync import trust

    machine = machine_id()
    was = db.get_meta("sync_machine")
    state = db.get_meta("sync_rebuild")
    copied = was is not None and was != machine and db.get_meta("sync_device") is not None
    if state == "reading":
        return True
    if state != "1" and not copied:
        if was != machine:
            db.set_meta("sync_machine", machine)
        return False
    with db.write() as conn:
        # what was changed here since the snapshot was put in place (or, on a copy, since
        # its last pass) is kept and written on top of the folder's history
        since = db.get_meta("sync_restored_journal") if not copied else db.get_meta("sync_journal")
        keep = _changed_since(db, since)
        if copied:  # a new device, with its own key
            old = db.get_meta("sync_device")
            known = trust.Devices(db)
            own = known.all().get(old)
            known.put(
                trust.Device(
                    old,
                    own.key if own else None,
                    "approved",
                    name,
                    by="this database, before it was copied to this machine",
                )
            )
            new = secrets.token_hex(5)
            db.set_meta("sync_device", new)
            db.set_meta("sync_sign_key", trust.Signer.new().hex())
            db.set_meta("sync_signed_from", json.dumps({new: 1}))
            folder = db.get_meta("sync_folder_id")
            if folder:
                by_folder = json.loads(db.get_meta("sync_device_by_folder", "{}"))
                by_folder[folder] = new
                db.set_meta("sync_device_by_folder", json.dumps(by_folder))
        for table in PROGRESS_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute(
            f"DELETE FROM _metadata WHERE key IN ({', '.join('?' * len(PROGRESS_META))})",
            PROGRESS_META,
        )
        db.set_meta("sync_keep", json.dumps(keep))
        db.set_meta("sync_rebuild", "reading")
        db.set_meta("sync_machine", machine)
    return True


def keep(db: Database) -> set[str]:
    """The memories a rebuild leaves as they are here (changed on a copy since its last
    pass: written on top of what the folder says)."""
    return set(json.loads(db.get_meta("sync_keep", "[]")))


def finish(db: Database) -> None:
    """Every log was read again: from now on this device writes what differs (compared
    memory by memory, as after a move to another folder)."""
    with db.write() as conn:
        conn.execute(
            "DELETE FROM _metadata WHERE key IN ('sync_rebuild', 'sync_keep', 'sync_journal', "
            "'sync_restored_journal')"
        )


def _changed_since(db: Database, cursor: str | None) -> list[str]:
    """The memories changed after journal entry `cursor` (every memory when the journal no
    longer reaches back to it: none is overwritten by the rebuild then)."""
    if cursor is None:
        return []
    low = db.query("SELECT MIN(seq) FROM changes")[0][0]
    if low is not None and low > int(cursor) + 1:
        return sorted(r[0] for r in db.query("SELECT id FROM memories"))
    rows = db.query(
        "SELECT DISTINCT memory_id FROM changes WHERE seq > ? AND kind != 'inbox'", (int(cursor),)
    )
    return sorted(r[0] for r in rows)
