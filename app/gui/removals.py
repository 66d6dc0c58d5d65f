"""The manager's removals: to the trash and back, deleted for good after a yes, merges, and
Undo for the last delete or merge (its button in the status bar, Ctrl+Z)."""

from __future__ import annotations

from app.core.memory import Memory
from app.gui.qt import Qt, QtCore, QtWidgets


class Removals:
    """Trash, purge, merge and undo of one manager window (`Manager.removals`)."""

    def __init__(self, window) -> None:
        self.window = window  # its selection, editor, status bar and worker
        self._last_deleted: list[str] = []
        self._last_merge: str | None = None

    def delete_selected(self) -> None:
        """Move the selected memories to the trash (Undo brings them back); those already
        in the trash are deleted for good, after a yes."""
        chosen = self.window.selected()
        ids = [m.id for m in chosen if not m.deleted_at]
        if ids:
            self.window._write(lambda e: e.forget(ids), self._deleted)
        trashed = [m.id for m in chosen if m.deleted_at]
        if trashed and self._sure_to_purge(len(trashed)):
            self.window._write(lambda e: e.purge(trashed), lambda n: self._purged(n, trashed))

    def empty_trash(self) -> None:
        """Delete every memory in the trash for good, after a yes."""
        count = (self.window._overview or {}).get("trash")
        if count == 0:
            self.window.statusBar().showMessage("The trash is empty.", 4000)
            return
        if self._sure_to_purge(count):
            self.window._write(lambda e: e.empty_trash(), self._purged)

    def _sure_to_purge(self, count: int | None) -> bool:
        """Ask before deleting for good: Delete or Cancel, Cancel by default."""
        what = (
            "every memory in the trash"
            if count is None
            else (f"{count:,} {'memory' if count == 1 else 'memories'} from the trash")
        )
        box = QtWidgets.QMessageBox(
            QtWidgets.QMessageBox.Warning,
            "Mnemo",
            f"Delete {what} for good?",
            QtWidgets.QMessageBox.Cancel,
            self.window,
        )
        box.setObjectName("purgeQuestion")
        box.setInformativeText(
            "Their text is erased from the database and its index; this cannot be undone."
        )
        delete = box.addButton("Delete for good", QtWidgets.QMessageBox.DestructiveRole)
        box.setDefaultButton(QtWidgets.QMessageBox.Cancel)
        box.setWindowModality(Qt.WindowModal)
        box.exec()
        return box.clickedButton() is delete

    def _purged(self, count: int, ids: list[str] | None = None) -> None:
        """`ids` deleted for good (None: the whole trash)."""
        current = self.window._current
        if current is not None and current.deleted_at and (ids is None or current.id in ids):
            self.window._load(None)  # it is gone: nothing to edit or save into
        self.window.statusBar().showMessage(
            f"Deleted {count:,} {'memory' if count == 1 else 'memories'} for good.", 8000
        )

    def _deleted(self, ids: list[str]) -> None:
        self._let_go(ids)
        self._last_deleted = list(ids)
        self._last_merge = None
        self.window.undo_button.setText(f"Undo delete ({len(ids)})")
        self.window.undo_button.setVisible(True)
        self.window.statusBar().showMessage(f"Moved {len(ids)} to the trash.", 8000)

    def undo(self) -> None:
        """Undo the last delete (or merge): the originals come back from the trash."""
        ids, self._last_deleted = self._last_deleted, []
        merged, self._last_merge = self._last_merge, None
        self.window.undo_button.setVisible(False)
        if ids:
            self.window._write(lambda e: e.restore(ids), self._undone)
        elif merged:
            self.window._write(lambda e: e.unmerge(merged), lambda ids: self._unmerged(merged, ids))

    def unmerge(self, merged: str) -> None:
        """Undo a merge (its History tab's *Unmerge*): the originals come back as they were,
        the merged memory goes to the trash."""
        self.window._write(lambda e: e.unmerge(merged), lambda ids: self._unmerged(merged, ids))

    def _unmerged(self, merged: str, ids: list[str]) -> None:
        """The merged memory went to the trash: the editor lets go of it (a save would have
        gone into the trash, where nothing finds it)."""
        self._let_go([merged])
        self._undone(ids)

    def _let_go(self, trashed: list[str]) -> None:
        """The editor lets go of a memory that went to the trash; with unsaved edits it
        keeps them, and Save stores them as a new memory."""
        if self.window._current is None or self.window._current.id not in trashed:
            return
        if not self.window.editor_dirty():
            self.window._load(None)
            return
        self.window._current = None
        self.window.f_info.setText("New memory (the one you edited went to the trash)")

    def _undone(self, ids: list[str]) -> None:
        count = len(ids)
        self.window.statusBar().showMessage(
            f"Brought back {count} {'memory' if count == 1 else 'memories'}.", 5000
        )

    def restore_selected(self) -> None:
        """Bring the selected memories back from the trash."""
        ids = [m.id for m in self.window.selected() if m.deleted_at]
        if ids:
            self.window._write(lambda e: e.restore(ids), self._undone)

    def merge_selected(self) -> None:
        """Merge the selected memories into a new one keeping every statement (the
        originals go to the trash; Undo brings them back)."""
        ids = [m.id for m in self.window.selected()]
        if len(ids) < 2:
            self.window.statusBar().showMessage("Select two or more memories to merge.", 4000)
            return
        self.window._write(lambda e: e.merge(ids), self._merged)

    def _merged(self, memory: Memory) -> None:
        self._last_merge = memory.id
        self._last_deleted = []
        self.window.undo_button.setText("Undo merge")
        self.window.undo_button.setVisible(True)
        self.window.statusBar().showMessage(
            f"Merged into “{memory.display_title}”: every statement is kept; the originals "
            "are in the trash.",
            8000,
        )
        QtCore.QTimer.singleShot(0, lambda: self.window.select_memory(memory.id))
