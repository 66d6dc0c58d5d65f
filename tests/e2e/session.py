"""A real desktop session for end-to-end tests: Xvfb, a window manager (openbox), a system
tray (trayer) and a Mnemo app started by whatever command runs it (the checkout's Python,
or an installed package's `mnemo`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import wait  # noqa: F401 - session.wait, as its callers say it

TOOLS = ("Xvfb", "openbox", "xdotool", "xclip", "trayer", "xwininfo", "dbus-daemon", "dunst")


def run(env, *args, check=True, **kw) -> subprocess.CompletedProcess:
    """A command in the session, its output captured as text."""
    return subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=30, check=check, **kw
    )


def status(env, mnemo: Sequence[str], cwd: Path | None = None) -> dict | None:
    """`mnemo status` of the running app, or None while it is not answering."""
    done = run(env, *mnemo, "status", cwd=cwd, check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def settled(env, mnemo: Sequence[str], text: str, cwd: Path | None = None) -> bool:
    """Whether the popup shows the settled answer (meaning-based results included) for
    `text` in its box (`mnemo status`)."""
    popup = (status(env, mnemo, cwd) or {}).get("popup") or {}
    return (
        popup.get("settled") is True
        and popup.get("rows_for_text") is True
        and popup.get("text_length") == len(text)
    )


def visible_windows(env, title: str) -> list[str]:
    """The ids of the visible windows with exactly this title."""
    found = run(env, "xdotool", "search", "--onlyvisible", "--name", f"^{title}$", check=False)
    return found.stdout.split()


EDITOR = """
import sys
from pathlib import Path
from PySide6 import QtWidgets
app = QtWidgets.QApplication(sys.argv)
edit = QtWidgets.QPlainTextEdit()
edit.setWindowTitle(sys.argv[2])
edit.resize(500, 300)
out = Path(sys.argv[1])
edit.textChanged.connect(lambda: out.write_text(edit.toPlainText(), encoding="utf-8"))
edit.show()
app.exec()
"""


def editor(env, out: Path, title: str) -> subprocess.Popen:
    """Another application's window to type or paste into: a Qt editor titled `title` that
    writes what it holds to `out` at each change."""
    return subprocess.Popen([sys.executable, "-c", EDITOR, str(out), title], env=env)


def tray_children(env) -> list[str]:
    """The xwininfo lines of the windows docked in trayer's panel."""
    tree = run(env, "xwininfo", "-root", "-tree").stdout.splitlines()
    panel = next(i for i, line in enumerate(tree) if '("panel" "trayer")' in line)
    depth = len(tree[panel]) - len(tree[panel].lstrip())
    children = []
    for line in tree[panel + 1 :]:
        if len(line) - len(line.lstrip()) <= depth:
            break
        children.append(line)
    return children


def stop_all(procs: Sequence[subprocess.Popen]) -> None:
    """End these processes, the last started first (terminate, then kill after 10 s)."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextmanager
def desktop(
    home: Path,
    mnemo: Sequence[str],
    seed: Sequence[tuple[str, str]] = (),
    cwd: Path | None = None,
    app_env: dict[str, str | None] | None = None,
) -> Iterator[tuple[dict, subprocess.Popen]]:
    """Xvfb + openbox + trayer + the app run by `mnemo` on `home`, after storing `seed`
    (text, tags) through `mnemo remember`; yields (env, app process) once the model is ready.
    `app_env` changes the app's environment only (None removes a variable)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.fail(f"end-to-end tools missing: {missing}; run scripts/setup --test")
    display = next(n for n in range(150, 400) if not Path(f"/tmp/.X{n}-lock").exists())
    env = {
        **os.environ,
        "DISPLAY": f":{display}",
        "MNEMO_HOME": str(home),
        "QT_QPA_PLATFORM": "xcb",
    }
    env.pop("MNEMO_MODEL", None)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs: list[subprocess.Popen] = []
    try:
        procs.append(
            subprocess.Popen(
                ["Xvfb", f":{display}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                **quiet,
            )
        )
        wait(lambda: Path(f"/tmp/.X11-unix/X{display}").exists(), 10, "Xvfb")
        # A real window manager: focus, activation and placement are real.
        procs.append(subprocess.Popen(["openbox", "--sm-disable"], env=env, **quiet))
        tray = ["trayer", "--edge", "top", "--align", "right", "--widthtype", "request"]
        procs.append(subprocess.Popen([*tray, "--height", "28"], env=env, **quiet))
        # A session bus of its own with a real notification service (dunst), as a desktop has
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        procs.append(bus)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
        procs.append(subprocess.Popen(["dunst"], env=env, **quiet))
        wait(lambda: run(env, "dunstctl", "is-paused", check=False).returncode == 0, 10, "dunst")
        for text, tags in seed:
            run(env, *mnemo, "remember", text, "--tags", tags, "--source", "manual", cwd=cwd)
        started = {**env, **(app_env or {})}
        app = subprocess.Popen(
            [*mnemo, "-v"],
            cwd=cwd,
            env={k: v for k, v in started.items() if v is not None},
            stdout=(home / "app.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        procs.append(app)
        state = wait(
            lambda: (s := status(env, mnemo, cwd)) and s["model"] == "ready" and s,
            60,
            "the app to start",
        )
        assert state["hotkey_backend"] == "X11" and state["hotkey_error"] is None, state
        assert state["tray"], state
        yield env, app
    finally:
        stop_all(procs)
