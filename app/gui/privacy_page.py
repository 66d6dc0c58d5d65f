"""Settings → Privacy: encryption at rest and snapshots, the dialog's face of `mnemo encrypt
| decrypt | backup | restore` (ADR 0014). Every action runs on the engine thread."""

from __future__ import annotations

from pathlib import Path

from app.core import paths
from app.core.engine import Engine
from app.gui.qt import Qt, QtGui, QtWidgets, Signal
from app.gui.worker import INTERACTIVE, Worker


class PrivacyPage(QtWidgets.QWidget):
    """Whether the database is encrypted and where its key is; encrypt, a new key,
    decrypt; a snapshot now, restore one."""

    done = Signal(str)  # what the last action did (or why it did not), for tests

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("privacyPage")
        self.worker = worker
        self.state = QtWidgets.QLabel(objectName="encryptionState")
        self.state.setWordWrap(True)
        self.encrypt_button = QtWidgets.QPushButton("Encrypt…", objectName="encrypt")
        self.rotate_button = QtWidgets.QPushButton("New key…", objectName="rotateKey")
        self.decrypt_button = QtWidgets.QPushButton("Decrypt…", objectName="decrypt")
        self.backup_button = QtWidgets.QPushButton("Snapshot now", objectName="backupNow")
        self.restore_button = QtWidgets.QPushButton("Restore a snapshot…", objectName="restore")
        self.encrypt_button.clicked.connect(self.encrypt)
        self.rotate_button.clicked.connect(self.rotate)
        self.decrypt_button.clicked.connect(self.decrypt)
        self.backup_button.clicked.connect(self.backup)
        self.restore_button.clicked.connect(self.choose_snapshot)
        self.result = QtWidgets.QLabel(objectName="privacyResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextSelectableByMouse)
        about = QtWidgets.QLabel(
            "Encryption protects your memories on a lost or stolen disk, in a copied backup "
            "or a synced folder; not from another program running as you. The key goes to "
            "your desktop's keyring (or is sealed by a passphrase where there is none); the "
            "recovery key, shown once, opens the database on any machine (mnemo unlock)."
        )
        about.setWordWrap(True)
        keys_row = QtWidgets.QHBoxLayout()
        for button in (self.encrypt_button, self.rotate_button, self.decrypt_button):
            keys_row.addWidget(button)
        keys_row.addStretch(1)
        snaps_row = QtWidgets.QHBoxLayout()
        for button in (self.backup_button, self.restore_button):
            snaps_row.addWidget(button)
        snaps_row.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.state)
        layout.addLayout(keys_row)
        layout.addWidget(about)
        layout.addSpacing(12)
        layout.addWidget(QtWidgets.QLabel("Snapshots (every day by default: Memories tab)"))
        layout.addLayout(snaps_row)
        layout.addWidget(self.result)
        layout.addStretch(1)
        self.refresh()

    # ---- state ---------------------------------------------------------------------
    def refresh(self) -> None:
        self.worker.call(lambda e: e.vault.status(), self._show, self._failed, INTERACTIVE)

    def _show(self, status: dict) -> None:
        encrypted = bool(status.get("encrypted"))
        if encrypted:
            where = status.get("key", "")
            self.state.setText(f"<b>Encrypted</b> (ChaCha20-Poly1305); its key is {where}.")
        else:
            self.state.setText("<b>Not encrypted.</b>")
        self.encrypt_button.setEnabled(not encrypted)
        self.rotate_button.setEnabled(encrypted)
        self.decrypt_button.setEnabled(encrypted)

    def _failed(self, message: str) -> None:
        self.result.setText(message)
        self.done.emit(message)
        self.refresh()

    def _said(self, message: str) -> None:
        self.result.setText(message)
        self.done.emit(message)
        self.refresh()

    # ---- encryption ----------------------------------------------------------------
    def _new_passphrase(self) -> str | None:
        first, ok = QtWidgets.QInputDialog.getText(
            self,
            "A passphrase",
            "No keyring answers here: the key will be sealed by a passphrase "
            "(8 characters or more).\nPassphrase:",
            QtWidgets.QLineEdit.Password,
        )
        if not ok:
            return None
        second, ok = QtWidgets.QInputDialog.getText(
            self, "A passphrase", "The same again:", QtWidgets.QLineEdit.Password
        )
        if not ok:
            return None
        if len(first) < 8 or first != second:
            self._said("Not encrypted: the passphrases differ or are shorter than 8 characters.")
            return None
        return first

    def encrypt(self) -> None:
        available, _why = Engine.keyring_available()
        passphrase = None
        if not available:
            passphrase = self._new_passphrase()
            if passphrase is None:
                return
        if not self._sure(
            "Encrypt your memories?",
            "Other Mnemo windows and agents pause for a moment while the database is "
            "rewritten. You will see a recovery key once: keep it somewhere safe.",
        ):
            return
        store = "passphrase" if passphrase else "keyring"
        self.result.setText("Encrypting…")
        self.worker.call(
            lambda e: e.vault.encrypt(store, passphrase), self._recovery, self._failed, INTERACTIVE
        )

    def rotate(self) -> None:
        if not self._sure(
            "Give the database a new key?",
            "The old key and recovery key stop opening it (snapshots taken before keep "
            "theirs). You will see the new recovery key once.",
        ):
            return
        self.worker.call(lambda e: e.vault.rotate_key(), self._recovery, self._failed, INTERACTIVE)

    def decrypt(self) -> None:
        if not self._sure(
            "Decrypt your memories?",
            "The database is written back in the clear: anyone with the disk can read it.",
        ):
            return
        self.worker.call(
            lambda e: e.vault.decrypt(),
            lambda _: self._said("Decrypted."),
            self._failed,
            INTERACTIVE,
        )

    def _recovery(self, recovery: str) -> None:
        box = QtWidgets.QMessageBox(self)
        box.setObjectName("recoveryKey")
        box.setWindowTitle("Your recovery key")
        box.setText(
            "Encrypted. This is your recovery key; it is shown this once.\n"
            "It opens your memories on any machine (mnemo unlock):"
        )
        box.setInformativeText(recovery)
        box.setTextInteractionFlags(Qt.TextSelectableByMouse)
        copy = box.addButton("Copy", QtWidgets.QMessageBox.ActionRole)
        box.addButton(QtWidgets.QMessageBox.Ok)
        copy.clicked.disconnect()
        copy.clicked.connect(lambda: QtGui.QGuiApplication.clipboard().setText(recovery))
        self._said("Encrypted; the recovery key was shown.")
        box.exec()

    # ---- snapshots -----------------------------------------------------------------
    def backup(self) -> None:
        self.worker.call(
            lambda e: e.vault.backup(),
            lambda snap: self._said(f"Snapshot written: {snap.path}"),
            self._failed,
            INTERACTIVE,
        )

    def choose_snapshot(self) -> None:
        folder = paths.database_path().parent / "backups"
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Restore a snapshot", str(folder), "Mnemo snapshots (*.db)"
        )
        if path:
            self.restore(Path(path))

    def restore(self, path: Path) -> None:
        """Check the snapshot, say what it holds, and put it in place on a yes."""

        def checked(found) -> None:
            counts = found.counts
            if not self._sure(
                "Restore this snapshot?",
                f"{path.name} holds {counts['memories']} memories and {counts['trashed']} "
                "in the trash. The database now is kept beside it.",
            ):
                return
            self.worker.call(
                lambda e: e.vault.restore_backup(found),
                lambda out: self._said(
                    f"Restored {out[1]['memories']} memories; the database before is kept "
                    f"as {out[0]}"
                ),
                self._failed,
                INTERACTIVE,
            )

        self.worker.call(lambda e: e.vault.check_backup(path), checked, self._failed, INTERACTIVE)

    def _sure(self, title: str, text: str) -> bool:
        answer = QtWidgets.QMessageBox.question(self, title, text)
        return answer == QtWidgets.QMessageBox.Yes
