"""The Windows and macOS hotkey backends, tested on Linux.

Everything around the platform calls runs here: the key tables, the chooser, the native event
filter (fed a real MSG structure), and the register/unregister logic, with user32 replaced by a
fake object and Carbon by a small C library with the same six functions compiled for the test,
so the ctypes signatures, the struct passed by value and the callback are exercised for real.
That the system delivers the key can only be shown by CI on Windows and macOS.
"""

from __future__ import annotations

import ctypes
import gc
import re
import shutil
import subprocess
import sys
import threading
from ctypes import wintypes
from pathlib import Path

import pytest
from shiboken6 import Shiboken

from app.core.settings import BY_KEY, SETTINGS
from app.gui import hotkey
from app.gui.hotkey import BACKENDS, MacHotkey, ManualHotkey, WindowsHotkey, keymap, macos, windows
from app.gui.hotkey.base import parse
from app.gui.hotkey.keymap import (
    CMD_KEY,
    CONTROL_KEY,
    KEY_NAMES,
    MACOS_KEYCODE,
    MOD_ALT,
    MOD_CONTROL,
    MOD_NOREPEAT,
    MOD_SHIFT,
    MOD_WIN,
    OPTION_KEY,
    SHIFT_KEY,
    WINDOWS_ONLY,
    WINDOWS_VK,
    macos_combo,
    windows_combo,
)
from app.gui.qt import QtCore

REPO = Path(__file__).resolve().parents[2]

# --- the key tables ------------------------------------------------------------------------


def test_the_default_hotkey_is_ctrl_alt_space_on_windows():
    assert windows_combo("Ctrl+Alt+Space") == (MOD_CONTROL | MOD_ALT | MOD_NOREPEAT, 0x20)
    assert windows_combo("Ctrl+Alt+Space") == (0x4003, 0x20)  # the constants themselves


def test_the_default_hotkey_is_command_option_space_on_macos():
    # Qt's convention: "Ctrl" is ⌘ on a Mac, so the setting means what Qt shortcuts mean there
    assert macos_combo("Ctrl+Alt+Space") == (CMD_KEY | OPTION_KEY, 0x31)  # kVK_Space
    assert macos_combo("Ctrl+Alt+Space") == (0x0900, 0x31)


def test_meta_and_super_are_the_windows_key_and_the_mac_control_key():
    assert windows_combo("Meta+Shift+M") == (MOD_WIN | MOD_SHIFT | MOD_NOREPEAT, 0x4D)
    assert windows_combo("Super+M") == windows_combo("Meta+M")
    assert macos_combo("Meta+Shift+M") == (CONTROL_KEY | SHIFT_KEY, 0x2E)
    assert (CMD_KEY, SHIFT_KEY, OPTION_KEY, CONTROL_KEY) == (0x100, 0x200, 0x800, 0x1000)


# (Qt key name, Windows VK_*, Carbon kVK_*), from the Virtual-Key Codes table and Events.h
KNOWN_CODES = [
    ("A", 0x41, 0x00), ("B", 0x42, 0x0B), ("M", 0x4D, 0x2E), ("Q", 0x51, 0x0C),
    ("Z", 0x5A, 0x06), ("0", 0x30, 0x1D), ("1", 0x31, 0x12), ("5", 0x35, 0x17),
    ("6", 0x36, 0x16), ("9", 0x39, 0x19), ("F1", 0x70, 0x7A), ("F2", 0x71, 0x78),
    ("F5", 0x74, 0x60), ("F10", 0x79, 0x6D), ("F12", 0x7B, 0x6F), ("F13", 0x7C, 0x69),
    ("F17", 0x80, 0x40), ("F20", 0x83, 0x5A), ("Space", 0x20, 0x31), ("Return", 0x0D, 0x24),
    ("Enter", 0x0D, 0x24), ("Tab", 0x09, 0x30), ("Esc", 0x1B, 0x35), ("Escape", 0x1B, 0x35),
    ("Backspace", 0x08, 0x33), ("Del", 0x2E, 0x75), ("Delete", 0x2E, 0x75),
    ("Ins", 0x2D, 0x72), ("Insert", 0x2D, 0x72), ("Home", 0x24, 0x73), ("End", 0x23, 0x77),
    ("PgUp", 0x21, 0x74), ("PageUp", 0x21, 0x74), ("PgDown", 0x22, 0x79),
    ("PageDown", 0x22, 0x79), ("Left", 0x25, 0x7B), ("Right", 0x27, 0x7C),
    ("Up", 0x26, 0x7E), ("Down", 0x28, 0x7D), ("`", 0xC0, 0x32), ("-", 0xBD, 0x1B),
    ("=", 0xBB, 0x18), ("[", 0xDB, 0x21), ("]", 0xDD, 0x1E), (";", 0xBA, 0x29),
    ("'", 0xDE, 0x27), (",", 0xBC, 0x2B), (".", 0xBE, 0x2F), ("/", 0xBF, 0x2C),
    ("\\", 0xDC, 0x2A),
]  # fmt: skip


