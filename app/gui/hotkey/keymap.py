"""Qt-style key names to the codes that Windows' RegisterHotKey and Carbon's hotkeys take.

Pure data and a few small functions, with no Qt and no ctypes, so the whole mapping is tested on
Linux although it only runs on Windows and macOS.

Sources: Microsoft's "Virtual-Key Codes" table and `RegisterHotKey` (WinUser.h) for VK_* and
MOD_*; HIToolbox's Events.h for the kVK_* key codes and the cmdKey/optionKey/... masks.

Two things differ from what the names suggest:

- On macOS Qt's "Ctrl" is the Command key (⌘) and "Meta" the Control key (⌃): Qt maps
  Qt::ControlModifier to ⌘ there so that "Ctrl+C" means copy on every platform. We follow Qt, so
  the same hotkey setting means ⌘⌥Space on a Mac where it means Ctrl+Alt+Space elsewhere, just
  as every other shortcut of a Qt app does.
- Carbon key codes name physical positions on a US (ANSI) keyboard: on a French AZERTY Mac,
  "A" is the key labelled Q. Windows letter and digit codes follow the active layout, but the
  punctuation codes (VK_OEM_*) are the US positions too. Letters, digits, F-keys and the named
  keys are what hotkeys use in practice; punctuation is offered for US-like layouts.
"""

from __future__ import annotations

# RegisterHotKey's fsModifiers (WinUser.h).
MOD_ALT = 0x0001
MOD_CONTROL = 0x0002
MOD_SHIFT = 0x0004
MOD_WIN = 0x0008
MOD_NOREPEAT = 0x4000  # one WM_HOTKEY per press, not one per auto-repeat while held

# Carbon modifier masks (Events.h: cmdKey = 1 << cmdKeyBit (8), shiftKey 9, optionKey 11,
# controlKey 12).
CMD_KEY = 0x0100
SHIFT_KEY = 0x0200
OPTION_KEY = 0x0800
CONTROL_KEY = 0x1000

WINDOWS_MODIFIERS = {"ctrl": MOD_CONTROL, "alt": MOD_ALT, "shift": MOD_SHIFT, "super": MOD_WIN}
# Qt's convention on macOS (see the module docstring): Ctrl is ⌘, Meta/Super is ⌃.
MACOS_MODIFIERS = {"ctrl": CMD_KEY, "alt": OPTION_KEY, "shift": SHIFT_KEY, "super": CONTROL_KEY}

# kVK_ANSI_<letter>: positions on the US keyboard, hence not in alphabetical order.
_MAC_LETTERS = {
    "A": 0x00, "S": 0x01, "D": 0x02, "F": 0x03, "H": 0x04, "G": 0x05, "Z": 0x06, "X": 0x07,
    "C": 0x08, "V": 0x09, "B": 0x0B, "Q": 0x0C, "W": 0x0D, "E": 0x0E, "R": 0x0F, "Y": 0x10,
    "T": 0x11, "O": 0x1F, "U": 0x20, "I": 0x22, "P": 0x23, "L": 0x25, "J": 0x26, "K": 0x28,
    "N": 0x2D, "M": 0x2E,
}  # fmt: skip
_MAC_DIGITS = {
    "1": 0x12, "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "9": 0x19, "7": 0x1A,
    "8": 0x1C, "0": 0x1D,
}  # fmt: skip
# kVK_F1 .. kVK_F20; Carbon has no F21-F24 (no Mac keyboard has them).
_MAC_F_KEYS = (
    0x7A, 0x78, 0x63, 0x76, 0x60, 0x61, 0x62, 0x64, 0x65, 0x6D,
    0x67, 0x6F, 0x69, 0x6B, 0x71, 0x6A, 0x40, 0x4F, 0x50, 0x5A,
)  # fmt: skip

