"""What the tray says of sync and what it tells a person: the line "Synced at 14:02" (or why
sync cannot run), the menu of the other devices and what waits, a notification when a device
waits for approval, removals are held or a memory was edited on two devices apart (each said
once), and a watch on the sync folder so what arrives is applied within a moment. Team
spaces: a notification when someone joins one, or a member's removals en masse are held."""

from __future__ import annotations

import time
from pathlib import Path

from app.core.display import age
from app.gui.qt import QtCore


class SyncTray:
    """The desktop app's sync line, menu and notifications (`MnemoApp.sync_tray`)."""

    def __init__(self, app) -> None:
        self.app = app  # its tray, notifications, settings and worker
        self.line = ""  # the tray's sync line: the last pass, or why it could not run
        self.details: list[str] = []  # its menu: the other devices, what waits
        self._details_at = -1e9  # when they were last asked for (time.monotonic)
        self._told: set[str] = set()  # what waits for a person, said once (a notification)
        # What arrives in the sync folder is applied within a moment: the process doing the
        # background work looks at once (its 2 s poll is the fallback: a watcher can miss
        # changes on network folders)
        self._watch = QtCore.QFileSystemWatcher(app)
        self._soon = QtCore.QTimer(app, singleShot=True, interval=300)
        self._soon.timeout.connect(app.worker.runner.look_soon)
        self._watch.directoryChanged.connect(lambda _: self._soon.start())
        self._watch.fileChanged.connect(lambda _: self._soon.start())
        app.worker.spacesJoined.connect(self.on_joined)
        app.worker.spacesHeld.connect(self.on_removals_held)

    def watch_folder(self) -> None:
        """Watch the sync folder's device folders and each device's newest log (new files
        and appends); again after each pass, as logs come and go."""
        watched = self._watch.directories() + self._watch.files()
        root = Path(self.app.settings["sync_folder"] or "/nonexistent") / "devices"
        wanted = []
        if root.is_dir():
            wanted.append(str(root))
            for device in root.iterdir():
                if device.is_dir():
                    wanted.append(str(device))
                    logs = sorted(device.glob("ops-*.jsonl"))
                    if logs:
                        wanted.append(str(logs[-1]))
        if sorted(wanted) != sorted(watched):
            if watched:
                self._watch.removePaths(watched)
            if wanted:
                self._watch.addPaths(wanted)

    def on_synced(self, moved: dict) -> None:
        """A sync pass ran (or could not): the tray's sync line says so."""
        self.watch_folder()
        if moved["problem"]:
            self.line = f"Sync: {moved['problem']}"
        else:
            stamp = QtCore.QTime.currentTime().toString("HH:mm")
            got = f", {moved['applied']} changes arrived" if moved["applied"] else ""
            kept = f", {moved['conflicts']} edited apart (both kept)" if moved["conflicts"] else ""
            self.line = f"Synced at {stamp}{got}{kept}"
            self.tell(moved)
        self.app._refresh_tray()
        # The devices and what waits: read at most every 30 s here (a pass runs after each
        # write), and whenever the menu is opened
        if time.monotonic() - self._details_at > 30:
            self.ask_details()

    def tell(self, moved: dict) -> None:
        """What a pass found that a person must decide: a new device waiting for approval,
        removals held, memories edited on two devices apart (each said once, when it
        arrives; Settings → Sync and the manager's Conflicts list them until decided)."""
        sync = ("Settings → Sync", self.app.show_sync_settings)
        new = [d for d in moved.get("new_devices") or () if f"device {d}" not in self._told]
        if new:
            self._told.update(f"device {d}" for d in new)
            count = len(new)
            self.app.notify(
                "A new device wants to sync",
                f"{count} device{'s' if count > 1 else ''} ({', '.join(new)}) "
                "wrote to your sync folder: approve it in Settings → Sync if it is yours "
                "(compare its key); until then nothing it writes is read.",
                action=sync,
            )
        for device, count in (moved.get("held") or {}).items():
            if f"held {device} {count}" in self._told:
                continue
            self._told.add(f"held {device} {count}")
            self.app.notify(
                "Removals held for you",
                f"Device {device} would remove {count} memories here at once: nothing was "
                "removed. Apply or keep them in Settings → Sync.",
                action=sync,
            )
        if moved.get("conflicts"):
            count = moved["conflicts"]
            self.app.notify(
                "Edited on two devices apart",
                f"{count} memor{'ies were' if count > 1 else 'y was'} edited on two of your "
                "devices apart: both versions are kept. Review them in the manager.",
                action=("Review", self.app.show_conflicts),
            )

    def on_joined(self, joined: list[dict]) -> None:
        """Devices joined a team space: said once, by space (the runner tells each join
        once, whichever process's pass saw it)."""
        spaces: dict[str, list[dict]] = {}
        for one in joined:
            spaces.setdefault(one["space"], []).append(one)
        for space, ones in spaces.items():
            names = ", ".join(dict.fromkeys(j["person"] or j["device"][:12] for j in ones))
            self.app.notify(
                "Someone joined a team space",
                f"{names} {'is' if len(ones) == 1 else 'are'} now in the space "
                f"{space!r}: what its members share reaches them too.",
                action=("Settings → Spaces", lambda space=space: self._show_spaces(space)),
            )

    def on_removals_held(self, held: list[dict]) -> None:
        """A member's removals en masse wait in a team space: said once per hold (the
        runner tells each new one, whichever process's pass held it); decided in Settings →
        Spaces."""
        for one in held:
            count = one["memories"]
            self.app.notify(
                "Removals held in a team space",
                f"{one['member']}'s removal of {count} shared memor{'ies' if count > 1 else 'y'} "
                f"in {one['space']!r} is held: nothing left your view. Open Settings → Spaces "
                "to decide.",
                action=("Settings → Spaces", lambda space=one["space"]: self._show_spaces(space)),
            )

    def _show_spaces(self, space: str | None = None) -> None:
        self.app.show_settings()
        dialog = self.app.settings_dialog
        dialog.tabs.setCurrentWidget(dialog.spaces)
        if space is not None:
            dialog.spaces.choose(space)

    def ask_details(self) -> None:
        self._details_at = time.monotonic()
        self.app.worker.call(
            lambda e: e.sync.status() if e.sync.configured() else None,
            self._show_devices,
            lambda _failure: None,  # (said by the pass itself)
            channel="tray-sync",
        )

    def _show_devices(self, status: dict | None) -> None:
        """The tray's sync menu: each other device and when it was last seen, what waits."""
        lines = []
        for device in (status or {}).get("devices", []):
            if device["this"]:
                continue
            seen = age(device["seen"]) if device["seen"] else "never"
            mark = (
                " (removed)"
                if device["removed"]
                else " (waiting for it)"
                if device.get("behind")
                else ""
            )
            lines.append(f"{device['name']}: last seen {seen}{mark}")
        if status and status["pending"]:
            lines.append(f"{status['pending']} changes here not written yet")
        if status and status["waiting_bytes"]:
            lines.append(f"{status['waiting_bytes']:,} bytes arrived, not applied yet")
        if status:
            problems = [p for p in status["problems"] if p["kind"] != "conflict"]
            if problems:
                lines.append(f"Problem: {problems[0]['what'][:120]}")
        self.details = lines
        if self.app.tray is not None:
            self.app.tray.set_sync(self.line, lines)
        if status:  # (a pass another process ran, an agent's MCP server, says it here too)
            self.tell(
                {
                    "new_devices": [d["id"] for d in status["devices"] if d["state"] == "pending"],
                    "held": {h["device"]: h["memories"] for h in status["held"]},
                }
            )
