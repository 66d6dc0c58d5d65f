"""A real Secret Service for the tests: a private session D-Bus and gnome-keyring-daemon.

`secret_service(tmp_path)` starts a session bus of its own (a config that activates no
services, so nothing else on the machine is started or touched) and a real
gnome-keyring-daemon (the secrets component only) on it, with HOME, XDG_DATA_HOME,
XDG_CONFIG_HOME and XDG_RUNTIME_DIR inside the test's folder: the keyring files are
`<tmp_path>/data/keyrings/login.keyring`. It yields the environment variables a child process
needs to reach it; a child runs with `{**os.environ, **env}`. The `keyring` library picks its
backend once, at import, so a test reads and writes secrets through it in a subprocess.

The daemon is started with `--unlock` and KEYRING_PASSWORD on its standard input (without a
trailing newline: the daemon takes every byte read as the password). That creates the
"login" collection, the default one, and unlocks it, as a desktop login through PAM does.
With `unlocked=False` the login collection is then locked through the Secret Service's
`Lock` method: a child's `keyring.get_password` raises `keyring.errors.KeyringLocked`
("Failed to unlock the collection!"), as on a desktop whose keyring is locked and no unlock
prompt can be shown (this bus has no prompter, so the daemon dismisses the prompt at once).

Both daemons are this process's own children, waited on by condition (the name owned on
the bus, the default collection there), and stopped at exit, also when the test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from jeepney import DBusAddress, MessageType, Properties, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, open_dbus_connection

KEYRING_PASSWORD = "mnemo-test-keyring"
SECRETS = "org.freedesktop.secrets"
SERVICE = DBusAddress(
    "/org/freedesktop/secrets", bus_name=SECRETS, interface="org.freedesktop.Secret.Service"
)
LOGIN = "/org/freedesktop/secrets/collection/login"
SKIP_REASON = "needs dbus-daemon and gnome-keyring-daemon (apt: dbus-daemon gnome-keyring)"
TIMEOUT = 10.0

# A session bus that activates no services: only what is started on it is there
# (`listen`: a D-Bus address such as unix:path=... or unix:tmpdir=...).
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def has_secret_service() -> bool:
    """Whether the programs a real Secret Service needs are on PATH."""
    return all(shutil.which(p) for p in ("dbus-daemon", "gnome-keyring-daemon"))


@contextlib.contextmanager
def secret_service(tmp_path: Path, unlocked: bool = True) -> Iterator[dict[str, str]]:
    """A running gnome-keyring on a private session bus; yields the variables a child needs:
    DBUS_SESSION_BUS_ADDRESS, HOME, XDG_RUNTIME_DIR, XDG_DATA_HOME and XDG_CONFIG_HOME (so
    no keyringrc.cfg of the developer's is read). The login collection exists, unlocked, or
    locked with `unlocked=False`."""
    root = Path(tmp_path) / "secret-service"
    home, data, config = root / "home", root / "data", root / "config"
    for folder in (home, data, config):
        folder.mkdir(parents=True, exist_ok=True)
    # The bus socket and the daemon's control socket must fit a sun_path (108 bytes)
    short = None
    if len(str(root / "run" / "keyring" / "control")) > 100:
        short = Path(tempfile.mkdtemp(prefix="mnemo-ss-"))
    run = (short or root) / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    socket = run / "bus"
    (root / "bus.conf").write_text(BUS_CONFIG.format(listen=f"unix:path={socket}"))
    env = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(data),
        "XDG_CONFIG_HOME": str(config),
        "XDG_RUNTIME_DIR": str(run),
    }
    procs: list[subprocess.Popen] = []
    try:
        base = {**os.environ, **env}
        for name in ("DISPLAY", "WAYLAND_DISPLAY", "PYTHON_KEYRING_BACKEND"):
            base.pop(name, None)
        with (root / "bus.log").open("w") as log:
            bus = subprocess.Popen(
                ["dbus-daemon", f"--config-file={root / 'bus.conf'}", "--nofork",
                 "--print-address=1"],
                env=base, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                text=True,
            )  # fmt: skip
        procs.append(bus)
        # dbus-daemon prints its address once it listens
        address = bus.stdout.readline().strip()
        if not address:
            raise RuntimeError(f"dbus-daemon did not start: {_tail(root / 'bus.log')}")
        env["DBUS_SESSION_BUS_ADDRESS"] = base["DBUS_SESSION_BUS_ADDRESS"] = address
        with (root / "keyring.log").open("w") as log:
            keyring_daemon = subprocess.Popen(
                ["gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"],
                env=base, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        procs.append(keyring_daemon)
        keyring_daemon.stdin.write(KEYRING_PASSWORD.encode())  # no newline: it would count
        keyring_daemon.stdin.close()
        with open_dbus_connection(bus=address) as conn:

            def ready() -> bool:
                if keyring_daemon.poll() is not None:
                    raise RuntimeError(
                        f"gnome-keyring-daemon exited: {_tail(root / 'keyring.log')}"
                    )
                owned = conn.send_and_get_reply(message_bus.NameHasOwner(SECRETS)).body[0]
                return owned and _call(conn, "ReadAlias", "s", "default") == (LOGIN,)

            _wait(ready, "gnome-keyring-daemon on the bus", root / "keyring.log")
            if not unlocked:
                _call(conn, "Lock", "ao", [LOGIN])
            login = DBusAddress(LOGIN, SECRETS, "org.freedesktop.Secret.Collection")
            locked = _get(conn, Properties(login).get("Locked"))[0][1]
            if locked == unlocked:
                raise RuntimeError(
                    f"the login collection is {'locked' if locked else 'unlocked'}, "
                    f"wanted the opposite: {_tail(root / 'keyring.log')}"
                )
        yield env
    finally:
        for proc in reversed(procs):  # the keyring first, then its bus
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if proc.stdout:
                proc.stdout.close()
        if short:
            shutil.rmtree(short, ignore_errors=True)


def _call(conn: DBusConnection, method: str, signature: str, *args) -> tuple:
    return _get(conn, new_method_call(SERVICE, method, signature, args))


def _get(conn: DBusConnection, message) -> tuple:
    reply = conn.send_and_get_reply(message, timeout=TIMEOUT)
    if reply.header.message_type == MessageType.error:
        raise RuntimeError(f"{reply.header.fields} {reply.body}")
    return reply.body


def _wait(predicate: Callable[[], bool], what: str, log: Path) -> None:
    """Polls `predicate` until it is true; fails after TIMEOUT seconds with the log's end."""
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}: {_tail(log)}")
        time.sleep(0.02)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""
