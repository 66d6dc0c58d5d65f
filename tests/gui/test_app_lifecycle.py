"""The real `mnemo gui` process (offscreen): SIGTERM and SIGINT end it cleanly, and a start
after an unclean end says so once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import crash
from tests.conftest import REPO, wait


@pytest.fixture
def gui_env(mnemo_home: Path) -> dict:
    """The environment of a desktop session with no tray, no hotkey, no real home."""
    mnemo_home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "MNEMO_HOME": str(mnemo_home),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(mnemo_home / "xdg-data"),  # the launcher goes here
        "XDG_CONFIG_HOME": str(mnemo_home / "xdg-config"),
    }
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "MNEMO_MODEL"):
        env.pop(name, None)
    return env


def _status_run(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "status"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _status(env: dict) -> dict | None:
    run = _status_run(env)
    return json.loads(run.stdout) if run.returncode == 0 else None


def _start(env: dict, home: Path) -> subprocess.Popen:
    app = subprocess.Popen(
        [sys.executable, "-m", "app", "gui"],
        cwd=REPO,
        env=env,
        stdout=(home / "gui-output.txt").open("w"),
        stderr=subprocess.STDOUT,
    )
    # `status` is answered from the event loop, which runs once the signal handlers are set
    wait(lambda: app.poll() is not None or _status(env), 30, "the app to start")
    assert app.poll() is None, (home / "gui-output.txt").read_text()
    return app


def _stop(app: subprocess.Popen, signum: int) -> int:
    app.send_signal(signum)
    try:
        return app.wait(10)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()


def test_sigterm_quits_cleanly_and_leaves_no_running_marker(gui_env, mnemo_home):
    # GIVEN the app running
    app = _start(gui_env, mnemo_home)
    assert (mnemo_home / "log" / crash.MARKER).read_text().strip() == str(app.pid)
    # WHEN the session ends it (logout, `kill`)
    code = _stop(app, signal.SIGTERM)
    # THEN it quits through the event loop: status 0, the marker gone, the log says so
    assert code == 0, (mnemo_home / "gui-output.txt").read_text()
    assert not (mnemo_home / "log" / crash.MARKER).exists()
    log = (mnemo_home / "log" / "mnemo.log").read_text()
    assert "SIGTERM received: quitting" in log and "mnemo app exited cleanly" in log


def test_start_after_a_crash_says_so_once_and_sigint_quits_cleanly(gui_env, mnemo_home):
    # GIVEN the marker of a run whose process died without cleaning up
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (mnemo_home / "log").mkdir(parents=True)
    (mnemo_home / "log" / crash.MARKER).write_text(f"{dead.pid}\n")
    # WHEN the app starts
    app = _start(gui_env, mnemo_home)
    try:
        # THEN it tells the user, with the log path
        notice = wait(
            lambda: (
                (s := _status(gui_env))
                and s["last_notification"][:1] == ["Mnemo restarted"]
                and s["last_notification"]
            ),
            10,
            "the restart notice",
        )
        assert notice[1] == (
            f"Mnemo quit unexpectedly last time; details are in {mnemo_home / 'log' / 'mnemo.log'}"
        )
    finally:
        # AND Ctrl+C quits it cleanly too
        code = _stop(app, signal.SIGINT)
    assert code == 0, (mnemo_home / "gui-output.txt").read_text()
    assert not (mnemo_home / "log" / crash.MARKER).exists()
    # AND the next start has nothing to say
    assert crash.previous_crash() is None


def test_sigusr1_writes_every_threads_stack_keeps_running_and_is_no_crash(gui_env, mnemo_home):
    # GIVEN the app running (a hang is what this is for: a thread that never answers)
    app = _start(gui_env, mnemo_home)
    stacks = mnemo_home / "log" / "stacks.log"
    try:
        # WHEN someone asks for its stacks, at the pid `mnemo status` gives
        assert _status(gui_env)["pid"] == app.pid
        os.kill(_status(gui_env)["pid"], signal.SIGUSR1)
        # THEN every thread's Python stack is written, the main one in the event loop
        text = wait(lambda: stacks.exists() and "_run_module_as_main" in stacks.read_text()
                    and stacks.read_text(), 10, "the stacks")  # fmt: skip
        assert text.count("hread 0x") >= 2, text  # "Current thread 0x…", "Thread 0x…"
        assert "(most recent call first)" in text and "app/gui/app.py" in text, text
        assert oct(stacks.stat().st_mode & 0o777) == "0o600"
        # AND the app goes on answering
        assert _status(gui_env) is not None
    finally:
        code = _stop(app, signal.SIGTERM)
    assert code == 0, (mnemo_home / "gui-output.txt").read_text()
    # AND the next start reports no crash
    assert crash.previous_crash() is None


def test_status_of_an_app_that_does_not_answer_names_its_pid_and_the_stacks(gui_env, mnemo_home):
    # GIVEN the app running, then stopped (a hang: its event loop answers nothing)
    app = _start(gui_env, mnemo_home)
    try:
        app.send_signal(signal.SIGSTOP)
        # WHEN the user asks how it is
        run = _status_run(gui_env)
        # THEN it says which process hangs and how to see where, not "not running"
        assert run.returncode == 1
        assert f"the app (pid {app.pid}) runs but does not answer" in run.stdout, run.stdout
        assert f"kill -USR1 {app.pid}" in run.stdout and "stacks.log" in run.stdout
    finally:
        app.send_signal(signal.SIGCONT)
        code = _stop(app, signal.SIGTERM)
    assert code == 0
    # AND once it is gone, it is "not running" again
    assert _status_run(gui_env).stdout.strip() == "mnemo: not running"


def test_after_an_upgrade_the_app_keeps_the_mcp_servers_answers_ahead_of_the_agents(
    gui_env, mnemo_home
):
    """Issue 42, item 7: the answers to `initialize` an older Mnemo kept are never given, so
    the first `mnemo mcp` start after an upgrade loaded the SDK (1-2 s) before answering;
    the desktop app, which starts at login before any agent, keeps this code's answers."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    import app
    from app.core import paths

    kept = paths.state_dir() / "mcp-initialize.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    older = {
        json.dumps(["0.0.1-older", [1, 2, 3, 4], 5, version]): {
            "protocolVersion": version,
            "serverInfo": {"name": "mnemo", "version": "0.0.1-older"},
            "instructions": "older",
        }
        for version in HANDSHAKE_PROTOCOL_VERSIONS
    }
    kept.write_text(json.dumps(older))

    def current() -> list[str]:
        try:
            answers = json.loads(kept.read_text())
        except (OSError, ValueError):
            return []
        return sorted(json.loads(k)[-1] for k in answers if json.loads(k)[0] == app.__version__)

    started = _start(gui_env, mnemo_home)
    try:
        wait(lambda: current() == sorted(HANDSHAKE_PROTOCOL_VERSIONS), 60, "this code's answers")
    finally:
        assert _stop(started, signal.SIGTERM) == 0
    answers = json.loads(kept.read_text())
    assert all(v.get("instructions") != "older" for v in answers.values())
