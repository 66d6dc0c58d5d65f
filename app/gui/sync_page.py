"""Settings → Sync: the dialog's face of `mnemo sync init | now | status | remove | off`
(ADR 0015). Every action runs on the engine thread; joining a large collection shows its
progress."""

from __future__ import annotations

import socket

from app.core import duties
from app.core.display import age
from app.gui.qt import Qt, QtGui, QtWidgets, Signal
from app.gui.worker import INTERACTIVE, Worker


class SyncPage(QtWidgets.QWidget):
    """Where memories sync through, this device's name, the other devices, what waits and
    what went wrong; start, sync now, remove a device, stop."""

    done = Signal(str)  # what the last action did (or why it did not), for tests
    conflicts_wanted = Signal()  # "Review…": the manager's Conflicts view

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("syncPage")
        self.worker = worker
        self.state = QtWidgets.QLabel(objectName="syncState")
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.folder = QtWidgets.QLineEdit(objectName="syncFolder")
        self.folder.setPlaceholderText("a folder Syncthing (or Nextcloud, Dropbox…) shares")
        choose = QtWidgets.QPushButton("Choose…", objectName="syncChoose")
        choose.clicked.connect(self._choose)
        self.name = QtWidgets.QLineEdit(objectName="syncName")
        self.name.setPlaceholderText(socket.gethostname())
        self.encrypt = QtWidgets.QCheckBox(
            "Encrypt the files in the folder (your other devices need its sync key)",
            objectName="syncEncrypt",
        )
        self.key = QtWidgets.QLineEdit(objectName="syncKey")
        self.key.setPlaceholderText("to join a folder whose files are encrypted: its sync key")
        self.key_button = QtWidgets.QPushButton("Show sync key", objectName="syncShowKey")
        self.key_button.clicked.connect(self.show_key)
        self.start_button = QtWidgets.QPushButton("Start syncing", objectName="syncStart")
        self.now_button = QtWidgets.QPushButton("Sync now", objectName="syncNow")
        self.stop_button = QtWidgets.QPushButton("Stop syncing", objectName="syncStop")
        self.remove_button = QtWidgets.QPushButton("Remove device", objectName="syncRemove")
        self.approve_button = QtWidgets.QPushButton("Approve", objectName="syncApprove")
        self.approve_button.setToolTip(
            "It is one of yours (compare its key with the one it shows): what it writes is "
            "read here, and on your devices that trust this one"
        )
        self.refuse_button = QtWidgets.QPushButton("Refuse", objectName="syncRefuse")
        self.refuse_button.setToolTip("It is not yours: nothing more of it is read")
        self.start_button.clicked.connect(self.start)
        self.now_button.clicked.connect(self.sync_now)
        self.stop_button.clicked.connect(self.stop)
        self.remove_button.clicked.connect(self.remove)
        self.approve_button.clicked.connect(lambda: self.decide("approve"))
        self.refuse_button.clicked.connect(lambda: self.decide("refuse"))
        self.devices = QtWidgets.QTreeWidget(objectName="syncDevices")
        self.devices.setHeaderLabels(
            ["Device", "May write", "Key", "Last seen", "Operations", "Id"]
        )
        self.devices.setRootIsDecorated(False)
        self.devices.setMinimumHeight(110)
        self.devices.currentItemChanged.connect(lambda *_: self._enable_decisions())
        # Removals held for you (a device removing many memories at once)
        self.held = QtWidgets.QTreeWidget(objectName="syncHeld")
        self.held.setHeaderLabels(["Held for you", "Memories", "First of them"])
        self.held.setRootIsDecorated(False)
        self.held.setMaximumHeight(110)
        self.apply_held = QtWidgets.QPushButton("Apply removals", objectName="syncApplyHeld")
        self.refuse_held = QtWidgets.QPushButton("Keep the memories", objectName="syncRefuseHeld")
        self.refuse_held.setToolTip("They stay here, and are written back on your other devices")
        self.apply_held.clicked.connect(lambda: self.decide_held(True))
        self.refuse_held.clicked.connect(lambda: self.decide_held(False))
        self.held_box = QtWidgets.QWidget(objectName="syncHeldBox")
        held_layout = QtWidgets.QVBoxLayout(self.held_box)
        held_layout.setContentsMargins(0, 0, 0, 0)
        held_layout.addWidget(self.held)
        held_buttons = QtWidgets.QHBoxLayout()
        held_buttons.addWidget(self.apply_held)
        held_buttons.addWidget(self.refuse_held)
        held_buttons.addStretch(1)
        held_layout.addLayout(held_buttons)
        self.held_box.setVisible(False)
        self.conflicts_line = QtWidgets.QLabel(objectName="syncConflicts")
        self.review_button = QtWidgets.QPushButton("Review…", objectName="syncReview")
        self.review_button.clicked.connect(self.conflicts_wanted)
        conflicts_row = QtWidgets.QHBoxLayout()
        conflicts_row.addWidget(self.conflicts_line, 1)
        conflicts_row.addWidget(self.review_button)
        self.conflicts_row = QtWidgets.QWidget()
        self.conflicts_row.setLayout(conflicts_row)
        conflicts_row.setContentsMargins(0, 0, 0, 0)
        self.conflicts_row.setVisible(False)
        self.progress = QtWidgets.QProgressBar(objectName="syncProgress")
        self.progress.setVisible(False)
        self.details = QtWidgets.QLabel(objectName="syncDetails")
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        about = QtWidgets.QLabel(
            "Each device writes its own changes to files in this folder and reads the "
            "others': share the folder between your devices with Syncthing (or any folder "
            "sync) and start syncing on each. Edits made apart on two devices are both kept, "
            "merged (the versions stay in the trash). There is no server. Encrypted files "
            "hold no memory text, field or id; each device's name stays readable."
        )
        about.setWordWrap(True)
        form = QtWidgets.QFormLayout()
        folder_row = QtWidgets.QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(choose)
        form.addRow("Folder", folder_row)
        form.addRow("This device's name", self.name)
        form.addRow("", self.encrypt)
        form.addRow("Sync key", self.key)
        buttons = QtWidgets.QHBoxLayout()
        for button in (self.start_button, self.now_button, self.stop_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.key_button)
        device_buttons = QtWidgets.QHBoxLayout()
        device_buttons.addWidget(self.approve_button)
        device_buttons.addWidget(self.refuse_button)
        device_buttons.addStretch(1)
        device_buttons.addWidget(self.remove_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.state)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.devices)
        layout.addLayout(device_buttons)
        layout.addWidget(self.held_box)
        layout.addWidget(self.conflicts_row)
        layout.addWidget(self.details)
        layout.addWidget(about)
        layout.addStretch(1)
        worker.progress.connect(self._progress)
        worker.syncMoved.connect(lambda _summary: self.refresh())
        self.refresh()

    # ---- state ---------------------------------------------------------------------
    def refresh(self) -> None:
        def status(engine):
            if engine.sync.configured():
                return engine.sync.status()
            return {"off": True, "encrypted": engine.vault.encrypted}

        self.worker.call(status, self._show, self._failed, INTERACTIVE, channel="sync-status")

    def _show(self, status: dict) -> None:
        on = not status.get("off")
        self.start_button.setEnabled(not on)
        self.now_button.setEnabled(on)
        self.stop_button.setEnabled(on)
        for field in (self.folder, self.name, self.encrypt, self.key):
            field.setEnabled(not on)
        self.key_button.setEnabled(on and bool(status.get("sealed")))
        self.devices.clear()
        self.held.clear()
        if not on:
            self.encrypt.setChecked(bool(status.get("encrypted")))
            self.state.setText("<b>Sync is off.</b> Choose a shared folder to start.")
            self.details.setText("")
            self.remove_button.setEnabled(False)
            self.held_box.setVisible(False)
            self.conflicts_row.setVisible(False)
            self._enable_decisions()
            return
        self.folder.setText(status["folder"])
        self.name.setText(status["name"])
        self.encrypt.setChecked(bool(status["sealed"]))
        sealed = "encrypted" if status["sealed"] else "<b>not encrypted</b>"
        waiting = (
            ""
            if status["approved"]
            else (
                "<br>Not approved by your other devices yet: on one of them, approve "
                f"{status['name']} ({status['device']}) in Settings → Sync, after checking its "
                f"key is {status['key']}."
            )
        )
        self.state.setText(
            f"<b>Syncing</b> through {status['folder']} as {status['name']} "
            f"({status['device']}, key {status['key']}); the files there are {sealed}." + waiting
        )
        for device in sorted(status["devices"], key=lambda d: (not d["this"], d["name"])):
            name = device["name"] + (" (this device)" if device["this"] else "")
            name += " (removed)" if device["removed"] else ""
            seen = age(device["seen"]) if device["seen"] else "never"
            state = _STATES.get(device["state"], device["state"])
            row = [name, state, device["key"], seen, str(device["operations"]), device["id"]]
            item = QtWidgets.QTreeWidgetItem(row)
            item.setData(0, Qt.UserRole, device["id"])
            item.setData(1, Qt.UserRole, device["state"])
            if device["state"] == "pending":
                font = item.font(1)
                font.setBold(True)
                item.setFont(1, font)
            item.setDisabled(device["this"])
            self.devices.addTopLevelItem(item)
        for column in range(6):
            self.devices.resizeColumnToContents(column)
        self.remove_button.setEnabled(len(status["devices"]) > 1)
        self._enable_decisions()
        for held in status["held"]:
            who = (
                "Removed here, not through Mnemo"
                if held["here"]
                else (f"{held['name']} ({held['device']}) would remove")
            )
            item = QtWidgets.QTreeWidgetItem(
                [who, str(held["memories"]), "; ".join(held["titles"][:3])]
            )
            item.setData(0, Qt.UserRole, held["device"])
            self.held.addTopLevelItem(item)
        self.held_box.setVisible(bool(status["held"]))
        if status["held"]:
            self.held.setCurrentItem(self.held.topLevelItem(0))
            for column in range(3):
                self.held.resizeColumnToContents(column)
        self.conflicts_row.setVisible(bool(status["conflicts"]))
        self.conflicts_line.setText(
            f"Edited on two devices apart, waiting for you: {status['conflicts']} (both kept; "
            "review them to keep one version or the merge)"
        )
        lines = [
            "Restored from a snapshot: the next pass takes back what the folder holds"
            if status["rebuilding"]
            else f"Changes here not written yet: {status['pending']}",
            f"Arrived, not applied yet: {status['waiting_bytes']:,} bytes",
            duties.describe(status.get("owner")),
        ]
        for problem in [
            p for p in status["problems"] if p["kind"] not in ("conflict", "held", "device")
        ][:5]:
            lines.append(f"Problem, {age(problem['at'])}: {problem['what']}")
        self.details.setText("\n".join(lines))

    def _failed(self, message: str) -> None:
        self.progress.setVisible(False)
        self.state.setText(message)
        self.done.emit(message)

    def _said(self, message: str) -> None:
        self.progress.setVisible(False)
        self.done.emit(message)
        self.refresh()

    def _progress(self, job: str, done: int, total: int) -> None:
        if job != "sync":
            return
        self.progress.setVisible(done < total)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    # ---- actions -------------------------------------------------------------------
    def _choose(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "The shared folder")
        if path:
            self.folder.setText(path)

    def start(self) -> None:
        folder, name = self.folder.text().strip(), self.name.text().strip() or None
        if not folder:
            self._failed("Choose the shared folder first.")
            return
        self.worker.call(lambda e: e.vault.encrypted, lambda enc: self._start(folder, name, enc))

    def _start(self, folder: str, name: str | None, encrypted: bool) -> None:
        key = self.key.text().strip() or None
        encrypt = self.encrypt.isChecked()
        plain = False
        if encrypted and not encrypt and not key:
            if not self._sure(
                "Sync in plain files?",
                "Your database is encrypted, but the files in the sync folder would not "
                "be: every memory would be readable there and on every device it syncs to.",
            ):
                return
            plain = True
        progress = self.worker.progress.emit
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)
        self.start_button.setEnabled(False)  # (once: the pass is under way)
        self.state.setText(
            "<b>Starting…</b> writing this device's memories to the folder and reading what "
            "the other devices wrote (keyword search finds them at once, search by meaning "
            "as they are embedded)."
        )
        self.worker.call(
            lambda e: e.sync.init(
                folder,
                name,
                plain=plain,
                progress=lambda d, t: progress("sync", d, t),
                key=key,
                encrypt=True if encrypt and not key else None,
            ),
            lambda result: self._said(_summary(result)),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def show_key(self) -> None:
        self.worker.call(lambda e: e.sync.key(), self._key_shown, self._failed)

    def _key_shown(self, key: str | None) -> None:
        box = QtWidgets.QMessageBox(self)
        box.setObjectName("syncKeyBox")
        box.setWindowTitle("The sync key")
        box.setText("To join this folder on another device, give it this key:")
        box.setInformativeText(key or "(the files are not encrypted: there is no key)")
        box.setTextInteractionFlags(Qt.TextSelectableByMouse)
        if key:
            copy = box.addButton("Copy", QtWidgets.QMessageBox.ActionRole)
            copy.clicked.disconnect()
            copy.clicked.connect(lambda: QtGui.QGuiApplication.clipboard().setText(key))
        box.addButton(QtWidgets.QMessageBox.Ok)
        self.done.emit("the sync key was shown")
        box.exec()

    def sync_now(self) -> None:
        self.worker.call(
            lambda e: e.sync.now(),
            lambda result: self._said(_summary(result)),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def stop(self) -> None:
        if self._sure(
            "Stop syncing on this device?",
            "Your memories stay here, and the folder stays as it is; start again any time.",
        ):
            self.worker.call(
                lambda e: e.sync.off(), lambda _: self._said("Sync is off."), self._failed
            )

    def _enable_decisions(self) -> None:
        item = self.devices.currentItem()
        state = item.data(1, Qt.UserRole) if item is not None else None
        self.approve_button.setEnabled(state in ("pending", "refused"))
        self.refuse_button.setEnabled(state in ("pending", "approved"))

    def decide(self, decision: str) -> None:
        """Approve or refuse the selected device (a person's decision: `mnemo sync devices`)."""
        item = self.devices.currentItem()
        if item is None or item.isDisabled():
            self._failed("Choose another device in the list first.")
            return
        device, name = item.data(0, Qt.UserRole), item.text(0)
        if decision == "refuse" and not self._sure(
            f"Refuse {name}?",
            "Nothing more of it is read, here and on your devices that trust this one. "
            "What it wrote while approved stays.",
        ):
            return
        approve = decision == "approve"

        def act(engine):
            (engine.sync.approve if approve else engine.sync.refuse)(device)
            return engine.sync.now() if approve else None

        self.worker.call(
            act,
            lambda _: self._said(f"{'Approved' if approve else 'Refused'} {name}."),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def decide_held(self, apply: bool) -> None:
        """Apply or refuse the removals held for the selected device."""
        item = self.held.currentItem()
        if item is None:
            return
        device = item.data(0, Qt.UserRole)
        if apply and not self._sure(
            "Apply these removals?",
            f"{item.text(0)} {item.text(1)} memories: they go to the trash here (or are "
            "deleted for good, as they were there).",
        ):
            return

        def act(engine):
            return (engine.sync.apply_held if apply else engine.sync.refuse_held)(device)

        self.worker.call(
            act,
            lambda result: self._said(
                ("Applied. " if apply else "Kept: they stay on every device. ") + _summary(result)
            ),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def remove(self) -> None:
        item = self.devices.currentItem()
        if item is None or item.isDisabled():
            self._failed("Choose another device in the list first.")
            return
        device = item.data(0, Qt.UserRole)
        if self._sure(
            f"Remove {item.text(0)}?",
            "For a lost or retired device: it is no longer counted among yours. What it "
            "wrote stays applied.",
        ):
            self.worker.call(
                lambda e: e.sync.remove(device),
                lambda _: self._said(f"Removed {device}."),
                self._failed,
            )

    def _sure(self, title: str, text: str) -> bool:
        answer = QtWidgets.QMessageBox.question(self, title, text)
        return answer == QtWidgets.QMessageBox.Yes


_STATES = {
    "self": "this device",
    "approved": "approved",
    "pending": "waits for you",
    "refused": "refused",
}


def _summary(result) -> str:
    text = (
        f"Wrote {result.written} operations, read {result.read}; "
        f"{result.applied} memories changed here."
    )
    if result.conflicts:
        text += f" {result.conflicts} edited on two devices apart: both kept."
    return text
