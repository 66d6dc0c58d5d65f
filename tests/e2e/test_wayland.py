"""End to end on a real Wayland compositor: KWin 5.27 headless with xdg-desktop-portal and
its KDE backend. The app binds its keys through the GlobalShortcuts portal, a key pressed
through the compositor opens the popup with the focus, typing reaches it and Enter copies.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.e2e import session, wayland

MNEMO = (sys.executable, "-m", "app")
NOTE = "the wifi password at the office is in the blue binder"


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
        session.run(env, *MNEMO, "remember", NOTE, cwd=REPO)
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
