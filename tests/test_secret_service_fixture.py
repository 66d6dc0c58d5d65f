"""The test Secret Service (tests/secret_service.py) is real: the `keyring` library, in child
processes given its environment, stores and reads secrets there, meets a locked keyring as
on a desktop, and falls back to its fail backend where there is no session bus."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.secret_service import KEYRING_PASSWORD, SKIP_REASON, has_secret_service, secret_service

pytestmark = pytest.mark.skipif(not has_secret_service(), reason=SKIP_REASON)

# Runs in the child: what keyring chose, then each call's result or its exception
PROBE = """
import sys, keyring
def name(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"
print("backend", name(keyring.get_keyring()))
for call in sys.argv[1:]:
    op, *args = call.split(":")
    try:
        print(op, getattr(keyring, op)(*args))
    except Exception as e:
        print(op, "raised", name(e), str(e))
"""


def keyring_in_child(env: dict[str, str | None], *calls: str) -> list[str]:
    """The child's lines: `backend <class>`, then per call (`op:arg:...`) `op <result>` or
    `op raised <class> <message>`."""
    full = {**os.environ, **env}
    full.pop("PYTHON_KEYRING_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *calls],
        env={k: v for k, v in full.items() if v is not None},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def running_with(text: str) -> list[str]:
    """The live processes whose command line or environment holds `text` (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
            except OSError:
                continue
            if text.encode() in seen:
                found.append(f"{proc.name} {(proc / 'cmdline').read_bytes()!r}")
    return found


def test_a_secret_set_in_one_process_is_read_in_another(tmp_path):
    with secret_service(tmp_path) as env:
        set_lines = keyring_in_child(env, "set_password:mnemo:database:k3y-Ü")
        get_lines = keyring_in_child(env, "get_password:mnemo:database", "get_password:mnemo:x")
    assert set_lines == ["backend keyring.backends.SecretService.Keyring", "set_password None"]
    assert get_lines == [
        "backend keyring.backends.SecretService.Keyring",
        "get_password k3y-Ü",
        "get_password None",
    ]
    # The keyring file lives in the test's folder, encrypted with the keyring's password
    login = Path(env["XDG_DATA_HOME"]) / "keyrings" / "login.keyring"
    assert login.is_file() and b"k3y" not in login.read_bytes()
    assert KEYRING_PASSWORD.encode() not in login.read_bytes()


def test_a_locked_keyring_raises_keyring_locked(tmp_path):
    with secret_service(tmp_path, unlocked=False) as env:
        lines = keyring_in_child(env, "get_password:mnemo:database", "set_password:mnemo:db:k")
    locked = "raised keyring.errors.KeyringLocked Failed to unlock the collection!"
    assert lines == [
        "backend keyring.backends.SecretService.Keyring",
        f"get_password {locked}",
        f"set_password {locked}",
    ]


def test_without_a_session_bus_keyring_has_the_fail_backend(tmp_path):
    with secret_service(tmp_path) as env:
        lines = keyring_in_child({**env, "DBUS_SESSION_BUS_ADDRESS": None}, "get_password:a:b")
    assert lines[0] == "backend keyring.backends.fail.Keyring"
    assert lines[1].startswith("get_password raised keyring.errors.NoKeyringError ")


def test_both_daemons_are_gone_after_the_block(tmp_path):
    with secret_service(tmp_path) as env:
        address = env["DBUS_SESSION_BUS_ADDRESS"]
        assert running_with(address)  # the keyring daemon's environment holds it
        assert running_with(str(tmp_path / "secret-service" / "bus.conf"))  # dbus-daemon
    assert running_with(address) == []
    assert running_with(str(tmp_path / "secret-service" / "bus.conf")) == []
    # Nothing answers there any more: keyring falls back as with no bus
    assert keyring_in_child(env) == ["backend keyring.backends.fail.Keyring"]


def test_a_failing_test_still_stops_both_daemons(tmp_path):
    with pytest.raises(RuntimeError, match="the test failed"), secret_service(tmp_path) as env:
        raise RuntimeError("the test failed")
    assert running_with(env["DBUS_SESSION_BUS_ADDRESS"]) == []
    assert running_with(str(tmp_path / "secret-service" / "bus.conf")) == []
