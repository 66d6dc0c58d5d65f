"""End to end on a real Wayland compositor: KWin 5.27 headless with xdg-desktop-portal and
its KDE backend. The app binds its keys through the GlobalShortcuts portal, a key pressed
through the compositor opens the popup with the focus, typing reaches it and Enter copies.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e import session, wayland

MNEMO = (sys.executable, "-m", "app")
NOTE = "the wifi password at the office is in the blue binder"
TICKET = "OPS-2166: the billing export times out when the invoice batch is over 5,000 rows"
MEMORIES = (NOTE, TICKET, "OPS-2161 was a flaky login test")


def _bound(log) -> bool:
    return log.read_text().count("bound through the desktop portal") >= 2


@pytest.fixture(scope="module")
def kde(tmp_path_factory):
    """KWin + portals + the Mnemo app on a fresh home, both keys bound; yields (env, app log
    path). The app's log is its stderr: in about one full run in three, under load, the
    binding lines never reached it, because llama-cpp-python pointed the process's stderr at
    /dev/null while the model loaded (fixed in app/core/model/llama.py). Should the keys
    ever not be bound again, the failure shows the app's threads and the desktop's logs."""
    tmp = tmp_path_factory.mktemp("wayland")
    with wayland.desktop(tmp) as env:
        env = {**env, "MNEMO_HOME": str(tmp / "mnemo"), "QT_QPA_PLATFORM": "wayland"}
        env.pop("MNEMO_MODEL", None)
        for memory in MEMORIES:
            session.run(env, *MNEMO, "remember", memory, cwd=REPO)
        log = tmp / "app.log"
        app = subprocess.Popen(
            [*MNEMO, "-v"], cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
        )
        try:
            try:
                session.wait(
                    lambda: (s := session.status(env, MNEMO, REPO)) and s["model"] == "ready",
                    60,
                    "the app to start",
                )
                session.wait(lambda: _bound(log), 60, "both keys to be bound")  # a lost
                # CreateSession is asked again at 15 s
            except AssertionError as exc:
                pytest.fail(f"{exc}\n{_left_by(app, tmp)}")
            yield env, log
        finally:
            session.run(env, *MNEMO, "quit", cwd=REPO, check=False)
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()


def _left_by(app: subprocess.Popen, tmp) -> str:
    """What a desktop that bound no key left: the app's log, every thread's stack of the
    app (SIGUSR1, app/core/crash.py), the portals' and KWin's logs."""
    stacks = tmp / "mnemo" / "log" / "stacks.log"
    app.send_signal(signal.SIGUSR1)
    with contextlib.suppress(AssertionError):  # the main thread is written last
        session.wait(
            lambda: stacks.exists() and "_run_module_as_main" in stacks.read_text(), 10, "stacks"
        )
    parts = [("app", tmp / "app.log", None), ("app stacks", stacks, None)]
    parts += [(p.stem, p, -6000) for p in sorted((tmp / "logs").glob("*.log"))]
    return "\n".join(
        f"---- {name} ----\n{path.read_text(errors='replace')[tail:] if path.exists() else ''}"
        for name, path, tail in parts
    )


def _popup(env) -> list[dict]:
    return [w for w in wayland.windows(env) if w["caption"] == "Mnemo search"]


def test_both_keys_are_bound_through_the_portal(kde):
    env, log = kde
    assert _bound(log)  # the fixture waited for it
    state = session.status(env, MNEMO, REPO)
    assert state["hotkey_backend"] == "xdg-desktop-portal", state
    assert state["hotkey_error"] is None and state["clipboard_hotkey_error"] is None, state
    # KWin's kglobalaccel holds them, under components named by the session tokens
    assert "Ctrl+Alt+Space" in log.read_text()
    assert "'popup'" in wayland.shortcuts_of(env, "mnemo_popup")
    assert "'remember-clipboard'" in wayland.shortcuts_of(env, "mnemo_remember_clipboard")


def test_keys_typed_at_once_after_the_key_reach_the_popup_in_order_on_a_busy_machine(kde, tmp_path):
    # Issue 46, item 1 on Wayland: another client's window has the focus; the key, "OPS-2166"
    # and Enter at 20 ms a key, both cores busy. Wayland gives no keyboard grab (the portal
    # only says the key was pressed): KWin sends each key to the window that has the focus
    # when it comes, so a key typed before the popup is mapped and focused goes to the
    # window before, and nothing can take it back. So the popup must be mapped before the
    # first letter: 5-20 ms after the press once it has opened before. Its first opening
    # took 0.15-0.5 s under load (this test runs first for it) and lost 2-8 keys in 6 of 6
    # runs: it asked for an X server (0.1-0.4 s) and ran PySide's and Qt's first-time work
    # for the rows before its window could be mapped; now done at start (`Popup.prepare`).
    # Checked on every press, the compositor's part: what that window got, then what the
    # popup got, is what was typed (nothing lost or reordered).
    env, _log = kde
    typed = tmp_path / "typed.txt"
    editor = session.editor(env, typed, "Typing target")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    keys = wayland.FakeKeyboard(env)
    try:
        session.wait(lambda: _window(env, "Typing target"), 20, "the editor")
        presses = [_launch(env, keys, typed, "OPS-2166") for _ in range(5)]
    finally:
        keys.close()
        for loop in busy:
            loop.kill()
        editor.terminate()
        editor.wait(10)
    for got, popup_length, _ in presses:  # the window before got the word's start, the
        assert "OPS-2166".startswith(got) and len(got) + popup_length == 8, presses  # popup
    assert [(got, copied) for got, _, copied in presses] == [("", TICKET)] * 5  # the rest


def _launch(env, keys: wayland.FakeKeyboard, typed: Path, word: str) -> tuple[str, int, str]:
    """From the editor: the key, `word` and Enter at 20 ms a key. What the editor got, how
    long the text in the popup's box is, and what is on the clipboard then."""
    wayland.activate(env, "Typing target")
    session.wait(lambda: _window(env, "Typing target", active=True), 10, "the editor's focus")
    before = typed.read_text(encoding="utf-8") if typed.exists() else ""
    subprocess.run(  # wl-copy stays behind to serve it: no pipes to wait on
        ["wl-copy", "before"], env=env, check=True, timeout=30,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    keys.press("ctrl+alt+space", delay=0.02)
    keys.type(word, delay=0.02)
    keys.press("enter", delay=0.02)
    try:  # Enter in the popup copies and hides it
        popup = session.wait(
            lambda: (p := _popup_state(env)) and not p["visible"] and p, 10, "the popup to hide"
        )
    except AssertionError:  # Enter went to the editor too: close the popup
        wayland.activate(env, "Mnemo search")
        session.wait(lambda: _window(env, "Mnemo search", active=True), 10, "the popup's focus")
        keys.press("esc")
        popup = session.wait(
            lambda: (p := _popup_state(env)) and not p["visible"] and p, 10, "the popup to hide"
        )
    got = (typed.read_text(encoding="utf-8") if typed.exists() else "")[len(before) :]
    copied = session.run(env, "wl-paste", "--no-newline", check=False).stdout
    return got.rstrip("\n"), popup["text_length"], copied


def _popup_state(env) -> dict | None:
    return (session.status(env, MNEMO, REPO) or {}).get("popup")


def _window(env, caption: str, active: bool = False) -> bool:
    return any(
        w["caption"] == caption and (w["active"] or not active) for w in wayland.windows(env)
    )


def test_the_key_opens_the_popup_focused_typing_reaches_it_and_enter_copies(kde):
    env, _ = kde
    keys = wayland.FakeKeyboard(env)
    try:
        keys.press("ctrl+alt+space")
        (popup,) = session.wait(lambda: _popup(env), 10, "the popup to show")
        session.wait(lambda: _popup(env) and _popup(env)[0]["active"], 5, "the popup's focus")
        keys.type("binder")
        session.wait(lambda: session.settled(env, MNEMO, "binder", REPO), 10, "the answer")
        keys.press("enter")
        copied = session.wait(
            lambda: NOTE in session.run(env, "wl-paste", "--no-newline", check=False).stdout,
            10,
            "the memory on the clipboard",
        )
        assert copied
        session.wait(lambda: not _popup(env), 5, "the popup to hide after copying")
        # the key toggles: open, then closed again
        keys.press("ctrl+alt+space")
        session.wait(lambda: _popup(env), 10, "the popup to show again")
        keys.press("ctrl+alt+space")
        session.wait(lambda: not _popup(env), 10, "the popup to hide on the second press")
    finally:
        keys.close()
