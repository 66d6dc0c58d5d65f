"""The Wayland hotkey backend against a GlobalShortcuts portal on a private session bus.

No compositor runs here, so the portal is a stand-in that follows the specification
(org.freedesktop.portal.GlobalShortcuts v1 and org.freedesktop.portal.Request); the bus,
the client and every message on it are real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest

from app.gui.hotkey.base import REMEMBER
from app.gui.hotkey.portal import BUS_NAME, PATH, SHORTCUTS, PortalHotkey, portal_trigger

pytestmark = pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")


@pytest.fixture
def session_bus(monkeypatch):
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    address = daemon.stdout.readline().strip()
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    yield address
    daemon.terminate()
    daemon.wait(5)


class StandInPortal(threading.Thread):
    """Answers Register, CreateSession and BindShortcuts as the specification says."""

    def __init__(self, bind_response: int = 0):
        super().__init__(daemon=True)
        from jeepney import message_bus
        from jeepney.io.blocking import open_dbus_connection

        self.conn = open_dbus_connection(bus="SESSION")
        self.conn.send_and_get_reply(message_bus.RequestName(BUS_NAME), timeout=5)
        self.bind_response = bind_response
        self.calls: list[tuple[str, str, tuple]] = []
        self.session: str | None = None
        self.stop = False
        self.start()

    def _respond(self, sender: str, token: str, code: int, results: dict) -> tuple:
        from jeepney import DBusAddress, new_signal

        path = f"{PATH}/request/{sender.lstrip(':').replace('.', '_')}/{token}"
        signal = new_signal(
            DBusAddress(path, interface="org.freedesktop.portal.Request"),
            "Response",
            "ua{sv}",
            (code, results),
        )
        return path, signal

    def run(self) -> None:
        from jeepney import HeaderFields, MessageType, new_error, new_method_return

        while not self.stop:
            try:
                msg = self.conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            if msg.header.message_type != MessageType.method_call:
                continue
            fields = msg.header.fields
            interface, member = fields.get(HeaderFields.interface), fields[HeaderFields.member]
            sender = fields[HeaderFields.sender]
            self.calls.append((interface, member, msg.body))
            if member == "Register":
                self.conn.send(new_method_return(msg))
            elif member == "CreateSession":
                options = msg.body[0]
                self.session = (
                    f"{PATH}/session/{sender.lstrip(':').replace('.', '_')}/"
                    f"{options['session_handle_token'][1]}"
                )
                path, signal = self._respond(
                    sender, options["handle_token"][1], 0, {"session_handle": ("s", self.session)}
                )
                self.conn.send(new_method_return(msg, "o", (path,)))
                self.conn.send(signal)
            elif member == "BindShortcuts":
                session, shortcuts, _parent, options = msg.body
                path, signal = self._respond(
                    sender,
                    options["handle_token"][1],
                    self.bind_response,
                    {"shortcuts": ("a(sa{sv})", shortcuts)},
                )
                self.conn.send(new_method_return(msg, "o", (path,)))
                self.conn.send(signal)
            else:
                self.conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod"))

    def activate(self, session: str, shortcut: str) -> None:
        from jeepney import DBusAddress, new_signal

        self.conn.send(
            new_signal(
                DBusAddress(PATH, interface=SHORTCUTS),
                "Activated",
                "osta{sv}",
                (session, shortcut, 0, {}),
            )
        )

    def close(self) -> None:
        self.stop = True
        self.join(2)
        self.conn.close()


def test_trigger_is_written_in_the_xdg_shortcut_form():
    assert portal_trigger("Ctrl+Alt+Space") == "CTRL+ALT+space"
    assert portal_trigger("Meta+Shift+M") == "SHIFT+LOGO+M"


def test_binds_through_the_portal_and_fires_only_on_our_activation(qtbot, session_bus):
    portal = StandInPortal()
    hotkey = PortalHotkey()
    try:
        assert hotkey.register("Ctrl+Alt+Space") is None
        qtbot.waitUntil(lambda: any(c[1] == "BindShortcuts" for c in portal.calls), timeout=10_000)
        register = next(c for c in portal.calls if c[1] == "Register")
        assert register[0] == "org.freedesktop.host.portal.Registry"
        assert register[2][0] == "mnemo"  # the app id of our .desktop file
        _session, shortcuts, _parent, _options = next(
            c for c in portal.calls if c[1] == "BindShortcuts"
        )[2]
        assert shortcuts[0][0] == "popup"
        assert shortcuts[0][1]["preferred_trigger"] == ("s", "CTRL+ALT+space")
        qtbot.waitUntil(lambda: hotkey.session_handle == portal.session, timeout=5000)
        qtbot.wait(300)  # the listener subscribes to Activated right after binding
        fired = []
        hotkey.activated.connect(lambda: fired.append(1))
        portal.activate(portal.session, "something-else")
        portal.activate("/org/freedesktop/portal/desktop/session/other/x", "popup")
        with qtbot.waitSignal(hotkey.activated, timeout=5000):
            portal.activate(portal.session, "popup")
        qtbot.wait(200)
        assert fired == [1]
    finally:
        hotkey.unregister()
        portal.close()


def test_a_refused_binding_is_reported_with_the_fallback(qtbot, session_bus):
    portal = StandInPortal(bind_response=1)  # the user cancelled the dialog
    hotkey = PortalHotkey()
    try:
        with qtbot.waitSignal(hotkey.failed, timeout=10_000) as signal:
            assert hotkey.register("Ctrl+Alt+Space") is None
        assert "cancelled" in signal.args[0] and "mnemo popup" in signal.args[0]
    finally:
        hotkey.unregister()
        portal.close()


def test_without_a_session_bus_it_says_so(monkeypatch):
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    assert "no D-Bus session bus" in PortalHotkey().register("Ctrl+Alt+Space")
    assert os.environ.get("DBUS_SESSION_BUS_ADDRESS") is None


def test_remember_clipboard_binds_its_own_shortcut_and_fires_only_on_it(qtbot, session_bus):
    portal = StandInPortal()
    hotkey = PortalHotkey(shortcut=REMEMBER)
    try:
        assert hotkey.register("Ctrl+Alt+C") is None
        qtbot.waitUntil(lambda: any(c[1] == "BindShortcuts" for c in portal.calls), timeout=10_000)
        shortcuts = next(c for c in portal.calls if c[1] == "BindShortcuts")[2][1]
        assert shortcuts[0][0] == "remember-clipboard"
        assert shortcuts[0][1]["description"] == ("s", "Remember the clipboard in Mnemo")
        assert shortcuts[0][1]["preferred_trigger"] == ("s", "CTRL+ALT+C")
        qtbot.waitUntil(lambda: hotkey.session_handle == portal.session, timeout=5000)
        qtbot.wait(300)
        fired = []
        hotkey.activated.connect(lambda: fired.append(1))
        portal.activate(portal.session, "popup")  # the search key is another shortcut
        with qtbot.waitSignal(hotkey.activated, timeout=5000):
            portal.activate(portal.session, "remember-clipboard")
        qtbot.wait(200)
        assert fired == [1]
    finally:
        hotkey.unregister()
        portal.close()


def test_a_refused_remember_key_names_its_own_command():
    from app.gui.hotkey import ManualHotkey

    error = ManualHotkey(shortcut=REMEMBER).register("Ctrl+Alt+C")
    assert "`mnemo remember-clipboard`" in error
