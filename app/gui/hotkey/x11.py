"""X11 global hotkey: `XGrabKey` on the root window, and the EWMH focus helpers.

The grab covers the NumLock/CapsLock variants of the modifiers; a QThread reads the X
connection and only emits signals.

Letters typed right after the hotkey, before the popup has the focus, must not reach the window
the user was in (in a terminal they run as a command). So the key is grabbed in synchronous
mode: at the press the X server itself holds the keyboard's events back until the listener has
read it, and when the press opens the popup the listener takes the whole keyboard (an active
grab) and keeps what is typed until the popup has the focus (`hand_over`) or `HOLD_S` passed.
The keys kept are then emitted as `typed` for the popup to replay.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import logging
import os
import select
import threading
import time

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut, parse, qt_platform
from app.gui.qt import Qt, QtCore

log = logging.getLogger(__name__)

HOLD_S = 3.0  # the longest the keyboard is kept from the other windows after a press

# Keys other than text that a popup uses, by X keysym name: (Qt key, the text Qt gives them).
_NAMED = {
    "Return": (Qt.Key_Return, "\r"),
    "KP_Enter": (Qt.Key_Enter, "\r"),
    "BackSpace": (Qt.Key_Backspace, "\x08"),
    "Escape": (Qt.Key_Escape, "\x1b"),
    "Tab": (Qt.Key_Tab, "\t"),
    "Delete": (Qt.Key_Delete, ""),
    "Up": (Qt.Key_Up, ""),
    "Down": (Qt.Key_Down, ""),
    "Left": (Qt.Key_Left, ""),
    "Right": (Qt.Key_Right, ""),
    "Home": (Qt.Key_Home, ""),
    "End": (Qt.Key_End, ""),
    "Prior": (Qt.Key_PageUp, ""),
    "Next": (Qt.Key_PageDown, ""),
}


@functools.cache
def _named_keysyms() -> dict[int, tuple]:
    """_NAMED by X keysym (python-xlib is imported only where the X11 backend runs)."""
    from Xlib import XK

    return {XK.string_to_keysym(name): value for name, value in _NAMED.items()}


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
        self._grab_typing = threading.Event()  # the next press opens the popup: hold keys
        self._handed = threading.Event()  # the popup has the focus: let the keyboard go
        self._holding = threading.Event()  # the keyboard is held; its keys will be `typed`

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
        if not keycode:  # (0 would grab every key: AnyKey)
            self._display.close()
            self._display = None
            return f"cannot use the hotkey {sequence!r}: no key of this keyboard types {key!r}"
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
            root.grab_key(  # the keyboard freezes at the press until the listener reads it
                keycode, mask | extra, True, X.GrabModeAsync, X.GrabModeSync, onerror=catcher
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
        active_window()  # opens the popup's connection for its questions now, not at a press
        return None

    def hold_typing(self, wanted: bool) -> None:
        """Whether the next press opens the popup, so that what is typed after it is kept
        for the popup (set from the GUI thread as the popup shows, hides or loses focus)."""
        if wanted:
            self._grab_typing.set()
        else:
            self._grab_typing.clear()

    def hand_over(self) -> None:
        """The popup has the focus: let the keyboard go and emit what was typed meanwhile."""
        self._handed.set()

    def holding(self) -> bool:
        return self._holding.is_set()

    def _listen(self) -> None:
        from Xlib import X

        display = self._display
        fd = display.fileno()
        held: list[tuple[int, int, str]] | None = None  # keys kept while the popup comes
        until = 0.0
        while not self._stop.is_set():
            if held is not None and (self._handed.is_set() or time.monotonic() > until):
                held = self._let_go(display, held)
            readable, _, _ = select.select([fd], [], [], 0.02 if held is not None else 0.2)
            if not readable and not display.pending_events():
                continue
            while display.pending_events():
                event = display.next_event()
                if event.type != X.KeyPress:
                    continue
                if event.detail == self._keycode and event.state & 0xCD == self._mask:
                    self.last_press = time.perf_counter()  # for latency measurements
                    if held is not None:  # pressed again while the popup comes: it hides
                        held = self._let_go(display, None)
                    elif self._grab_typing.is_set() and self._grab(display, event.time):
                        held, until = [], time.monotonic() + HOLD_S
                        self._handed.clear()
                        self._holding.set()  # (before `activated`: the popup asks it)
                    display.allow_events(X.AsyncKeyboard, X.CurrentTime)  # never left frozen
                    display.flush()
                    self.activated.emit()
                elif held is not None:
                    key = self._qt_key(display, event)
                    if key is not None:
                        held.append(key)
        if held is not None:
            self._let_go(display, None)

    @staticmethod
    def _grab(display, when: int) -> bool:
        from Xlib import X

        root = display.screen().root
        status = root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, when)
        return status == X.GrabSuccess

    def _let_go(self, display, held: list | None) -> None:
        """Release the keyboard; the keys read before the release are emitted as `typed`
        (also none: the popup keeps the keys that reach it directly until they came)."""
        from Xlib import X

        display.ungrab_keyboard(X.CurrentTime)
        display.sync()
        while held is not None and display.pending_events():
            event = display.next_event()
            if event.type == X.KeyPress:
                key = self._qt_key(display, event)
                if key is not None:
                    held.append(key)
        held_it = self._holding.is_set()
        self._holding.clear()  # (before the keys go: whoever sees it set gets them)
        if held is not None or held_it:
            self.typed.emit(json.dumps(held or []))
        return None

    @staticmethod
    def _qt_key(display, event) -> tuple[int, int, str] | None:
        """(Qt key, Qt modifiers, text) of an X key press; None for a modifier key alone."""
        from Xlib import X

        shifted = bool(event.state & X.ShiftMask)
        keysym = display.keycode_to_keysym(event.detail, 1 if shifted else 0)
        if not keysym and shifted:
            keysym = display.keycode_to_keysym(event.detail, 0)
        modifiers = 0
        for bit, flag in (
            (X.ShiftMask, Qt.ShiftModifier),
            (X.ControlMask, Qt.ControlModifier),
            (X.Mod1Mask, Qt.AltModifier),
            (X.Mod4Mask, Qt.MetaModifier),
        ):
            if event.state & bit:
                modifiers |= flag.value
        named = _named_keysyms()
        if keysym in named:
            key, text = named[keysym]
            return int(key.value), modifiers, text
        if 0x20 <= keysym <= 0xFF:  # Latin-1: the keysym is the code point
            text = chr(keysym)
        elif keysym & 0xFF000000 == 0x01000000:  # a Unicode keysym
            text = chr(keysym & 0xFFFFFF)
        else:
            return None  # Shift, Control, function keys...
        if event.state & X.LockMask and text.isalpha():
            text = text.swapcase()
        upper = text.upper()
        key = ord(upper) if len(upper) == 1 else ord(text)
        if event.state & (X.ControlMask | X.Mod1Mask):
            text = ""  # Ctrl+K, Alt+Enter: a shortcut, not text
        return key, modifiers, text

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


class _Queries:
    """One X connection, opened once, for the GUI thread's questions to the window manager
    (which window has the focus, give it back). A connection per question cost ~20 ms of
    Python (python-xlib's setup and extension queries) on the hotkey's path, more on a busy
    machine; a broken connection is dropped and opened again on the next question."""

    def __init__(self) -> None:
        self._display = None
        self._lock = threading.Lock()

    def ask(self, question):
        """question(display) on the kept connection, opened first if needed (and once more
        should the kept one have broken)."""
        from Xlib import display

        with self._lock:
            for attempt in (1, 2):
                if self._display is None:
                    self._display = display.Display()
                try:
                    return question(self._display)
                except Exception:
                    self._drop()
                    if attempt == 2:
                        raise
        return None

    def _drop(self) -> None:
        with contextlib.suppress(Exception):  # already broken
            self._display.close()
        self._display = None


_queries = _Queries()


def active_window() -> int | None:
    """The X11 window that has focus now (to give it back when the popup hides)."""

    def ask(d) -> int | None:
        atom = d.intern_atom("_NET_ACTIVE_WINDOW")
        prop = d.screen().root.get_full_property(atom, 0)
        return int(prop.value[0]) if prop and prop.value[0] else None

    try:
        return _queries.ask(ask)
    except Exception:
        return None


def activate_window(window: int) -> None:
    """Ask the window manager to focus an X11 window again (EWMH _NET_ACTIVE_WINDOW)."""

    def ask(d) -> None:
        from Xlib import X, error, protocol

        root = d.screen().root
        atom = d.intern_atom("_NET_ACTIVE_WINDOW")
        event = protocol.event.ClientMessage(
            window=d.create_resource_object("window", window),
            client_type=atom,
            data=(32, [2, X.CurrentTime, 0, 0, 0]),
        )
        root.send_event(event, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
        d.create_resource_object("window", window).set_input_focus(
            X.RevertToParent,
            X.CurrentTime,
            # not viewable (yet): the window manager's activation above is what counts
            onerror=error.CatchError(error.BadMatch, error.BadWindow),
        )
        d.sync()

    try:
        _queries.ask(ask)
    except Exception as exc:
        log.info("could not give focus back: %s", exc)
