"""The manager's "Conflicts" view (issue 40): memories edited on two devices apart, each
with its versions side by side and who wrote them; keep it as merged, keep one version, or
split it into the versions (unmerge). Like Joplin's conflicts notebook, but nothing is
lost whichever is chosen: the versions stay in the trash."""

from __future__ import annotations

from app.core.display import age
from app.gui.qt import Qt, QtWidgets
from app.gui.worker import INTERACTIVE, Worker

PREVIEW_CHARS = 4000  # of each text, in the panes


class ConflictsDialog(QtWidgets.QDialog):
    """Lists the memories edited apart; the selected one as merged and each of its
    versions below, with what to do about it."""

    def __init__(self, conflicts: list[dict], worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("conflictsDialog")
        self.worker = worker
        self.resize(980, 640)
        self.list = QtWidgets.QListWidget(objectName="conflictsList")
        self.merged = QtWidgets.QPlainTextEdit(objectName="conflictMerged", readOnly=True)
        self.versions = QtWidgets.QTabWidget(objectName="conflictVersions")
        self.keep_merged = QtWidgets.QPushButton("Keep as merged", objectName="keepMerged")
        self.keep_merged.setToolTip(
            "The memory stays as it is (every statement of both); its versions stay in the "
            "trash, no longer linked"
        )
        self.keep_version = QtWidgets.QPushButton("Keep this version", objectName="keepVersion")
        self.keep_version.setToolTip("The memory takes the text of the version shown")
        self.split = QtWidgets.QPushButton("Split into the versions", objectName="splitVersions")
        self.split.setToolTip("Undo the merge: each version becomes a memory of its own again")
        self.keep_merged.clicked.connect(lambda: self._resolve(None))
        self.keep_version.clicked.connect(self._keep_shown)
        self.split.clicked.connect(self._split)
        self.status = QtWidgets.QLabel(objectName="conflictsStatus")
        self.status.setWordWrap(True)
        intro = QtWidgets.QLabel(
            "Each of these was edited on two of your devices while they could not see each "
            "other. Mnemo kept both: the memory holds every statement of both versions, and "
            "each version is in the trash. Whatever you choose, nothing is deleted."
        )
        intro.setWordWrap(True)
        merged_box = QtWidgets.QGroupBox("As merged")
        QtWidgets.QVBoxLayout(merged_box).addWidget(self.merged)
        right = QtWidgets.QWidget()
        side = QtWidgets.QVBoxLayout(right)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(merged_box, 2)
        side.addWidget(self.versions, 3)
        buttons = QtWidgets.QHBoxLayout()
        for button in (self.keep_merged, self.keep_version, self.split):
            buttons.addWidget(button)
        buttons.addStretch(1)
        side.addLayout(buttons)
        split = QtWidgets.QSplitter(Qt.Horizontal)
        split.addWidget(self.list)
        split.addWidget(right)
        split.setSizes([300, 680])
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        self.list.currentRowChanged.connect(self._show)
        self.fill(conflicts)

    def fill(self, conflicts: list[dict]) -> None:
        """Show these conflicts (the list read again after each decision)."""
        self.conflicts = conflicts
        self.setWindowTitle(f"Conflicts ({len(conflicts)})")
        self.list.clear()
        for item in conflicts:
            where = " (in the trash)" if item["trashed"] else ""
            self.list.addItem(f"{item['title']}{where}")
        for button in (self.keep_merged, self.keep_version, self.split):
            button.setEnabled(bool(conflicts))
        if conflicts:
            self.list.setCurrentRow(0)
        else:
            self.merged.setPlainText("")
            self.versions.clear()
            self.status.setText("Nothing waits: no memory edited on two devices apart.")

    def _show(self, row: int) -> None:
        self.versions.clear()
        if not 0 <= row < len(self.conflicts):
            return
        item = self.conflicts[row]
        self.merged.setPlainText(item["text"][:PREVIEW_CHARS])
        for version in item["versions"]:
            pane = QtWidgets.QPlainTextEdit(readOnly=True)
            pane.setObjectName(f"version-{version['id']}")
            pane.setPlainText(version["text"][:PREVIEW_CHARS])
            self.versions.addTab(pane, f"{version['device_name']}, {age(version['at'])}")

    def _current(self) -> dict | None:
        row = self.list.currentRow()
        return self.conflicts[row] if 0 <= row < len(self.conflicts) else None

    def _keep_shown(self) -> None:
        item = self._current()
        if item is not None:
            self._resolve(item["versions"][self.versions.currentIndex()]["id"])

    def _resolve(self, keep: str | None) -> None:
        item = self._current()
        if item is None:
            return
        memory_id = item["id"]
        self.worker.call(
            lambda e: e.sync.resolve(memory_id, keep),
            lambda _: self._done("Kept as merged." if keep is None else "Kept that version."),
            self.status.setText,
            INTERACTIVE,
            writes=True,
        )

    def _split(self) -> None:
        item = self._current()
        if item is None:
            return
        memory_id = item["id"]
        self.worker.call(
            lambda e: e.unmerge(memory_id),
            lambda ids: self._done(f"Split into {len(ids)} memories."),
            self.status.setText,
            INTERACTIVE,
            writes=True,
        )

    def _done(self, what: str) -> None:
        self.status.setText(what)
        self.worker.call(lambda e: e.sync.conflicts(), self._again, self.status.setText)

    def _again(self, conflicts: list[dict]) -> None:
        said = self.status.text()
        self.fill(conflicts)
        if conflicts:
            self.status.setText(said)