@pytest.mark.parametrize(("name", "vk", "keycode"), KNOWN_CODES)
def test_letters_digits_function_keys_and_punctuation_map_on_both(name, vk, keycode):
    assert windows_combo(f"Ctrl+{name}") == (MOD_CONTROL | MOD_NOREPEAT, vk)
    assert macos_combo(f"Ctrl+{name}") == (CMD_KEY, keycode)


def test_every_letter_and_digit_has_its_own_code():
    letters_and_digits = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + list("0123456789")
    windows_codes = [WINDOWS_VK[k.lower()] for k in letters_and_digits]
    assert windows_codes == [ord(k) for k in letters_and_digits]  # VK_A is 'A', VK_0 is '0'
    mac = [MACOS_KEYCODE[k.lower()] for k in letters_and_digits]
    assert len(set(mac)) == len(mac)  # Mac codes follow key positions, so a slip shows as a clash
    f_keys = [MACOS_KEYCODE[f"f{n}"] for n in range(1, 21)]
    assert len(set(f_keys) | set(mac)) == len(f_keys) + len(mac)


def test_key_names_are_case_insensitive():
    assert windows_combo("ctrl+alt+space") == windows_combo("CTRL+ALT+SPACE")
    assert windows_combo("Ctrl+a") == windows_combo("Ctrl+A")
    assert macos_combo("shift+pgdown") == macos_combo("Shift+PgDown") == (SHIFT_KEY, 0x79)
    assert macos_combo("Alt+f3") == (OPTION_KEY, 0x63)


def test_an_unknown_key_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="unknown key 'Hyper'"):
        windows_combo("Ctrl+Hyper")
    with pytest.raises(ValueError, match="unknown key 'Hyper'"):
        macos_combo("Ctrl+Hyper")
    with pytest.raises(ValueError, match="unknown modifier fn"):
        windows_combo("Fn+A")
    with pytest.raises(ValueError, match="empty hotkey"):
        macos_combo(" + ")


def test_f21_to_f24_exist_on_windows_only_and_macos_says_why():
    assert windows_combo("F24") == (MOD_NOREPEAT, 0x87)
    with pytest.raises(ValueError, match="'F21'.*stop at F20"):
        macos_combo("Ctrl+F21")


def test_every_key_the_keymap_lists_maps_on_both_platforms():
    assert set(WINDOWS_VK) - set(MACOS_KEYCODE) == WINDOWS_ONLY == {"f21", "f22", "f23", "f24"}
    assert set(MACOS_KEYCODE) <= set(WINDOWS_VK)
    for name in sorted(KEY_NAMES):
        assert windows_combo(f"Ctrl+Shift+{name}")[1] == WINDOWS_VK[name]
        if name not in WINDOWS_ONLY:
            assert macos_combo(f"Ctrl+Shift+{name}")[1] == MACOS_KEYCODE[name]


def test_the_keymap_splits_sequences_exactly_as_base_parse_does():
    for sequence in ("Ctrl+Alt+Space", "Meta+Shift+M", "shift + F5", "Super+;", "A"):
        assert keymap.split(sequence) == parse(sequence)


