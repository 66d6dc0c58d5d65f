"""X11 global hotkey: `XGrabKey` on the root window, and the EWMH focus helpers.

The grab covers the NumLock/CapsLock variants of the modifiers; a QThread reads the X
connection and only emits `activated`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import select
import threading
import time

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut, parse, qt_platform
from app.gui.qt import QtCore

log = logging.getLogger(__name__)


class _Listener(QtCore.QThread):
    """The X11 event loop's thread."""

    def __init__(self, target):
        super().__init__()
        self._target = target
        self.setObjectName("mnemo-hotkey")

    def run(self) -> None:
        self._target()


class X11Hotkey(HotkeyBackend):
    """XGrabKey on the root window, read by a thread that only emits `activated`."""

    name = "X11"
    key = "x11"

    def __init__(self, parent=None, shortcut: Shortcut = POPUP):
        super().__init__(parent, shortcut)
        self._thread: QtCore.QThread | None = None
        self._stop = threading.Event()
        self._display = None
        self.last_press = 0.0

    @classmethod
    def is_compatible(cls) -> str | None:
        """None under an X server that Qt itself talks to (xcb), else why not."""
        if not os.environ.get("DISPLAY"):
            return "DISPLAY not set"
        platform = qt_platform()
        if platform != "xcb":
            # Under XWayland a grab only sees X11 windows; Wayland sessions use the portal.
            return f"Qt uses the {platform or 'no'} platform plugin, not xcb"
        if importlib.util.find_spec("Xlib") is None:
            return "python-xlib is not installed"
        return None

    def register(self, sequence: str) -> str | None:
        from Xlib import XK, X, display, error

        self.unregister()
        try:
            mods, key = parse(sequence)
        except ValueError as exc:
            return f"cannot use the hotkey {sequence!r}: {exc}"
        keysym = XK.string_to_keysym(key) or XK.string_to_keysym(key.lower())
        if not keysym:
            return f"cannot use the hotkey {sequence!r}: unknown key {key!r}"
        try:
            self._display = display.Display()
        except Exception as exc:  # Xlib raises its own DisplayError types
            return f"cannot reach the X server ({exc}); {self.fallback}"
        keycode = self._display.keysym_to_keycode(keysym)
        mask = 0
        for name, bit in (
            ("ctrl", X.ControlMask),
            ("alt", X.Mod1Mask),
            ("shift", X.ShiftMask),
            ("super", X.Mod4Mask),
        ):
            if name in mods:
                mask |= bit
        root = self._display.screen().root
        failures: list[error.XError] = []
        catcher = error.CatchError(error.BadAccess)
        for extra in (0, X.Mod2Mask, X.LockMask, X.Mod2Mask | X.LockMask):  # NumLock, Caps
            root.grab_key(
                keycode, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=catcher
            )
        self._display.sync()
        if catcher.get_error():
            failures.append(catcher.get_error())
        if failures:
            self._display.close()
            self._display = None
            return f"{sequence} is already taken by another program; {self.fallback}"
        self._keycode, self._mask = keycode, mask
        self._stop.clear()
        # A QThread: PySide6 may crash on signals emitted from threads Qt did not create.
        self._thread = _Listener(self._listen)
        self._thread.start()
        log.info("global hotkey %s registered (X11)", sequence)
        return None

    def _listen(self) -> None:
        from Xlib import X

        display = self._display
        fd = display.fileno()
        while not self._stop.is_set():
            readable, _, _ = select.select([fd], [], [], 0.2)
            if not readable:
                continue
            while display.pending_events():
                event = display.next_event()
                if event.type == X.KeyPress and event.detail == self._keycode:
                    self.last_press = time.perf_counter()  # for latency measurements
                    self.activated.emit()

    def unregister(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.wait(2000)
            self._thread = None
        if self._display is not None:
            try:
                self._display.screen().root.ungrab_key(self._keycode, 0xFF)  # AnyModifier
                self._display.sync()
            except Exception:  # the connection may already be gone at exit
                pass
            self._display.close()
            self._display = None


def active_window() -> int | None:
    """The X11 window that has focus now (to give it back when the popup hides)."""
    try:
        from Xlib import display

        d = display.Display()
        try:
            atom = d.intern_atom("_NET_ACTIVE_WINDOW")
            prop = d.screen().root.get_full_property(atom, 0)
            return int(prop.value[0]) if prop and prop.value[0] else None
        finally:
            d.close()
    except Exception:
        return None


def activate_window(window: int) -> None:
    """Ask the window manager to focus an X11 window again (EWMH _NET_ACTIVE_WINDOW)."""
    try:
        from Xlib import X, display, protocol

        d = display.Display()
        try:
            root = d.screen().root
            atom = d.intern_atom("_NET_ACTIVE_WINDOW")
            event = protocol.event.ClientMessage(
                window=d.create_resource_object("window", window),
                client_type=atom,
                data=(32, [2, X.CurrentTime, 0, 0, 0]),
            )
            root.send_event(event, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            d.create_resource_object("window", window).set_input_focus(
                X.RevertToParent, X.CurrentTime
            )
            d.sync()
        finally:
            d.close()
    except Exception as exc:
        log.info("could not give focus back: %s", exc)
