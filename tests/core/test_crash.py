"""Crash and log plumbing: real files under MNEMO_HOME, real hooks, a real abort."""

from __future__ import annotations

import io
import logging
import os
import signal
import stat
import subprocess
import sys
import threading

import pytest

from app.core import crash, paths
from tests.conftest import REPO
from tests.crash_state import process_state_kept

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


@pytest.fixture(autouse=True)
def restore_process_state():
    """Put back the hooks, faulthandler and root logging that `crash.install` changes."""
    with process_state_kept():
        yield


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()


@POSIX_ONLY
def test_log_files_are_private_even_with_umask_0():
    # GIVEN a umask that would make every new file world-writable
    old = os.umask(0)
    try:
        # WHEN the plumbing is installed and the log rotates
        path = crash.install()
        for _ in range(1100):
            logging.getLogger("mnemo.test").info("x" * 1000)
    finally:
        os.umask(old)
    # THEN the folder is 0700 and every file in it 0600, the rotated ones included
    assert path == paths.log_dir() / "mnemo.log" == crash.log_path()
    assert _mode(paths.log_dir()) == 0o700
    names = sorted(p.name for p in paths.log_dir().iterdir())
    assert {"mnemo.log", "mnemo.log.1", "crash.log", "running.pid"} <= set(names)
    assert {p.name: _mode(p) for p in paths.log_dir().iterdir()} == dict.fromkeys(names, 0o600)


def test_mcp_logs_to_its_own_file_and_leaves_no_running_marker():
    path = crash.install("mcp")
    logging.getLogger("mnemo.test").info("hello from mcp")
    _flush()
    assert path.name == "mnemo-mcp.log"
    text = path.read_text()
    assert f"fatal errors go to {paths.log_dir() / 'crash-mcp.log'}" in text
    assert "hello from mcp" in text
    assert not (paths.log_dir() / crash.MARKER).exists()


def test_install_does_not_make_existing_handlers_chattier():
    # GIVEN stderr logging at ERROR, as the command line sets it up without -v
    root = logging.getLogger()
    stream = io.StringIO()
    console = logging.StreamHandler(stream)
    root.addHandler(console)
    root.setLevel(logging.ERROR)
    # WHEN the log file is added at INFO
    path = crash.install()
    logging.getLogger("mnemo.test").info("an ordinary event")
    logging.getLogger("mnemo.test").error("a real problem")
    _flush()
    # THEN the file has both, the console only the error
    assert "an ordinary event" in path.read_text()
    assert "an ordinary event" not in stream.getvalue()
    assert "a real problem" in stream.getvalue()


def test_uncaught_exception_is_logged_with_traceback_and_notified():
    notices = []
    path = crash.install()
    crash.set_notifier(lambda title, text: notices.append((title, text)))

    def broken_slot():
        raise ValueError("the popup fell over")

    try:
        broken_slot()
    except ValueError:
        sys.excepthook(*sys.exc_info())
    _flush()
    text = path.read_text()
    assert "uncaught exception" in text
    assert "Traceback (most recent call last)" in text
    assert "in broken_slot" in text
    # the exception by its type; its message (it may quote a memory, issue 26) only to the user
    assert "ValueError (message of 19 characters not logged)" in text
    assert "ValueError: the popup fell over" not in text
    assert len(notices) == 1
    title, body = notices[0]
    assert title == "Mnemo hit a bug"
    assert "ValueError: the popup fell over" in body and str(path) in body


def test_uncaught_exception_in_a_thread_is_logged_and_notified():
    notices = []
    path = crash.install()
    crash.set_notifier(lambda title, text: notices.append((title, text)))

    def job():
        raise RuntimeError("worker thread bug")

    thread = threading.Thread(target=job, name="mnemo-test-thread")
    thread.start()
    thread.join()
    _flush()
    text = path.read_text()
    assert "uncaught exception in thread mnemo-test-thread" in text
    assert "in job" in text and "RuntimeError (message of 17 characters not logged)" in text
    assert [title for title, _ in notices] == ["Mnemo hit a bug"]


