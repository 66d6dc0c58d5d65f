"""End to end on a real X server (Xvfb) with a real system tray (trayer): the real app
process, the real global hotkey pressed with xdotool, the real clipboard read with xclip.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from tests.conftest import REPO
from tests.e2e import session

QUERY_HIT = "k8s pod restart debugging: CrashLoopBackOff came from an OOM kill"
TICKET_HIT = "OPS-2166: the billing export times out when the invoice batch is over 5,000 rows"
SEED = (
    (QUERY_HIT, "k8s"),
    ("Grandma lasagne uses nutmeg in the bechamel", "food"),
    ("Parse dates with an explicit format string", "code"),
    (TICKET_HIT, "ops"),
    ("OPS-2161 was a flaky login test", "ops"),
)
MNEMO = (sys.executable, "-m", "app")
_wait, _run = session.wait, session.run


def _status(env) -> dict | None:
    return session.status(env, MNEMO, REPO)


def _settled(env, text: str) -> bool:
    return session.settled(env, MNEMO, text, REPO)


@pytest.fixture(scope="module")
def desktop(tmp_path_factory):
    """Xvfb + trayer + the Mnemo app on a seeded MNEMO_HOME; yields (env, home, app)."""
    home = tmp_path_factory.mktemp("e2e-home")
    with session.desktop(home, MNEMO, SEED, cwd=REPO) as (env, app):
        yield env, home, app


def _memories(home: Path) -> list[tuple[str, str]]:
    conn = apsw.Connection(str(home / "data" / "mnemo.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT text, source FROM memories WHERE deleted_at IS NULL").fetchall()
    finally:
        conn.close()


def test_the_first_start_says_mnemo_runs_and_which_key_opens_it(desktop):
    env, home, _app = desktop
    # (nothing else has been notified yet: this module's first test on a fresh home)
    assert _status(env)["last_notification"] == [
        "Mnemo is running",
        "Press Ctrl+Alt+Space anywhere to search your memories; Ctrl+Alt+C remembers what "
        "you copied; the tray icon has the rest.",
    ]
    assert (home / "config" / ".welcomed").exists()  # once: the next start stays quiet


def test_tray_icon_is_embedded_in_the_system_tray(desktop):
    env, *_ = desktop
    children = session.tray_children(env)
    assert any('"Mnemo"' in line and '"mnemo"' in line for line in children), children


def test_hotkey_opens_the_popup_and_enter_copies_the_best_memory(desktop):
    env, _home, _app = desktop
    _run(env, "xdotool", "key", "ctrl+alt+space")
    _wait(
        lambda: _run(
            env, "xdotool", "search", "--onlyvisible", "--name", "^Mnemo search$", check=False
        ).stdout.strip(),
        10,
        "the popup to show",
    )
    _run(env, "xdotool", "type", "--delay", "30", "kubernetes troubleshooting")
    # the meaning-based results follow the keyword ones after a short debounce
    _wait(lambda: _settled(env, "kubernetes troubleshooting"), 10, "the popup's answer")
    _run(env, "xdotool", "key", "Return")
    copied = _wait(
        lambda: _run(env, "xclip", "-o", "-selection", "clipboard", check=False).stdout,
        10,
        "the clipboard",
    )
    assert copied == QUERY_HIT
    _wait(
        lambda: (
            not _run(
                env, "xdotool", "search", "--onlyvisible", "--name", "^Mnemo search$", check=False
            ).stdout.strip()
        ),
        5,
        "the popup to hide",
    )


def test_alt_enter_pastes_the_memory_into_the_window_the_user_was_in(desktop, tmp_path):
    env, _home, _app = desktop
    typed = tmp_path / "typed.txt"
    editor = session.editor(env, typed, "Paste target")
    try:
        (target,) = _wait(lambda: _windows(env, "Paste target"), 20, "the editor")
        _run(env, "xdotool", "windowactivate", "--sync", target, check=False)
        _wait(lambda: _active(env) == target, 5, "the editor to have the focus")
        _run(env, "xdotool", "type", "--delay", "30", "note: ")
        _run(env, "xdotool", "key", "ctrl+alt+space")
        _wait(lambda: _popup_windows(env), 10, "the popup to show")
        _run(env, "xdotool", "type", "--delay", "30", "kubernetes troubleshooting")
        _run(env, "xdotool", "key", "alt+Return")  # at once: it waits for this text's rows
        _wait(
            lambda: typed.exists() and typed.read_text(encoding="utf-8") == "note: " + QUERY_HIT,
            10,
            "the memory pasted after what was typed",
        )
        assert _active(env) == target and not _popup_windows(env)
        assert _run(env, "xclip", "-o", "-selection", "clipboard").stdout == QUERY_HIT
    finally:
        editor.terminate()
        editor.wait(10)


def test_letters_typed_right_after_the_hotkey_go_to_the_popup_not_the_window_before(
    desktop, tmp_path
):
    # The desktop pass (issue 22, item 3): under load the first letters typed after the hotkey
    # went to the window that had the focus (in a terminal: run as a command). The app is
    # stopped (SIGSTOP) while the hotkey is pressed and a word typed, the most a busy machine
    # can delay it; it goes on a second later. Then once more at full speed, not stopped.
    env, _home, app = desktop
    typed = tmp_path / "typed.txt"
    editor = session.editor(env, typed, "Paste target")
    try:
        (target,) = _wait(lambda: _windows(env, "Paste target"), 20, "the editor")
        for stopped in (True, False):
            _put_in_clipboard(env, "something else")
            _run(env, "xdotool", "windowactivate", "--sync", target, check=False)
            _wait(lambda: _active(env) == target, 5, "the editor to have the focus")
            if stopped:
                app.send_signal(signal.SIGSTOP)
            try:
                keys = ("key", "ctrl+alt+space", "type", "--delay", "20", "kubernetes")
                subprocess.Popen(["xdotool", *keys], env=env).wait(30 if stopped else None)
                time.sleep(1.0 if stopped else 0)  # the app stays stopped a while
            finally:
                app.send_signal(signal.SIGCONT)
            (popup,) = _wait(lambda: _popup_windows(env), 10, "the popup to show")
            _wait(lambda p=popup: _active(env) == p, 5, "the popup to have the focus")
            _run(env, "xdotool", "type", "--delay", "30", " troubleshooting")
            _run(env, "xdotool", "key", "Return")
            _wait(lambda: not _popup_windows(env), 10, "the popup to hide")
            copied = _run(env, "xclip", "-o", "-selection", "clipboard").stdout
            assert copied == QUERY_HIT, stopped  # the whole query reached the popup, in order
            assert not typed.exists() or typed.read_text(encoding="utf-8") == "", stopped
    finally:
        editor.terminate()
        editor.wait(10)


def test_keys_typed_at_once_after_the_hotkey_arrive_in_order_on_a_busy_machine(desktop, tmp_path):
    # Issue 46, items 1 and 2: the hotkey, "OPS-2166" and Enter typed in one go at 20 ms a
    # key with both cores kept busy copied the wrong memory 6 times in 100 (keys typed once
    # the grab let go reached the popup before the ones it kept, "SOP-2166", or Enter came
    # before the text). Now keys wait behind the kept ones (`gui/key_gate.py`).
    env, _home, _app = desktop
    typed = tmp_path / "typed.txt"
    editor = session.editor(env, typed, "Paste target")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        (target,) = _wait(lambda: _windows(env, "Paste target"), 20, "the editor")
        copies = []
        for _ in range(60):
            _put_in_clipboard(env, "before")
            _run(env, "xdotool", "windowactivate", "--sync", target, check=False)
            _wait(lambda: _active(env) == target, 5, "the editor to have the focus")
            _run(env, "xdotool", "key", "ctrl+alt+space", "type", "--delay", "20", "OPS-2166")
            _run(env, "xdotool", "key", "Return")
            copies.append(_wait(lambda: (c := _clipboard(env)) != "before" and c, 12, "a copy"))
            _wait(lambda: not _popup_windows(env), 10, "the popup to hide")
        wrong = [c for c in copies if c != TICKET_HIT]
        assert wrong == [], f"{len(wrong)} of {len(copies)} copied another memory"
        assert not typed.exists() or typed.read_text(encoding="utf-8") == ""
    finally:
        for loop in busy:
            loop.kill()
        editor.terminate()
        editor.wait(10)


def _clipboard(env) -> str:
    return _run(env, "xclip", "-o", "-selection", "clipboard", check=False).stdout


def _put_in_clipboard(env, text: str) -> None:
    subprocess.run(  # xclip stays behind to serve it
        ["xclip", "-selection", "clipboard"], input=text.encode(), env=env, check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
    )  # fmt: skip


KEYS_DOWN = """
import sys
from Xlib import XK, display
from app.gui import paste
paste.send(sys.argv[1])
d = display.Display()
keymap = d.query_keymap()
names = ("Control_L", "Shift_L", "Alt_L", "v", "Insert")
down = [n for n in names if paste._down(keymap, d.keysym_to_keycode(XK.string_to_keysym(n)))]
print(",".join(down))
"""


def test_pasting_leaves_no_key_pressed_even_when_the_user_still_holds_alt(desktop):
    # Issue 22: after pasting, nothing may be left half-typed. The user's Alt of Alt+Enter is
    # still down when Mnemo types the paste keys: it is released first (else the target sees
    # Ctrl+Alt+V), and afterwards no key of the paste is held by the server.
    env, _home, _app = desktop
    for keys in ("Ctrl+Shift+V", "Shift+Insert", "Ctrl+V"):
        _run(env, "xdotool", "keydown", "alt")
        try:
            done = _run(env, sys.executable, "-c", KEYS_DOWN, keys, cwd=REPO)
        finally:
            _run(env, "xdotool", "keyup", "alt")
        assert done.stdout.strip() == "", (keys, done.stdout, done.stderr)


@pytest.mark.skipif(shutil.which("xterm") is None, reason="needs xterm (scripts/setup --test)")
def test_alt_enter_pastes_into_a_terminal_with_its_own_key(desktop, tmp_path):
    # The desktop pass (issue 22, item 2): into xterm Ctrl+V typed ^V and pasted nothing (the
    # next Return became a literal ^M) and Shift+Insert pasted the PRIMARY selection, other
    # text, into a shell. By its window class Mnemo knows xterm pastes PRIMARY with
    # Shift+Insert, and puts the memory there too.
    env, _home, _app = desktop
    typed = tmp_path / "line.txt"
    subprocess.run(  # other text in PRIMARY (xclip stays behind to serve it)
        ["xclip", "-selection", "primary"],
        input=b"rm -rf something else", env=env, check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30,
    )  # fmt: skip
    shell = f"read -r -N {len(QUERY_HIT)} line; printf '%s' \"$line\" > {typed}"
    term = subprocess.Popen(
        ["xterm", "-title", "Paste terminal", "-e", "bash", "-c", shell], env=env
    )
    try:
        (target,) = _wait(lambda: _windows(env, "Paste terminal"), 20, "the terminal")
        _run(env, "xdotool", "windowactivate", "--sync", target, check=False)
        _wait(lambda: _active(env) == target, 5, "the terminal to have the focus")
        _run(env, "xdotool", "key", "ctrl+alt+space")
        _wait(lambda: _popup_windows(env), 10, "the popup to show")
        _run(env, "xdotool", "type", "--delay", "30", "kubernetes troubleshooting")
        _run(env, "xdotool", "key", "alt+Return")
        _wait(lambda: _active(env) == target and not _popup_windows(env), 10, "the focus back")
        _wait(lambda: typed.exists(), 10, "the shell to read as many characters as the memory")
        assert typed.read_text(encoding="utf-8") == QUERY_HIT
    finally:
        term.terminate()
        term.wait(10)


def _active(env) -> str:
    return _run(env, "xdotool", "getactivewindow", check=False).stdout.strip()


_windows = session.visible_windows


def _popup_windows(env) -> list[str]:
    return _windows(env, "Mnemo search")


def test_the_hotkey_toggles_the_popup_centred_on_the_screen(desktop):
    # Issue 12, defect 10: once the popup opened at (0,0). Every time it shows, wherever the
    # mouse is and whatever it showed before, it is centred near the top of the screen.
    env, _home, _app = desktop
    for mouse, typed in (((640, 400), ""), ((5, 790), "lasagne"), ((1275, 5), "")):
        _run(env, "xdotool", "mousemove", str(mouse[0]), str(mouse[1]))
        _run(env, "xdotool", "key", "ctrl+alt+space")
        (window,) = _wait(lambda: _popup_windows(env), 10, "the popup to show")
        _wait(lambda w=window: _active(env) == w, 5, "the popup to have the focus")
        if typed:  # results change its height; the next show must still be placed anew
            _run(env, "xdotool", "type", "--delay", "30", typed)
            _wait(lambda t=typed: _settled(env, t), 10, "the popup's answer")
        geometry = _run(env, "xdotool", "getwindowgeometry", "--shell", window).stdout
        where = dict(line.split("=") for line in geometry.split())
        x, y, width = int(where["X"]), int(where["Y"]), int(where["WIDTH"])
        assert abs(x + width / 2 - 640) < 20 and 100 < y < 300, (mouse, where)  # never 0,0
        _run(env, "xdotool", "key", "ctrl+alt+space")  # again: it hides, as launchers do
        _wait(lambda: not _popup_windows(env), 5, "the popup to hide on the second press")


def test_the_popup_hides_when_another_window_takes_the_focus(desktop):
    env, _home, _app = desktop
    _run(env, "xdotool", "key", "ctrl+alt+space")
    (window,) = _wait(lambda: _popup_windows(env), 10, "the popup to show")
    _wait(lambda: _active(env) == window, 5, "the popup to have the focus")
    _run(env, sys.executable, "-m", "app", "manager", cwd=REPO)  # a window that takes focus
    _wait(lambda: not _popup_windows(env), 5, "the popup to hide on focus loss")
    manager = _wait(lambda: _windows(env, "Mnemo — memories"), 10, "the manager")
    assert _active(env) in manager  # the focus stays where it went, not given back


def test_with_hide_on_blur_off_the_hotkey_brings_back_a_popup_left_behind(desktop):
    # The desktop pass (issue 22, item 14): the hotkey hid a popup that was behind another
    # window instead of raising it, so it took two presses to get it back
    env, _home, _app = desktop
    _run(env, *MNEMO, "settings", "popup_hide_on_blur", "false", cwd=REPO)
    try:
        _wait(lambda: (_status(env) or {}).get("popup_hide_on_blur") is False, 10, "the setting")
        _run(env, "xdotool", "key", "ctrl+alt+space")
        (window,) = _wait(lambda: _popup_windows(env), 10, "the popup to show")
        _wait(lambda: _active(env) == window, 5, "the popup to have the focus")
        _run(env, *MNEMO, "manager", cwd=REPO)  # a window that takes the focus
        manager = _wait(lambda: _windows(env, "Mnemo — memories"), 10, "the manager")
        _wait(lambda: _active(env) in manager, 5, "the manager to have the focus")
        assert _popup_windows(env) == [window]  # left open behind it
        _run(env, "xdotool", "key", "ctrl+alt+space")
        _wait(lambda: _active(env) == window, 5, "the popup to come back with the focus")
        _run(env, "xdotool", "key", "ctrl+alt+space")  # and now it hides, as before
        _wait(lambda: not _popup_windows(env), 5, "the popup to hide")
    finally:
        _run(env, *MNEMO, "settings", "popup_hide_on_blur", "true", cwd=REPO)
        _wait(lambda: (_status(env) or {}).get("popup_hide_on_blur") is True, 10, "the setting")


GRAB = """
import sys, time
from Xlib import X, XK, display
d = display.Display()
root = d.screen().root
code = d.keysym_to_keycode(XK.string_to_keysym("k"))
root.grab_key(code, X.ControlMask | X.Mod1Mask, True, X.GrabModeAsync, X.GrabModeAsync)
d.sync()
print("held", flush=True)
time.sleep(120)
"""


def test_a_hotkey_another_program_holds_is_refused_and_the_old_one_kept(desktop):
    # The desktop pass (issue 22, item 11): `mnemo settings hotkey Alt+Space` (a key the window
    # manager owns) saved and exited 0; the app let go of the old key and had none
    env, _home, _app = desktop
    holder = subprocess.Popen(
        [sys.executable, "-c", GRAB], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"  # another program holds Ctrl+Alt+K
        done = subprocess.run(
            [*MNEMO, "settings", "hotkey", "Ctrl+Alt+K"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 1, done
        assert "hotkey not changed" in done.stderr and "Ctrl+Alt+Space still opens" in done.stderr
        _wait(
            lambda: "'Ctrl+Alt+Space'" in _run(env, *MNEMO, "settings", "hotkey", cwd=REPO).stdout,
            10,
            "the setting to be the old key again",
        )
        _run(env, "xdotool", "key", "ctrl+alt+space")  # the old key still works
        _wait(lambda: _popup_windows(env), 10, "the popup to show on the old key")
        _run(env, "xdotool", "key", "ctrl+alt+space")
        _wait(lambda: not _popup_windows(env), 5, "the popup to hide")
        # A free key is taken, and the command says nothing more
        free = _run(env, *MNEMO, "settings", "hotkey", "Ctrl+Alt+J", cwd=REPO)
        assert (_status(env) or {}).get("hotkey") == "Ctrl+Alt+J", free.stderr
    finally:
        holder.kill()
        holder.wait(10)
        _run(env, *MNEMO, "settings", "hotkey", "Ctrl+Alt+Space", cwd=REPO)
        _wait(lambda: (_status(env) or {}).get("hotkey") == "Ctrl+Alt+Space", 10, "the key back")


def test_the_near_duplicate_question_leaves_the_focus_and_ignores_keys(desktop):
    env, home, _app = desktop
    _run(env, sys.executable, "-m", "app", "manager", cwd=REPO)
    manager = _wait(lambda: _windows(env, "Mnemo — memories"), 10, "the manager")
    _wait(lambda: _active(env) in manager, 5, "the manager to have the focus")
    # A notification of Mnemo's on screen, as after a copy: taken away when the question opens
    _run(env, "dunstctl", "close-all")
    _put_in_clipboard(env, "The window cleaner comes every second Tuesday of the month")
    _run(env, *MNEMO, "remember-clipboard", cwd=REPO)
    _wait(lambda: _dunst_count(env, "displayed") == 1, 10, "dunst to show the notification")
    before = len(_memories(home))
    subprocess.run(
        ["xclip", "-selection", "clipboard"], input=QUERY_HIT + "!", text=True, env=env, check=True
    )
    _run(env, sys.executable, "-m", "app", "remember-clipboard", cwd=REPO)
    question = _wait(
        lambda: _windows(env, "Mnemo: near-duplicate"), 10, "the near-duplicate question"
    )
    # (issue 46, item 8: it opened under the notification, which the daemon keeps on top)
    _wait(lambda: _dunst_count(env, "displayed") == 0, 5, "the notification taken away")
    assert _active(env) in manager  # the focus stayed where the user was typing
    _run(env, "xdotool", "key", "space", "Return")
    time.sleep(1)
    assert len(_memories(home)) == before  # a key typed elsewhere merged nothing
    assert _windows(env, "Mnemo: near-duplicate") == question
    _run(env, "xdotool", "windowclose", question[0], check=False)


def _geometry(env, window: str) -> tuple[int, int, int, int]:
    """(left, top, width, height) of a window on the screen."""
    shell = _run(env, "xdotool", "getwindowgeometry", "--shell", window).stdout
    values = dict(line.split("=", 1) for line in shell.split())
    return int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"])


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int], margin: int) -> bool:
    """Whether two rectangles come within `margin` pixels of each other (a window's frame,
    drawn by the window manager, lies outside its own rectangle)."""
    return (
        a[0] - margin < b[0] + b[2]
        and b[0] < a[0] + a[2] + margin
        and a[1] - margin < b[1] + b[3]
        and b[1] < a[1] + a[3] + margin
    )


def test_the_near_duplicate_question_opens_clear_of_a_notification_and_in_front(desktop):
    # Issue 46, item 8: the question opened at the top right, under the bubble of a
    # notification (dunst keeps its bubbles above every window): the user never saw it.
    # Mnemo takes its own notifications away; another program's stays, wherever it is.
    env, home, _app = desktop
    _run(env, sys.executable, "-m", "app", "manager", cwd=REPO)
    manager = _wait(lambda: _windows(env, "Mnemo — memories"), 10, "the manager")
    _run(env, "dunstctl", "close-all")
    _run(env, "dunstify", "--appname=Chat", "--timeout=0", "Priya", "Lunch at one?")
    _wait(lambda: _dunst_count(env, "displayed") == 1, 10, "dunst to show the notification")
    bubble = _run(env, "xdotool", "search", "--class", "Dunst").stdout.split()
    assert bubble, "dunst's window"
    _put_in_clipboard(env, QUERY_HIT + " (again)")
    _run(env, *MNEMO, "remember-clipboard", cwd=REPO)
    question = _wait(
        lambda: _windows(env, "Mnemo: near-duplicate"), 10, "the near-duplicate question"
    )
    try:
        assert _dunst_count(env, "displayed") == 1  # the other program's notification stays
        shown = _geometry(env, question[0])
        assert not any(_overlap(shown, _geometry(env, b), 40) for b in bubble), (
            shown,
            [_geometry(env, b) for b in bubble],
        )
        # centred on the screen (1280 x 800), in front of the other windows, the focus kept
        left, top, width, height = shown
        assert abs(left + width // 2 - 640) <= 40 and abs(top + height // 2 - 400) <= 60, shown
        stacking = _run(env, "xprop", "-root", "_NET_CLIENT_LIST_STACKING").stdout
        ids = [int(w, 16) for w in stacking.split("#", 1)[1].replace(",", " ").split()]
        assert ids[-1] == int(question[0]), (ids, question, manager)
        assert _active(env) not in question
    finally:
        _run(env, "xdotool", "windowclose", question[0], check=False)
        _run(env, "dunstctl", "close-all")


def test_remember_clipboard_stores_the_clipboard_text(desktop):
    env, home, _app = desktop
    text = "The VPN config lives in the team vault under network/vpn"
    subprocess.run(
        ["xclip", "-selection", "clipboard"], input=text, env=env, text=True, check=True, timeout=10
    )
    _run(env, sys.executable, "-m", "app", "remember-clipboard", cwd=REPO)
    _wait(lambda: (text, "clipboard") in _memories(home), 20, "the clipboard memory")


def test_the_remember_clipboard_key_stores_what_was_copied(desktop):
    env, home, _app = desktop
    state = _status(env)
    assert state["clipboard_hotkey"] == "Ctrl+Alt+C" and state["clipboard_hotkey_error"] is None
    text = "Dentist moved to Thursday 3pm; bring the referral letter"
    subprocess.run(
        ["xclip", "-selection", "clipboard"], input=text, env=env, text=True, check=True, timeout=10
    )
    _run(env, "xdotool", "key", "ctrl+alt+c")
    _wait(lambda: (text, "clipboard") in _memories(home), 20, "the copied text remembered")


def test_set_to_the_selection_the_key_stores_what_was_selected_not_copied(desktop):
    env, home, _app = desktop
    copied = "Copied earlier: the bike lock code is in the shared notes"
    selected = "Selected, never copied: the library closes at six on Saturdays"
    subprocess.run(
        ["xclip", "-selection", "clipboard"], input=copied, env=env, text=True, check=True
    )
    subprocess.run(
        ["xclip", "-selection", "primary"], input=selected, env=env, text=True, check=True
    )
    # a setting saved by another process reaches the running app at once
    _run(env, *MNEMO, "settings", "clipboard_source", "selection", cwd=REPO)
    try:
        _wait(lambda: _status(env)["clipboard_source"] == "selection", 10, "the setting")
        _run(env, "xdotool", "key", "ctrl+alt+c")
        _wait(lambda: (selected, "clipboard") in _memories(home), 20, "the selection remembered")
        assert all(t != copied for t, _ in _memories(home))
    finally:
        _run(env, *MNEMO, "settings", "clipboard_source", "clipboard", cwd=REPO)


def test_settings_window_opens_from_the_command_line_without_a_tray_menu(desktop):
    env, _home, _app = desktop
    # a desktop without a tray (or a launcher's Settings action) runs this
    _run(env, *MNEMO, "settings", "--window", cwd=REPO)
    found = _wait(lambda: session.visible_windows(env, "Mnemo settings"), 20, "the settings")
    _run(env, "xdotool", "windowactivate", "--sync", found[0], check=False)
    _run(env, "xdotool", "key", "Escape")
    _wait(lambda: not session.visible_windows(env, "Mnemo settings"), 10, "settings closed")


HINTED = """
import sys
from PySide6 import QtCore, QtWidgets
app = QtWidgets.QApplication(sys.argv)
mime = QtCore.QMimeData()
mime.setText(sys.argv[1])
mime.setData("x-kde-passwordManagerHint", b"secret")
app.clipboard().setMimeData(mime)
print("owned", flush=True)
app.exec()
"""


def test_clipboard_marked_secret_by_a_password_manager_is_refused(desktop):
    env, home, _app = desktop
    secret = "correct horse battery staple 77"
    owner = subprocess.Popen(
        [sys.executable, "-c", HINTED, secret], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout.readline().strip() == "owned"
        _run(env, sys.executable, "-m", "app", "remember-clipboard", cwd=REPO)
        _wait(
            lambda: "password manager" in " ".join(_status(env)["last_notification"]),
            20,
            "the refusal",
        )
        assert all(secret not in t for t, _ in _memories(home))
    finally:
        owner.terminate()
        owner.wait(10)


def _dunst_count(env, which: str) -> int:
    return int(_run(env, "dunstctl", "count", which).stdout.strip() or 0)


def test_notifications_go_to_the_desktops_service_and_open_what_they_are_about(desktop):
    # The desktop pass (issue 22, low): notifications were Qt balloons, so dunst's history
    # held none and its do-not-disturb was ignored. Now they go to the session's
    # org.freedesktop.Notifications (here a real dunst), with an action.
    env, _home, _app = desktop
    for window in _windows(env, "Mnemo — memories"):  # left open by an earlier test: closed
        _run(env, "xdotool", "windowactivate", "--sync", window, "key", "alt+F4", check=False)
    _wait(lambda: not _windows(env, "Mnemo — memories"), 10, "no manager open")
    _run(env, "dunstctl", "close-all")
    _run(env, "dunstctl", "history-clear", check=False)
    _put_in_clipboard(env, "Renew the car insurance before the fourteenth of March")
    _run(env, *MNEMO, "remember-clipboard", cwd=REPO)
    _wait(lambda: _dunst_count(env, "displayed") == 1, 10, "dunst to show the notification")
    assert (_status(env) or {}).get("notifications") == "dbus"
    assert not _windows(env, "Mnemo — memories")
    _run(env, "dunstctl", "action", "0")  # the user clicks it: the memory opens
    manager = _wait(lambda: _windows(env, "Mnemo — memories"), 10, "the manager to open")
    _run(env, "dunstctl", "close-all")
    history = json.loads(_run(env, "dunstctl", "history").stdout)["data"][0]
    shown = [(n["appname"]["data"], n["summary"]["data"], n["body"]["data"]) for n in history]
    assert ("Mnemo", "Remembered", "Renew the car insurance before the fourteenth of March") in (
        shown
    ), shown
    _run(env, "dunstctl", "set-paused", "true")  # do not disturb: the desktop's to decide
    try:
        _put_in_clipboard(env, "The plumber comes on Thursday between nine and eleven")
        _run(env, *MNEMO, "remember-clipboard", cwd=REPO)
        _wait(lambda: _dunst_count(env, "waiting") == 1, 10, "dunst to hold it back")
        assert _dunst_count(env, "displayed") == 0
    finally:
        _run(env, "dunstctl", "set-paused", "false")
        _run(env, "dunstctl", "close-all")
        for window in manager:  # closed as a person closes it (windowclose destroys it)
            _run(env, "xdotool", "windowactivate", "--sync", window, "key", "alt+F4", check=False)


def test_quit_leaves_no_process(desktop):
    env, _home, app = desktop
    _run(env, sys.executable, "-m", "app", "quit", cwd=REPO)
    assert app.wait(20) == 0


def test_the_next_start_does_not_welcome_again(desktop):
    _env, home, app = desktop
    if app.poll() is None:
        _run(_env, *MNEMO, "quit", cwd=REPO)
        app.wait(20)
    with session.desktop(home, MNEMO, cwd=REPO) as (env, again):
        assert _status(env)["last_notification"] in (None, [])
        _run(env, *MNEMO, "quit", cwd=REPO)
        assert again.wait(20) == 0


def test_a_stale_wayland_variable_on_an_x11_desktop_still_starts_the_app(tmp_path):
    # GIVEN an X11 desktop whose environment still names a Wayland compositor that is gone,
    # and no QT_QPA_PLATFORM to steer Qt (Qt would try Wayland and abort)
    stale = {"WAYLAND_DISPLAY": str(tmp_path / "wayland-9")}  # a path: Wayland allows one
    (tmp_path / "home").mkdir()
    # WHEN the app starts THEN it comes up on X11, in the tray, with its hotkey
    with session.desktop(
        tmp_path / "home", MNEMO, cwd=REPO, app_env={**stale, "QT_QPA_PLATFORM": None}
    ) as (env, app):
        state = _status({**env, **stale})
        assert state["tray"] and state["hotkey_backend"] == "X11", state
        _run({**env, **stale}, *MNEMO, "quit", cwd=REPO)
        assert app.wait(20) == 0
