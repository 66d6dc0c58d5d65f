"""Opening an encrypted database, and replacing the database whole: encrypt, decrypt,
rotate the key, restore a backup (ADR 0014).

SQLite3 Multiple Ciphers (the `apsw-sqlite3mc` build of APSW) encrypts every page of the
database and of its WAL with ChaCha20-Poly1305 under a raw 256-bit key. A connection is
keyed before its first statement; a wrong key or none shows as "file is not a database",
so `connect` tries the keys the key file names (`app.core.keys`) and says which was missing.

A switch never rewrites the database in place. Under the hand-off (`handoff.hold`: every
other Mnemo process lets go), the switcher takes the only connection (SQLite refuses to
leave WAL mode while another one is open), `VACUUM INTO` a new file beside it under the new
key, checks it, names both keys in the key file, then renames the new file over the old.
A crash before the rename leaves the old file and a key file naming its key (`previous`);
after it, the new file and its key. Either opens.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import stat
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw

from app.core.errors import InputError, LockedError, NoKeyError, StoreError, WrongKeyError
from app.core.paths import private_file, sync
from app.core.vault import handoff
from app.core.vault import keys as keyring_keys
from app.core.vault.keys import CIPHER, Entry, KeyFile

log = logging.getLogger(__name__)

EXCLUSIVE_WAIT_S = 30.0  # how long a switch waits for the others to let go
BUSY_TIMEOUT_MS = 5000  # as the database's own connections (storage/db.py)


def key_connection(conn: apsw.Connection, key: bytes | None) -> None:
    """Give a fresh connection its key (before any statement); none for a plain file.
    Temporary tables and sorts stay in memory: SQLite's temporary files are not encrypted."""
    if key is not None:
        conn.execute(f"PRAGMA cipher = '{CIPHER}'").fetchall()
        conn.execute(f"PRAGMA key = \"x'{key.hex()}'\"").fetchall()
    conn.execute("PRAGMA temp_store = MEMORY").fetchall()


def _opens(conn: apsw.Connection) -> bool:
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except (apsw.NotADBError, apsw.CorruptError):
        return False
    return True


def connect(
    path: Path, flags: int, keys: list[bytes | None] | None = None
) -> tuple[apsw.Connection, bytes | None]:
    """A connection to `path` keyed with the first of `keys` (default: what the key file
    names) that opens it, and that key. LockedError when the database is encrypted and no
    key at hand opens it; apsw.NotADBError when it is not (or no longer) a database at all."""
    problems: list[LockedError] = []
    if keys is None:
        keys, problems = keyring_keys.candidates(path)
    for key in keys:
        conn = apsw.Connection(str(path), flags=flags)
        # Before the first read: a fresh connection may meet another one's checkpoint
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        try:
            key_connection(conn, key)
            if _opens(conn):
                return conn, key
        except apsw.NotADBError:
            pass
        except BaseException:
            conn.close()
            raise
        conn.close()
    if problems:
        raise problems[0]
    if any(key is not None for key in keys):
        raise WrongKeyError(
            f"the key at hand does not open the database {path} (the key file names another, "
            "or the file was replaced); open it with its recovery key: mnemo unlock"
        )
    raise apsw.NotADBError("file is not a database")


def looks_encrypted(path: Path) -> bool:
    """Whether a file SQLite would not open looks encrypted: no plain SQLite header, and
    not empty. (Read only when opening failed: closing a descriptor of a database file drops
    this process's locks on it, so it is not read while a connection may hold one.)"""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    # An encrypted page starts with random bytes: 16 printable ones (a text file, another
    # program's header) happen by chance once in ten million
    printable = all(32 <= b < 127 or b in (9, 10, 13) for b in head)
    return len(head) == 16 and head != b"SQLite format 3\x00" and not printable


def uri(path: Path, key: bytes | None) -> str:
    """An SQLite URI naming `path` with its key (or explicitly none), for `VACUUM INTO`."""
    name = "file:" + urllib.parse.quote(str(path.resolve()))
    if key is None:
        return name + "?key="
    return name + f"?cipher={CIPHER}&key=" + urllib.parse.quote(f"x'{key.hex()}'")


