"""Local sockets only this user can reach: a folder only we can use, named after the data
folder, and a check of who is at the other end (SO_PEERCRED, getpeereid). The tray app's
single-instance socket (`app.gui.ipc`) and the agents' hook helper (`app.agents.helper`) use
it; it imports no Qt, so a hook process stays light.

The socket sits in `$XDG_RUNTIME_DIR/mnemo/`, or a 0700 `mnemo-<uid>` folder in the temp
folder, checked like tmux checks `/tmp/tmux-<uid>`, so another local user can neither squat
the name nor answer in our place: that is said in one line, never silently.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import stat
import struct
from pathlib import Path

from app.core import paths
from app.core.errors import MnemoError

# sun_path holds 108 bytes on Linux (Qt accepts 106) and 104 on macOS: keep a margin.
SOCKET_PATH_MAX = 100
UNIX = hasattr(os, "geteuid")


class SocketError(MnemoError):
    """The instance socket or its folder is not ours alone: we refuse to use it."""


def _log():
    import logging  # here: a hook process logs nothing on the way that works

    return logging.getLogger(__name__)


def foreign(path: Path | str, uid: int) -> SocketError:
    return SocketError(f"another user (uid {uid}) holds {path}; not talking to it")


def _why_not_private(path: Path) -> str | None:
    """Why `path` is not a folder only we can use (None if it is one)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return exc.strerror or "it cannot be read"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return f"it belongs to uid {st.st_uid}"
    if stat.S_IMODE(st.st_mode) != 0o700:
        return f"its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def private_dir(path: Path) -> Path:
    """`path` as a folder only we can use, created 0700 if missing; SocketError if unsafe."""
    try:
        os.mkdir(path, 0o700)  # the umask can only take bits away; the check below sees it
    except FileExistsError:
        pass  # ours from an earlier run, or someone else's: checked below
    except OSError as exc:
        raise SocketError(f"cannot create {path} for the instance socket: {exc.strerror}") from None
    problem = _why_not_private(path)
    if problem:
        raise SocketError(
            f"{path} must be a folder of yours with mode 0700 ({problem}); not using it. "
            "Remove it (or fix its owner and mode) and try again"
        )
    return path


def _candidate_dirs() -> list[Path]:
    """Where the socket folder may go, best first (the first short enough is used)."""
    found = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        if _why_not_private(Path(runtime)) is None:
            found.append(Path(runtime) / "mnemo")
        else:
            _log().info("XDG_RUNTIME_DIR %s is not a private folder of ours: not used", runtime)
    uid = os.geteuid()
    import tempfile  # here: most runs find XDG_RUNTIME_DIR, and a hook process stays light

    found.append(Path(tempfile.gettempdir()) / f"mnemo-{uid}")
    if os.path.isdir("/tmp"):
        found.append(Path("/tmp") / f"mnemo-{uid}")
    # Last, a folder in our own state folder: no one else can have made it first (another
    # user's `mkdir -m700 /tmp/mnemo-<uid>` blocked the app for good, XDG_RUNTIME_DIR unset)
    found.append(paths.state_dir() / "run")
    return found


def socket_path(suffix: str = "") -> Path:
    """The socket file, in a folder only this user can use, named after the data folder
    (and `suffix`: one data folder may have more than one socket)."""
    name = f"{key()}{suffix}.sock"
    refused = []
    for folder in _candidate_dirs():
        if len(os.fsencode(folder / name)) > SOCKET_PATH_MAX:
            continue
        try:
            return private_dir(folder) / name
        except SocketError as exc:
            _log().warning("%s; trying another folder", exc)
            refused.append(str(exc))
    raise SocketError(
        "; ".join(refused)
        or f"no folder gives a socket path under {SOCKET_PATH_MAX} bytes: set TMPDIR to a short one"
    )


def key() -> str:
    # A hash of the data folder, so two MNEMO_HOMEs never talk to each other's instance.
    return hashlib.sha256(str(paths.data_dir().resolve()).encode()).hexdigest()[:10]


@functools.cache
def _getpeereid():
    """libc's getpeereid (macOS, the BSDs), or None where there is none (glibc)."""
    import ctypes  # here: Linux has SO_PEERCRED, and a hook process stays light

    try:
        function = ctypes.CDLL(None, use_errno=True).getpeereid
    except (OSError, AttributeError, TypeError):
        return None
    uid_p = ctypes.POINTER(ctypes.c_uint32)
    function.argtypes = [ctypes.c_int, uid_p, uid_p]
    return function


def peer_uid(fd: int) -> int | None:
    """The uid of the process at the other end of a connected local socket.

    None where the platform cannot tell (then only the socket file's owner is checked);
    OSError if it should tell and cannot.
    """
    if fd < 0:
        raise OSError("the socket is not connected")
    if hasattr(socket, "SO_PEERCRED"):  # Linux
        size = struct.calcsize("3i")
        with socket.socket(fileno=os.dup(fd)) as sock:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
        return struct.unpack("3i", creds)[1]
    getpeereid = _getpeereid()
    if getpeereid is None:
        return None
    import ctypes

    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if getpeereid(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return uid.value


def ours(path: Path | str) -> bool:
    """True if a socket of ours is at `path`, False if nothing is; SocketError otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if st.st_uid != os.geteuid():
        raise foreign(path, st.st_uid)
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketError(f"{path} is not a socket; remove it and try again")
    return True