def test_a_failing_notifier_is_logged_not_raised():
    path = crash.install()

    def notifier(title, text):
        raise OSError("no notification daemon")

    crash.set_notifier(notifier)
    try:
        raise KeyError("x")
    except KeyError:
        sys.excepthook(*sys.exc_info())
    _flush()
    assert "could not show the error notification" in path.read_text()


def test_stale_marker_of_a_dead_process_gives_the_notice_once():
    # GIVEN the marker of a run whose process is gone (killed, power cut, native crash)
    (paths.log_dir() / crash.MARKER).write_text(f"{_dead_pid()}\n")
    # WHEN the app starts twice
    first, second = crash.previous_crash(), crash.previous_crash()
    # THEN only the first start says so, with the log path
    assert first == f"Mnemo quit unexpectedly last time; details are in {crash.log_path()}"
    assert second is None
    assert not (paths.log_dir() / crash.MARKER).exists()


def test_marker_of_a_live_process_gives_no_notice():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (paths.log_dir() / crash.MARKER).write_text(f"{proc.pid}\n")
        assert crash.previous_crash() is None
    finally:
        proc.kill()
        proc.wait()


@POSIX_ONLY
def test_crash_file_that_grew_gives_the_notice_once():
    assert crash.previous_crash() is None  # a first start: nothing to say
    with crash.crash_path().open("a") as f:
        f.write("Fatal Python error: Aborted\n")
    assert crash.previous_crash() == (
        f"Mnemo quit unexpectedly last time; details are in {crash.crash_path()}"
    )
    assert crash.previous_crash() is None
    assert _mode(paths.log_dir() / crash.ACKNOWLEDGED) == 0o600


def test_clean_exit_leaves_no_notice():
    assert crash.previous_crash() is None
    crash.install()
    assert (paths.log_dir() / crash.MARKER).read_text().strip() == str(os.getpid())
    crash.clean_exit()
    assert not (paths.log_dir() / crash.MARKER).exists()
    assert crash.previous_crash() is None


def test_native_abort_is_written_to_the_crash_file_and_noticed_next_start(mnemo_home):
    # GIVEN a process with the plumbing installed WHEN native code aborts it
    script = "import os\nfrom app.core import crash\ncrash.install()\nos.abort()\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "MNEMO_HOME": str(mnemo_home)},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode != 0
    # THEN the crash file holds the fatal error and the Python traceback
    text = crash.crash_path().read_text()
    assert "Fatal Python error: Aborted" in text
    assert 'File "<string>", line 4 in <module>' in text
    # AND the next start says so, once
    assert crash.previous_crash() == (
        f"Mnemo quit unexpectedly last time; details are in {crash.crash_path()}"
    )
    assert crash.previous_crash() is None


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_stacks_file_that_cannot_be_opened_costs_no_marker_and_no_process(mnemo_home):
    # GIVEN a stacks file that cannot be opened (here a folder; a root-owned file after
    # `sudo mnemo`, a planted link): its failure skipped the running marker, and SIGUSR1,
    # never registered, ended the process it was meant to look into
    (paths.log_dir() / "stacks.log").mkdir()
    script = (
        "import os, signal\nfrom app.core import crash\ncrash.install()\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\nprint('went on')\n"
    )
    # WHEN the plumbing is installed and someone asks for the stacks
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "MNEMO_HOME": str(mnemo_home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # THEN the process goes on, the stacks go to stderr with why, the marker is written
    assert (proc.returncode, proc.stdout) == (0, "went on\n"), proc.stderr
    assert "most recent call first" in proc.stderr and "stacks.log" in crash.log_path().read_text()
    assert crash.previous_crash() is not None  # its marker, left by a process now gone


def test_doctor_prints_the_log_path():
    from tests.conftest import run_cli

    doctor = run_cli("doctor")
    assert f"log:  {crash.log_path()}\n" in doctor.stdout.decode()
