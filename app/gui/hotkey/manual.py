"""The no-grab fallback: the user binds `mnemo popup` in the desktop's keyboard settings.

That command reaches the running app over its local socket (`app/gui/ipc.py`), so the
popup still opens on a key; only the desktop, not Mnemo, owns the key. This is what runs
where no other backend can (a Linux session without an X server or a Wayland portal, or a
forced backend that cannot run here), and what the user gets by choosing "none".
"""

from __future__ import annotations

import logging

from app.gui.hotkey.base import POPUP, HotkeyBackend, Shortcut

log = logging.getLogger(__name__)


class ManualHotkey(HotkeyBackend):
    """Grabs nothing; `register` says how to bind the key by hand, unless that was chosen."""

    name = "none"
    key = "none"

    def __init__(
        self,
        parent=None,
        reason: str | None = "no global hotkey backend for this session",
        shortcut: Shortcut = POPUP,
    ):
        super().__init__(parent, shortcut)
        self.reason = reason  # None when the user chose this backend in the settings

    def register(self, sequence: str) -> str | None:
        """The reason no key was grabbed and the fallback, or None if the user chose this."""
        if self.reason is None:
            log.info("no global hotkey grabbed (hotkey_backend = none); %s", self.fallback)
            return None
        return f"{self.reason}; {self.fallback}"