def copy_to(conn: apsw.Connection, target: Path, key: bytes | None) -> None:
    """Write a compact, consistent copy of `conn`'s database to `target` (made empty and
    0600 first), encrypted under `key` or plain. A reader's snapshot: others may go on."""
    os.close(private_file(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    sql = "VACUUM INTO " + "'" + uri(target, key).replace("'", "''") + "'"
    conn.execute(sql)


def check_copy(path: Path, key: bytes | None, wal: bool = True) -> dict[str, int]:
    """Open a copy with its key, check it page by page, put it in WAL mode (a database to
    use; a snapshot stays one file) and count what it holds; StoreError if it is damaged."""
    conn, _ = connect(path, apsw.SQLITE_OPEN_READWRITE, [key])
    try:
        verdict = conn.execute("PRAGMA quick_check").fetchall()
        if verdict != [("ok",)]:
            raise StoreError(f"the copy {path} failed its check: {verdict[0][0]}")
        if wal:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
        return counts(conn)
    finally:
        conn.close()


def counts(conn: apsw.Connection) -> dict[str, int]:
    """How many live and trashed memories a database holds."""
    live, trashed = conn.execute(
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL), "
        "count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM memories"
    ).fetchall()[0]
    return {"memories": live, "trashed": trashed}


def _exclusive(db_path: Path, key: bytes | None) -> apsw.Connection:
    """The only connection to the database: out of WAL mode (which SQLite allows only when
    no other connection is open) and holding its exclusive lock until closed."""
    conn, _ = connect(db_path, apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_URI, [key])
    deadline = time.monotonic() + EXCLUSIVE_WAIT_S
    conn.set_busy_timeout(200)
    try:
        while True:
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                mode = conn.execute("PRAGMA journal_mode = DELETE").fetchall()[0][0]
                if mode == "delete":
                    break
            except apsw.BusyError:
                pass
            if time.monotonic() > deadline:
                who = handoff.holders(db_path)
                raise StoreError(
                    "another program still has the database open"
                    + (f" (process {', '.join(who)})" if who else "")
                    + f" after {EXCLUSIVE_WAIT_S:.0f} s; close it and try again (nothing "
                    "was changed)"
                )
            time.sleep(0.2)
        conn.execute("PRAGMA locking_mode = EXCLUSIVE").fetchall()
        conn.execute("BEGIN EXCLUSIVE; COMMIT")
    except BaseException:
        with contextlib.suppress(apsw.Error):
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
        conn.close()
        raise
    return conn


def _room_for(db_path: Path, origin: apsw.Connection) -> None:
    """StoreError unless the new copy of what `origin` holds fits beside the database."""
    pages, page_size = (
        origin.execute("PRAGMA page_count").fetchall()[0][0],
        origin.execute("PRAGMA page_size").fetchall()[0][0],
    )
    needed = pages * page_size * 1.2 + 16 * 2**20  # (and a margin for its journal)
    free = shutil.disk_usage(db_path.parent).free
    if free < needed:
        raise StoreError(
            f"not enough free space beside {db_path}: the new copy needs about "
            f"{needed / 2**20:.0f} MB and {free / 2**20:.0f} MB are free; nothing was changed"
        )


def _left(db_path: Path) -> list[Path]:
    """What switches that did not finish left beside the database: the new copy (in the
    clear after a decrypt) with its journal files, and a key file's temporary twin."""
    found = []
    for pattern in (f".{db_path.name}.*.switch*", f".{db_path.name}.key.*.tmp"):
        found += db_path.parent.glob(pattern)
    return found


def leftovers(db_path: Path) -> None:
    """Overwrite and remove what switches that did not finish left (the caller holds the
    hand-off lock: no switch is under way)."""
    for tmp in _left(db_path):
        _shred(tmp)


def _shred(path: Path) -> None:
    """Overwrite a file of ours with zeros, then remove it (best effort, as `_overwrite`):
    a copy of the database left by a kill may hold every memory in the clear."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.getuid():
            _overwrite(os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)))
    with contextlib.suppress(OSError):
        path.unlink()


def encrypting_mark(db_path: Path) -> Path:
    """Up while `encrypt` runs: its copies (snapshots, the vector copy) are still to do."""
    return db_path.with_name(db_path.name + ".encrypting")


def clean_after_crash(db_path: Path) -> None:
    """Finish what a switch killed half way left undone, at the next open by any process
    (nothing while a switch runs): its copy of the database beside it (in the clear after
    a decrypt) is overwritten and removed, and an encrypt's clear copies (snapshots, the
    vector copy) are encrypted or wiped. Cheap when there is nothing: one folder listing."""
    mark = encrypting_mark(db_path)
    left = _left(db_path)
    if not left and not os.path.lexists(mark):
        return
    with handoff.idle(db_path) as idle:
        if not idle:
            return  # a switch is under way: what is there is its own
        for path in _left(db_path):
            _shred(path)
        if os.path.lexists(mark):
            _finish_encrypt(db_path, mark)


def _finish_encrypt(db_path: Path, mark: Path) -> None:
    """An encrypt was killed: if the database is encrypted now, encrypt the clear copies it
    had not done yet and wipe the clear vector copy; the mark goes once that is done."""
    try:
        entry, key = current_key(db_path)  # (the new key, or the old one before the rename)
        if key is not None:
            wipe(vector_copy(db_path), "*.npy")
            encrypt_copies(db_path, entry, key)
        mark.unlink(missing_ok=True)
        log.info("finished an encryption that was stopped half way")
    except (LockedError, StoreError, OSError, apsw.Error) as exc:
        log.info("an encryption stopped half way is not finished yet: %s", type(exc).__name__)


def current_key(db_path: Path) -> tuple[Entry, bytes | None]:
    """The entry and key that open the database now (the key file's current, else its
    previous after an unfinished switch); LockedError if none is at hand."""
    problems: list[LockedError] = []
    for entry in KeyFile.read(db_path).entries():
        try:
            key = None if entry.kid is None else keyring_keys.key_for(entry, db_path)
            conn, _ = connect(db_path, apsw.SQLITE_OPEN_READONLY, [key])
        except LockedError as exc:
            problems.append(exc)
            continue
        except apsw.NotADBError:
            continue
        conn.close()
        return entry, key
    if problems:
        raise problems[0]
    raise WrongKeyError(
        f"no key at hand opens the database {db_path}; open it with its recovery key: mnemo unlock"
    )


def replace(
    db_path: Path,
    action: str,
    new_entry: Entry,
    new_key: bytes | None,
    source: Callable[[apsw.Connection], apsw.Connection] | None = None,
    keep_aside: Path | None = None,
    prepare: Callable[[apsw.Connection, apsw.Connection], None] | None = None,
    held: bool = False,
) -> dict[str, int]:
    """Replace the database by a copy under `new_key` (None: plain) of itself, or of what
    `source(exclusive_connection)` opens (a backup), with every other Mnemo process let go.
    `keep_aside`: where the database before goes (a restore keeps it). `prepare(copy,
    before)`: checks and changes made to the copy (a connection to it) before it is put
    in place, with the database before at hand (nothing is replaced if it raises).
    `held`: the caller holds the hand-off already (and goes on after this).
    Returns the counts of the new database."""
    refuse_other_names(db_path)
    with contextlib.nullcontext() if held else handoff.hold(db_path, action):
        leftovers(db_path)
        old_entry, old_key = current_key(db_path)
        conn = _exclusive(db_path, old_key)
        tmp = db_path.with_name(f".{db_path.name}.{secrets.token_hex(8)}.switch")
        renamed = False
        try:
            origin = source(conn) if source else conn
            try:
                _room_for(db_path, origin)
                copy_to(origin, tmp, new_key)
            finally:
                if origin is not conn:
                    origin.close()
            found = check_copy(tmp, new_key)
            if prepare is not None:
                copy, _ = connect(tmp, apsw.SQLITE_OPEN_READWRITE, [new_key])
                try:
                    prepare(copy, conn)
                    found = counts(copy)
                finally:
                    copy.close()
            sync(tmp)
            KeyFile(new_entry, previous=old_entry).write(db_path)
            if keep_aside is not None:
                os.link(db_path, keep_aside)
            wipe = (
                os.open(db_path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
                if old_key is None and new_key is not None and keep_aside is None
                else None
            )
            os.replace(tmp, db_path)
            renamed = True  # from here on the new key is the one: never name the old again
            sync(db_path.parent)
            if wipe is not None:
                _overwrite(wipe)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if not renamed:
                with contextlib.suppress(apsw.Error):  # back to WAL: the file stays as it was
                    conn.execute("PRAGMA journal_mode = WAL").fetchall()
                with contextlib.suppress(OSError, LockedError, StoreError):
                    if KeyFile.read(db_path).previous is not None:
                        KeyFile(old_entry).write(db_path)
            if isinstance(exc, apsw.FullError):
                raise StoreError(
                    f"the disk holding {db_path} filled up while the new copy was written; "
                    "nothing was changed"
                ) from None
            if isinstance(exc, apsw.Error) and not renamed:
                raise StoreError(f"the switch failed ({exc}); nothing was changed") from None
            raise
        finally:
            conn.close()
        KeyFile(new_entry).write(db_path)
        return found


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP wait until the block ends (a switch and the showing of
    its recovery key): a switch stopped half way would keep a key nobody was shown. Only
    the main thread receives them; elsewhere this does nothing. kill -9 stays possible
    (and safe: see `replace`)."""
    held = {signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)}
    main = threading.current_thread() is threading.main_thread()
    if not main or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def refuse_other_names(db_path: Path) -> None:
    """Refuse to replace a database that is a symbolic link or has other hard links: the
    other name would keep the file as it was (in the clear), or be overwritten."""
    try:
        st = os.lstat(db_path)
    except FileNotFoundError:
        raise InputError(f"there is no database at {db_path}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(
            f"{db_path} is a symbolic link: replacing it would leave the file it points to as "
            "it is; set MNEMO_HOME to the folder that holds the file itself (nothing changed)"
        )
    if st.st_nlink > 1:
        raise InputError(
            f"{db_path} has another name (a hard link, {st.st_nlink} in all): that copy would "
            "stay as it is; remove the other link first (nothing was changed)"
        )


