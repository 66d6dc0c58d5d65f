"""The single-instance socket: in a folder only we can use, and neither end talks to a
process of another user (who might squat the path, answer `mnemo status`, or send `quit`).

Another user is played by a child process that drops to uid 65534 (`nobody`), so those
tests need root; the folder checks do not.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from app.gui import ipc
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="uids are a Unix thing")
as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="playing another user needs root"
)
STRANGER = 65534
# Our interpreter may sit in a folder `nobody` cannot read; the child scripts need only stdlib.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable

# Another user's process that took our socket path and answers like Mnemo would.
IMPOSTOR = r"""
import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen()
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    try:
        heard = conn.recv(4096)
        print("heard", repr(heard), flush=True)
        if heard:
            conn.sendall(b'ok {"model": "ready", "spoofed": true}\n')
    except OSError as exc:
        print("heard error", exc, flush=True)
    conn.close()
"""

# Another user's process that connects to our socket, sends lines and prints the answer.
KNOCK = r"""
import socket, sys
conn = socket.socket(socket.AF_UNIX)
conn.connect(sys.argv[1])
conn.settimeout(10)
try:
    conn.sendall(sys.argv[2].encode())
    print(repr(conn.recv(4096)))
except OSError:  # hung up on before or after it spoke (EPIPE, ECONNRESET)
    print("hung up")
"""


def _run_as(uid: int | None, code: str, *args: str) -> subprocess.Popen:
    """`code` in a child Python running as `uid` (None: as us)."""
    who = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    return subprocess.Popen(
        [SYSTEM_PYTHON, "-I", "-c", code, *args],
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **who,
    )


@contextlib.contextmanager
def _opened(*paths: Path):
    """Open folders and sockets to everyone for a moment, as a mistake or a bind mount might;
    then put the modes back."""
    modes = {path: stat.S_IMODE(os.lstat(path).st_mode) for path in paths}
    try:
        for path in paths:
            os.chmod(path, 0o777)
        yield
    finally:
        for path, mode in modes.items():
            os.chmod(path, mode)


@pytest.fixture
def tmp_base(monkeypatch) -> Path:
    """A short temp folder of ours standing in for /tmp (where the fallback folder goes)."""
    base = Path(tempfile.mkdtemp(prefix="mnemo-tmp-"))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def runtime_dir(tmp_base, monkeypatch) -> Path:
    """A private XDG_RUNTIME_DIR (0700, ours), as a login session provides."""
    path = Path(tempfile.mkdtemp(prefix="rt-", dir=tmp_base))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def server(qapp, runtime_dir):
    """Our instance, listening."""
    server = ipc.Server(lambda: {"model": "ready", "diary": "dear diary"})
    assert server.listen()
    yield server
    server.close()


@pytest.fixture
def impostor(tmp_base, runtime_dir):
    """Another user's process listening at our socket path; yields (path, process)."""
    path = Path(ipc.server_name())
    # It could only bind there if our folders let it: open them while it does.
    with _opened(tmp_base, runtime_dir, path.parent):
        proc = _run_as(STRANGER, IMPOSTOR, str(path))
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    assert os.lstat(path).st_uid == STRANGER
    yield path, proc
    proc.kill()
    proc.wait()


# A later `mnemo` asking our instance: another process, since the asking blocks (holding the
# GIL) while our server needs this thread's event loop to answer.
ASK = """
import json, sys
from app.gui import ipc
from app.gui.qt import QtCore
app = QtCore.QCoreApplication([])
print(json.dumps(ipc.status() if sys.argv[1] == "status" else ipc.send(sys.argv[1])))
"""


