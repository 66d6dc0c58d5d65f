"""Wayland global hotkey through the xdg-desktop-portal GlobalShortcuts interface.

Protocol (org.freedesktop.portal.GlobalShortcuts, version 1): register our app id (it
matches mnemo.desktop), CreateSession, BindShortcuts, then listen for Activated. Each call
answers with a Request object whose Response signal carries the result. The portal keeps
the user's chosen trigger per app id, so binding again on the next start restores it.

KDE Plasma before 6.4 (Debian 12 has 5.27) differs: its portal takes the shortcuts from
CreateSession's `shortcuts` option and answers with them there, and its BindShortcuts only
opens System Settings and binds nothing. So the shortcut goes with CreateSession too, and
BindShortcuts is called only when CreateSession did not bind it; a response that binds
nothing is a failure, never taken for success. Tested against KWin 5.27 with the KDE portal
(tests/e2e/test_wayland.py) and a specification-following stand-in.

D-Bus is spoken with jeepney (pure Python): the portal's a(sa{sv}) structures are one
signature string there.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut, parse, qt_platform
from app.gui.qt import QtCore

log = logging.getLogger(__name__)

BUS_NAME = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS = "org.freedesktop.portal.GlobalShortcuts"
APP_ID = "mnemo"
TIMEOUT_S = 120  # BindShortcuts may wait for the user to confirm in a dialog
SESSION_TIMEOUT_S = 15  # CreateSession asks the user nothing


def portal_trigger(sequence: str) -> str:
    """Qt "Ctrl+Alt+Space" → XDG shortcuts form "CTRL+ALT+space"."""
    mods, key = parse(sequence)
    names = {"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "super": "LOGO"}
    ordered = [names[m] for m in ("ctrl", "alt", "shift", "super") if m in mods]
    return "+".join([*ordered, key.lower() if len(key) > 1 else key])


def session_token(shortcut_id: str) -> str:
    """The session handle token of a shortcut's session: the same on every start."""
    return "mnemo_" + shortcut_id.replace("-", "_")


def bound_triggers(results: dict) -> dict[str, str]:
    """Shortcut id → the trigger the portal describes, from a CreateSession or
    BindShortcuts response's `shortcuts` (absent or empty: nothing bound)."""
    value = results.get("shortcuts")
    if not value:
        return {}
    bound = {}
    for shortcut_id, info in value[1]:
        described = info.get("trigger_description")
        bound[shortcut_id] = described[1] if described else ""
    return bound


def activation_token(body: tuple) -> str:
    """The xdg-activation token an Activated signal carries in its options ('' when none).
    Portals pass the backend's (xdg-desktop-portal 1.21 allows it; KDE's 5.27 portal sends
    no options at all)."""
    options = body[3] if len(body) > 3 and isinstance(body[3], dict) else {}
    value = options.get("activation_token")
    return value[1] if value and isinstance(value[1], str) else ""


class PortalHotkey(HotkeyBackend):
    """GlobalShortcuts over the session bus; `activated` when the portal says so."""

    name = "xdg-desktop-portal"
    key = "portal"

    def __init__(self, parent=None, shortcut: Shortcut = POPUP):
        super().__init__(parent, shortcut)
        self._thread: QtCore.QThread | None = None
        self._stop = False
        self.session_handle: str | None = None
        self.trigger_description = ""  # the key the portal says it bound, when it says

    @classmethod
    def is_compatible(cls) -> str | None:
        """None in a Wayland session with a D-Bus session bus, else why not."""
        wayland = (
            qt_platform().startswith("wayland")
            or os.environ.get("XDG_SESSION_TYPE") == "wayland"
            or bool(os.environ.get("WAYLAND_DISPLAY"))
        )
        if not wayland:
            return "not a Wayland session (neither XDG_SESSION_TYPE=wayland nor WAYLAND_DISPLAY)"
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return "DBUS_SESSION_BUS_ADDRESS not set (no D-Bus session bus)"
        if importlib.util.find_spec("jeepney") is None:
            return "jeepney is not installed"
        return None

    def register(self, sequence: str) -> str | None:
        try:
            trigger = portal_trigger(sequence)
        except ValueError as exc:
            return f"cannot use the hotkey {sequence!r}: {exc}"
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return f"no D-Bus session bus for the desktop portal; {self.fallback}"
        self.unregister()
        self._stop = False
        self._thread = _Listener(self, sequence, trigger)
        self._thread.start()
        return None  # binding finishes in the background; problems arrive as `failed`

    def unregister(self) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.wait(3000)
            self._thread = None


