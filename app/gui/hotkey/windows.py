"""Windows global hotkey: user32 `RegisterHotKey`, whose WM_HOTKEY reaches Qt's event loop.

`RegisterHotKey(NULL, id, modifiers, vk)` asks Windows for one combination. With no window
handle, Windows posts WM_HOTKEY to the message queue of the thread that registered it, so we
register on the GUI thread, whose Qt event dispatcher pulls the message and shows it to native
event filters. Our filter reacts to WM_HOTKEY with our id only and emits `activated`. No
keyboard hook, no admin rights: Windows delivers this one combination and nothing else, and
refuses (ERROR_HOTKEY_ALREADY_REGISTERED) when another program holds it.

user32 is loaded on first use, never at import, so this module imports (and its logic is
tested) on Linux; the calls themselves run only on Windows.
"""

from __future__ import annotations

import itertools
import logging
import sys

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut
from app.gui.hotkey.keymap import windows_combo
from app.gui.qt import QtCore

log = logging.getLogger(__name__)

WM_HOTKEY = 0x0312
ERROR_HOTKEY_ALREADY_REGISTERED = 1409
# A message with no window (ours) comes through Qt's event dispatcher as
# "windows_dispatcher_MSG"; messages to Qt's own windows come as "windows_generic_MSG".
# Both carry a MSG*; matching our id keeps either from firing twice.
EVENT_TYPES = (b"windows_dispatcher_MSG", b"windows_generic_MSG")
_ids = itertools.count(1)  # RegisterHotKey ids for applications: 0x0000-0xBFFF


def _user32():
    """user32.dll with the two calls we make typed; Windows only."""
    import ctypes
    from ctypes import wintypes

    user32 = ctypes.WinDLL("user32", use_last_error=True)
    user32.RegisterHotKey.argtypes = (wintypes.HWND, ctypes.c_int, wintypes.UINT, wintypes.UINT)
    user32.RegisterHotKey.restype = wintypes.BOOL
    user32.UnregisterHotKey.argtypes = (wintypes.HWND, ctypes.c_int)
    user32.UnregisterHotKey.restype = wintypes.BOOL
    return user32


def _last_error() -> int:
    """The Win32 error code of the last user32 call on this thread (GetLastError)."""
    import ctypes

    return ctypes.get_last_error()


class _MessageFilter(QtCore.QAbstractNativeEventFilter):
    """Sees every native message of the GUI thread; answers only our WM_HOTKEY."""

    def __init__(self, hotkey_id: int, on_press):
        super().__init__()
        self.hotkey_id = hotkey_id
        self._on_press = on_press

    def nativeEventFilter(self, event_type, message) -> tuple[bool, int]:
        """(True, 0) for our WM_HOTKEY, which then goes no further; (False, 0) otherwise."""
        kind = event_type.data() if hasattr(event_type, "data") else bytes(event_type)
        address = int(message) if message is not None else 0  # PySide6 passes a VoidPtr
        if kind not in EVENT_TYPES or not address:
            return False, 0
        from ctypes import wintypes

        msg = wintypes.MSG.from_address(address)
        if msg.message == WM_HOTKEY and msg.wParam == self.hotkey_id:
            self._on_press()
            return True, 0
        return False, 0


class WindowsHotkey(HotkeyBackend):
    """RegisterHotKey on the GUI thread; a native event filter turns WM_HOTKEY into `activated`."""

    name = "Windows"
    key = "windows"

    def __init__(self, parent=None, shortcut: Shortcut = POPUP):
        super().__init__(parent, shortcut)
        self._user32 = None
        self._id: int | None = None
        self._filter: _MessageFilter | None = None

    @classmethod
    def is_compatible(cls) -> str | None:
        """None on Windows, else why not."""
        if sys.platform != "win32":
            return f"not Windows (sys.platform is {sys.platform})"
        return None

    def register(self, sequence: str) -> str | None:
        """Grab `sequence` system-wide; an error message, or None once it is ours."""
        self.unregister()
        try:
            modifiers, vk = windows_combo(sequence)
        except ValueError as exc:
            return f"cannot use the hotkey {sequence!r}: {exc}"
        app = QtCore.QCoreApplication.instance()
        if app is None:
            return f"no Qt application to receive the hotkey; {self.fallback}"
        if app.thread() is not QtCore.QThread.currentThread():
            # WM_HOTKEY goes to the registering thread's queue, which only the GUI thread reads.
            return f"the hotkey must be registered on the GUI thread; {self.fallback}"
        user32 = _user32()
        hotkey_id = next(_ids)
        if not user32.RegisterHotKey(None, hotkey_id, modifiers, vk):
            code = _last_error()
            if code == ERROR_HOTKEY_ALREADY_REGISTERED:
                return f"{sequence} is already taken by another program; {self.fallback}"
            return f"Windows refused the hotkey {sequence} (error {code}); {self.fallback}"
        self._user32, self._id = user32, hotkey_id
        # Kept on self: Qt holds only a C++ pointer, and a collected filter would crash it.
        self._filter = _MessageFilter(hotkey_id, self._pressed)
        app.installNativeEventFilter(self._filter)
        log.info("global hotkey %s registered (Windows)", sequence)
        return None

    def _pressed(self) -> None:
        # Emitted from the event loop, not inside the dispatcher's filter call, so the popup
        # opens as it does for the other backends (a queued call into the GUI thread).
        QtCore.QTimer.singleShot(0, self.activated.emit)

    def unregister(self) -> None:
        """Give the combination back to Windows and stop watching messages."""
        if self._filter is not None:
            app = QtCore.QCoreApplication.instance()
            if app is not None:
                app.removeNativeEventFilter(self._filter)
            self._filter = None
        if self._id is not None:
            self._user32.UnregisterHotKey(None, self._id)
            self._id = None
            self._user32 = None