def _ask(qtbot, command: str):
    """What `ipc.status()` or `ipc.send(command)` returns in a later `mnemo` process."""
    proc = subprocess.Popen(
        [sys.executable, "-c", ASK, command],
        cwd=REPO,
        env={**os.environ, "TMPDIR": tempfile.gettempdir()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=30_000)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    return json.loads(out)


def _private(folder: Path) -> bool:
    st = os.lstat(folder)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o700


# ---- where the socket lives ------------------------------------------------------------------
def test_the_socket_lives_in_a_private_folder_of_the_runtime_dir(qtbot, server, runtime_dir):
    path = Path(ipc.server_name())
    assert path.parent == runtime_dir / "mnemo" and _private(path.parent)
    st = os.lstat(path)
    assert stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()
    assert len(os.fsencode(path)) <= ipc.SOCKET_PATH_MAX
    # AND it works: a later `mnemo` reaches it
    assert _ask(qtbot, "ping") is True
    assert _ask(qtbot, "status") == {"model": "ready", "diary": "dear diary"}


def test_without_a_runtime_dir_the_socket_lives_in_a_private_temp_folder(qtbot, tmp_base):
    path = Path(ipc.server_name())
    assert path.parent == tmp_base / f"mnemo-{os.geteuid()}" and _private(path.parent)
    server = ipc.Server()
    try:
        assert server.listen() and _ask(qtbot, "ping")
    finally:
        server.close()


def test_a_runtime_dir_that_is_not_private_is_not_used(runtime_dir, tmp_base):
    runtime_dir.chmod(0o755)
    assert Path(ipc.server_name()).parent == tmp_base / f"mnemo-{os.geteuid()}"
    assert not (runtime_dir / "mnemo").exists()


def test_a_runtime_dir_too_long_for_a_socket_falls_back_to_a_shorter_folder(
    runtime_dir, tmp_base, monkeypatch
):
    deep = runtime_dir / ("d" * 90)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    path = Path(ipc.server_name())
    assert path.parent == tmp_base / f"mnemo-{os.geteuid()}"
    assert len(os.fsencode(path)) <= ipc.SOCKET_PATH_MAX


def test_two_data_folders_get_two_sockets(runtime_dir, tmp_path, monkeypatch):
    first = ipc.server_name()
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "other-home"))
    second = ipc.server_name()
    assert first != second and Path(first).parent == Path(second).parent


def _spoil(folder: Path, how: str) -> None:
    if how == "mode":
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
    elif how == "owner":
        folder.mkdir(mode=0o700)
        os.chown(folder, STRANGER, STRANGER)
    elif how == "symlink":
        target = Path(tempfile.mkdtemp(dir=folder.parent))  # 0700 and ours: still refused
        folder.symlink_to(target)
    elif how == "file":
        folder.write_text("")


@pytest.mark.parametrize(
    "how, reason",
    [
        ("mode", "its mode is 0755, not 0700"),
        pytest.param("owner", f"it belongs to uid {STRANGER}", marks=as_root),
        ("symlink", "it is a symbolic link"),
        ("file", "it is not a folder"),
    ],
)
def test_an_unsafe_socket_folder_is_skipped_with_a_clear_line(qapp, tmp_base, how, reason, caplog):
    # GIVEN the temp folder's socket folder already there, but not a 0700 folder of ours
    folder = tmp_base / f"mnemo-{os.geteuid()}"
    _spoil(folder, how)
    before = os.lstat(folder)
    # WHEN a `mnemo` asks where the instance is THEN it does not use that folder, says in
    # the log what is wrong with it, and goes on with a folder of its own (the red team of
    # issue 21: another user's squatted folder used to block the app for good)
    with caplog.at_level("WARNING"):
        name = ipc.server_name()
    assert not name.startswith(str(folder))
    assert f"{folder} must be a folder of yours with mode 0700 ({reason})" in caplog.text
    # AND it changed nothing there
    after = os.lstat(folder)
    assert (after.st_mode, after.st_uid, after.st_ino) == (
        before.st_mode,
        before.st_uid,
        before.st_ino,
    )


# ---- stale sockets ---------------------------------------------------------------------------
def _dead_socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))  # the file stays after close, as after a crash


def test_a_stale_socket_of_ours_is_replaced(qtbot, runtime_dir):
    path = Path(ipc.server_name())
    _dead_socket(path)
    assert ipc.status() is None  # nobody answers: not running
    server = ipc.Server()
    try:
        assert server.listen() and _ask(qtbot, "ping")
    finally:
        server.close()


@as_root
def test_a_stale_socket_of_another_user_is_left_alone_and_named(qapp, runtime_dir):
    path = Path(ipc.server_name())
    _dead_socket(path)
    os.chown(path, STRANGER, STRANGER)
    with pytest.raises(ipc.SocketError, match="not talking to it"):
        ipc.Server().listen()
    assert os.lstat(path).st_uid == STRANGER


# ---- another user at either end --------------------------------------------------------------
@as_root
def test_the_server_refuses_a_connection_from_another_user(
    qtbot, server, tmp_base, runtime_dir, caplog
):
    path = Path(ipc.server_name())
    heard = []
    server.command.connect(heard.append)
    # GIVEN the way to our socket open to everyone (a mistake, a bind mount)
    with _opened(tmp_base, runtime_dir, path.parent, path):
        # WHEN another user's process connects, asks for our state and says quit
        stranger = _run_as(STRANGER, KNOCK, str(path), "status\nquit\n")
        qtbot.waitUntil(lambda: stranger.poll() is not None, timeout=15_000)
        # (and a process of ours, the same way, as a control)
        ours = _run_as(None, KNOCK, str(path), "status\n")
        qtbot.waitUntil(lambda: ours.poll() is not None, timeout=15_000)
    # THEN the stranger is hung up on: no answer, no state, no command run
    answer, errors = stranger.communicate()
    assert answer.strip() in ("b''", "hung up"), errors
    assert heard == []
    assert f"refused a connection from uid {STRANGER}" in caplog.text
    # AND our own process is answered
    assert ours.communicate()[0].startswith("b'ok {")


