"""Every folder and file Mnemo uses, in one place; `MNEMO_HOME` moves them all."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO

import platformdirs

from app.core.errors import InputError

APP = "mnemo"


def _resources() -> Path:
    """The icons and the bundled model: `app/resources` in a wheel or a PyInstaller bundle
    (package data), `resources/` beside `app/` in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "resources"
    return installed if installed.is_dir() else package.parent / "resources"


RESOURCES = _resources()
DEFAULT_MODEL = RESOURCES / "models" / "all-MiniLM-L6-v2.F16.gguf"


def home() -> Path | None:
    """The folder that holds everything when `MNEMO_HOME` is set (tests, portable installs)."""
    value = os.environ.get("MNEMO_HOME")
    if value:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # bytes the locale could not decode: SQLite cannot open it
            raise InputError(
                f"MNEMO_HOME={value.encode('utf-8', 'surrogateescape')!r} is not UTF-8 text; "
                "choose a folder whose name is"
            ) from None
    return Path(value).expanduser() if value else None


def _dir(kind: str) -> Path:
    base = home()
    if base is not None:
        if base.exists() and not base.is_dir():
            raise InputError(f"MNEMO_HOME={base} is not a folder")
        path = base / kind
    else:
        path = Path(getattr(platformdirs, f"user_{kind}_dir")(APP, appauthor=False))
        # A folder named for us above this one (~/.local/state/mnemo above .../log) is ours
        # alone too: created 0700, not with the umask's 0755.
        for parent in reversed(path.parents):
            if parent.name.lower() == APP:
                private_dir(parent)
                break
    return private_dir(path)


def parents_of(path: Path) -> None:
    """Create the missing folders above `path` as 0755 whatever the umask (under umask 0,
    `mkdir -p` made ~/.config and ~/.local/share writable by every user, who could then
    plant an autostart entry or move our data away)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o755)
            if os.name == "posix":
                folder.chmod(0o755)


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) if needed; the folder itself is ours alone (0700),
    whatever the umask, so another local user cannot read a memory from it; the folders
    above it that we create are 0755 (`parents_of`)."""
    try:
        parents_of(path)
        path.mkdir(mode=0o700, exist_ok=True)
        if os.name == "posix" and path.stat().st_mode & 0o077:
            try:
                path.chmod(0o700)
            except OSError:  # read-only media, or not ours: nothing can be written there
                if os.access(path, os.W_OK):  # either, so reading goes on
                    raise
    except FileExistsError:
        raise InputError(f"{path} is a file, not a folder") from None
    except OSError as exc:
        raise InputError(f"cannot create the folder {path}: {exc.strerror}") from None
    return path


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # not on Windows, where links are admin-only


def private_file(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """Open (creating) a file readable and writable by us alone (0600), whatever the
    umask; an existing file is narrowed to 0600 too; never through a symlink (another
    user's link planted where we write would send our bytes to their choice of file).
    Returns the descriptor."""
    fd = os.open(path, flags | NOFOLLOW, 0o600)
    if os.name == "posix":
        try:
            if os.fstat(fd).st_uid != os.getuid():  # planted by another user (a shared
                raise PermissionError(  # folder): never our bytes in their file
                    errno.EPERM, "it belongs to another user", str(path)
                )
            os.fchmod(fd, 0o600)
        except BaseException:
            os.close(fd)
            raise
    return fd


def replace_file(path: Path, write: Callable[[IO], None], binary: bool = False) -> None:
    """Write `path` whole or not at all, private to us: `write(f)` fills a new temporary
    file beside it (a random name, created exclusively and never through a symlink, so no
    one can plant one there first), which is flushed to disk and renamed over `path`.
    OSError as the system raised it; the temporary file never stays behind."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = private_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def sync(path: Path) -> None:
    """Flush a file, or a folder's entries (a rename in it), to the disk (POSIX)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


class NotAFile(OSError):
    """A path to read is a folder, a named pipe, a socket or a device."""

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}, not a file"


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened for reading in binary, if it is a regular file: a named pipe would
    block the read forever and a device never end, so they are refused with an OSError
    saying what the path is (opened without blocking and checked on the open file, so
    nothing can be swapped in between)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotAFile(errno.EINVAL, kind, str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path) -> bytes:
    """The bytes of `path`, a regular file (see `open_regular`)."""
    with open_regular(path) as f:
        return f.read()


def data_dir() -> Path:
    """Where the database lives."""
    return _dir("data")


def config_dir() -> Path:
    """Where the settings file lives."""
    return _dir("config")


def cache_dir() -> Path:
    """Where derived, rebuildable files live (model checksums)."""
    return _dir("cache")


def state_dir() -> Path:
    """Where the desktop app keeps what it learned of the user's layout (window sizes)."""
    return _dir("state")


def log_dir() -> Path:
    """Where logs are written."""
    return _dir("log")


def database_path() -> Path:
    """The one SQLite database."""
    return data_dir() / "mnemo.db"


def settings_path() -> Path:
    """The settings file."""
    return config_dir() / "settings.json"
