"""The freedesktop launcher and the autostart entry (XDG)."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import sys
from pathlib import Path

from app.core import paths

log = logging.getLogger(__name__)


def _xdg(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / default)


def command() -> str:
    """How to start this installation of Mnemo."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle: the executable is `mnemo`
        return shlex.quote(sys.executable)
    script = Path(sys.argv[0])
    if script.name == "mnemo" and script.exists():
        return shlex.quote(str(script.resolve()))
    return f"{shlex.quote(sys.executable)} -m app"


def entry(extra: str = "", exe: str | None = None, icon: str | None = None) -> str:
    """The .desktop file's text (for a system package: `exe="mnemo", icon="mnemo"`). It
    starts this installation with this MNEMO_HOME (a portable install's entry used to
    start the default one), and names the program in TryExec: once it is uninstalled
    (`apt remove`), desktops skip the entry left in the user's folders."""
    system = exe is not None
    exe = exe or command()
    icon = icon or str(paths.RESOURCES / "icons" / "mnemo.svg")
    home = paths.home()
    if home is not None and not system:
        exe = f"env MNEMO_HOME={shlex.quote(str(home.resolve()))} {exe}"
    program = shlex.split(command())[0] if not system else exe.split()[0]
    return (
        "[Desktop Entry]\nType=Application\nName=Mnemo\nGenericName=Memory search\n"
        "Comment=Remember things and find them again by meaning\n"
        f"TryExec={program}\nExec={exe}{extra}\nIcon={icon}\n"
        "Terminal=false\nCategories=Utility;\nStartupWMClass=mnemo\n"
        "Actions=Search;Manager;Settings;\n\n"
        f"[Desktop Action Search]\nName=Search memories\nExec={exe} popup\n\n"
        f"[Desktop Action Manager]\nName=Open the memory manager\nExec={exe} manager\n\n"
        f"[Desktop Action Settings]\nName=Settings\nExec={exe} settings --window\n"
    )


def system_launcher() -> Path | None:
    """The launcher a system package installed for this program, if there is one."""
    if not getattr(sys, "frozen", False):
        return None
    for base in os.environ.get("XDG_DATA_DIRS", "/usr/local/share:/usr/share").split(":"):
        path = Path(base or "/usr/share") / "applications" / "mnemo.desktop"
        if path.is_file():
            return path
    return None


def install_launcher() -> Path | None:
    """Write the launcher to ~/.local/share/applications (kept current); a system package's
    own launcher is used instead, so removing the package leaves no stale one behind."""
    if not sys.platform.startswith("linux"):
        return None  # freedesktop launchers are a Linux (and BSD) thing; installers do the rest
    system = system_launcher()
    if system is not None:
        return system
    path = _xdg("XDG_DATA_HOME", ".local/share") / "applications" / "mnemo.desktop"
    _write(path)
    return path


def _write(path: Path) -> None:
    """The launcher at `path`: its folders made 0755 whatever the umask, the file replaced
    whole and never written through a symlink someone planted there."""
    paths.parents_of(path)
    with contextlib.suppress(FileExistsError):
        path.parent.mkdir(mode=0o755)
        path.parent.chmod(0o755)
    if path.is_symlink() or not path.exists() or path.read_text() != entry():
        text = entry()
        paths.replace_file(path, lambda f: f.write(text))


def set_autostart(enabled: bool) -> Path | None:
    """Create or remove ~/.config/autostart/mnemo.desktop (XDG desktops only)."""
    if not sys.platform.startswith("linux"):
        log.warning(
            "start at login is not set by Mnemo on %s: use the installer's option (Windows) "
            "or System Settings > Login Items (macOS)",
            sys.platform,
        )
        return None
    path = _xdg("XDG_CONFIG_HOME", ".config") / "autostart" / "mnemo.desktop"
    if enabled:
        _write(path)
    else:
        path.unlink(missing_ok=True)
    return path


if __name__ == "__main__":  # packaging/build writes the system package's launcher with this
    print(entry(exe=sys.argv[1] if len(sys.argv) > 1 else "mnemo", icon="mnemo"), end="")
