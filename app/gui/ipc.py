"""Single instance: the first `mnemo` listens on a local socket (this user only); later
`mnemo popup|manager|remember-clipboard|settings|quit` send their command to it and exit.

The socket sits in a folder only this user can use (`$XDG_RUNTIME_DIR/mnemo/`, or a 0700
`mnemo-<uid>` folder in the temp folder, checked like tmux checks `/tmp/tmux-<uid>`), and
both ends check who is at the other end (SO_PEERCRED, getpeereid), so another local user can
neither squat the name nor answer in our place: that is said in one line, never silently.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import logging
import os
import socket
import stat
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

from app.core import paths
from app.core.errors import MnemoError
from app.gui.qt import QtCore, QtNetwork, Signal

log = logging.getLogger(__name__)

COMMANDS = ("popup", "manager", "remember-clipboard", "settings", "quit", "show")
# sun_path holds 108 bytes on Linux (Qt accepts 106) and 104 on macOS: keep a margin.
SOCKET_PATH_MAX = 100
_UNIX = hasattr(os, "geteuid")


class SocketError(MnemoError):
    """The instance socket or its folder is not ours alone: we refuse to use it."""


def _foreign(path: Path | str, uid: int) -> SocketError:
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


def _private_dir(path: Path) -> Path:
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
            log.info("XDG_RUNTIME_DIR %s is not a private folder of ours: not used", runtime)
    uid = os.geteuid()
    found.append(Path(tempfile.gettempdir()) / f"mnemo-{uid}")
    if os.path.isdir("/tmp"):
        found.append(Path("/tmp") / f"mnemo-{uid}")
    # Last, a folder in our own state folder: no one else can have made it first (another
    # user's `mkdir -m700 /tmp/mnemo-<uid>` blocked the app for good, XDG_RUNTIME_DIR unset)
    found.append(paths.state_dir() / "run")
    return found


def socket_path() -> Path:
    """The socket file, in a folder only this user can use, named after the data folder."""
    name = f"{_key()}.sock"
    refused = []
    for folder in _candidate_dirs():
        if len(os.fsencode(folder / name)) > SOCKET_PATH_MAX:
            continue
        try:
            return _private_dir(folder) / name
        except SocketError as exc:
            log.warning("%s; trying another folder", exc)
            refused.append(str(exc))
    raise SocketError(
        "; ".join(refused)
        or f"no folder gives a socket path under {SOCKET_PATH_MAX} bytes: set TMPDIR to a short one"
    )


def _key() -> str:
    # A hash of the data folder, so two MNEMO_HOMEs never talk to each other's instance.
    return hashlib.sha256(str(paths.data_dir().resolve()).encode()).hexdigest()[:10]


def server_name() -> str:
    """The local socket's name: a full path private to this user and this data folder."""
    if not _UNIX:  # Windows: a named pipe, which UserAccessOption limits to this user
        return f"mnemo-{_key()}"
    return str(socket_path())


@functools.cache
def _getpeereid():
    """libc's getpeereid (macOS, the BSDs), or None where there is none (glibc)."""
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
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if getpeereid(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return uid.value


def _ours(path: Path | str) -> bool:
    """True if a socket of ours is at `path`, False if nothing is; SocketError otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if st.st_uid != os.geteuid():
        raise _foreign(path, st.st_uid)
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketError(f"{path} is not a socket; remove it and try again")
    return True


class Server(QtCore.QObject):
    """Receives commands from later `mnemo` invocations (of this user only)."""

    command = Signal(str)

    def __init__(self, status: Callable[[], dict] | None = None, parent=None):
        super().__init__(parent)
        self._status = status or dict
        self._server = QtNetwork.QLocalServer(self)
        self._server.setSocketOptions(QtNetwork.QLocalServer.UserAccessOption)
        self._server.newConnection.connect(self._accept)

    def listen(self) -> bool:
        """Start listening; False if another instance already is (SocketError if a stranger)."""
        name = server_name()
        if send("ping", timeout_ms=500):
            return False
        if not _UNIX:
            QtNetwork.QLocalServer.removeServer(name)
        elif _ours(name):  # a stale socket of ours from a crash; anyone else's raised
            os.unlink(name)
        if not self._server.listen(name):
            log.warning("cannot listen on %s: %s", name, self._server.errorString())
            return False
        return True

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            client = self._server.nextPendingConnection()
            client.disconnected.connect(client.deleteLater)
            if not self._trusted(client):
                client.abort()
                continue
            client.readyRead.connect(lambda s=client: self._read(s))

    def _trusted(self, client: QtNetwork.QLocalSocket) -> bool:
        if not _UNIX:
            return True
        try:
            uid = peer_uid(int(client.socketDescriptor()))
        except OSError as exc:
            log.warning("refused a connection whose peer cannot be checked: %s", exc)
            return False
        if uid is not None and uid != os.geteuid():
            log.warning(
                "refused a connection from uid %s on %s", uid, self._server.fullServerName()
            )
            return False
        return True

    def _read(self, client: QtNetwork.QLocalSocket) -> None:
        # Answer every line first, then act once control is back in the event loop: a command
        # may open a modal dialog (a secret in the clipboard) whose own event loop lets the
        # client disconnect and be deleted while we would still be reading from it.
        words = []
        while client.canReadLine():
            word = bytes(client.readLine()).decode("utf-8", "replace").strip()
            reply = "ok " + json.dumps(self._status()) if word == "status" else "ok"
            client.write(reply.encode() + b"\n")
            client.flush()
            if word in COMMANDS:
                words.append(word)
        for word in words:
            QtCore.QTimer.singleShot(0, self, functools.partial(self.command.emit, word))

    def close(self) -> None:
        """Stop listening and remove the socket."""
        self._server.close()


def _check_server(conn: QtNetwork.QLocalSocket, name: str) -> None:
    """SocketError unless the process we reached runs as us."""
    try:
        uid = peer_uid(int(conn.socketDescriptor()))
    except OSError as exc:
        raise SocketError(f"cannot tell who holds {name} ({exc}); not talking to it") from None
    if uid is not None and uid != os.geteuid():
        raise _foreign(name, uid)


def _ask(command: str, timeout_ms: int) -> str | None:
    """Send one command line and return the reply line (None if no instance answered)."""
    name = server_name()
    if _UNIX and not _ours(name):
        return None  # nothing there: no instance runs
    conn = QtNetwork.QLocalSocket()
    conn.connectToServer(name)
    if not conn.waitForConnected(timeout_ms):
        return None
    try:
        if _UNIX:
            _check_server(conn, name)  # before it hears anything from us
    except SocketError:
        conn.abort()
        raise
    conn.write(command.encode() + b"\n")
    conn.flush()
    reply = None
    if conn.waitForReadyRead(timeout_ms):
        reply = bytes(conn.readLine()).decode("utf-8", "replace").strip()
    conn.disconnectFromServer()
    return reply


def send(command: str, timeout_ms: int = 2000) -> bool:
    """Send a command to the running instance; True if one answered."""
    reply = _ask(command, timeout_ms)
    return reply is not None and reply.startswith("ok")


def status(timeout_ms: int = 2000) -> dict | None:
    """The running instance's state (hotkey, model, tray, last notification), or None."""
    reply = _ask("status", timeout_ms)
    if not reply or not reply.startswith("ok "):
        return None
    return json.loads(reply[3:])
