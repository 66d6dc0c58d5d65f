"""Desktop notifications through the desktop's own service, the tray's balloon otherwise.

On Linux a notification goes to org.freedesktop.Notifications on the session bus (dunst,
GNOME Shell, Plasma, mako, xfce4-notifyd...): it lands in the desktop's history, follows its
do-not-disturb, and can carry an action (clicking it, or the daemon's action key, calls back).
Where no such service answers (no session bus, nobody owns the name, another platform), the
same message is shown as a Qt tray balloon, as before.

D-Bus is spoken with jeepney on a thread of its own (`mnemo-notify`): a daemon that is slow
to answer never holds up the GUI. The thread only emits signals; callbacks run in the GUI
thread.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import queue
import sys
from collections.abc import Callable

from app.gui.qt import QtCore, Signal

log = logging.getLogger(__name__)

BUS_NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
APP_NAME = "Mnemo"
DEFAULT = "default"  # the action key a click on the notification invokes
KEPT = 64  # notifications whose action can still be clicked
WITHDRAW = "withdraw"  # a request to the sender: close the notifications it showed


def service_reason() -> str | None:
    """None where notifications can go through D-Bus here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS not set)"
    if importlib.util.find_spec("jeepney") is None:
        return "jeepney is not installed"
    return None


class Notifier(QtCore.QObject):
    """Shows notifications; `fallback(title, text)` when the desktop service could not."""

    fallback = Signal(str, str)  # show it another way (the tray balloon)
    _invoked = Signal(int, str)  # (notification id, action key), from the D-Bus thread
    _sent = Signal(int, int)  # (our number, the daemon's notification id)

    def __init__(self, icon_path: str = "", parent=None):
        super().__init__(parent)
        self.icon_path = icon_path
        self.via = ""  # how the last one was shown: "dbus" or "tray"
        self._numbers = 0
        self._callbacks: dict[int, Callable[[], None]] = {}  # our number -> its action
        self._ids: dict[int, int] = {}  # the daemon's id -> our number
        self._thread: _Sender | None = None
        self._invoked.connect(self._on_invoked)
        self._sent.connect(self._on_sent)
        self.fallback.connect(lambda *_: setattr(self, "via", "tray"))
        reason = service_reason()
        if reason is None:
            self._thread = _Sender(self)
            self._thread.start()
        else:
            log.info("notifications go to the tray: %s", reason)

    def show(
        self, title: str, text: str, action: tuple[str, Callable[[], None]] | None = None
    ) -> None:
        """Show `title`/`text`; `action` (label, callback) is offered where the daemon can
        (a click on the notification runs it too)."""
        if self._thread is None:
            self.via = "tray"
            self.fallback.emit(title, text)
            return
        self._numbers += 1
        if action is not None:
            self._callbacks[self._numbers] = action[1]
        self.via = "dbus"
        self._thread.requests.put((self._numbers, title, text, action[0] if action else ""))

    def withdraw(self) -> None:
        """Take Mnemo's notifications still on screen away (a question about to open says
        what they said, and the daemon keeps them above every window)."""
        if self._thread is not None:
            self._thread.requests.put(WITHDRAW)

    def close(self) -> None:
        if self._thread is not None:
            self._thread.requests.put(None)
            self._thread.wait(3000)
            self._thread = None

    def _on_sent(self, number: int, nid: int) -> None:
        self._ids[nid] = number
        while len(self._ids) > KEPT:  # long gone from the screen: nobody clicks them now
            self._callbacks.pop(self._ids.pop(next(iter(self._ids))), None)

    def _on_invoked(self, nid: int, key: str) -> None:
        number = self._ids.get(nid)
        callback = self._callbacks.pop(number, None) if number is not None else None
        if callback is not None and key in (DEFAULT, "open"):
            callback()


