"""The interface every global-hotkey backend implements, and what they share.

A backend registers one shortcut and reports through Qt signals only: `activated` when the
key is pressed, `failed` for a problem found after `register` returned. It never calls into
the app. The class-level hook `is_compatible()` lets the chooser in `__init__.py` ask
whether a backend can run in this session before building it (normcap's handler style).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.gui.qt import QtCore, Signal


@dataclass(frozen=True)
class Shortcut:
    """What a global key does: its id (the desktop portal's shortcut id), a description
    for the desktop's settings, and the `mnemo` command to bind by hand instead."""

    id: str
    description: str
    command: str

    @property
    def fallback(self) -> str:
        return f"bind the command `{self.command}` to a key in your desktop's keyboard settings"


POPUP = Shortcut("popup", "Open the Mnemo search popup", "mnemo popup")
REMEMBER = Shortcut(
    "remember-clipboard", "Remember the clipboard in Mnemo", "mnemo remember-clipboard"
)
FALLBACK = POPUP.fallback


class HotkeyBackend(QtCore.QObject):
    """Registers one global shortcut; emits `activated` when it is pressed."""

    activated = Signal()
    failed = Signal(str)  # a problem found after `register` returned (portal backends)
    # keys typed after a press, kept from the window before until the popup had the focus:
    # JSON of [[Qt key, Qt modifiers, text], ...] (only strings cross threads; X11 only)
    typed = Signal(str)
    name = "none"  # shown to people: the tray's state, logs, `mnemo status`
    key = "none"  # the value of the `hotkey_backend` setting that forces this backend

    def __init__(self, parent=None, shortcut: Shortcut = POPUP):
        super().__init__(parent)
        self.shortcut = shortcut
        # the xdg-activation token of the last press, set before `activated` where the
        # desktop gives one (the GlobalShortcuts portal's Activated `activation_token`):
        # the window the press opens shows focused with it (Wayland)
        self.activation_token = ""

    def take_activation_token(self) -> str:
        """The last press's activation token, once ('' when the desktop gave none)."""
        token, self.activation_token = self.activation_token, ""
        return token

    @property
    def fallback(self) -> str:
        """What the user can do instead when this key cannot be grabbed."""
        return self.shortcut.fallback

    @classmethod
    def is_compatible(cls) -> str | None:
        """None if this backend can run in this session, else the one-line reason why not."""
        return None

    def register(self, sequence: str) -> str | None:
        """Grab `sequence` (Qt form, e.g. "Ctrl+Alt+Space"); returns an error or None."""
        raise NotImplementedError

    def unregister(self) -> None:
        """Release the shortcut."""

    def hold_typing(self, wanted: bool) -> None:
        """Whether what is typed after the next press is kept for the popup (where the
        backend can: X11)."""

    def hand_over(self) -> None:
        """The popup has the focus: emit what was kept as `typed`, and let the keyboard go."""

    def holding(self) -> bool:
        """Whether the keyboard is held for the popup now: `typed` will come (also with no
        keys), and keys reaching the popup directly meanwhile were typed after those."""
        return False


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
