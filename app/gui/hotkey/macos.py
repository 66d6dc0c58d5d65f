"""macOS global hotkey: Carbon's `RegisterEventHotKey`, called through ctypes.

Carbon delivers a kEventHotKeyPressed event for the registered combination only, so, unlike an
NSEvent global monitor or a Quartz event tap, it needs no Accessibility or Input Monitoring
permission and sees no other key. Carbon is a legacy framework, but this part of it is still
what macOS shortcut tools use; pyobjc does not wrap it, hence ctypes.

The event handler is installed on the application event target; under Qt's Cocoa event loop
Carbon calls it on the main thread, where it only schedules `activated`.

Conflicts: Carbon answers eventHotKeyExistsErr for a combination this process registered
already (or, with the exclusive option, that another process holds exclusively). A shared
registration by another app is not an error: both apps then receive the key. System shortcuts
(Spotlight's ⌘Space, ...) win over ours without an error.

Carbon is loaded on first use, never at import, so this module imports (and its logic is
tested) on Linux; the calls themselves run only on macOS.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import sys

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut
from app.gui.hotkey.keymap import macos_combo
from app.gui.qt import QtCore

log = logging.getLogger(__name__)

CARBON = "/System/Library/Frameworks/Carbon.framework/Carbon"


def fourcc(code: str) -> int:
    """A Carbon four-character code (OSType), as the C compiler reads 'keyb'."""
    return int.from_bytes(code.encode("ascii"), "big")


SIGNATURE = fourcc("MNMO")  # tags our EventHotKeyIDs among the app's others
K_EVENT_CLASS_KEYBOARD = fourcc("keyb")
K_EVENT_HOTKEY_PRESSED = 5
K_EVENT_PARAM_DIRECT_OBJECT = fourcc("----")
TYPE_EVENT_HOTKEY_ID = fourcc("hkid")
K_EVENT_HOTKEY_NO_OPTIONS = 0  # shared, like other tools: exclusive fails on keys macOS holds
NO_ERR = 0
EVENT_NOT_HANDLED_ERR = -9874  # lets the next handler in the chain see the event
EVENT_HOTKEY_EXISTS_ERR = -9878
_ids = itertools.count(1)


class EventHotKeyID(ctypes.Structure):
    """Carbon's EventHotKeyID: our signature and a number."""

    _fields_ = (("signature", ctypes.c_uint32), ("id", ctypes.c_uint32))