def test_every_hotkey_setting_default_maps_on_both_platforms():
    hotkeys = [s for s in SETTINGS if s.key == "hotkey" or s.key.endswith("_hotkey")]
    assert BY_KEY["hotkey"].default == "Ctrl+Alt+Space"  # this is Linux
    for setting in hotkeys:  # the popup's hotkey, and any later one (remember the clipboard)
        if setting.default:
            windows_combo(setting.default)
            macos_combo(setting.default)
    # macOS gets ⌥Space: Qt's "Ctrl" is ⌘ there, and ⌘⌥Space is Finder's search window
    assert macos_combo("Alt+Space") == (OPTION_KEY, 0x31)
    assert macos_combo("Alt+Space") != macos_combo("Ctrl+Alt+Space")


def test_the_default_hotkey_on_macos_is_option_space():
    probe = (
        "import sys; sys.platform = 'darwin'; "
        "from app.core.settings import BY_KEY; print(BY_KEY['hotkey'].default)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "Alt+Space"


def test_the_keymap_imports_neither_qt_nor_ctypes():
    source = (REPO / "app/gui/hotkey/keymap.py").read_text()
    imports = re.findall(r"^\s*(?:from|import)\s+(\S+)", source, re.MULTILINE)
    assert imports == ["__future__"]


# --- choosing a backend on Linux -----------------------------------------------------------


@pytest.fixture
def linux_session(monkeypatch, qapp):
    """No X server, no Wayland, no D-Bus: nothing but the manual fallback can run."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    return monkeypatch


def test_both_backends_say_why_they_cannot_run_on_linux(linux_session):
    assert WindowsHotkey.is_compatible() == "not Windows (sys.platform is linux)"
    assert MacHotkey.is_compatible() == "not macOS (sys.platform is linux)"
    linux_session.setattr(sys, "platform", "win32")
    assert WindowsHotkey.is_compatible() is None
    linux_session.setattr(sys, "platform", "darwin")
    assert MacHotkey.is_compatible() is None


def test_the_chooser_tries_windows_and_macos_before_the_manual_fallback(linux_session, caplog):
    caplog.set_level("INFO", logger="app.gui.hotkey")
    assert [cls.key for cls in BACKENDS] == ["x11", "portal", "windows", "macos", "none"]
    assert isinstance(hotkey.backend(), ManualHotkey)
    assert "windows skipped: not Windows (sys.platform is linux)" in caplog.messages
    assert "macos skipped: not macOS (sys.platform is linux)" in caplog.messages


@pytest.mark.parametrize(("forced", "reason"), [("windows", "not Windows"), ("macos", "not macOS")])
def test_a_forced_platform_backend_on_linux_falls_back_and_says_why(linux_session, forced, reason):
    chosen = hotkey.backend(forced=forced)
    assert isinstance(chosen, ManualHotkey)
    error = chosen.register("Ctrl+Alt+Space")
    assert error is not None
    assert f"the {forced} hotkey backend chosen in the settings cannot run here: {reason}" in error
    assert "mnemo popup" in error
    assert forced in BY_KEY["hotkey_backend"].choices


def test_importing_the_platform_modules_loads_no_system_library():
    # GIVEN a fresh interpreter where loading any shared library (windll, Carbon) is an error
    code = """
import ctypes, ctypes.util, sys
import app.gui.qt  # Qt itself may load libraries; only our modules are under test
class Trap:
    def __init__(self, *args, **kwargs):
        raise AssertionError(f"a library was loaded at import: {args}")
    def __getattr__(self, name):
        raise AssertionError(f"ctypes loader touched at import: {name}")
ctypes.CDLL = ctypes.PyDLL = ctypes.WinDLL = ctypes.OleDLL = Trap
ctypes.cdll = ctypes.windll = ctypes.oledll = ctypes.pydll = Trap.__new__(Trap)
ctypes.util.find_library = Trap
import app.gui.hotkey.windows, app.gui.hotkey.macos
print("imported")
"""
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    # THEN both modules import without loading user32 or Carbon
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "imported"


# --- the Windows backend, with a fake user32 -----------------------------------------------


class FakeUser32:
    """RegisterHotKey/UnregisterHotKey as Windows answers them, recorded."""

    def __init__(self, refuse: bool = False):
        self.refuse = refuse
        self.calls: list[tuple] = []

    def RegisterHotKey(self, hwnd, hotkey_id, modifiers, vk):  # user32's names
        self.calls.append(("register", hwnd, hotkey_id, modifiers, vk))
        return 0 if self.refuse else 1

    def UnregisterHotKey(self, hwnd, hotkey_id):
        self.calls.append(("unregister", hwnd, hotkey_id))
        return 1


@pytest.fixture
def user32(monkeypatch, qapp):
    fake = FakeUser32()
    monkeypatch.setattr(windows, "_user32", lambda: fake)
    monkeypatch.setattr(windows, "_last_error", lambda: 1409)
    return fake


def hotkey_message(hotkey_id: int, message: int = windows.WM_HOTKEY) -> wintypes.MSG:
    """A MSG as Windows posts it for RegisterHotKey(NULL, ...): no window, our id in wParam."""
    msg = wintypes.MSG()
    msg.hWnd, msg.message, msg.wParam = None, message, hotkey_id
    return msg


def test_windows_registers_without_a_window_and_fires_on_our_wm_hotkey(user32, qtbot):
    backend = WindowsHotkey()
    assert backend.register("Ctrl+Alt+Space") is None
    (call,) = user32.calls
    _, hwnd, hotkey_id, modifiers, vk = call
    assert (hwnd, modifiers, vk) == (
        None,
        MOD_CONTROL | MOD_ALT | MOD_NOREPEAT,
        0x20,
    )
    msg = hotkey_message(hotkey_id)
    # as PySide6 calls the filter: a QByteArray and a VoidPtr to the MSG (checked under Xvfb
    # with xcb events; Windows' own messages arrive the same way)
    event_type = QtCore.QByteArray(b"windows_dispatcher_MSG")
    message = Shiboken.VoidPtr(ctypes.addressof(msg))
    with qtbot.waitSignal(backend.activated, timeout=2000):
        assert backend._filter.nativeEventFilter(event_type, message) == (True, 0)
    backend.unregister()
    assert user32.calls[-1] == ("unregister", None, hotkey_id)
    assert backend._filter is None


def test_windows_ignores_other_messages_ids_and_event_types(user32, qtbot):
    backend = WindowsHotkey()
    backend.register("Ctrl+Alt+Space")
    hotkey_id = user32.calls[0][2]
    native_filter = backend._filter
    others = [
        (b"windows_dispatcher_MSG", hotkey_message(hotkey_id + 1)),  # another program's id
        (b"windows_generic_MSG", hotkey_message(hotkey_id, message=0x0100)),  # WM_KEYDOWN
        (b"xcb_generic_event_t", hotkey_message(hotkey_id)),  # not a MSG at all
    ]
    with qtbot.assertNotEmitted(backend.activated, wait=100):
        for kind, msg in others:
            result = native_filter.nativeEventFilter(QtCore.QByteArray(kind), ctypes.addressof(msg))
            assert result == (False, 0)
        assert native_filter.nativeEventFilter(QtCore.QByteArray(kind), 0) == (False, 0)
    backend.unregister()


def test_windows_says_when_another_program_holds_the_key(user32, monkeypatch):
    user32.refuse = True
    backend = WindowsHotkey()
    error = backend.register("Ctrl+Alt+Space")
    assert error == f"Ctrl+Alt+Space is already taken by another program; {hotkey.FALLBACK}"
    assert backend._filter is None
    monkeypatch.setattr(windows, "_last_error", lambda: 5)  # ERROR_ACCESS_DENIED
    error = backend.register("Ctrl+Alt+Space")
    assert error is not None and "Windows refused the hotkey Ctrl+Alt+Space (error 5)" in error


def test_windows_rejects_an_unknown_key_before_calling_windows(user32):
    error = WindowsHotkey().register("Ctrl+Hyper")
    assert error is not None and "unknown key 'Hyper'" in error
    assert user32.calls == []


def test_windows_registering_again_releases_the_previous_key(user32):
    backend = WindowsHotkey()
    backend.register("Ctrl+Alt+Space")
    first_id = user32.calls[0][2]
    backend.register("Ctrl+Alt+M")
    assert [c[0] for c in user32.calls] == ["register", "unregister", "register"]
    assert user32.calls[1][2] == first_id and user32.calls[2][4] == 0x4D
    backend.unregister()


def test_windows_refuses_to_register_off_the_gui_thread(user32):
    # WM_HOTKEY goes to the registering thread's queue, which no Qt event loop reads elsewhere
    backend = WindowsHotkey()
    errors: list[str | None] = []
    worker = threading.Thread(target=lambda: errors.append(backend.register("Ctrl+Alt+Space")))
    worker.start()
    worker.join()
    assert errors[0] is not None and "must be registered on the GUI thread" in errors[0]
    assert user32.calls == []


# --- the macOS backend, with a stand-in Carbon compiled for the test ------------------------

FAKE_CARBON = r"""
#include <stdint.h>
#include <string.h>
typedef int32_t OSStatus;
typedef struct { uint32_t signature, id; } EventHotKeyID;
typedef struct { uint32_t eventClass, eventKind; } EventTypeSpec;
typedef OSStatus (*Handler)(void *call_ref, void *event, void *user_data);
typedef struct { int used; uint32_t code, mods; EventHotKeyID id; } HotKey;
typedef struct { int used; Handler proc; } Installed;
static int target;
static HotKey keys[8];
static Installed handlers[8];
EventTypeSpec handled;
uint32_t last_options = 99;

void *GetApplicationEventTarget(void) { return &target; }

OSStatus InstallEventHandler(void *t, Handler h, unsigned long n, const EventTypeSpec *spec,
                             void *user_data, void **out) {
    if (t != &target || n != 1 || !h) return -50;  /* paramErr */
    for (int i = 0; i < 8; i++)
        if (!handlers[i].used) {
            handlers[i] = (Installed){1, h}; handled = spec[0]; *out = &handlers[i];
            return 0;
        }
    return -108;
}

OSStatus RemoveEventHandler(void *ref) { ((Installed *)ref)->used = 0; return 0; }

/* As Carbon does within one process: the same combination twice is eventHotKeyExistsErr. */
OSStatus RegisterEventHotKey(uint32_t code, uint32_t mods, EventHotKeyID id, void *t,
                             uint32_t options, void **out) {
    int free_slot = -1;
    if (t != &target) return -50;
    for (int i = 7; i >= 0; i--) {
        if (keys[i].used && keys[i].code == code && keys[i].mods == mods) return -9878;
        if (!keys[i].used) free_slot = i;
    }
    if (free_slot < 0) return -108;
    keys[free_slot] = (HotKey){1, code, mods, id}; last_options = options;
    *out = &keys[free_slot];
    return 0;
}

OSStatus UnregisterEventHotKey(void *ref) { ((HotKey *)ref)->used = 0; return 0; }

/* Our stand-in event is a pointer to the pressed key's EventHotKeyID. */
OSStatus GetEventParameter(void *event, uint32_t name, uint32_t type, void *actual_type,
                           unsigned long size, void *actual_size, void *out) {
    if (name != 0x2D2D2D2D || type != 0x686B6964 || size != sizeof(EventHotKeyID))
        return -9870;  /* eventParameterNotFoundErr */
    memcpy(out, event, sizeof(EventHotKeyID));
    return 0;
}

/* Handlers newest first, until one handles the event (eventNotHandledErr passes it on). */
static OSStatus dispatch(EventHotKeyID *id) {
    OSStatus status = -9874;
    for (int i = 7; i >= 0 && status == -9874; i--)
        if (handlers[i].used) status = handlers[i].proc(0, id, 0);
    return status;
}

/* Test helpers: a key press as the system delivers it (1: nothing registered), a press of
   another part of the app's hotkey ('OTHR'), and how many handlers are installed. */
int press(uint32_t code, uint32_t mods) {
    for (int i = 0; i < 8; i++)
        if (keys[i].used && keys[i].code == code && keys[i].mods == mods)
            return dispatch(&keys[i].id);
    return 1;
}
int press_foreign(void) { EventHotKeyID other = {0x4F544852, 1}; return dispatch(&other); }
int handlers_installed(void) {
    int n = 0;
    for (int i = 0; i < 8; i++) n += handlers[i].used;
    return n;
}
"""


@pytest.fixture(scope="module")
def fake_carbon_path(tmp_path_factory) -> Path:
    """A shared library with Carbon's hotkey functions, built with the system C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler (scripts/setup installs build-essential)")
    folder = tmp_path_factory.mktemp("carbon")
    (folder / "carbon.c").write_text(FAKE_CARBON)
    library = folder / "libcarbon.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(folder / "carbon.c")], check=True
    )
    return library