@as_root
def test_the_client_refuses_another_users_server_and_says_so(qapp, impostor):
    path, proc = impostor
    expected = f"another user (uid {STRANGER}) holds {path}; not talking to it"
    for attempt in (ipc.status, lambda: ipc.send("popup"), ipc.Server().listen):
        with pytest.raises(ipc.SocketError) as refused:
            attempt()
        assert str(refused.value) == expected
    assert os.lstat(path).st_uid == STRANGER  # not removed as if it were a stale one of ours


@as_root
def test_the_client_checks_who_answers_not_only_who_owns_the_file(qapp, impostor):
    # GIVEN the impostor's socket file made to look ours: only its peer uid gives it away
    path, proc = impostor
    os.chown(path, os.geteuid(), os.getegid())
    # WHEN `mnemo status` and `mnemo quit` try to reach the instance
    for attempt in (ipc.status, lambda: ipc.send("quit")):
        with pytest.raises(ipc.SocketError) as refused:
            attempt()
        # THEN they refuse it, by name
        assert (
            str(refused.value) == f"another user (uid {STRANGER}) holds {path}; not talking to it"
        )
    # AND the impostor was told nothing: two connections, not a byte on either
    watchdog = threading.Timer(10, proc.kill)  # no line in 10 s: "" ends the wait below
    watchdog.start()
    heard = [proc.stdout.readline().strip() for _attempt in range(2)]
    watchdog.cancel()
    assert heard == ["heard b''", "heard b''"], heard


@as_root
@pytest.mark.parametrize("squatter", ["live socket", "file"])  # a folder: test_red_team.py
@pytest.mark.parametrize("command", ["gui", "status"])
def test_a_squatted_path_makes_mnemo_say_so_instead_of_exiting_silently(
    runtime_dir, tmp_base, monkeypatch, squatter, command, request
):
    if squatter == "live socket":
        path, _ = request.getfixturevalue("impostor")
        line = f"another user (uid {STRANGER}) holds {path}; not talking to it"
    else:
        path = Path(ipc.server_name())
        path.write_text("")
        os.chown(path, STRANGER, STRANGER)
        line = f"another user (uid {STRANGER}) holds {path}; not talking to it"
    # WHEN the user starts `mnemo` (or asks its status) while the path is taken
    run = run_cli(command, env={"TMPDIR": str(tmp_base)}, timeout=60)
    # THEN it says so in one line and fails, instead of exiting 0 as if an instance ran
    err = run.stderr.decode()
    assert run.returncode == 1 and err.startswith(f"mnemo: error: {line}"), err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert run.stdout == b""


# An instance whose command opens a modal dialog (as remember-clipboard does for a secret):
# the dialog's event loop runs while the asking process disconnects.
MODAL = """
import sys
from app.gui import ipc
from app.gui.qt import QtCore
app = QtCore.QCoreApplication([])
server = ipc.Server()
assert server.listen()
heard = []
def modal(word):
    heard.append(word)
    loop = QtCore.QEventLoop()
    QtCore.QTimer.singleShot(1500, loop.quit)  # the user answers the dialog
    loop.exec()
    QtCore.QTimer.singleShot(300, app.quit)
server.command.connect(modal)
print("ready", flush=True)
QtCore.QTimer.singleShot(20_000, app.quit)
app.exec()
server.close()
print("heard", heard, flush=True)
"""


def test_a_command_that_opens_a_dialog_outlives_the_client_that_sent_it(qtbot, runtime_dir):
    # GIVEN a running instance whose command runs a nested event loop (a modal question)
    instance = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-c", MODAL],
        cwd=REPO,
        env={**os.environ, "TMPDIR": tempfile.gettempdir()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert instance.stdout.readline().strip() == "ready", instance.stderr.read()
    # WHEN a later `mnemo remember-clipboard` asks it and exits while the question is open
    assert _ask(qtbot, "remember-clipboard") is True
    out, err = instance.communicate(timeout=30)
    # THEN the instance neither crashed nor touched the deleted connection, and acted once
    assert instance.returncode == 0, err
    assert "already deleted" not in err and "Traceback" not in err, err
    assert out.strip() == "heard ['remember-clipboard']"
