"""Global hotkey backends behind one small interface whose only output is a Qt signal.

One module per backend, tried in order of preference (normcap's clipboard handlers):

- `x11.py`: `XGrabKey` on the root window under an X server.
- `portal.py`: the xdg-desktop-portal GlobalShortcuts interface under Wayland.
- `windows.py`: `RegisterHotKey` on Windows, WM_HOTKEY read by a Qt native event filter.
- `macos.py`: Carbon's `RegisterEventHotKey` on macOS (no Accessibility permission).
- `manual.py`: no grab; the user binds `mnemo popup` in the desktop's keyboard settings,
  which reaches the running app over IPC.

`keymap.py` holds the Qt-free key tables the Windows and macOS backends share.

`backend()` picks the first compatible one, logging why each one before it was skipped,
or the one the `hotkey_backend` setting forces. See docs/adr/0004-hotkey-backends.md.
"""

from __future__ import annotations

import logging

from app.gui.hotkey.base import FALLBACK, POPUP, REMEMBER, HotkeyBackend, Shortcut, parse
from app.gui.hotkey.macos import MacHotkey
from app.gui.hotkey.manual import ManualHotkey
from app.gui.hotkey.portal import PortalHotkey
from app.gui.hotkey.windows import WindowsHotkey
from app.gui.hotkey.x11 import X11Hotkey, activate_window, active_window

__all__ = [
    "BACKENDS",
    "FALLBACK",
    "POPUP",
    "REMEMBER",
    "HotkeyBackend",
    "Shortcut",
    "MacHotkey",
    "ManualHotkey",
    "PortalHotkey",
    "WindowsHotkey",
    "X11Hotkey",
    "activate_window",
    "active_window",
    "backend",
    "parse",
]

log = logging.getLogger(__name__)

# In order of preference; the manual fallback is always last and always compatible.
BACKENDS: tuple[type[HotkeyBackend], ...] = (
    X11Hotkey,
    PortalHotkey,
    WindowsHotkey,
    MacHotkey,
    ManualHotkey,
)


def backend(parent=None, forced: str = "auto", shortcut: Shortcut = POPUP) -> HotkeyBackend:
    """The hotkey backend for this session, or the one `forced` names if it can run here,
    for one `shortcut` (the popup's, or Remember clipboard's)."""
    choice = (forced or "auto").strip().lower()
    if choice == "auto":
        for cls in BACKENDS:
            why_not = cls.is_compatible()
            if why_not is None:
                log.info("hotkey backend: %s", cls.key)
                return cls(parent, shortcut=shortcut)
            log.info("%s skipped: %s", cls.key, why_not)
        return ManualHotkey(
            parent, shortcut=shortcut
        )  # not reached while ManualHotkey is always compatible
    by_key = {cls.key: cls for cls in BACKENDS}
    cls = by_key.get(choice)
    if cls is None:
        reason = f"unknown hotkey backend {forced!r} (choose auto, {', '.join(by_key)})"
    elif cls is ManualHotkey:
        log.info("hotkey backend: none (chosen in the settings)")
        return ManualHotkey(parent, reason=None, shortcut=shortcut)
    else:
        why_not = cls.is_compatible()
        if why_not is None:
            log.info("hotkey backend: %s (chosen in the settings)", cls.key)
            return cls(parent, shortcut=shortcut)
        reason = f"the {cls.key} hotkey backend chosen in the settings cannot run here: {why_not}"
    log.warning("%s", reason)
    return ManualHotkey(parent, reason, shortcut)
