"""A real Wayland desktop for end-to-end tests: KWin (`kwin_wayland --virtual`, headless),
xdg-desktop-portal with KDE's backend (GlobalShortcuts), a private D-Bus session bus, and
keys pressed through KWin's fake-input protocol, which goes through the compositor's own
keyboard path, as a physical key does.

Debian 12 ships KWin 5.27, whose portal binds shortcuts from CreateSession (see
app/gui/hotkey/portal.py). kwin_wayland carries a file capability (cap_sys_resource) that a
container may refuse to grant on exec, so a plain copy of the binary is run.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.session import run, stop_all, wait

KWIN = "/usr/bin/kwin_wayland"
PORTALS = (
    next(
        (str(p) for p in Path("/usr/lib").glob("*/libexec/xdg-desktop-portal-kde")),
        "/usr/lib/x86_64-linux-gnu/libexec/xdg-desktop-portal-kde",
    ),
    "/usr/libexec/xdg-desktop-portal",
)
TOOLS = ("dbus-daemon", "gdbus", "wl-paste", "wl-copy")
SOCKET = "wayland-mnemo"

# evdev key codes (linux/input-event-codes.h) of the keys the tests press.
KEYS = {
    "esc": 1, "enter": 28, "ctrl": 29, "shift": 42, "alt": 56, "space": 57, "backspace": 14,
    "-": 12,
}  # fmt: skip
for _i, _ch in enumerate("1234567890"):
    KEYS[_ch] = 2 + _i
for _row, _start in (("qwertyuiop", 16), ("asdfghjkl", 30), ("zxcvbnm", 44)):
    for _i, _ch in enumerate(_row):
        KEYS[_ch] = _start + _i


def missing_tools() -> list[str]:
    """What the Wayland session needs and this machine lacks (scripts/setup --test)."""
    paths = [KWIN, *PORTALS]
    return [p for p in paths if not Path(p).exists()] + [
        t for t in TOOLS if shutil.which(t) is None
    ]


@contextmanager
def desktop(tmp: Path) -> Iterator[dict]:
    """KWin + the portals on a private session bus; yields the environment a client of
    that desktop runs with."""
    missing = missing_tools()
    if missing:
        pytest.fail(f"Wayland end-to-end tools missing: {missing}; run scripts/setup --test")
    runtime = tmp / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    (tmp / "home").mkdir()
    kwin = tmp / "kwin_wayland"
    shutil.copyfile(KWIN, kwin)  # without the file capability
    kwin.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "QT_QPA_PLATFORM")
    }
    env.update(
        XDG_RUNTIME_DIR=str(runtime),
        HOME=str(tmp / "home"),
        WAYLAND_DISPLAY=SOCKET,
        XDG_CURRENT_DESKTOP="KDE",
        XDG_SESSION_TYPE="wayland",
        KDE_FULL_SESSION="true",
        KDE_SESSION_VERSION="5",
        # Let the test's clients use fake input and screenshots (KWin's trusted-client
        # checks look for installed .desktop files of the requesting program).
        KWIN_WAYLAND_NO_PERMISSION_CHECKS="1",
        KWIN_SCREENSHOT_NO_PERMISSION_CHECKS="1",
    )
    procs: list[subprocess.Popen] = []
    logs = tmp / "logs"
    logs.mkdir()

    def start(name: str, *args: str, **extra) -> subprocess.Popen:
        out = (logs / f"{name}.log").open("w")
        proc = subprocess.Popen(args, env={**env, **extra}, stdout=out, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    try:
        # The bus first: services it starts on demand inherit the session's variables.
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(bus)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().strip()
        start(
            "kwin",
            str(kwin),
            "--virtual",
            "--no-lockscreen",
            "--socket",
            SOCKET,
            "--width",
            "1280",
            "--height",
            "800",
            QT_QPA_PLATFORM="",
        )
        wait(lambda: (runtime / SOCKET).exists(), 30, "kwin_wayland to listen")
        start("portal-kde", PORTALS[0], QT_QPA_PLATFORM="wayland")
        # xdg-desktop-portal picks its backends once, at start: one started before KDE's
        # owned its name fell back to GTK's, which has no GlobalShortcuts (a full run under
        # load waited 1 s and lost both keys).
        wait(lambda: _has_owner(env, "org.freedesktop.impl.portal.desktop.kde"), 30, "KDE's portal")
        start("portal", PORTALS[1], "--verbose")
        wait(
            lambda: (
                "org.freedesktop.portal.Desktop acquired"
                in (logs / "portal.log").read_text(errors="replace")
            ),
            30,
            "xdg-desktop-portal",
        )
        env["MNEMO_E2E_LOGS"] = str(logs)
        yield env
    finally:
        stop_all(procs)


def _has_owner(env, name: str) -> bool:
    """Whether a D-Bus name is owned on the session bus."""
    done = run(
        env, "gdbus", "call", "--session", "-d", "org.freedesktop.DBus",
        "-o", "/org/freedesktop/DBus", "-m", "org.freedesktop.DBus.NameHasOwner", name,
        check=False,
    )  # fmt: skip
    return done.returncode == 0 and "true" in done.stdout


def shortcuts_of(env, component: str) -> str:
    """kglobalaccel's shortcut infos of a component ('' when it has none)."""
    done = run(
        env,
        "gdbus",
        "call",
        "--session",
        "-d",
        "org.kde.kglobalaccel",
        "-o",
        f"/component/{component}",
        "-m",
        "org.kde.kglobalaccel.Component.allShortcutInfos",
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""


def windows(env) -> list[dict]:
    """KWin's windows (caption, class, active), through a one-shot KWin script."""
    lines = kwin_script(
        env,
        "var a = workspace.activeClient;\n"
        "workspace.clientList().forEach(function (c) {\n"
        '  out(c.caption + "|" + c.resourceClass + "|" + (c === a));\n'
        "});\n",
    )
    found = []
    for line in lines:
        caption, klass, active = line.rsplit("|", 2)
        found.append({"caption": caption, "class": klass, "active": active == "true"})
    return found


def activate(env, caption: str) -> None:
    """Give the focus to the window with this caption, as a click on it would (KWin
    activates it; no focus-stealing prevention applies to the window manager itself)."""
    kwin_script(
        env,
        "workspace.clientList().forEach(function (c) {\n"
        f"  if (c.caption === {caption!r}) workspace.activeClient = c;\n"
        "});\n",
    )


def kwin_script(env, body: str) -> list[str]:
    """Run JavaScript in KWin once; the lines it passed to `out(...)`. (Its prints go to
    KWin's log, where the desktop's stdout goes.)"""
    logs = Path(env["MNEMO_E2E_LOGS"])
    name = f"mnemo_{time.monotonic_ns()}"
    script = logs / f"{name}.js"
    script.write_text(
        f'function out(line) {{ print("{name}|" + line); }}\n{body}print("{name}|END");\n'
    )
    log = logs / "kwin.log"
    gdbus = ("gdbus", "call", "--session", "-d", "org.kde.KWin")
    loaded = run(
        env, *gdbus, "-o", "/Scripting", "-m", "org.kde.kwin.Scripting.loadScript",
        str(script), name,
    ).stdout  # fmt: skip
    number = "".join(ch for ch in loaded if ch.isdigit())
    run(env, *gdbus, "-o", f"/{number}", "-m", "org.kde.kwin.Script.run")
    wait(lambda: f"{name}|END" in log.read_text(errors="replace"), 10, "a KWin script")
    run(env, *gdbus, "-o", "/Scripting", "-m", "org.kde.kwin.Scripting.unloadScript", name,
        check=False)  # fmt: skip
    script.unlink()
    mine = f"{name}|"
    return [
        line.split(mine, 1)[1]
        for line in log.read_text(errors="replace").splitlines()
        if mine in line and not line.endswith(f"{name}|END")
    ]


class FakeKeyboard:
    """Key events into KWin through org_kde_kwin_fake_input (version 4 has keyboard_key),
    spoken as a raw Wayland client: a socket and the wire format, nothing else needed."""

    def __init__(self, env):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(os.path.join(env["XDG_RUNTIME_DIR"], env["WAYLAND_DISPLAY"]))
        self.buffer = b""
        self.last_id = 2  # 1 is wl_display, 2 our wl_registry
        self._send(1, 1, struct.pack("<I", 2))  # wl_display.get_registry
        offered: dict[str, tuple[int, int]] = {}
        self._roundtrip(offered)
        if "org_kde_kwin_fake_input" not in offered:
            raise AssertionError("KWin offers no fake input (KWIN_WAYLAND_NO_PERMISSION_CHECKS)")
        name, version = offered["org_kde_kwin_fake_input"]
        assert version >= 4, f"fake input v{version} has no keyboard_key"
        self.fake = self._new_id()
        self._send(
            2, 0, struct.pack("<I", name) + _string("org_kde_kwin_fake_input")
            + struct.pack("<II", 4, self.fake),
        )  # fmt: skip
        self._send(self.fake, 0, _string("mnemo e2e") + _string("hotkey test"))  # authenticate
        self._roundtrip()

    def close(self) -> None:
        self.sock.close()

    def press(self, combo: str, delay: float = 0.05) -> None:
        """Press and release a combination such as "ctrl+alt+space", `delay` s after each."""
        codes = [KEYS[part] for part in combo.lower().split("+")]
        for code in codes:
            self._key(code, 1)
        self._roundtrip()
        time.sleep(delay)
        for code in reversed(codes):
            self._key(code, 0)
        self._roundtrip()
        time.sleep(delay)

    def type(self, text: str, delay: float = 0.06) -> None:
        """Type `text` (letters, digits, space, "-"; capitals with Shift), a key each
        `delay` s."""
        for ch in text:
            code = KEYS["space" if ch == " " else ch.lower()]
            shifted = ch.isupper()
            if shifted:
                self._key(KEYS["shift"], 1)
            self._key(code, 1)
            self._key(code, 0)
            if shifted:
                self._key(KEYS["shift"], 0)
            self._roundtrip()
            time.sleep(delay)

    def _key(self, code: int, state: int) -> None:
        self._send(self.fake, 10, struct.pack("<II", code, state))

    def _new_id(self) -> int:
        self.last_id += 1
        return self.last_id

    def _send(self, obj: int, opcode: int, payload: bytes = b"") -> None:
        self.sock.sendall(struct.pack("<II", obj, ((8 + len(payload)) << 16) | opcode) + payload)

    def _events(self):
        while True:
            while len(self.buffer) >= 8:
                obj, size_op = struct.unpack_from("<II", self.buffer)
                size = size_op >> 16
                if len(self.buffer) < size:
                    break
                yield obj, size_op & 0xFFFF, self.buffer[8:size]
                self.buffer = self.buffer[size:]
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the compositor closed the connection")
            self.buffer += chunk

    def _roundtrip(self, offered: dict | None = None) -> None:
        callback = self._new_id()
        self._send(1, 0, struct.pack("<I", callback))  # wl_display.sync
        for obj, opcode, data in self._events():
            if obj == 1 and opcode == 0:
                raise AssertionError(f"Wayland protocol error: {data!r}")
            if offered is not None and obj == 2 and opcode == 0:  # wl_registry.global
                name, length = struct.unpack_from("<II", data)
                interface = data[8 : 8 + length - 1].decode()
                version = struct.unpack_from("<I", data, 8 + length + (-length % 4))[0]
                offered[interface] = (name, version)
            if obj == callback and opcode == 0:
                return


def _string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return struct.pack("<I", len(raw)) + raw + b"\0" * (-len(raw) % 4)
