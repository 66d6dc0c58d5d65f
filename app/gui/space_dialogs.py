"""The small windows of Settings → Spaces (issue 45): what a person types to create a space,
invite a device or join with an invitation, and the invitation made, shown as text and as a
QR code. They only gather and show; `SpacesPage` hands what they gathered to the engine."""

from __future__ import annotations

from pathlib import Path

from app.core import paths
from app.gui.qr import qr_pixmap
from app.gui.qt import Qt, QtGui, QtWidgets, Signal

INVITATION_BYTES = 64 * 1024  # an invitation is about 1,000 characters (as `mnemo space join`)


def folder_row(edit: QtWidgets.QLineEdit, title: str, name: str) -> QtWidgets.QWidget:
    """A folder field with its Choose… button."""
    row = QtWidgets.QWidget()
    layout = QtWidgets.QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(edit, 1)
    choose = QtWidgets.QPushButton("Choose…", objectName=name)

    def chosen() -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(row, title, edit.text())
        if path:
            edit.setText(path)

    choose.clicked.connect(chosen)
    layout.addWidget(choose)
    return row


class _Form(QtWidgets.QDialog):
    """A titled form with OK and Cancel, its OK enabled once the required fields are filled.
    OK sends `submitted` and the window stays open: the page closes it once the engine did
    what was asked (`succeeded`), or shows the refusal in it (`refused`), what was typed kept."""

    submitted = Signal()

    def __init__(self, title: str, about: str, ok: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(560)
        self.form = QtWidgets.QFormLayout()
        self.buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.Ok | QtWidgets.QDialogButtonBox.Cancel
        )
        self.ok_button = self.buttons.button(QtWidgets.QDialogButtonBox.Ok)
        self.ok_button.setText(ok)
        self.buttons.accepted.connect(self._submit)
        self.buttons.rejected.connect(self.reject)
        text = QtWidgets.QLabel(about)
        text.setWordWrap(True)
        self.refusal = QtWidgets.QLabel(objectName="formRefusal")
        self.refusal.setWordWrap(True)
        self.refusal.setTextFormat(Qt.PlainText)
        self.refusal.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.refusal.setStyleSheet("color: palette(link);")
        self.refusal.hide()
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(text)
        layout.addLayout(self.form)
        layout.addWidget(self.refusal)
        layout.addWidget(self.buttons)

    def _submit(self) -> None:
        self.refusal.hide()
        self.ok_button.setEnabled(False)  # (until the engine answers)
        self.submitted.emit()

    def refused(self, message: str) -> None:
        """The engine refused: why, in the window, which stays open with what was typed."""
        self.refusal.setText(message)
        self.refusal.show()
        self.ok_button.setEnabled(True)

    def succeeded(self) -> None:
        """The engine did it: the window closes."""
        self.accept()

    def required(self, *fields) -> None:
        """OK only when each of these fields holds text."""

        def check() -> None:
            self.ok_button.setEnabled(all(_text(f) for f in fields))

        for field in fields:
            field.textChanged.connect(check)
        check()


class CreateDialog(_Form):
    """A new space: its name, its folder, the person this device is."""

    def __init__(self, person: str, parent=None):
        super().__init__(
            "Create a space",
            "A space is shared with named people through a folder of its own: share the "
            "folder with their devices (Syncthing, or any folder sync), then invite each "
            "device.",
            "Create",
            parent,
        )
        self.setObjectName("spacesCreateDialog")
        self.name = QtWidgets.QLineEdit(objectName="spaceName")
        self.name.setPlaceholderText("team")
        self.folder = QtWidgets.QLineEdit(objectName="spaceFolder")
        self.folder.setPlaceholderText("made if missing, e.g. ~/Sync/team")
        self.person = QtWidgets.QLineEdit(person, objectName="spacePerson")
        self.person.setToolTip("The name your teammates see you by in this space")
        self.form.addRow("Name", self.name)
        self.form.addRow("Folder", folder_row(self.folder, "The space's folder", "spaceChoose"))
        self.form.addRow("Your name", self.person)
        self.required(self.name, self.folder, self.person)


class InviteDialog(_Form):
    """A device to invite: its id (what its Settings → Spaces shows) and the person's name."""

    def __init__(self, space: str, parent=None):
        super().__init__(
            f"Invite a device to {space}",
            "Paste the id the other device shows in its Settings → Spaces (or `mnemo space "
            "id` prints). The invitation made can be opened by that device only.",
            "Invite",
            parent,
        )
        self.setObjectName("spacesInviteDialog")
        self.device = QtWidgets.QLineEdit(objectName="inviteDevice")
        self.device.setPlaceholderText("44 letters, digits, + and /, ending in =")
        self.person = QtWidgets.QLineEdit(objectName="invitePerson")
        self.person.setPlaceholderText("empty: a device of yours; or a new person, e.g. bob")
        self.form.addRow("Device id", self.device)
        self.form.addRow("Person", self.person)
        self.required(self.device)