@pytest.fixture
def carbon(fake_carbon_path, monkeypatch, qapp):
    """macos.py pointed at the stand-in Carbon; each test leaves nothing registered."""
    monkeypatch.setattr(macos, "CARBON", str(fake_carbon_path))
    monkeypatch.setattr(macos, "_carbon_lib", None)
    lib = ctypes.CDLL(str(fake_carbon_path))  # the same loaded copy macos.py will use
    yield lib
    assert lib.handlers_installed() == 0


@pytest.fixture
def mac_backend(carbon):
    """A factory of MacHotkey backends, all unregistered when the test ends, pass or fail."""
    made: list[MacHotkey] = []

    def make() -> MacHotkey:
        made.append(MacHotkey())
        return made[-1]

    yield make
    for backend in made:
        backend.unregister()


def test_macos_registers_through_carbon_and_fires_on_the_key(carbon, mac_backend, qtbot):
    backend = mac_backend()
    assert backend.register("Ctrl+Alt+Space") is None
    options = ctypes.c_uint32.in_dll(carbon, "last_options").value
    assert options == macos.K_EVENT_HOTKEY_NO_OPTIONS
    handled = macos.EventTypeSpec.in_dll(carbon, "handled")
    assert (handled.eventClass, handled.eventKind) == (macos.fourcc("keyb"), 5)
    gc.collect()  # the callback must be kept alive by the backend, not by luck
    with qtbot.waitSignal(backend.activated, timeout=2000):
        # ⌘⌥Space reaches our handler with our EventHotKeyID, passed by value and read back
        assert carbon.press(0x31, CMD_KEY | OPTION_KEY) == macos.NO_ERR
    backend.unregister()
    assert carbon.press(0x31, CMD_KEY | OPTION_KEY) == 1  # nothing registered any more


def test_macos_passes_on_hotkeys_that_are_not_ours(carbon, mac_backend, qtbot):
    backend = mac_backend()
    backend.register("Ctrl+Alt+Space")
    with qtbot.assertNotEmitted(backend.activated, wait=100):
        assert carbon.press_foreign() == macos.EVENT_NOT_HANDLED_ERR
    backend.unregister()


def test_macos_says_when_the_key_is_already_taken(carbon, mac_backend):
    first, second = mac_backend(), mac_backend()
    assert first.register("Ctrl+Alt+Space") is None
    error = second.register("Ctrl+Alt+Space")
    assert error == f"Ctrl+Alt+Space is already taken by another program; {hotkey.FALLBACK}"
    # the failed attempt removed its handler and holds nothing
    assert (second._handler_ref, second._hotkey_ref, second._handler) == (None, None, None)
    assert carbon.handlers_installed() == 1
    first.unregister()
    assert second.register("Ctrl+Alt+Space") is None
    second.unregister()


def test_macos_rejects_a_key_macs_do_not_have(mac_backend):
    error = mac_backend().register("Ctrl+F22")
    assert error is not None and "unknown key 'F22'" in error and "stop at F20" in error