# Named keys: (Qt name and aliases), Windows VK_*, Carbon kVK_*. The first name is what Qt's
# QKeySequence writes; the aliases are what people type (and X11 keysym names).
_NAMED: tuple[tuple[tuple[str, ...], int, int], ...] = (
    (("Space",), 0x20, 0x31),  # VK_SPACE, kVK_Space
    # Qt's "Enter" is the keypad key; VK_RETURN covers both on Windows, and Return is what
    # people mean, so both names are the main Return key.
    (("Return", "Enter"), 0x0D, 0x24),  # VK_RETURN, kVK_Return
    (("Tab",), 0x09, 0x30),  # VK_TAB, kVK_Tab
    (("Esc", "Escape"), 0x1B, 0x35),  # VK_ESCAPE, kVK_Escape
    (("Backspace",), 0x08, 0x33),  # VK_BACK, kVK_Delete (the Mac's "delete" erases backwards)
    (("Del", "Delete"), 0x2E, 0x75),  # VK_DELETE, kVK_ForwardDelete
    (("Ins", "Insert"), 0x2D, 0x72),  # VK_INSERT, kVK_Help: a PC Insert key sends Help on a Mac
    (("Home",), 0x24, 0x73),  # VK_HOME, kVK_Home
    (("End",), 0x23, 0x77),  # VK_END, kVK_End
    (("PgUp", "PageUp", "Prior"), 0x21, 0x74),  # VK_PRIOR, kVK_PageUp
    (("PgDown", "PageDown", "Next"), 0x22, 0x79),  # VK_NEXT, kVK_PageDown
    (("Left",), 0x25, 0x7B),  # VK_LEFT, kVK_LeftArrow
    (("Up",), 0x26, 0x7E),  # VK_UP, kVK_UpArrow
    (("Right",), 0x27, 0x7C),  # VK_RIGHT, kVK_RightArrow
    (("Down",), 0x28, 0x7D),  # VK_DOWN, kVK_DownArrow
    (("`", "QuoteLeft", "Grave"), 0xC0, 0x32),  # VK_OEM_3, kVK_ANSI_Grave
    (("-", "Minus"), 0xBD, 0x1B),  # VK_OEM_MINUS, kVK_ANSI_Minus
    (("=", "Equal"), 0xBB, 0x18),  # VK_OEM_PLUS (the =/+ key), kVK_ANSI_Equal
    (("[", "BracketLeft"), 0xDB, 0x21),  # VK_OEM_4, kVK_ANSI_LeftBracket
    (("]", "BracketRight"), 0xDD, 0x1E),  # VK_OEM_6, kVK_ANSI_RightBracket
    ((";", "Semicolon"), 0xBA, 0x29),  # VK_OEM_1, kVK_ANSI_Semicolon
    (("'", "Apostrophe"), 0xDE, 0x27),  # VK_OEM_7, kVK_ANSI_Quote
    ((",", "Comma"), 0xBC, 0x2B),  # VK_OEM_COMMA, kVK_ANSI_Comma
    ((".", "Period"), 0xBE, 0x2F),  # VK_OEM_PERIOD, kVK_ANSI_Period
    (("/", "Slash"), 0xBF, 0x2C),  # VK_OEM_2, kVK_ANSI_Slash
    (("\\", "Backslash"), 0xDC, 0x2A),  # VK_OEM_5, kVK_ANSI_Backslash
)


def _tables() -> tuple[dict[str, int], dict[str, int]]:
    """The Windows and macOS tables, keyed by lower-case key name."""
    windows: dict[str, int] = {}
    macos: dict[str, int] = {}
    for letter, code in _MAC_LETTERS.items():
        windows[letter.lower()] = ord(letter)  # VK_A..VK_Z are 'A'..'Z' (0x41..0x5A)
        macos[letter.lower()] = code
    for digit, code in _MAC_DIGITS.items():
        windows[digit] = ord(digit)  # VK_0..VK_9 are '0'..'9' (0x30..0x39)
        macos[digit] = code
    for n in range(1, 25):
        windows[f"f{n}"] = 0x70 + n - 1  # VK_F1 (0x70) .. VK_F24 (0x87)
    for n, code in enumerate(_MAC_F_KEYS, start=1):
        macos[f"f{n}"] = code
    for names, vk, keycode in _NAMED:
        for name in names:
            windows[name.lower()] = vk
            macos[name.lower()] = keycode
    return windows, macos


WINDOWS_VK, MACOS_KEYCODE = _tables()
# Keys Windows knows and macOS cannot register: Mac keyboards stop at F20.
WINDOWS_ONLY = frozenset(f"f{n}" for n in range(21, 25))
KEY_NAMES = frozenset(WINDOWS_VK) | frozenset(MACOS_KEYCODE)


def split(sequence: str) -> tuple[set[str], str]:
    """Modifiers ('ctrl', 'alt', 'shift', 'super') and key name of a Qt-style sequence."""
    # The same rules as base.parse(), which lives beside Qt; this module must stay Qt-free.
    parts = [p.strip() for p in sequence.replace("Meta", "Super").split("+") if p.strip()]
    if not parts:
        raise ValueError("empty hotkey")
    mods = {p.lower() for p in parts[:-1]}
    unknown = mods - set(WINDOWS_MODIFIERS)
    if unknown:
        raise ValueError(f"unknown modifier {', '.join(sorted(unknown))}")
    return mods, parts[-1]


def windows_combo(sequence: str) -> tuple[int, int]:
    """(MOD_* flags including MOD_NOREPEAT, VK_* code) for `RegisterHotKey`."""
    mods, key = split(sequence)
    vk = WINDOWS_VK.get(key.lower())
    if vk is None:
        raise ValueError(f"unknown key {key!r} (not a key Windows can register)")
    flags = MOD_NOREPEAT
    for name in mods:
        flags |= WINDOWS_MODIFIERS[name]
    return flags, vk


def macos_combo(sequence: str) -> tuple[int, int]:
    """(Carbon modifier mask, kVK_* key code) for `RegisterEventHotKey`."""
    mods, key = split(sequence)
    keycode = MACOS_KEYCODE.get(key.lower())
    if keycode is None:
        if key.lower() in WINDOWS_ONLY:
            raise ValueError(f"unknown key {key!r} on macOS (Mac keyboards stop at F20)")
        raise ValueError(f"unknown key {key!r} (not a key macOS can register)")
    mask = 0
    for name in mods:
        mask |= MACOS_MODIFIERS[name]
    return mask, keycode