class _Sender(QtCore.QThread):
    """Sends Notify calls and listens for ActionInvoked / NotificationClosed."""

    def __init__(self, owner: Notifier):
        super().__init__()
        self.setObjectName("mnemo-notify")
        self.owner = owner
        self.requests: queue.Queue = queue.Queue()
        self._shown: list[int] = []  # the daemon's ids of the last notifications sent

    def run(self) -> None:
        from jeepney import MatchRule, message_bus
        from jeepney.io.blocking import open_dbus_connection

        try:
            conn = open_dbus_connection(bus="SESSION")
        except Exception as exc:  # the bus went away, a broken address
            log.info("notifications go to the tray: cannot reach the session bus (%s)", exc)
            self._drain_to_tray()
            return
        with conn:
            rule = MatchRule(type="signal", interface=BUS_NAME, path=PATH)
            try:
                conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=5)
            except Exception as exc:
                log.info("notification actions unavailable: %s", exc)
            with conn.filter(rule) as signals:
                self._serve(conn, signals)

    def _serve(self, conn, signals) -> None:
        capabilities: list[str] | None = None
        while True:
            try:
                request = self.requests.get(timeout=0.1)
            except queue.Empty:
                request = False
            if request is None:
                return
            if request == WITHDRAW:
                self._withdraw(conn)
            elif request:
                if capabilities is None:
                    capabilities = self._capabilities(conn)
                self._send(conn, request, capabilities)
            try:
                while True:
                    signal = conn.recv_until_filtered(signals, timeout=0)
                    if signal.header.fields.get(3) == "ActionInvoked":  # 3: MEMBER
                        self.owner._invoked.emit(int(signal.body[0]), str(signal.body[1]))
            except TimeoutError:
                pass

    def _capabilities(self, conn) -> list[str]:
        from jeepney import DBusAddress, MessageType, new_method_call

        address = DBusAddress(PATH, bus_name=BUS_NAME, interface=BUS_NAME)
        try:
            reply = conn.send_and_get_reply(new_method_call(address, "GetCapabilities"), timeout=5)
        except Exception:
            return []
        if reply.header.message_type == MessageType.error:
            return []
        return list(reply.body[0])

    def _send(self, conn, request, capabilities: list[str]) -> None:
        from jeepney import DBusAddress, MessageType, new_method_call

        number, title, text, label = request
        actions = [DEFAULT, label, "open", label] if label and "actions" in capabilities else []
        body = "body-markup" in capabilities
        shown = _escape(text) if body else text  # markup daemons read < and & as tags
        hints = {"desktop-entry": ("s", "mnemo"), "urgency": ("y", 1)}
        address = DBusAddress(PATH, bus_name=BUS_NAME, interface=BUS_NAME)
        call = new_method_call(
            address,
            "Notify",
            "susssasa{sv}i",
            (APP_NAME, 0, self.owner.icon_path, title, shown, actions, hints, -1),
        )
        try:
            reply = conn.send_and_get_reply(call, timeout=5)
        except Exception as exc:  # no answer in time
            log.info("the notification service did not answer (%s); using the tray", exc)
            self.owner.fallback.emit(title, text)
            return
        if reply.header.message_type == MessageType.error:  # nobody owns the name, ...
            log.info("no notification service (%s); using the tray", reply.body[:1])
            self.owner.fallback.emit(title, text)
            return
        self._shown = [*self._shown[-(KEPT - 1) :], int(reply.body[0])]
        self.owner._sent.emit(number, int(reply.body[0]))

    def _withdraw(self, conn) -> None:
        from jeepney import DBusAddress, new_method_call

        address = DBusAddress(PATH, bus_name=BUS_NAME, interface=BUS_NAME)
        for nid in self._shown:  # (one gone already is no error worth a word)
            call = new_method_call(address, "CloseNotification", "u", (nid,))
            with contextlib.suppress(Exception):
                conn.send_and_get_reply(call, timeout=2)
        self._shown = []

    def _drain_to_tray(self) -> None:
        while True:
            request = self.requests.get()
            if request is None:
                return
            if request != WITHDRAW:
                self.owner.fallback.emit(request[1], request[2])


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
