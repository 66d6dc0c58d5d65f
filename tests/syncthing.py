"""Real Syncthing instances for tests (issue 27): each with its own home and ports on
loopback, nothing announced or relayed, configured through its REST API."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

FOLDER_ID = "mnemo-sync"


def available() -> str | None:
    """Why Syncthing cannot run here, or None."""
    if shutil.which("syncthing") is None:
        return "syncthing is not installed (scripts/setup installs the Debian package)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Syncthing:
    """One Syncthing device: `start()`, then `share(folder, others)` through REST."""

    def __init__(self, home: Path):
        self.home = Path(home)
        self.gui_port = _free_port()
        self.listen_port = _free_port()
        self.apikey = f"mnemo-test-{os.getpid()}-{self.gui_port}"
        self.process: subprocess.Popen | None = None
        self.device_id = ""

    # ---- lifecycle -----------------------------------------------------------------
    def start(self) -> Syncthing:
        self.home.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["syncthing", "generate", f"--home={self.home}", "--no-default-folder"],
            check=True,
            capture_output=True,
        )
        self._loopback_only()
        env = {
            **os.environ,
            "STNOUPGRADE": "1",
            "STNODEFAULTFOLDER": "1",
            "STNORESTART": "1",
            "HOME": str(self.home),
        }
        self.log = open(self.home / "syncthing.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [
                "syncthing",
                "serve",
                f"--home={self.home}",
                "--no-browser",
                "--no-restart",
                f"--gui-address=127.0.0.1:{self.gui_port}",
                f"--gui-apikey={self.apikey}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.device_id = self.rest("GET", "/rest/system/status")["myID"]
                break
            except (OSError, urllib.error.URLError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"syncthing did not start: {(self.home / 'syncthing.log').read_text()}"
                    ) from None
                time.sleep(0.2)
        return self

    def _loopback_only(self) -> None:
        """Listen on one loopback port; no discovery, relays, NAT, reports or upgrades."""
        path = self.home / "config.xml"
        tree = ET.parse(path)
        options = tree.getroot().find("options")
        for name, value in (
            ("listenAddress", f"tcp://127.0.0.1:{self.listen_port}"),
            ("globalAnnounceEnabled", "false"),
            ("localAnnounceEnabled", "false"),
            ("relaysEnabled", "false"),
            ("natEnabled", "false"),
            ("startBrowser", "false"),
            ("urAccepted", "-1"),
            ("autoUpgradeIntervalH", "0"),
            ("crashReportingEnabled", "false"),
        ):
            for element in options.findall(name):
                element.text = value
        tree.write(path)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if getattr(self, "log", None):
            self.log.close()

    # ---- REST ----------------------------------------------------------------------
    def rest(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.gui_port}{path}",
            data=data,
            method=method,
            headers={"X-API-Key": self.apikey, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text.strip() else None

    def introduce(self, other: Syncthing) -> None:
        """Know the other device, at its loopback address."""
        self.rest(
            "POST",
            "/rest/config/devices",
            {
                "deviceID": other.device_id,
                "name": other.home.name,
                "addresses": [f"tcp://127.0.0.1:{other.listen_port}"],
                "autoAcceptFolders": False,
            },
        )

    def share(self, path: Path, others: list[Syncthing]) -> None:
        """Share `path` as FOLDER_ID with the other devices; changes seen within a second."""
        self.rest(
            "POST",
            "/rest/config/folders",
            {
                "id": FOLDER_ID,
                "label": "Mnemo",
                "path": str(path),
                "type": "sendreceive",
                "devices": [{"deviceID": o.device_id} for o in [self, *others]],
                "fsWatcherEnabled": True,
                "fsWatcherDelayS": 1,
                "rescanIntervalS": 60,
            },
        )

    def pause(self, paused: bool = True) -> None:
        """Pause (or resume) the shared folder: the device is as if offline for it."""
        self.rest("PATCH", f"/rest/config/folders/{FOLDER_ID}", {"paused": paused})

    def rescan(self) -> None:
        self.rest("POST", f"/rest/db/scan?folder={FOLDER_ID}")

    def in_sync_with(self, others: list[Syncthing]) -> bool:
        """Whether this device has everything and each other device has all of ours."""
        status = self.rest("GET", f"/rest/db/status?folder={FOLDER_ID}")
        if status.get("state") != "idle" or status.get("needTotalItems", 1):
            return False
        for other in others:
            done = self.rest(
                "GET", f"/rest/db/completion?folder={FOLDER_ID}&device={other.device_id}"
            )
            if done.get("completion", 0) < 100 or done.get("needItems", 1):
                return False
        return True


def cluster(root: Path, names: list[str]) -> list[Syncthing]:
    """Started Syncthing devices that all know each other and share `root/<name>/folder`."""
    devices = [Syncthing(root / name / "syncthing").start() for name in names]
    for device in devices:
        for other in devices:
            if other is not device:
                device.introduce(other)
    for device in devices:
        folder = device.home.parent / "folder"
        folder.mkdir(parents=True, exist_ok=True)
        device.share(folder, [o for o in devices if o is not device])
    return devices