def _overwrite(fd: int) -> None:
    """Overwrite a replaced plain database with zeros before its blocks are freed (best
    effort: a copy-on-write file system or an SSD may keep the old blocks anyway)."""
    try:
        size = os.fstat(fd).st_size
        zeros = bytes(1 << 20)
        os.lseek(fd, 0, os.SEEK_SET)
        done = 0
        while done < size:
            done += os.write(fd, zeros[: min(len(zeros), size - done)])
        os.fsync(fd)
    except OSError as exc:
        log.warning("could not overwrite the plain database before freeing it: %s", exc)
    finally:
        os.close(fd)


# ---- what `mnemo encrypt / decrypt / unlock` do ---------------------------------------
def vector_copy(db_path: Path) -> Path:
    """The folder of the memory-mapped vector copy beside the database."""
    return db_path.with_name(db_path.name + ".vectors")


def wipe(folder: Path, pattern: str = "*") -> None:
    """Overwrite the files of `folder` matching `pattern` with zeros and remove them (the
    clear vector copy a database had before it was encrypted: the next start seals a new
    one), and the folder when all went. Best effort, as `_overwrite`."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for item in folder.glob(pattern):
        if item.is_file() and not item.is_symlink():
            with contextlib.suppress(OSError):
                _overwrite(os.open(item, os.O_RDWR))
        with contextlib.suppress(OSError):
            item.unlink()
    if pattern == "*":
        with contextlib.suppress(OSError):
            folder.rmdir()


def _store_for(db_path: Path, store: str | None, passphrase: str | None) -> str:
    """Where a new key goes: as asked, else the OS secret store when one answers, else a
    passphrase when one was given; NoKeyError saying what is missing."""
    if store == "passphrase" or (store is None and passphrase):
        if not passphrase:
            raise NoKeyError(
                "a passphrase is needed: give it with MNEMO_PASSPHRASE or --passphrase-file "
                "(or type it when asked)"
            )
        return "passphrase"
    backend, why = keyring_keys.secret_store()
    if backend is None:
        raise NoKeyError(
            f"{why}, so the key cannot be kept in a keyring; give a passphrase instead "
            "(MNEMO_PASSPHRASE, --passphrase-file, or type it when asked)"
        )
    return "keyring"


def encrypt(db_path: Path, store: str | None = None, passphrase: str | None = None) -> str:
    """Encrypt the database in place under a new random key kept in `store`; the recovery
    key (shown once). InputError if it is encrypted already."""
    entry, _ = current_key(db_path)
    if entry.kid is not None:
        raise InputError(
            "the database is encrypted already; `mnemo encrypt --rotate` gives it a new key"
        )
    store = _store_for(db_path, store, passphrase)
    key = keyring_keys.new_key()
    new_entry = keyring_keys.entry_for(key, store, passphrase)
    mark = encrypting_mark(db_path)
    refuse_other_names(db_path)
    # Every other process waits until the copies are done too (never two at them); a kill
    # before they are done leaves the mark, and the next open does them
    with handoff.hold(db_path, "encrypt"):
        os.close(private_file(mark))
        try:
            replace(db_path, "encrypt", new_entry, key, held=True)
        except BaseException:
            mark.unlink(missing_ok=True)
            raise
        if passphrase:
            keyring_keys.remember_passphrase(db_path, passphrase)  # this process opens it next
        wipe(vector_copy(db_path))
        encrypt_copies(db_path, new_entry, key)
        mark.unlink(missing_ok=True)
    return keyring_keys.recovery_text(key)


def plain_copies(db_path: Path) -> list[Path]:
    """The clear copies of the database Mnemo made: snapshots, and the database kept aside
    by a restore, whose key file says (or lacks) no key."""
    found = [*db_path.parent.glob(f"{db_path.name}.before-restore-*")]
    found += [*(db_path.parent / "backups").glob("mnemo-*.db")]
    out = []
    for path in found:
        if path.suffix == ".key" or not path.is_file() or path.is_symlink():
            continue
        try:  # by the file itself: a kill may have left its key file naming the new key
            with open(path, "rb") as f:
                if f.read(16) != b"SQLite format 3\x00":
                    continue
        except OSError:
            continue
        out.append(path)
    return out


def encrypt_copies(db_path: Path, entry: Entry, key: bytes) -> int:
    """Encrypt the clear snapshots and kept-aside databases under the database's new key
    (each rewritten whole, its clear blocks overwritten); how many. One that cannot be read
    is left as it is and logged: `mnemo encrypt --status` lists what stays in the clear."""
    done = 0
    for path in plain_copies(db_path):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
        try:
            conn, _ = connect(path, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, [None])
            try:
                copy_to(conn, tmp, key)
            finally:
                conn.close()
            check_copy(tmp, key, wal=False)
            sync(tmp)
            KeyFile(entry).write(path)
            single = os.lstat(path).st_nlink == 1
            wipe = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)) if single else None
            os.replace(tmp, path)
            sync(path.parent)
            if wipe is not None:
                _overwrite(wipe)
            done += 1
        except (apsw.Error, OSError, StoreError) as exc:
            log.warning("a clear copy (%s) was not encrypted: %s", path.name, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
    return done


def rotate(db_path: Path, passphrase: str | None = None) -> str:
    """Re-encrypt the database under a new key, sealed by `passphrase` when one is given (a
    new passphrase, or a keyring's key moved under one), else kept where the old one was;
    the new recovery key."""
    entry, _ = current_key(db_path)
    if entry.kid is None:
        raise InputError("the database is not encrypted; `mnemo encrypt` encrypts it")
    store = "passphrase" if passphrase else entry.store
    if store == "passphrase":
        passphrase = passphrase or keyring_keys.passphrase_for(db_path)
    key = keyring_keys.new_key()
    replace(db_path, "rotate", keyring_keys.entry_for(key, store, passphrase), key)
    if passphrase:
        keyring_keys.remember_passphrase(db_path, passphrase)
    return keyring_keys.recovery_text(key)


def decrypt(db_path: Path) -> None:
    """Write the database back in the clear (its key stays in the keyring: the backups
    made while it was encrypted still need it)."""
    entry, _ = current_key(db_path)
    if entry.kid is None:
        raise InputError("the database is not encrypted")
    replace(db_path, "decrypt", Entry(None), None)


def unlock(
    db_path: Path, recovery: str, store: str | None = None, passphrase: str | None = None
) -> str:
    """Make the database open again on this machine with its recovery key: check that the
    key opens it, keep it in `store` (the keyring, else a passphrase) and rewrite the key
    file. Returns where the key is kept now."""
    key = keyring_keys.parse_recovery(recovery)
    if not db_path.is_file():
        raise InputError(
            f"there is no database at {db_path} yet: copy it (and its backups folder) there "
            "first, then run mnemo unlock"
        )
    try:
        conn, _ = connect(db_path, apsw.SQLITE_OPEN_READONLY, [key])
    except (apsw.NotADBError, WrongKeyError, apsw.CorruptError):
        raise WrongKeyError(
            f"that recovery key does not open {db_path} (it belongs to another database, "
            "or to this one before a key rotation)"
        ) from None
    conn.close()
    store = _store_for(db_path, store, passphrase)
    with handoff.hold(db_path, "unlock"):
        KeyFile(keyring_keys.entry_for(key, store, passphrase)).write(db_path)
    if passphrase:
        keyring_keys.remember_passphrase(db_path, passphrase)
    return "the OS keyring" if store == "keyring" else "the key file, sealed by your passphrase"
