"""Paste into the window the user was in before the popup: the paste keys typed through
XTest on X11, the keys that window pastes with (`keys_for`). Wayland lets no application
type into another one, so there (and on Windows and macOS, not written yet) the memory is
only copied, and the user is told so.
"""

from __future__ import annotations

import importlib.util
import logging

from app.gui.hotkey.base import parse, qt_platform

log = logging.getLogger(__name__)

# Terminals by window class (lower case): the key that pastes the clipboard there. xterm and
# rxvt paste the PRIMARY selection with Shift+Insert and have no clipboard key by default, so
# the app puts the memory in the PRIMARY selection too before typing it.
TERMINALS = {
    **dict.fromkeys(("xterm", "uxterm", "urxvt", "rxvt", "rxvt-unicode", "aterm"), "Shift+Insert"),
    **dict.fromkeys(
        (
            "gnome-terminal", "gnome-terminal-server", "org.gnome.terminal", "kgx", "konsole",
            "kitty", "alacritty", "xfce4-terminal", "tilix", "terminator", "org.wezfurlong.wezterm",
            "wezterm", "foot", "st", "st-256color", "lxterminal", "mate-terminal", "qterminal",
            "terminology", "sakura", "guake", "tilda", "yakuake", "cool-retro-term", "ghostty",
            "com.mitchellh.ghostty", "deepin-terminal", "io.elementary.terminal", "termite",
        ),
        "Ctrl+Shift+V",
    ),
}  # fmt: skip


def keys_for(window_class: tuple[str, ...], keys: str, by_window: list[str]) -> str:
    """The keys to type into a window of `window_class` (its WM_CLASS instance and class):
    the user's `by_window` entry for it, else `keys` unless it is "auto", else its
    terminal's paste key, else Ctrl+V."""
    names = {n.lower() for n in window_class if n}
    for entry in by_window:
        name, _, chosen = entry.partition("=")
        if name.strip().lower() in names:
            return chosen
    if keys != "auto":
        return keys
    return next((TERMINALS[n] for n in sorted(names) if n in TERMINALS), "Ctrl+V")


def window_class(window: int) -> tuple[str, ...]:
    """WM_CLASS of an X11 window (instance, class), or () when it cannot be read."""
    try:
        from Xlib import display

        d = display.Display()
    except Exception:  # no X server here, or no python-xlib
        return ()
    try:
        found = d.create_resource_object("window", window).get_wm_class()
        return tuple(found) if found else ()
    except Exception:  # the window went away meanwhile
        return ()
    finally:
        d.close()


_MODIFIER = {"ctrl": "Control_L", "shift": "Shift_L", "alt": "Alt_L", "super": "Super_L"}
# Keys the user may still hold (the Alt of Alt+Enter): released first, or the target
# would see Ctrl+Alt+V.
_HELD = (
    "Control_L",
    "Control_R",
    "Shift_L",
    "Shift_R",
    "Alt_L",
    "Alt_R",
    "Meta_L",
    "Meta_R",
    "Super_L",
    "Super_R",
    "ISO_Level3_Shift",
)


def why_not() -> str | None:
    """None when pasting into another window can work here, else why not (one line)."""
    platform = qt_platform()
    if platform != "xcb":
        if platform == "wayland":
            return "Wayland lets no application type into another window"
        return f"pasting into other windows needs X11 (Qt runs on {platform or 'nothing'})"
    if importlib.util.find_spec("Xlib") is None:
        return "python-xlib is not installed"
    return None


def send(sequence: str) -> None:
    """Type `sequence` (one of KEYS) into the window that has the focus, through XTest.
    Raises RuntimeError saying why it could not."""
    from Xlib import XK, X, display
    from Xlib.ext import xtest

    mods, key = parse(sequence)
    try:
        d = display.Display()
    except Exception as exc:  # Xlib raises its own DisplayError types
        raise RuntimeError(f"cannot reach the X server ({exc})") from None
    try:
        if not d.has_extension("XTEST"):
            raise RuntimeError("the X server has no XTEST extension")

        def code(name: str) -> int:
            found = d.keysym_to_keycode(XK.string_to_keysym(name))
            if not found:
                raise RuntimeError(f"the keyboard has no {name} key")
            return found

        pressed = d.query_keymap()
        for name in _HELD:
            held = d.keysym_to_keycode(XK.string_to_keysym(name))
            if held and _down(pressed, held):
                xtest.fake_input(d, X.KeyRelease, held)
        modifiers = [code(_MODIFIER[m]) for m in ("ctrl", "shift", "alt", "super") if m in mods]
        target = code(key if len(key) > 1 else key.lower())
        for c in modifiers:
            xtest.fake_input(d, X.KeyPress, c)
        xtest.fake_input(d, X.KeyPress, target)
        xtest.fake_input(d, X.KeyRelease, target)
        for c in reversed(modifiers):
            xtest.fake_input(d, X.KeyRelease, c)
        d.sync()
        # Nothing left half-typed: a key the server still holds down would turn the user's
        # next key into a chord (Ctrl+Return, Alt+a) in the window pasted into.
        left = [c for c in (*modifiers, target) if _down(d.query_keymap(), c)]
        for c in left:
            xtest.fake_input(d, X.KeyRelease, c)
        d.sync()
        if any(_down(d.query_keymap(), c) for c in left):
            raise RuntimeError(
                "a key stayed pressed after pasting (press and release Ctrl, Shift and Alt)"
            )
    finally:
        d.close()


def _down(keymap, keycode: int) -> bool:
    """Whether the X server holds this key down (an XQueryKeymap bit vector)."""
    return bool(keymap[keycode // 8] & (1 << (keycode % 8)))