class EventTypeSpec(ctypes.Structure):
    """Carbon's EventTypeSpec: which events a handler wants."""

    _fields_ = (("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32))


# OSStatus (*EventHandlerProcPtr)(EventHandlerCallRef, EventRef, void *userData); on macOS an
# EventHandlerUPP is the plain function pointer.
EventHandlerProc = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)

_carbon_lib = None


def _carbon():
    """Carbon with the signatures of the six calls we make; macOS only."""
    global _carbon_lib
    if _carbon_lib is None:
        lib = ctypes.CDLL(CARBON)
        ref_p = ctypes.POINTER(ctypes.c_void_p)
        lib.GetApplicationEventTarget.argtypes = ()
        lib.GetApplicationEventTarget.restype = ctypes.c_void_p
        lib.InstallEventHandler.argtypes = (
            ctypes.c_void_p,  # EventTargetRef
            EventHandlerProc,  # EventHandlerUPP
            ctypes.c_ulong,  # ItemCount
            ctypes.POINTER(EventTypeSpec),
            ctypes.c_void_p,  # userData
            ref_p,  # EventHandlerRef *
        )
        lib.InstallEventHandler.restype = ctypes.c_int32
        lib.RemoveEventHandler.argtypes = (ctypes.c_void_p,)
        lib.RemoveEventHandler.restype = ctypes.c_int32
        lib.RegisterEventHotKey.argtypes = (
            ctypes.c_uint32,  # key code
            ctypes.c_uint32,  # modifiers
            EventHotKeyID,  # by value
            ctypes.c_void_p,  # EventTargetRef
            ctypes.c_uint32,  # OptionBits
            ref_p,  # EventHotKeyRef *
        )
        lib.RegisterEventHotKey.restype = ctypes.c_int32
        lib.UnregisterEventHotKey.argtypes = (ctypes.c_void_p,)
        lib.UnregisterEventHotKey.restype = ctypes.c_int32
        lib.GetEventParameter.argtypes = (
            ctypes.c_void_p,  # EventRef
            ctypes.c_uint32,  # EventParamName
            ctypes.c_uint32,  # EventParamType
            ctypes.c_void_p,  # EventParamType *outActualType (NULL)
            ctypes.c_ulong,  # ByteCount
            ctypes.c_void_p,  # ByteCount *outActualSize (NULL)
            ctypes.c_void_p,  # void *outData
        )
        lib.GetEventParameter.restype = ctypes.c_int32
        _carbon_lib = lib
    return _carbon_lib


class MacHotkey(HotkeyBackend):
    """RegisterEventHotKey plus one Carbon event handler that emits `activated`."""

    name = "macOS"
    key = "macos"

    def __init__(self, parent=None, shortcut: Shortcut = POPUP):
        super().__init__(parent, shortcut)
        self._lib = None
        self._id: int | None = None
        self._handler: EventHandlerProc | None = None
        self._handler_ref: ctypes.c_void_p | None = None
        self._hotkey_ref: ctypes.c_void_p | None = None

    @classmethod
    def is_compatible(cls) -> str | None:
        """None on macOS, else why not."""
        if sys.platform != "darwin":
            return f"not macOS (sys.platform is {sys.platform})"
        return None

    def register(self, sequence: str) -> str | None:
        """Grab `sequence` system-wide; an error message, or None once it is ours."""
        self.unregister()
        try:
            modifiers, keycode = macos_combo(sequence)
        except ValueError as exc:
            return f"cannot use the hotkey {sequence!r}: {exc}"
        lib = _carbon()
        self._lib = lib
        target = lib.GetApplicationEventTarget()
        # Kept on self: Carbon holds only the raw function pointer, which dies with this object.
        self._handler = EventHandlerProc(self._on_event)
        spec = EventTypeSpec(K_EVENT_CLASS_KEYBOARD, K_EVENT_HOTKEY_PRESSED)
        handler_ref = ctypes.c_void_p()
        status = lib.InstallEventHandler(
            target, self._handler, 1, ctypes.byref(spec), None, ctypes.byref(handler_ref)
        )
        if status != NO_ERR:
            self.unregister()
            return f"macOS refused a handler for the hotkey (OSStatus {status}); {self.fallback}"
        self._handler_ref = handler_ref
        self._id = next(_ids)
        hotkey_ref = ctypes.c_void_p()
        status = lib.RegisterEventHotKey(
            keycode,
            modifiers,
            EventHotKeyID(SIGNATURE, self._id),
            target,
            K_EVENT_HOTKEY_NO_OPTIONS,
            ctypes.byref(hotkey_ref),
        )
        if status != NO_ERR:
            self.unregister()
            if status == EVENT_HOTKEY_EXISTS_ERR:
                return f"{sequence} is already taken by another program; {self.fallback}"
            return f"macOS refused the hotkey {sequence} (OSStatus {status}); {self.fallback}"
        self._hotkey_ref = hotkey_ref
        log.info("global hotkey %s registered (macOS)", sequence)
        return None

    def _on_event(self, _call_ref, event, _user_data) -> int:
        """Carbon's handler: our hotkey schedules `activated`; anything else passes on."""
        try:
            pressed = EventHotKeyID()
            status = self._lib.GetEventParameter(
                event,
                K_EVENT_PARAM_DIRECT_OBJECT,
                TYPE_EVENT_HOTKEY_ID,
                None,
                ctypes.sizeof(pressed),
                None,
                ctypes.byref(pressed),
            )
            if status != NO_ERR or (pressed.signature, pressed.id) != (SIGNATURE, self._id):
                return EVENT_NOT_HANDLED_ERR
            # Run the app's reaction from Qt's event loop, not inside Carbon's dispatch.
            QtCore.QTimer.singleShot(0, self.activated.emit)
            return NO_ERR
        except Exception:  # an exception must not cross into C: log it and pass the event on
            log.exception("macOS hotkey handler failed")
            return EVENT_NOT_HANDLED_ERR

    def unregister(self) -> None:
        """Give the combination back and remove the event handler."""
        if self._hotkey_ref is not None:
            self._lib.UnregisterEventHotKey(self._hotkey_ref)
            self._hotkey_ref = None
        if self._handler_ref is not None:
            self._lib.RemoveEventHandler(self._handler_ref)
            self._handler_ref = None
        self._handler = None
        self._id = None