class JoinDialog(_Form):
    """An invitation (pasted or read from a file) and the folder the space arrives in."""

    def __init__(self, parent=None):
        super().__init__(
            "Join a space",
            "Paste the invitation you were given (or load the file holding it), and choose "
            "this device's copy of the folder the members share (Syncthing's).",
            "Join",
            parent,
        )
        self.setObjectName("spacesJoinDialog")
        self.invitation = QtWidgets.QPlainTextEdit(objectName="joinInvitation")
        self.invitation.setPlaceholderText("mnemo-invite:…")
        self.invitation.setMaximumHeight(110)
        self.invitation.setWordWrapMode(QtGui.QTextOption.WrapAnywhere)  # (one long word)
        load = QtWidgets.QPushButton("Load from file…", objectName="joinLoad")
        load.clicked.connect(self._load)
        self.problem = QtWidgets.QLabel(objectName="joinProblem")
        self.problem.setWordWrap(True)
        self.folder = QtWidgets.QLineEdit(objectName="joinFolder")
        self.folder.setPlaceholderText("the shared folder, e.g. ~/Sync/team")
        column = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(column)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.invitation)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(load)
        row.addWidget(self.problem, 1)
        layout.addLayout(row)
        self.form.addRow("Invitation", column)
        self.form.addRow("Folder", folder_row(self.folder, "The space's folder", "joinChoose"))
        self.local_name = QtWidgets.QLineEdit(objectName="joinName")
        self.local_name.setPlaceholderText("as the invitation names it")
        self.local_name.setToolTip("The space's name on this device (needed when it is taken)")
        self.form.addRow("Name here", self.local_name)
        self.wait = QtWidgets.QCheckBox(
            "The folder has not arrived yet: join now and wait for it", objectName="joinWait"
        )
        self.form.addRow("", self.wait)
        self.required(self.invitation, self.folder)

    def _load(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "The invitation's file")
        if path:
            self.load(Path(path))

    def load(self, path: Path) -> None:
        """Put the text of the file at `path` in the invitation field (its start only:
        an invitation is short), or say why it cannot be read."""
        try:
            with paths.open_regular(path) as f:
                data = f.read(INVITATION_BYTES)
        except OSError as exc:
            self.problem.setText(f"cannot read {path.name}: {exc.strerror or exc}")
            return
        self.problem.setText("")
        self.invitation.setPlainText(data.decode("utf-8", errors="replace").strip())


class InvitationDialog(QtWidgets.QDialog):
    """The invitation made: its text to copy and its QR code, and what it allows."""

    def __init__(self, invitation: str, space: str, person: str, parent=None):
        super().__init__(parent)
        self.setObjectName("spacesInvitation")
        self.setWindowTitle(f"Invitation to {space}")
        self.invitation = invitation
        about = QtWidgets.QLabel(
            f"<b>{_escape(person)}</b> is admitted to <b>{_escape(space)}</b>. Give them this "
            "invitation (a message, a file, or the QR code). It is <b>valid 7 days</b> and "
            "<b>only their device can open it</b>: it is useless to anyone else. Share the "
            "space's folder with their device too; they join in Settings → Spaces → Join…",
            objectName="invitationAbout",
        )
        about.setWordWrap(True)
        self.text = QtWidgets.QPlainTextEdit(invitation, objectName="invitationText")
        self.text.setReadOnly(True)
        self.text.setMaximumHeight(90)
        self.text.setWordWrapMode(QtGui.QTextOption.WrapAnywhere)  # (one long word)
        self.qr = QtWidgets.QLabel(objectName="invitationQr")
        self.qr.setPixmap(qr_pixmap(invitation, 3))
        self.qr.setAlignment(Qt.AlignCenter)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.Close)
        copy = buttons.addButton("Copy", QtWidgets.QDialogButtonBox.ActionRole)
        copy.setObjectName("invitationCopy")
        copy.clicked.connect(lambda: QtGui.QGuiApplication.clipboard().setText(invitation))
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(about)
        layout.addWidget(self.text)
        layout.addWidget(self.qr)
        layout.addWidget(buttons)
        self.setMinimumWidth(560)


def _text(field) -> str:
    value = field.toPlainText() if isinstance(field, QtWidgets.QPlainTextEdit) else field.text()
    return value.strip()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
