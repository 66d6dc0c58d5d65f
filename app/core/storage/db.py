"""The SQLite connection (APSW): WAL, busy timeout, foreign keys, migrations, transactions."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import shutil
import urllib.parse
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw

from app.core.errors import LockedError, NoKeyError, StoreError
from app.core.paths import private_dir, private_file, replace_file
from app.core.storage.migrations import MIGRATIONS, RECORD
from app.core.vault import cipher, handoff, keys

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000


def now() -> str:
    """The current UTC time as ISO 8601 with microseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _disk_full(path: Path) -> bool:
    """Whether the file system holding `path` has (almost) no room left: SQLite reports a
    full disk as a plain I/O error when the WAL or a temporary file cannot grow."""
    try:
        return shutil.disk_usage(path.parent).free < 512 * 1024
    except OSError as exc:
        return exc.errno == errno.ENOSPC


def _known(exc: apsw.Error, path: Path) -> StoreError:
    """A user-facing error for an SQLite failure."""
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return StoreError(
            f"the database {path} is locked by another process (waited "
            f"{BUSY_TIMEOUT_MS // 1000} s); nothing was written, try again"
        )
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreError(f"the database {path} is read-only; nothing was written")
    if isinstance(exc, apsw.FullError) or (isinstance(exc, apsw.IOError) and _disk_full(path)):
        return StoreError(f"the disk holding {path} is full; nothing was written")
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return StoreError(f"the database {path} is damaged or not a Mnemo database ({exc})")
    if isinstance(exc, apsw.CantOpenError):
        return StoreError(f"cannot open the database {path} ({exc})")
    return StoreError(f"database error on {path}: {exc}")


