"""Settings → Spaces: the dialog's face of `mnemo space id | list | create | invite | join |
members | remove | leave | removals` (issue 45, ADR 0026). This device's id as text and a QR
code; the spaces it is in and, for the one selected, its members as its folder says now and
the removals en masse held for a person (Apply, Keep mine). Every call
to `engine.spaces` runs on the engine thread (the worker); a refusal (the core's message)
is one line in the page, and nothing changed."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

from app.core.errors import MnemoError
from app.core.space.standing import counted
from app.gui.qr import qr_pixmap
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets, Signal
from app.gui.space_dialogs import CreateDialog, InvitationDialog, InviteDialog, JoinDialog
from app.gui.worker import INTERACTIVE, Worker

LOOK_AGAIN_MS = 10_000  # while the page shows, the members' folders are read again this often


def overview(engine) -> dict:
    """On the engine thread: this device's id and each space with its members (or why its
    folder cannot be read now)."""
    spaces = engine.spaces
    listed = []
    for space in spaces.list():
        try:
            state = spaces.members(space["name"])
            held = spaces.removals(space["name"])
            listed.append({**space, "state": state, "held": held, "problem": ""})
        except MnemoError as exc:
            listed.append({**space, "state": None, "held": [], "problem": str(exc)})
    return {"id": spaces.id(), "spaces": listed}


def standing(space: dict) -> str:
    """This device's state in a space, in words: member, waiting for the folder, not one."""
    state = space["state"]
    if state is None:
        return "folder unreadable"
    if state["member"]:
        return "member"
    return "not a member" if state["arrived"] else "waiting for the folder"


