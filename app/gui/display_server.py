"""Whether the desktop app can reach a display server, asked before Qt is: Qt aborts the
process (SIGABRT, a core dump) when the platform it picks cannot connect, which is what a
stale WAYLAND_DISPLAY or DISPLAY left in an SSH or tmux session gives.

Linux and other X11/Wayland systems only; macOS and Windows always have their display.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from pathlib import Path

X11_DIR = Path("/tmp/.X11-unix")
X11_TCP_BASE = 6000


def _wayland() -> tuple[bool, str]:
    """Whether WAYLAND_DISPLAY names a live compositor socket; the reason if not."""
    name = os.environ.get("WAYLAND_DISPLAY", "")
    if not name:
        return False, "WAYLAND_DISPLAY is not set"
    path = Path(name)
    if not path.is_absolute():
        runtime = os.environ.get("XDG_RUNTIME_DIR", "")
        if not runtime:
            return False, f"WAYLAND_DISPLAY={name} but XDG_RUNTIME_DIR is not set"
        path = Path(runtime) / name
    if not _connects(socket.AF_UNIX, str(path)):
        return False, f"WAYLAND_DISPLAY={name}: no compositor answers at {path}"
    return True, ""


def _x11() -> tuple[bool, str]:
    """Whether DISPLAY names an X server that accepts a connection; the reason if not."""
    value = os.environ.get("DISPLAY", "")
    if not value:
        return False, "DISPLAY is not set"
    match = re.fullmatch(r"(?:(?P<host>[^:]*)/)?(?P<name>[^:]*):(?P<number>\d+)(?:\.\d+)?", value)
    if match is None:
        return True, ""  # a form we do not know (launchd's path on macOS): let Qt try it
    host, number = match["name"], int(match["number"])
    if host in ("", "unix"):
        local = str(X11_DIR / f"X{number}")
        if _connects(socket.AF_UNIX, local) or (
            sys.platform.startswith("linux") and _connects(socket.AF_UNIX, "\0" + local)
        ):
            return True, ""
        return False, f"DISPLAY={value}: no X server answers at {local}"
    if _connects(socket.AF_INET, (host, X11_TCP_BASE + number)):  # ssh -X: localhost:10.0
        return True, ""
    return False, f"DISPLAY={value}: no X server answers at {host}:{X11_TCP_BASE + number}"


def _connects(family: int, address) -> bool:
    try:
        with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as probe:
            probe.settimeout(2)
            probe.connect(address)
            return True
    except OSError:
        return False


def problem() -> str | None:
    """Why the desktop app cannot show itself here, or None. When only one of Wayland and
    X11 answers, Qt is told to use that one (QT_QPA_PLATFORM), so it never picks the dead one.
    A QT_QPA_PLATFORM the user set is left to Qt."""
    if sys.platform in ("darwin", "win32") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    wayland, why_not_wayland = _wayland()
    x11, why_not_x11 = _x11()
    if wayland and x11:
        return None
    if wayland or x11:
        os.environ["QT_QPA_PLATFORM"] = "wayland" if wayland else "xcb"
        return None
    return (
        f"no display to show the desktop app on ({why_not_wayland}; {why_not_x11}); "
        "the command line works without one: mnemo --help"
    )
