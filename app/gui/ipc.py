"""Single instance: the first `mnemo` listens on a local socket (this user only); later
`mnemo popup|manager|remember-clipboard|settings|quit` send their command to it and exit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable

from app.core import paths
from app.gui.qt import QtCore, QtNetwork, Signal

COMMANDS = ("popup", "manager", "remember-clipboard", "settings", "quit", "show")


def server_name() -> str:
    """A socket name private to this user and this data folder (so MNEMO_HOMEs don't mix)."""
    key = hashlib.sha256(str(paths.data_dir().resolve()).encode()).hexdigest()[:10]
    return f"mnemo-{os.getuid() if hasattr(os, 'getuid') else 'u'}-{key}"


class Server(QtCore.QObject):
    """Receives commands from later `mnemo` invocations."""

    command = Signal(str)

    def __init__(self, status: Callable[[], dict] | None = None, parent=None):
        super().__init__(parent)
        self._status = status or dict
        self._server = QtNetwork.QLocalServer(self)
        self._server.setSocketOptions(QtNetwork.QLocalServer.UserAccessOption)
        self._server.newConnection.connect(self._accept)

    def listen(self) -> bool:
        """Start listening; False if another instance already is."""
        if send("ping", timeout_ms=500):
            return False
        QtNetwork.QLocalServer.removeServer(server_name())  # a stale socket from a crash
        return self._server.listen(server_name())

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._read(s))

    def _read(self, socket: QtNetwork.QLocalSocket) -> None:
        while socket.canReadLine():
            word = bytes(socket.readLine()).decode("utf-8", "replace").strip()
            reply = "ok " + json.dumps(self._status()) if word == "status" else "ok"
            socket.write(reply.encode() + b"\n")
            socket.flush()
            if word in COMMANDS:
                self.command.emit(word)

    def close(self) -> None:
        """Stop listening and remove the socket."""
        self._server.close()


def _ask(command: str, timeout_ms: int) -> str | None:
    socket = QtNetwork.QLocalSocket()
    socket.connectToServer(server_name())
    if not socket.waitForConnected(timeout_ms):
        return None
    socket.write(command.encode() + b"\n")
    socket.flush()
    reply = None
    if socket.waitForReadyRead(timeout_ms):
        reply = bytes(socket.readLine()).decode("utf-8", "replace").strip()
    socket.disconnectFromServer()
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
