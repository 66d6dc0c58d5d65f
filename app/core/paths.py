"""Every folder and file Mnemo uses, in one place; `MNEMO_HOME` moves them all."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "mnemo"
RESOURCES = Path(__file__).resolve().parent.parent.parent / "resources"
DEFAULT_MODEL = RESOURCES / "models" / "all-MiniLM-L6-v2.F16.gguf"


def home() -> Path | None:
    """The folder that holds everything when `MNEMO_HOME` is set (tests, portable installs)."""
    value = os.environ.get("MNEMO_HOME")
    return Path(value).expanduser() if value else None


def _dir(kind: str) -> Path:
    base = home()
    if base is not None:
        path = base / kind
    else:
        path = Path(getattr(platformdirs, f"user_{kind}_dir")(APP, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """Where the database lives."""
    return _dir("data")


def config_dir() -> Path:
    """Where the settings file lives."""
    return _dir("config")


def cache_dir() -> Path:
    """Where derived, rebuildable files live (model checksums)."""
    return _dir("cache")


def log_dir() -> Path:
    """Where logs are written."""
    return _dir("log")


def database_path() -> Path:
    """The one SQLite database."""
    return data_dir() / "mnemo.db"


def settings_path() -> Path:
    """The settings file."""
    return config_dir() / "settings.json"