def _new_database(path: Path) -> None:
    """Make a new, migrated database at `path` in one step: built beside it under a random
    name (0600, so SQLite gives its WAL and SHM files that mode too) and linked into place
    whole. So a database file is never empty unless something else emptied it, and two
    processes starting at once both end up using the one that landed first."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.new")
    new_keys, problems = keys.candidates(path)
    if problems:  # the key file names a key that is not at hand: a new file would not open
        raise problems[0]
    os.close(private_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    try:
        Database(tmp, _new=True, _keys=new_keys[:1]).close()
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        for part in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                part.unlink()


def _private_database(path: Path) -> None:
    """Make the database if there is none yet, and narrow older, wider files to 0600."""
    if not path.parent.exists():
        private_dir(path.parent)
    if not path.exists():
        _new_database(path)
    if os.name != "posix":
        return
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            mode = part.stat().st_mode
            if part.stat().st_uid == os.getuid() and mode & 0o077:
                part.chmod(mode & 0o700)  # (a file made read-only stays read-only)


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` now (device, inode); None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _switched(path: Path, before: tuple[int, int] | None) -> bool:
    """Whether a switch (`handoff`) is under way, or replaced the file since `before`."""
    return handoff.wanted(path) or _identity(path) != before


def _not_empty(path: Path) -> None:
    """Refuse a database file of 0 bytes: Mnemo never leaves one (see `_new_database`), so
    a failing disk, a sync or backup tool or a mistake emptied it; SQLite would take it for
    a new database and write one over the evidence."""
    with contextlib.suppress(OSError):
        if path.is_file() and path.stat().st_size == 0:
            raise StoreError(
                f"the database {path} is empty (0 bytes): something emptied it and nothing was "
                "written; restore it from a backup, or move it away to start a new one"
            )


class Database:
    """One APSW connection to the Mnemo database, migrated on open."""

    def __init__(
        self,
        path: Path,
        read_only: bool = False,
        _new: bool = False,
        _keys: list[bytes | None] | None = None,
    ):
        self.path = Path(path)
        self.read_only = read_only
        self._asked_read_only = read_only
        self._depth = 0
        self._guarded = True  # writes refused while the database is known to be damaged
        # Set when an integrity check or a write found the file damaged, gone when repaired
        self.damage_mark = self.path.with_name(self.path.name + ".damaged")
        self.encrypted = False
        self.vector_key: bytes | None = None
        self.released = False  # closed for a switch (`release`) and not open again yet
        self._reopened: list[Callable[[], None]] = []  # told when `reopen` connects again
        self._uncommitted = 0  # calls to `moved` inside transactions
        self._open(_new, _keys)

    def _open(self, new: bool = False, keys_: list[bytes | None] | None = None) -> None:
        flags = (
            apsw.SQLITE_OPEN_READONLY
            if self._asked_read_only
            else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        )
        try:
            try:
                self.conn, key = self._connect(flags, new, keys_)
            except apsw.CantOpenError:
                if new or not self.path.is_file():
                    raise
                self.conn, key = self._read_as_it_is()
            self.encrypted = key is not None
            # The sealed vector copy's key (ADR 0014); the database key is not kept
            self.vector_key = None if key is None else keys.subkey(key, "vector copy")
            self.conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            # SQLite silently opens a write-protected file read-only: notice it.
            self.read_only = self.read_only or self.conn.readonly("main")
            self.conn.execute("PRAGMA foreign_keys = ON")
            # What is deleted or overwritten is zeroed in the file, not left in free pages.
            self.conn.execute("PRAGMA secure_delete = ON")
            self._prepare()
        except apsw.Error as exc:
            raise _known(exc, self.path) from exc
        except OSError as exc:
            raise StoreError(f"cannot create the folder for {self.path}: {exc}") from exc

    def _connect(
        self, flags: int, new: bool, given: list[bytes | None] | None
    ) -> tuple[apsw.Connection, bytes | None]:
        """A connection keyed with what the key file names (or `given`), to the file a
        switch under way leaves: opened again when one began (or ended) meanwhile."""
        while True:
            if not new:
                handoff.wait(self.path)  # a switch under way: open the file it leaves
                cipher.clean_after_crash(self.path)  # what one killed half way left
            if not (self._asked_read_only or new):
                _private_database(self.path)
            if not new:
                _not_empty(self.path)
            before = _identity(self.path)
            candidates, problems = given, []
            if candidates is None and not new:
                candidates, problems = keys.candidates(self.path)
                if problems and not candidates:
                    raise problems[0]
            try:
                conn, key = cipher.connect(self.path, flags, candidates or [None])
            except (apsw.NotADBError, LockedError):
                if not new and _switched(self.path, before):
                    continue
                if problems:  # a key the key file names was not at hand: say which
                    raise problems[0] from None
                if not new and candidates in (None, [None]) and cipher.looks_encrypted(self.path):
                    raise NoKeyError(
                        f"the database {self.path} is encrypted (or damaged) and its key "
                        f"file {keys.key_file(self.path).name} is missing: on a new "
                        "machine, run mnemo unlock with the recovery key"
                    ) from None
                raise
            if new or not _switched(self.path, before):
                return conn, key
            conn.close()  # a switch began meanwhile: this may be the file it replaces

    def _read_as_it_is(self) -> tuple[apsw.Connection, bytes | None]:
        """The database on media or in a folder that cannot be written (a read-only mount,
        no rights to the folder): SQLite cannot make the WAL's index beside it, so it is
        read as an immutable file; searches work, writes are refused as read-only."""
        wal = self.path.with_name(self.path.name + "-wal")
        with contextlib.suppress(OSError):
            if wal.stat().st_size > 0:  # read as it is, its last changes would be missing
                raise StoreError(
                    f"the database {self.path} cannot be written here (a read-only folder or "
                    f"disk) and holds changes not yet folded into it ({wal.name}): open it "
                    "once where it can be written; nothing was read"
                )
        candidates, problems = keys.candidates(self.path)
        if problems and not candidates:
            raise problems[0]
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?immutable=1"
        conn, key = cipher.connect(
            uri, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, candidates or [None]
        )
        self._asked_read_only = self.read_only = True
        log.info("the database %s is read as it is: its folder cannot be written", self.path)
        return conn, key

    # ---- letting go while the file is replaced (`handoff`) ---------------------------
    def switch_wanted(self) -> bool:
        """Whether another process is replacing the database and asks us to let go."""
        return handoff.wanted(self.path)

    def release(self) -> None:
        """Close the connection for a switch; `reopen` opens the file it leaves."""
        self.close()
        self.released = True

    def reopen(self) -> None:
        """Open the database again (after a switch: the new file, with its new key)."""
        self._depth = 0
        self.read_only = self._asked_read_only
        self._open()
        self.released = False
        for tell in self._reopened:
            tell()

    def moved(self) -> tuple[int, int, int]:
        """The one answer to "has the database changed since?" (issue 43: the keyword index,
        the trash, the live count, the runner's poll and the vector index compare two), no
        table read: `PRAGMA data_version` (another connection committed), this connection's
        change count and, inside a transaction, a count of the calls (what it reads may yet
        be rolled back, and a rollback leaves the change count as it was)."""
        try:
            version = int(self.conn.execute("PRAGMA data_version").fetchall()[0][0])
            changes, inside = self.conn.total_changes(), self.conn.in_transaction
        except apsw.Error as exc:  # closed for a switch, damaged: a known problem
            raise _known(exc, self.path) from None
        if not inside:
            return version, changes, 0
        self._uncommitted += 1
        return version, changes, self._uncommitted

    def on_reopen(self, tell: Callable[[], None]) -> None:
        """Call `tell()` after each `reopen` (what holds state of the old connection)."""
        self._reopened.append(tell)

    def _prepare(self) -> None:
        if self.read_only:
            if pending := self.pending_migrations():
                raise StoreError(
                    f"the database {self.path} is read-only and needs an upgrade "
                    f"({', '.join(pending)}); make it writable once"
                )
            return
        try:
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchall()[0][0]
            if mode != "wal":
                log.warning("database %s is in %s mode, not WAL", self.path, mode)
            self.migrate()
        except apsw.ReadOnlyError:
            self.read_only = True
            pending = self.pending_migrations()
            if pending:
                raise StoreError(
                    f"the database {self.path} is read-only and needs an upgrade "
                    f"({', '.join(pending)}); make it writable once"
                ) from None

    def _applied(self) -> set[str]:
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='_migrations'"
        ).fetchall()
        if not exists:
            return set()
        return {row[0] for row in self.conn.execute("SELECT name FROM _migrations")}

    def pending_migrations(self) -> list[str]:
        """Names of migrations not yet applied."""
        applied = self._applied()
        return [m.__name__ for m in MIGRATIONS if m.__name__ not in applied]

    def migrate(self) -> None:
        """Apply every pending migration, each in its own transaction."""
        if not self.pending_migrations():
            return
        for migration in MIGRATIONS:
            with self.unguarded(), self.write():
                self.conn.execute(RECORD)
                # Checked inside the write lock: another process may have just applied it.
                if migration.__name__ in self._applied():
                    continue
                log.info("applying migration %s", migration.__name__)
                migration(self.conn)
                self.conn.execute(
                    "INSERT INTO _migrations(name, applied_at) VALUES (?, ?)",
                    (migration.__name__, now()),
                )
                self.set_meta("schema_version", str(len(self._applied())))

    def damage(self) -> str | None:
        """What an integrity check or a write found wrong with the file, if it is still
        marked damaged (`mark_damaged`)."""
        try:
            return self.damage_mark.read_text(encoding="utf-8", errors="replace").strip()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"the mark {self.damage_mark} cannot be read: {exc}"

    def mark_damaged(self, why: str) -> None:
        """Refuse writes from now on, in every process, until a repair passes the check:
        writing into a damaged file can spread the damage."""
        if self.read_only:
            return
        try:
            replace_file(self.damage_mark, lambda f: f.write(why[:500] + "\n"))
        except OSError as exc:
            log.warning("could not mark %s as damaged: %s", self.path, exc)

    def clear_damaged(self) -> None:
        """The file passed its integrity check: writes are welcome again."""
        with contextlib.suppress(FileNotFoundError):
            self.damage_mark.unlink()

    @contextlib.contextmanager
    def unguarded(self) -> Iterator[None]:
        """Writes allowed even into a file marked damaged: a repair, a migration."""
        self._guarded = False
        try:
            yield
        finally:
            self._guarded = True

    def _refuse_if_damaged(self) -> None:
        if self._guarded and (why := self.damage()) is not None:
            raise StoreError(
                f"the database {self.path} failed its integrity check ({why}); nothing was "
                "written: run `mnemo doctor --repair`"
            )

    @contextlib.contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """One write transaction (BEGIN IMMEDIATE): all of it lands, or none of it.

        Nested, it is a SAVEPOINT (like sqlite-utils' `atomic()`): an inner failure rolls
        back only the inner part, and the caller may catch it and carry on.
        """
        if self._depth:
            name = f"mnemo_sp{self._depth}"
            try:
                self.conn.execute(f"SAVEPOINT {name}")
            except apsw.Error as exc:
                raise _known(exc, self.path) from exc
            self._depth += 1
            try:
                yield self.conn
            except BaseException as exc:
                self._depth -= 1
                with contextlib.suppress(apsw.Error):
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                if isinstance(exc, apsw.Error):
                    raise _known(exc, self.path) from exc
                raise
            self._depth -= 1
            try:
                self.conn.execute(f"RELEASE {name}")
            except apsw.Error as exc:
                raise _known(exc, self.path) from exc
            return
        self._refuse_if_damaged()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            raise _known(exc, self.path) from exc
        self._depth = 1
        try:
            yield self.conn
        except BaseException as exc:
            self._depth = 0
            with contextlib.suppress(apsw.Error):
                self.conn.execute("ROLLBACK")
            if isinstance(exc, apsw.CorruptError):
                self.mark_damaged(f"SQLite found it while writing: {exc}")
            if isinstance(exc, apsw.Error):
                raise _known(exc, self.path) from exc
            raise
        self._depth = 0
        try:
            self.conn.execute("COMMIT")
        except apsw.Error as exc:
            with contextlib.suppress(apsw.Error):
                self.conn.execute("ROLLBACK")
            raise _known(exc, self.path) from exc

    def query(self, sql: str, bindings: tuple | dict = ()) -> list[tuple]:
        """All rows of a read query; SQLite failures become StoreError."""
        try:
            return self.conn.execute(sql, bindings).fetchall()
        except apsw.SQLError:
            raise
        except apsw.Error as exc:
            raise _known(exc, self.path) from exc

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """A value from `_metadata`."""
        rows = self.query("SELECT value FROM _metadata WHERE key = ?", (key,))
        return rows[0][0] if rows else default

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in `_metadata` (inside the caller's transaction if any)."""
        with self.write():
            self.conn.execute(
                "INSERT INTO _metadata(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def scrub(self) -> None:
        """Copy the WAL into the database and empty it, so no page image holding deleted
        text stays in the WAL (secure_delete zeroes it in the database file). Best effort:
        a reader still on an older snapshot keeps the WAL until the next checkpoint."""
        try:
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0]
        except apsw.Error as exc:
            log.warning("could not empty the WAL of %s after a purge: %s", self.path, exc)
            return
        if busy:
            log.info(
                "the WAL of %s is in use by a reader; emptied at the next checkpoint", self.path
            )

    def close(self) -> None:
        """Close the connection (checkpointing the WAL)."""
        with contextlib.suppress(apsw.Error):
            self.conn.close()


IN_SLICE = 500  # values per `IN (…)` (SQLite allows at most 32,766 variables)


def in_slices(values: list) -> Iterator[tuple[list, str]]:
    """(slice, its `?,?,…` placeholders) for an `IN (…)` over any number of values."""
    for start in range(0, len(values), IN_SLICE):
        part = values[start : start + IN_SLICE]
        yield part, ",".join("?" * len(part))
