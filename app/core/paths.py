"""Every folder and file Mnemo uses, in one place; `MNEMO_HOME` moves them all."""

from __future__ import annotations

import os
from pathlib import Path

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


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) if needed; the folder itself is ours alone (0700),
    whatever the umask, so another local user cannot read a memory from it."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "posix" and path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except FileExistsError:
        raise InputError(f"{path} is a file, not a folder") from None
    except OSError as exc:
        raise InputError(f"cannot create the folder {path}: {exc.strerror}") from None
    return path


def private_file(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """Open (creating) a file readable and writable by us alone (0600), whatever the
    umask; an existing file is narrowed to 0600 too. Returns the descriptor."""
    fd = os.open(path, flags, 0o600)
    if os.name == "posix":
        os.fchmod(fd, 0o600)
    return fd


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
