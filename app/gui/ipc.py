"""Single instance: the first `mnemo` listens on a local socket (this user only); later
`mnemo popup|manager|remember-clipboard|settings|quit` send their command to it and exit.

The socket sits in a folder only this user can use (`$XDG_RUNTIME_DIR/mnemo/`, or a 0700
`mnemo-<uid>` folder in the temp folder, checked like tmux checks `/tmp/tmux-<uid>`), and
both ends check who is at the other end (SO_PEERCRED, getpeereid), so another local user can
neither squat the name nor answer in our place: that is said in one line, never silently.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable

from app.gui.qt import QtCore, QtNetwork, Signal
from app.local_socket import (
    SOCKET_PATH_MAX,  # noqa: F401 - part of this module's face (tests read it)
    UNIX,
    SocketError,
    foreign,
    key,
    ours,
    peer_uid,
    socket_path,
)

log = logging.getLogger(__name__)

COMMANDS = ("popup", "manager", "remember-clipboard", "settings", "inbox", "quit", "show")
COMMANDS = ("popup", "manager", "remember-clipboard", "settings", "inbox", "quit", "show")


def server_name() -> str:
    """The local socket's name: a full path private to this user and this data folder."""
    if not UNIX:  # Windows: a named pipe, which UserAccessOption limits to this user
        return f"mnemo-{key()}"
    return str(socket_path())


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
        if not UNIX:
            QtNetwork.QLocalServer.removeServer(name)
        elif ours(name):  # a stale socket of ours from a crash; anyone else's raised
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
        if not UNIX:
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
        raise foreign(name, uid)


def _ask(command: str, timeout_ms: int) -> str | None:
    """Send one command line and return the reply line (None if no instance answered)."""
    name = server_name()
    if UNIX and not ours(name):
        return None  # nothing there: no instance runs
    conn = QtNetwork.QLocalSocket()
    conn.connectToServer(name)
    if not conn.waitForConnected(timeout_ms):
        return None
    try:
        if UNIX:
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
