"""Snapshots of the database that restore (ADR 0014).

A snapshot is `VACUUM INTO` a new file in the backups folder: a consistent copy taken as a
reader (other processes go on writing), compacted, encrypted under the database's key when
the database is, checked page by page, flushed, then renamed into place whole. Beside it,
`<snapshot>.key` names its key as the database's key file does (no secret), so a snapshot
opens with the keyring or passphrase of its time, or with that time's recovery key.

`restore` checks a snapshot (or any Mnemo database file), shows what it holds, and puts it
in place of the database under the hand-off (`cipher.replace`), re-encrypted under the
current key when the database is encrypted; the database before is kept aside.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import apsw

from app.core.errors import InputError, LockedError, StoreError, WrongKeyError
from app.core.paths import private_dir, private_file, sync
from app.core.storage import migrations
from app.core.vault import cipher, keys

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

log = logging.getLogger(__name__)

NAME = re.compile(r"^mnemo-(\d{8}T\d{6}(?:\.\d{6})?Z)\.db$")


@dataclass
class Snapshot:
    path: Path
    taken: datetime
    size: int


def folder(db_path: Path) -> Path:
    """The backups folder beside the database."""
    return db_path.parent / "backups"


def listing(db_path: Path) -> list[Snapshot]:
    """The snapshots, newest first."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for path in folder(db_path).iterdir():
            match = NAME.match(path.name)
            if not match or not path.is_file():
                continue
            stamp = match.group(1)
            fmt = "%Y%m%dT%H%M%S.%fZ" if "." in stamp else "%Y%m%dT%H%M%SZ"
            taken = datetime.strptime(stamp, fmt).replace(tzinfo=UTC)
            found.append(Snapshot(path, taken, path.stat().st_size))
    return sorted(found, key=lambda s: s.taken, reverse=True)


def take(db_path: Path, keep: int | None = None) -> Snapshot:
    """Write a snapshot of the database now; prune to the `keep` newest ones."""
    entry, key = cipher.current_key(db_path)
    out = private_dir(folder(db_path))
    _leftovers(out)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    final = out / f"mnemo-{stamp}.db"
    tmp = out / f".{final.name}.{secrets.token_hex(6)}.part"
    conn, _ = cipher.connect(db_path, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, [key])
    try:
        cipher.copy_to(conn, tmp, key)
        conn.close()
        cipher.check_copy(tmp, key, wal=False)
        sync(tmp)
        keys.KeyFile(entry).write(final)  # the key's name first: never a snapshot without
        os.replace(tmp, final)
        sync(out)
    except apsw.Error as exc:
        raise StoreError(f"the snapshot could not be written: {exc}") from None
    finally:
        conn.close()
        with contextlib.suppress(OSError):
            tmp.unlink()
    if keep is not None:
        prune(db_path, keep)
    return Snapshot(final, datetime.now(UTC), final.stat().st_size)


def _leftovers(out: Path) -> None:
    """Remove the parts of snapshots a kill cut short (an hour old: never one being written
    by another process now), and key files' temporary twins."""
    cutoff = time.time() - 3600
    for pattern in (".mnemo-*.part", ".mnemo-*.db.key.*.tmp"):
        for part in out.glob(pattern):
            with contextlib.suppress(OSError):
                if part.stat().st_mtime < cutoff:
                    part.unlink()


def prune(db_path: Path, keep: int) -> int:
    """Remove all but the `keep` newest snapshots; how many went."""
    gone = 0
    for old in listing(db_path)[max(1, keep) :]:
        for part in (old.path, keys.key_file(old.path)):
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
        gone += 1
    return gone


def _fresh(db_path: Path, newest: list[Snapshot], every_hours: int) -> bool:
    """Whether the newest snapshot will do: younger than `every_hours`, or nothing was
    written to the database (nor its WAL) since it was taken."""
    if not newest:
        return False
    if (datetime.now(UTC) - newest[0].taken).total_seconds() < every_hours * 3600:
        return True
    changed = 0.0
    for part in (db_path, db_path.with_name(db_path.name + "-wal")):
        with contextlib.suppress(OSError):
            changed = max(changed, part.stat().st_mtime)
    return changed < newest[0].taken.timestamp()


