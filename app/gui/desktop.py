"""The freedesktop launcher and the autostart entry (XDG)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from app.core import paths


def _xdg(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / default)


def command() -> str:
    """How to start this installation of Mnemo."""
    script = Path(sys.argv[0])
    if script.name == "mnemo" and script.exists():
        return shlex.quote(str(script.resolve()))
    return f"{shlex.quote(sys.executable)} -m app"


def entry(extra: str = "") -> str:
    """The .desktop file's text."""
    return (
        "[Desktop Entry]\nType=Application\nName=Mnemo\nGenericName=Memory search\n"
        "Comment=Remember things and find them again by meaning\n"
        f"Exec={command()}{extra}\nIcon={paths.RESOURCES / 'icons' / 'mnemo.svg'}\n"
        "Terminal=false\nCategories=Utility;\nStartupWMClass=mnemo\n"
        "Actions=Search;Manager;\n\n"
        f"[Desktop Action Search]\nName=Search memories\nExec={command()} popup\n\n"
        f"[Desktop Action Manager]\nName=Open the memory manager\nExec={command()} manager\n"
    )


def install_launcher() -> Path:
    """Write the launcher to ~/.local/share/applications (kept current)."""
    path = _xdg("XDG_DATA_HOME", ".local/share") / "applications" / "mnemo.desktop"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != entry():
        path.write_text(entry())
    return path


def set_autostart(enabled: bool) -> Path:
    """Create or remove ~/.config/autostart/mnemo.desktop."""
    path = _xdg("XDG_CONFIG_HOME", ".config") / "autostart" / "mnemo.desktop"
    if enabled:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(entry())
    else:
        path.unlink(missing_ok=True)
    return path
