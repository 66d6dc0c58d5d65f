"""The interface every global-hotkey backend implements, and what they share.

A backend registers one shortcut and reports through Qt signals only: `activated` when the
key is pressed, `failed` for a problem found after `register` returned. It never calls into
the app. The class-level hook `is_compatible()` lets the chooser in `__init__.py` ask
whether a backend can run in this session before building it (normcap's handler style).
"""

from __future__ import annotations

from app.gui.qt import QtCore, Signal

FALLBACK = "bind the command `mnemo popup` to a key in your desktop's keyboard settings"


class HotkeyBackend(QtCore.QObject):
    """Registers one global shortcut; emits `activated` when it is pressed."""

    activated = Signal()
    failed = Signal(str)  # a problem found after `register` returned (portal backends)
    name = "none"  # shown to people: the tray's state, logs, `mnemo status`
    key = "none"  # the value of the `hotkey_backend` setting that forces this backend

    @classmethod
    def is_compatible(cls) -> str | None:
        """None if this backend can run in this session, else the one-line reason why not."""
        return None

    def register(self, sequence: str) -> str | None:
        """Grab `sequence` (Qt form, e.g. "Ctrl+Alt+Space"); returns an error or None."""
        raise NotImplementedError

    def unregister(self) -> None:
        """Release the shortcut."""


def parse(sequence: str) -> tuple[set[str], str]:
    """('ctrl', 'alt', ...) modifiers and the key name of a Qt-style sequence."""
    parts = [p.strip() for p in sequence.replace("Meta", "Super").split("+") if p.strip()]
    if not parts:
        raise ValueError("empty hotkey")
    mods = {p.lower() for p in parts[:-1]}
    unknown = mods - {"ctrl", "alt", "shift", "super"}
    if unknown:
        raise ValueError(f"unknown modifier {', '.join(sorted(unknown))}")
    return mods, parts[-1]


def qt_platform() -> str:
    """The running Qt platform plugin ("xcb", "wayland", "offscreen", ...), "" without an app."""
    app = QtCore.QCoreApplication.instance()
    return app.platformName() if app is not None else ""