class SpacesPage(QtWidgets.QWidget):
    """This device's id, its spaces and their members; create, invite, join, remove, leave."""

    said = Signal(str)  # what the last action did, or why it did not (one line), for tests
    shown = Signal()  # the spaces as last read are on the page

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("spacesPage")
        self.worker = worker
        self.spaces: list[dict] = []  # as last read (`overview`)
        self.invitation: InvitationDialog | None = None  # the last invitation shown
        self.wanted: str | None = None  # a space to select once the spaces are read (`choose`)
        about = QtWidgets.QLabel(
            "A space shares chosen memories with named people through a folder of its own "
            "(Syncthing, or any folder sync), end to end encrypted, with no server. Its members "
            "are set up here; memories are shared from the manager (Share in space) or with "
            "mnemo remember --space."
        )
        about.setWordWrap(True)
        self.device_id = QtWidgets.QLineEdit(objectName="spacesDeviceId")
        self.device_id.setReadOnly(True)
        self.device_id.setMinimumWidth(self.device_id.fontMetrics().horizontalAdvance("M" * 30))
        copy = QtWidgets.QPushButton("Copy", objectName="spacesCopyId")
        copy.clicked.connect(
            lambda: QtGui.QGuiApplication.clipboard().setText(self.device_id.text())
        )
        self.qr = QtWidgets.QLabel(objectName="spacesQr")
        self.qr.setToolTip("This device's id as a QR code")
        id_help = QtWidgets.QLabel(
            "Whoever invites this device to a space needs this id (it is not a secret)."
        )
        id_help.setWordWrap(True)
        id_box = QtWidgets.QVBoxLayout()
        id_row = QtWidgets.QHBoxLayout()
        id_row.addWidget(self.device_id, 1)
        id_row.addWidget(copy)
        id_box.addWidget(QtWidgets.QLabel("<b>This device's id</b>"))
        id_box.addLayout(id_row)
        id_box.addWidget(id_help)
        id_box.addStretch(1)
        top = QtWidgets.QHBoxLayout()
        top.addLayout(id_box, 1)
        top.addWidget(self.qr)

        self.list = QtWidgets.QTreeWidget(objectName="spacesList")
        self.list.setHeaderLabels(["Space", "Folder", "Members", "This device"])
        self.list.setRootIsDecorated(False)
        self.list.setMinimumHeight(50)
        self.list.currentItemChanged.connect(lambda *_: self._chosen())
        self.create_button = QtWidgets.QPushButton("Create…", objectName="spacesCreate")
        self.join_button = QtWidgets.QPushButton("Join…", objectName="spacesJoin")
        self.invite_button = QtWidgets.QPushButton("Invite…", objectName="spacesInvite")
        self.leave_button = QtWidgets.QPushButton("Leave", objectName="spacesLeave")
        self.rename_button = QtWidgets.QPushButton("Rename…", objectName="spacesRename")
        self.rename_button.setToolTip("The space's name on this device (yours alone)")
        self.move_button = QtWidgets.QPushButton("Folder…", objectName="spacesMove")
        self.move_button.setToolTip("Where the space's folder is now, when it moved")
        self.rename_button.clicked.connect(self.ask_rename)
        self.move_button.clicked.connect(self.ask_move)
        self.create_button.clicked.connect(self.ask_create)
        self.join_button.clicked.connect(self.ask_join)
        self.invite_button.clicked.connect(self.ask_invite)
        self.leave_button.clicked.connect(self.leave)
        space_buttons = QtWidgets.QHBoxLayout()
        for button in (self.create_button, self.join_button, self.invite_button):
            space_buttons.addWidget(button)
        space_buttons.addStretch(1)
        for button in (self.rename_button, self.move_button, self.leave_button):
            space_buttons.addWidget(button)

        self.members = QtWidgets.QTreeWidget(objectName="spacesMembers")
        self.members.setHeaderLabels(["Member", "Device id"])
        self.members.setMinimumHeight(72)
        self.members.currentItemChanged.connect(lambda *_: self._enable())
        self.remove_button = QtWidgets.QPushButton("Remove member", objectName="spacesRemove")
        self.remove_button.clicked.connect(self.remove)
        self.details = QtWidgets.QLabel(objectName="spacesDetails")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.PlainText)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        below_members = QtWidgets.QHBoxLayout()  # (what the fold said, beside the button)
        below_members.addWidget(self.details, 1)
        below_members.addWidget(self.remove_button, 0, Qt.AlignTop)
        self.held_box = self._held_box()
        self.status = QtWidgets.QLabel(objectName="spacesStatus")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.PlainText)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.status.setMaximumHeight(self.status.fontMetrics().lineSpacing() * 2 + 4)  # (a
        # long refusal does not take the members' rows: the window that was refused says
        # it whole, and so does the tooltip)

        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(about)
        layout.addLayout(top)
        layout.addWidget(QtWidgets.QLabel("<b>Spaces this device is in</b>"))
        layout.addWidget(self.list, 1)
        layout.addLayout(space_buttons)
        layout.addWidget(QtWidgets.QLabel("<b>Members of the space selected</b>"))
        layout.addWidget(self.members, 2)
        layout.addLayout(below_members)
        layout.addWidget(self.held_box)
        layout.addWidget(self.status)
        # What other members did arrives through the folder: read it again while shown
        self._look_again = QtCore.QTimer(self, interval=LOOK_AGAIN_MS)
        self._look_again.timeout.connect(self.refresh)
        self._enable()
        self.refresh()

    def _held_box(self) -> QtWidgets.QWidget:
        """The removals en masse held in the space selected, by member: Apply, Keep mine
        (`mnemo space removals NAME apply|keep MEMBER`); shown only while some wait."""
        box = QtWidgets.QWidget(objectName="spacesHeldBox")
        self.held = QtWidgets.QTreeWidget(objectName="spacesHeld")
        self.held.setHeaderLabels(["Member", "Memories", "Some of them"])
        self.held.setRootIsDecorated(False)
        self.held.setMinimumHeight(50)
        self.held.setMaximumHeight(self.held.fontMetrics().height() * 6)  # (a row per member)
        self.held.currentItemChanged.connect(lambda *_: self._enable())
        self.apply_button = QtWidgets.QPushButton("Apply", objectName="spacesApplyRemovals")
        self.apply_button.setToolTip(
            "Let them through: these memories go to your trash here (you can restore them)"
        )
        self.keep_button = QtWidgets.QPushButton("Keep mine", objectName="spacesKeepRemovals")
        self.keep_button.setToolTip(
            "Keep your copies here: no longer shared, yours (nothing is sent to the others)"
        )
        self.apply_button.clicked.connect(self.apply_removals)
        self.keep_button.clicked.connect(self.keep_removals)
        about = QtWidgets.QLabel(
            "A member would withdraw or trash many of the memories here at once: none of them "
            "left your view. Apply lets them go (to your trash); Keep mine keeps your copies, "
            "no longer shared."
        )
        about.setWordWrap(True)
        buttons = QtWidgets.QVBoxLayout()
        buttons.addWidget(self.apply_button)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.held, 1)
        row.addLayout(buttons)
        layout = QtWidgets.QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QtWidgets.QLabel("<b>Removals held for you</b>"))
        layout.addWidget(about)
        layout.addLayout(row)
        box.hide()
        return box

    # ---- state ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Read this device's id, its spaces and their members again (engine thread)."""
        self.worker.call(overview, self._show, self._failed, INTERACTIVE, channel="spaces")

    def _show(self, seen: dict) -> None:
        if self.device_id.text() != seen["id"]:
            self.device_id.setText(seen["id"])
            self.device_id.setCursorPosition(0)
            self.qr.setPixmap(qr_pixmap(seen["id"], 3))
        chosen = self.selected()
        chosen_id = chosen["id"] if chosen else None
        if self.wanted is not None:  # (a notification named it)
            wanted = [s["id"] for s in seen["spaces"] if s["name"] == self.wanted]
            chosen_id, self.wanted = (wanted or [chosen_id])[0], None
        was = self.members.currentItem()  # (kept selected when it is still there)
        kept = (was.text(0), was.text(1)) if was is not None else None
        self.spaces = seen["spaces"]
        self.list.blockSignals(True)  # (one members list shown below, not one per row)
        self.list.clear()
        for space in self.spaces:
            state = space["state"]
            count = counted(state["count"]) if state else "?"
            item = QtWidgets.QTreeWidgetItem(
                [
                    space["name"],
                    shown_folder(space["folder"]),
                    count,
                    standing(space),
                ]
            )
            item.setData(0, Qt.UserRole, space["id"])
            item.setToolTip(1, space["folder"])
            self.list.addTopLevelItem(item)
            if space["id"] == chosen_id:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.topLevelItemCount():
            self.list.setCurrentItem(self.list.topLevelItem(0))
        self.list.blockSignals(False)
        for column in range(4):
            self.list.resizeColumnToContents(column)
        self._show_members(kept)
        self.shown.emit()

    def choose(self, name: str) -> None:
        """Select the space `name` once the spaces are read again (now)."""
        self.wanted = name
        self.refresh()

    def selected(self) -> dict | None:
        """The space selected in the list, as last read."""
        item = self.list.currentItem()
        wanted = item.data(0, Qt.UserRole) if item is not None else None
        return next((s for s in self.spaces if s["id"] == wanted), None)

    def _show_members(self, kept: tuple[str, str] | None = None) -> None:
        self.members.clear()
        space = self.selected()
        state = space["state"] if space else None
        if space is None:
            self.details.setText("" if self.spaces else _NO_SPACE)
        elif state is None:
            self.details.setText(f"The folder cannot be read now: {space['problem']}")
        else:
            for person in state["persons"]:
                top = QtWidgets.QTreeWidgetItem([person["person"], ""])
                top.setData(0, Qt.UserRole, ("person", person["id"]))  # (by id: two people
                # may carry one name; a name is only shown)
                for device in person["devices"]:
                    label = (
                        "this device"
                        if device["this"]
                        else "a device"
                        if device["joined"]
                        else "invited, not joined yet"
                    )
                    child = QtWidgets.QTreeWidgetItem([label, device["id"]])
                    child.setData(0, Qt.UserRole, None if device["this"] else ("id", device["id"]))
                    if device["this"]:
                        font = child.font(0)
                        font.setBold(True)
                        child.setFont(0, font)
                        top.setData(0, Qt.UserRole, None)  # (this device's person: leave)
                    top.addChild(child)
                self.members.addTopLevelItem(top)
            for device in state["removed"]:
                this = " (this device)" if device["id"] == state["this_device"] else ""
                item = QtWidgets.QTreeWidgetItem(
                    [f"{device['person'] or '?'}: {device['how']}{this}", device["id"]]
                )
                item.setData(0, Qt.UserRole, None)
                item.setDisabled(True)
                self.members.addTopLevelItem(item)
            self.members.expandAll()
            for item in self.member_items():
                if (item.text(0), item.text(1)) == kept:
                    self.members.setCurrentItem(item)
            for column in range(2):
                self.members.resizeColumnToContents(column)
            self.details.setText("\n".join(_details(state)))
        self._show_held(space["held"] if space else [])
        self._enable()

    def _show_held(self, held: list[dict]) -> None:
        """The removals held in the space selected: a row per member (the first chosen)."""
        self.held.clear()
        for one in held:
            titles = "; ".join(one["titles"]) + (
                "; …" if one["memories"] > len(one["titles"]) else ""
            )
            item = QtWidgets.QTreeWidgetItem([one["member"], str(one["memories"]), titles])
            item.setData(0, Qt.UserRole, (one["member"], one["memories"]))
            item.setToolTip(2, "\n".join(one["titles"]))
            self.held.addTopLevelItem(item)
        if held:
            self.held.setCurrentItem(self.held.topLevelItem(0))
            for column in range(2):
                self.held.resizeColumnToContents(column)
        self.held_box.setVisible(bool(held))

    def chosen_held(self) -> tuple[str, int] | None:
        """The member whose held removals are selected, and how many: (person, count)."""
        item = self.held.currentItem()
        return item.data(0, Qt.UserRole) if item is not None else None

    def member_items(self) -> list[QtWidgets.QTreeWidgetItem]:
        """Every row of the members list: each person, then their devices; the removed."""
        tops = [self.members.topLevelItem(i) for i in range(self.members.topLevelItemCount())]
        return [i for top in tops for i in [top] + [top.child(c) for c in range(top.childCount())]]

    def chosen_member(self) -> tuple[str, str] | None:
        """The member selected: ("person", person id) or ("id", device id); None when it cannot be
        removed from here (this device, its person, one already gone)."""
        item = self.members.currentItem()
        return item.data(0, Qt.UserRole) if item is not None else None

    def _enable(self) -> None:
        space = self.selected()
        member = bool(space and space["state"] and space["state"]["member"])
        self.invite_button.setEnabled(member)
        self.leave_button.setEnabled(space is not None)
        self.remove_button.setEnabled(member and self.chosen_member() is not None)
        self.apply_button.setEnabled(self.chosen_held() is not None)
        self.keep_button.setEnabled(self.chosen_held() is not None)

    def _chosen(self) -> None:
        """Another space selected: what was said of the last one goes."""
        self.status.clear()
        self._show_members()

    def _failed(self, message: str, dialog=None) -> None:
        line = spoken(message)  # one line, whatever the message holds
        self.status.setText(line)
        self.status.setToolTip(line)
        if dialog is not None:
            dialog.refused(line)
        self.said.emit(line)

    def _asked(self, dialog, act) -> None:
        """`dialog` open, not blocking: OK runs `act(dialog)`; Cancel clears the status."""
        dialog.submitted.connect(lambda: act(dialog))
        dialog.rejected.connect(self.status.clear)
        dialog.open()

    def _done(self, message: str) -> None:
        self.status.setText(message)
        self.said.emit(message)
        self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        self._look_again.start()
        self.refresh()  # (opened from a notification: what waits now)
        super().showEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt API
        self._look_again.stop()
        super().hideEvent(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.key() == Qt.Key_F5:
            self.refresh()
        else:
            super().keyPressEvent(event)

    # ---- actions -------------------------------------------------------------------
    def ask_create(self) -> CreateDialog:
        """The Create window (not blocking); Create makes the space."""
        dialog = CreateDialog(_login(), self)
        self._asked(
            dialog, lambda d: self.create(d.name.text(), d.folder.text(), d.person.text(), d)
        )
        return dialog

    def create(self, name: str, folder: str, person: str = "", dialog=None) -> None:
        """Make the space `name` in `folder` with this device as its first member."""
        where = _folder(folder)
        if where is None:
            self._failed("Choose the space's folder first.", dialog)
            return

        def made(state: dict) -> None:
            _close(dialog)
            self._done(
                f"Space {state['name']} made in {state['folder']}. Share the folder with your "
                "team, then invite each device (Invite…)."
            )

        self.worker.call(
            lambda e: e.spaces.create(name, where, person.strip() or None),
            made,
            lambda message: self._failed(message, dialog),
            INTERACTIVE,
        )

    def ask_invite(self) -> InviteDialog | None:
        """The Invite window for the space selected (not blocking)."""
        space = self.selected()
        if space is None:
            self._failed("Select a space first.")
            return None
        dialog = InviteDialog(space["name"], self)
        self._asked(
            dialog, lambda d: self.invite(space["name"], d.device.text(), d.person.text(), d)
        )
        return dialog

    def invite(self, space: str, device: str, person: str = "", dialog=None) -> None:
        """Admit `device` to `space` for `person`, then show the invitation made."""

        def shown(made: tuple[str, str]) -> None:
            _close(dialog)
            invitation, named = made
            self.invitation = InvitationDialog(invitation, space, named, self)
            self.invitation.open()
            self._done(f"Invited {named} to {space}: give them the invitation (valid 7 days).")

        self.worker.call(
            lambda e: e.spaces.invite(space, device, person.strip() or None),
            shown,
            lambda message: self._failed(message, dialog),
            INTERACTIVE,
        )

    def ask_join(self) -> JoinDialog:
        """The Join window (not blocking); Join joins."""
        dialog = JoinDialog(self)
        self._asked(
            dialog,
            lambda d: self.join(
                d.invitation.toPlainText(),
                d.folder.text(),
                d.local_name.text(),
                d.wait.isChecked(),
                d,
            ),
        )
        return dialog

    def join(
        self, invitation: str, folder: str, name: str = "", wait: bool = False, dialog=None
    ) -> None:
        """Join the space `invitation` names through `folder`, called `name` here (or as the
        invitation says); `wait`: though the folder holds nothing of the space yet."""
        where = _folder(folder)
        if where is None:
            self._failed("Choose the space's folder first.", dialog)
            return
        text, name = invitation.strip(), name.strip() or None

        def joined(state: dict) -> None:
            _close(dialog)
            waits = (
                ""
                if state["member"]
                else " The members' events that admit this device have not reached the "
                "folder yet: share it with them."
            )
            self._done(f"Joined {state['name']} through {state['folder']}.{waits}")

        self.worker.call(
            lambda e: e.spaces.join(text, where, name, wait),
            joined,
            lambda message: self._failed(message, dialog),
            INTERACTIVE,
        )

    def ask_rename(self) -> None:
        """Ask for the selected space's new name here (blocking), then rename it."""
        space = self.selected()
        if space is None:
            self._failed("Select a space first.")
            return
        new, ok = QtWidgets.QInputDialog.getText(
            self, "Rename the space", "Its name on this device:", text=space["name"]
        )
        if ok and new.strip():
            self.rename(space["name"], new)

    def rename(self, space: str, new: str) -> None:
        """Call the space `space` `new` on this device."""
        self.worker.call(
            lambda e: e.spaces.rename(space, new),
            lambda name: self._done(f"The space {space} is called {name} here now."),
            self._failed,
            INTERACTIVE,
        )

    def ask_move(self) -> None:
        """Ask where the selected space's folder is now (blocking), then point at it."""
        space = self.selected()
        if space is None:
            self._failed("Select a space first.")
            return
        path = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Where the space's folder is now", space["folder"]
        )
        if path:
            self.move(space["name"], path)

    def move(self, space: str, folder: str) -> None:
        """Read the space `space` through `folder` from now on."""
        where = _folder(folder)
        self.worker.call(
            lambda e: e.spaces.move(space, where),
            lambda state: self._done(f"The space {space} is read through {state['folder']} now."),
            self._failed,
            INTERACTIVE,
        )

    def remove(self) -> None:
        """Remove the member selected from the space selected, once the person confirms."""
        space, member = self.selected(), self.chosen_member()
        if space is None or member is None:
            self._failed("Select another member of a space first.")
            return
        shown = self.members.currentItem().text(0)
        who = shown if member[0] == "person" else f"the device {member[1][:12]}…"
        if not self._sure(
            f"Remove {who} from {space['name']}?",
            f"The space's key changes: {who} reads nothing written in {space['name']} after "
            "this. What they already had stays theirs (their copy of the folder, what they "
            "read).",
        ):
            return
        name, target = space["name"], member[1]
        self.worker.call(
            lambda e: e.spaces.remove(name, target),
            lambda gone: self._done(
                "Removed "
                + ", ".join(d["person"] or d["id"][:12] for d in gone["devices"])
                + f" from {name}; the space's key was changed."
            ),
            self._failed,
            INTERACTIVE,
        )

    def leave(self) -> None:
        """This device leaves the space selected, once the person confirms."""
        space = self.selected()
        if space is None:
            self._failed("Select a space first.")
            return
        name = space["name"]
        if not self._sure(
            f"Leave {name}?",
            f"This device leaves {name} and forgets it: it reads nothing written there after. "
            "The folder is left as it is (delete or unshare it yourself). To come back, a "
            "member invites this device again.",
        ):
            return
        self.worker.call(
            lambda e: e.spaces.leave(name),
            lambda left: self._done(
                f"This device left {name}; the folder is left as it is."
                if left is not None
                else f"This device left {name} here; its folder is missing or unreadable, so "
                "the members could not be told: one of them removes this device."
            ),
            self._failed,
            INTERACTIVE,
        )

    def apply_removals(self) -> None:
        """Let the selected member's held removals through: into the trash here (a pass)."""
        space, chosen = self.selected(), self.chosen_held()
        if space is None or chosen is None:
            self._failed("Select a member's held removals first.")
            return
        name, (person, count) = space["name"], chosen
        self.worker.call(
            lambda e: e.spaces.apply_removals(name, person),
            lambda _report: self._done(
                f"{count} memories {person} withdrew or trashed went to your trash here (the "
                "manager's trash brings one back)."
            ),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def keep_removals(self) -> None:
        """Refuse the selected member's held removals: the copies stay here, unshared."""
        space, chosen = self.selected(), self.chosen_held()
        if space is None or chosen is None:
            self._failed("Select a member's held removals first.")
            return
        name, person = space["name"], chosen[0]
        self.worker.call(
            lambda e: e.spaces.keep_removals(name, person),
            lambda kept: self._done(
                f"Kept {kept} memories of {person} here: no longer shared, yours now."
            ),
            self._failed,
            INTERACTIVE,
            writes=True,
        )

    def _sure(self, title: str, text: str) -> bool:
        answer = QtWidgets.QMessageBox.question(self, title, text)
        return answer == QtWidgets.QMessageBox.Yes


_NO_SPACE = (
    "This device is in no space yet: create one, or join one with an invitation someone "
    "made for this device's id."
)


def _details(state: dict) -> list[str]:
    """What the fold said of a space, beyond its members, a line each."""
    lines = []
    if state["epoch"]:
        lines.append(f"Key: epoch {state['epochs']} ({state['epoch'][:12]})")
    if not state["member"]:
        lines.append(
            f"This device is not a member any more ({state['gone']})."
            if state["arrived"]
            else "This device waits for the members' events that admit it to reach the folder."
        )
    if state["rotation_due"]:
        lines.append("A new key is due: this device makes it at its next change to the space.")
    elif state["needs_rotation"]:
        lines.append("A new key is due: the next member to change the space makes it.")
    if state["waiting"]:
        lines.append(f"Events waiting for the events they follow: {state['waiting']}")
    for refused in state["refused"][:5]:
        lines.append(f"Refused: an event by {refused['author'][:12]}…: {refused['why']}")
    for problem in state["problems"][:5]:
        lines.append(f"Skipped: {problem}")
    return lines


def shown_folder(folder: str) -> str:
    """A space's folder as its person reads it: one under their home as ~/… (the tooltip
    keeps the whole path)."""
    try:
        return str(Path("~") / Path(folder).relative_to(Path.home()))
    except (ValueError, RuntimeError):  # (not under the home; no home known)
        return folder


def spoken(message) -> str:
    """A core's refusal as the app says it: one line, starting with a capital and ending
    with a full stop, without the command lines it names for the CLI (in brackets)."""
    line = " ".join(str(message).split())
    line = re.sub(r"\s*\([^()]*(`|mnemo |--)[^()]*\)", "", line).strip()
    if line and line[-1] not in ".?!":
        line += "."
    return line[:1].upper() + line[1:]


def _close(dialog) -> None:
    if dialog is not None:
        dialog.succeeded()


def _folder(text: str) -> Path | None:
    text = text.strip()
    return Path(text).expanduser() if text else None


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"