class _Listener(QtCore.QThread):
    """Creates the session, binds the shortcut, then waits for Activated signals."""

    def __init__(self, owner: PortalHotkey, sequence: str, trigger: str):
        super().__init__()
        self.setObjectName("mnemo-portal")
        self.owner, self.sequence, self.trigger = owner, sequence, trigger

    def run(self) -> None:
        try:
            try:
                self._serve()
            except TimeoutError as exc:  # a portal that lost a request: ask once more
                if self.owner._stop:
                    raise
                log.info("the desktop portal did not answer (%s); asking again", exc)
                self._serve()
        except Exception as exc:  # D-Bus errors, a portal without GlobalShortcuts, ...
            log.info("portal hotkey failed: %s", exc)
            self.owner.failed.emit(
                f"the desktop portal could not bind {self.sequence} ({exc}); {self.owner.fallback}"
            )

    def _request(
        self,
        conn,
        method: str,
        signature: str,
        body: tuple,
        token: str,
        timeout: float = TIMEOUT_S,
    ) -> dict:
        """Call a portal method and wait for its Request's Response; returns the results."""
        from jeepney import DBusAddress, MatchRule, MessageType, message_bus, new_method_call

        sender = conn.unique_name.lstrip(":").replace(".", "_")
        request_path = f"{PATH}/request/{sender}/{token}"
        rule = MatchRule(
            type="signal",
            interface="org.freedesktop.portal.Request",
            member="Response",
            path=request_path,
        )
        conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=10)
        address = DBusAddress(PATH, bus_name=BUS_NAME, interface=SHORTCUTS)
        with conn.filter(rule) as queue:
            reply = conn.send_and_get_reply(
                new_method_call(address, method, signature, body), timeout=10
            )
            if reply.header.message_type == MessageType.error:  # jeepney returns, not raises
                raise RuntimeError(f"{method}: {reply.body[0] if reply.body else 'error'}")
            try:
                response = conn.recv_until_filtered(queue, timeout=timeout)
            except TimeoutError:
                raise TimeoutError(f"no answer to {method} in {timeout:.0f} s") from None
        code, results = response.body
        if code != 0:
            raise RuntimeError(
                "the request was cancelled" if code == 1 else f"the portal answered {code}"
            )
        return results

    def _serve(self) -> None:
        from jeepney import DBusAddress, MatchRule, MessageType, message_bus, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        with open_dbus_connection(bus="SESSION") as conn:
            # Tell a host (non-sandboxed) portal who we are: the id of our .desktop file.
            registry = DBusAddress(
                PATH, bus_name=BUS_NAME, interface="org.freedesktop.host.portal.Registry"
            )
            try:
                reply = conn.send_and_get_reply(
                    new_method_call(registry, "Register", "sa{sv}", (APP_ID, {})), timeout=5
                )
                if reply.header.message_type == MessageType.error:  # jeepney returns it
                    log.info("portal registry unavailable: %s", reply.body)
            except Exception as exc:  # older portals have no Registry: that is fine
                log.info("portal registry unavailable: %s", exc)
            shortcut = (
                self.owner.shortcut.id,
                {
                    "description": ("s", self.owner.shortcut.description),
                    "preferred_trigger": ("s", self.trigger),
                },
            )
            create_token = "mnemo_" + secrets.token_hex(4)
            results = self._request(
                conn,
                "CreateSession",
                "a{sv}",
                (
                    {
                        "handle_token": ("s", create_token),
                        # The same session token every start: KDE names the shortcut's
                        # kglobalaccel component after it (while the portal knows no app id),
                        # so the key the user chose there holds across restarts.
                        "session_handle_token": ("s", session_token(self.owner.shortcut.id)),
                        # Plasma before 6.4 registers shortcuts only from this option (not in
                        # the specification, which others ignore); its BindShortcuts just
                        # opens System Settings.
                        "shortcuts": ("a(sa{sv})", [shortcut]),
                    },
                ),
                create_token,
                SESSION_TIMEOUT_S,
            )
            session = results["session_handle"][1]
            self.owner.session_handle = session
            bound = bound_triggers(results)
            if self.owner.shortcut.id not in bound:
                log.info(
                    "the portal's session did not bind %s; asking BindShortcuts (it may show "
                    "a dialog, or on Plasma before 6.4 System Settings)",
                    self.sequence,
                )
                bind_token = "mnemo_" + secrets.token_hex(4)
                results = self._request(
                    conn,
                    "BindShortcuts",
                    "oa(sa{sv})sa{sv}",
                    (session, [shortcut], "", {"handle_token": ("s", bind_token)}),
                    bind_token,
                )
                bound = bound_triggers(results)
                if self.owner.shortcut.id not in bound:
                    raise RuntimeError("it bound no shortcut")
            self.owner.trigger_description = bound[self.owner.shortcut.id]
            log.info(
                "global hotkey %s bound through the desktop portal (trigger: %s)",
                self.sequence,
                self.owner.trigger_description or "not shown by the portal",
            )
            rule = MatchRule(type="signal", interface=SHORTCUTS, member="Activated")
            conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=10)
            with conn.filter(rule) as queue:
                while not self.owner._stop:
                    try:
                        signal = conn.recv_until_filtered(queue, timeout=0.25)
                    except TimeoutError:
                        continue
                    session_handle, shortcut_id = signal.body[0], signal.body[1]
                    if session_handle == session and shortcut_id == self.owner.shortcut.id:
                        self.owner.activation_token = activation_token(signal.body)
                        self.owner.activated.emit()