def due(db_path: Path, every_hours: int, keep: int) -> Snapshot | None:
    """Take a snapshot if the newest is older than `every_hours` (0: never) and something
    was written since; one process at a time (a lock in the backups folder)."""
    if every_hours <= 0:
        return None
    if _fresh(db_path, listing(db_path), every_hours):
        return None
    out = private_dir(folder(db_path))
    fd = private_file(out / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another process is taking it
        if _fresh(db_path, listing(db_path), every_hours):
            return None
        started = time.perf_counter()
        snap = take(db_path, keep)
        log.info("snapshot %s written in %.1f s", snap.path.name, time.perf_counter() - started)
        return snap
    finally:
        os.close(fd)


@dataclass
class Checked:
    """A database file about to be restored: what it holds and the key that opens it."""

    path: Path
    key: bytes | None
    counts: dict[str, int]


def check(db_path: Path, path: Path, recovery: str | None = None) -> Checked:
    """Open `path` (a snapshot, or a Mnemo database kept elsewhere) with the keys it may
    need (its key file, the database's, a recovery key), check it page by page and count
    what it holds. InputError/LockedError saying what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} is not a file")
    if db_path.exists() and os.path.samefile(path, db_path):
        raise InputError(f"{path} is the database itself: choose a snapshot to restore")
    candidates: list[bytes | None] = [None]
    problems: list[LockedError] = []
    for source in (path, db_path):
        found, trouble = keys.candidates(source)
        candidates += [k for k in found if k is not None]
        problems += trouble
    if recovery:
        candidates.insert(0, keys.parse_recovery(recovery))
    try:
        conn, key = cipher.connect(path, apsw.SQLITE_OPEN_READONLY, candidates)
    except apsw.CantOpenError as exc:
        raise InputError(f"{path} cannot be opened ({exc})") from None
    except (apsw.Error, WrongKeyError):
        if problems:
            raise problems[0] from None
        raise InputError(
            f"{path} is not a Mnemo database or snapshot, or it is encrypted with a key not at "
            "hand (give its recovery key: --recovery-key-file)"
        ) from None
    try:
        # A file from outside is data, never code: nothing in its schema runs functions
        # with side effects, and it must hold exactly what Mnemo's migrations make (a
        # trigger planted in it would run at every write after the restore)
        conn.execute("PRAGMA trusted_schema = OFF")
        extra = migrations.unexpected(conn)
        if extra:
            raise InputError(
                f"{path} is not a database Mnemo made as it is: it holds {'; '.join(extra[:3])}"
                + (f" (and {len(extra) - 3} more)" if len(extra) > 3 else "")
                + "; not restored"
            )
        # Every page and every index against its table (quick_check skips the indexes)
        verdict = conn.execute("PRAGMA integrity_check").fetchall()
        if verdict != [("ok",)]:
            raise InputError(f"{path} is damaged ({verdict[0][0]}); not restored")
        found = cipher.counts(conn)
    except apsw.Error as exc:
        raise InputError(f"{path} cannot be read ({exc}); not restored") from None
    finally:
        conn.close()
    return Checked(path, key, found)


def restore(
    db_path: Path, checked: Checked, carry: Callable[[apsw.Connection, apsw.Connection], None]
) -> tuple[Path, dict[str, int]]:
    """Put a checked file in place of the database (under its current key, or plain when it
    is plain), brought up to this Mnemo's schema and given what `carry(copy, before)` keeps
    of the database before (its sync identity); the place the database before was kept,
    and the new counts."""
    entry, key = cipher.current_key(db_path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = db_path.with_name(f"{db_path.name}.before-restore-{stamp}")

    def source(_exclusive: apsw.Connection) -> apsw.Connection:
        conn, _ = cipher.connect(
            checked.path, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, [checked.key]
        )
        return conn

    def prepare(copy: apsw.Connection, before: apsw.Connection) -> None:
        # what is put in place is checked, not only the file checked before (it may have
        # been swapped since); the keyword index is checked here (a write, on the copy)
        copy.execute("PRAGMA trusted_schema = OFF")
        extra = migrations.unexpected(copy)
        if extra:
            raise InputError(
                f"{checked.path} changed since it was checked ({extra[0]}); not restored"
            )
        try:
            copy.execute(
                "INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)"
            )
        except apsw.Error:
            raise InputError(
                f"{checked.path} is damaged (its keyword index does not match its memories); "
                "not restored"
            ) from None
        migrations.upgrade(copy, datetime.now(UTC).isoformat())
        carry(copy, before)

    found = cipher.replace(
        db_path, "restore", entry, key, source=source, keep_aside=aside, prepare=prepare
    )
    # the file in place passed every check: the mark a damaged one had goes with it
    db_path.with_name(db_path.name + ".damaged").unlink(missing_ok=True)
    keys.KeyFile(entry).write(aside)
    return aside, found
