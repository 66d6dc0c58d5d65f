"""One process does the background work of a data folder (issue 43), with the real
processes: the desktop app (offscreen) and two `mnemo mcp` servers on one data folder that
syncs. Only one of them makes sync passes (counted per pid in their log files), `mnemo sync
status` names it, and when it is killed (-9) another takes over within seconds."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from app.core import crash
from tests.conftest import REPO, wait
from tests.test_mcp_server import _RawServer

PASS = re.compile(r"^\S+ \S+ (\d+) \S+ INFO app\.core\.runner: sync pass \(([^)]*)\)", re.M)


def _mnemo(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run


def _passes() -> Counter:
    """Sync passes each process made, by pid and why, from every front end's log file."""
    found: Counter = Counter()
    for kind in ("app", "mcp"):
        path = crash.log_path(kind)
        if path.exists():
            for pid, why in PASS.findall(path.read_text(errors="replace")):
                found[(int(pid), why)] += 1
    return found


def _owner() -> dict | None:
    return json.loads(_mnemo("sync", "status", "--json").stdout)["owner"]


@pytest.mark.slow
def test_the_app_and_two_mcp_servers_sync_in_one_process_and_hand_over_when_it_dies(
    mnemo_home: Path, tmp_path: Path
):
    # GIVEN a data folder that syncs through a folder
    _mnemo("sync", "init", str(tmp_path / "shared"), "--name", "desk")
    gui_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        gui_env.pop(name, None)
    output = (tmp_path / "gui-output.txt").open("w")
    # AND the desktop app and two MCP servers running on it
    app = subprocess.Popen(
        [sys.executable, "-m", "app", "gui"],
        cwd=REPO,
        env=gui_env,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    servers = [_RawServer(tmp_path / f"mcp-{n}.err") for n in range(2)]
    try:
        for server in servers:
            server.initialize()
        pids = {app.pid: "app", servers[0].proc.pid: "mcp", servers[1].proc.pid: "mcp"}
        wait(lambda: (_owner() or {}).get("pid") in pids, 60, "a process to take the work")
        # WHEN memories are written here, one after another (each a pass)
        for n in range(3):
            _mnemo("remember", ("Boat at pier 7.", "Dentist on Tuesday.", "Rent is due.")[n])
            wait(lambda n=n: sum(_passes().values()) >= n + 2, 30, f"the pass writing note {n}")
        # THEN one process made every pass, as the one doing the background work
        passes = _passes()
        makers = {pid for pid, _ in passes}
        assert len(makers) == 1 and makers <= set(pids), passes
        (owner_pid,) = makers
        assert all(why == "this process does the background work" for _, why in passes)
        # AND `mnemo sync status` names it: its pid and what it is
        owner = _owner()
        assert owner["pid"] == owner_pid and owner["kind"] == pids[owner_pid]
        text = _mnemo("sync", "status").stdout
        assert f"pid {owner_pid}" in text and owner["what"] in text
        # WHEN it is killed
        os.kill(owner_pid, signal.SIGKILL)
        # THEN another running process takes over within seconds, and makes the passes
        wait(
            lambda: (_owner() or {}).get("pid") not in (None, owner_pid),
            15,
            "another process to take over",
        )
        heir = _owner()["pid"]
        assert heir in pids and heir != owner_pid
        before = _passes()[(heir, "this process does the background work")]
        _mnemo("remember", "Written after the first owner died.")
        wait(
            lambda: _passes()[(heir, "this process does the background work")] > before,
            30,
            "the heir's pass",
        )
        assert {pid for pid, _ in _passes()} == {owner_pid, heir}
    finally:
        for server in servers:
            server.close()
        if app.poll() is None:
            app.send_signal(signal.SIGTERM)
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
        output.close()


@pytest.mark.slow
def test_an_owner_that_is_stopped_is_stood_in_for_and_status_says_so(
    mnemo_home: Path, tmp_path: Path
):
    # Before: an owner stopped with Ctrl+Z (an agent suspended with its MCP server) kept
    # the lock and did nothing: no process synced until it ran again, and status said all
    # was well
    _mnemo("sync", "init", str(tmp_path / "shared"), "--name", "desk")
    first = _RawServer(tmp_path / "first.err")
    second = _RawServer(tmp_path / "second.err")
    try:
        first.initialize()
        wait(lambda: (_owner() or {}).get("pid") == first.proc.pid, 60, "the first to own")
        second.initialize()
        os.kill(first.proc.pid, signal.SIGSTOP)
        try:
            _mnemo("remember", "Written while the owner is stopped.")
            standing_in = (second.proc.pid, "standing in for a stopped owner")
            wait(lambda: _passes()[standing_in] >= 1, 30, "the second to stand in")
            text = _mnemo("sync", "status").stdout
            assert f"pid {first.proc.pid}" in text and "it is stopped" in text
        finally:
            os.kill(first.proc.pid, signal.SIGCONT)
        # THEN once it runs again it does the work again, and the other stops standing in
        wait(lambda: not (_owner() or {}).get("stopped", True), 10, "the owner to run again")
        before = _passes()[standing_in]
        owner_pass = (first.proc.pid, "this process does the background work")
        counted = _passes()[owner_pass]
        _mnemo("remember", "Written once the owner runs again.")
        wait(lambda: _passes()[owner_pass] > counted, 30, "the owner's pass")
        assert _passes()[standing_in] == before
    finally:
        first.close()
        second.close()
