"""The manager's imports and exports: the file and folder dialogs, a running count, the
report of skipped lines, the export with its plain-text question, and what a drop imports."""

from __future__ import annotations

import time
from pathlib import Path

from app.core import paths
from app.core.errors import PlainCopyRefused
from app.core.storage import transfer
from app.gui.qt import Qt, QtWidgets

REPORT_SECONDS = 15  # how long an import's summary stays in the status bar
REPORT_LINES = 500  # skipped lines listed in the import report
IMPORTABLE = (*transfer.MARKDOWN_SUFFIXES, ".jsonl")


class Transfers:
    """Imports and exports of one manager window (`Manager.transfers`)."""

    def __init__(self, window) -> None:
        self.window = window  # its status bar, progress bar and worker

    def importable(self, urls) -> list[Path]:
        """What of a drag and drop can be imported: folders (every note in them and below)
        and markdown, text and JSONL files."""
        found = [Path(u.toLocalFile()) for u in urls if u.isLocalFile()]
        return [f for f in found if f.is_dir() or f.suffix.lower() in IMPORTABLE]

    def import_dialog(self) -> None:
        """Choose markdown/JSONL files to import."""
        files, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self.window,
            "Import memories",
            "",
            "Markdown, text or JSONL (*.md *.markdown *.txt *.jsonl)",
        )
        if files:
            self.import_paths([Path(f) for f in files])

    def import_folder_dialog(self) -> None:
        """Choose a folder: every markdown, text and JSONL file in it (and below) is imported."""
        folder = QtWidgets.QFileDialog.getExistingDirectory(self.window, "Import a folder of notes")
        if folder:
            self.import_paths([Path(folder)])

    def import_paths(self, files: list[Path]) -> None:
        """Import in the background (with a running count); new memories are embedded next."""
        self.window.progress.setRange(0, 0)
        self.window.progress.setVisible(True)
        self.window.statusBar().showMessage(f"Importing {len(files)} file(s)…")
        report = self.window.worker.progress.emit
        self.window._write(
            lambda e: e.import_paths(files, progress=lambda n: report("import", n, 0)),
            self._imported,
        )

    def _imported(self, result) -> None:
        self.window.progress.setVisible(False)
        updated = f", {result.updated} updated" if result.updated else ""
        n = len(result.errors)
        skipped = f"; {n} line{'s' if n != 1 else ''} skipped" if n else ""
        summary = f"Imported {result.added} new ({result.skipped} already known{updated}{skipped})"
        # The summary stays while the list refreshes (a search's count would replace it).
        self.window._report_until = time.monotonic() + REPORT_SECONDS
        self.window.statusBar().showMessage(
            f"{summary}; embedding them in the background.", REPORT_SECONDS * 1000
        )
        if result.errors:
            self._show_import_report(summary, result.errors)

    def _show_import_report(self, summary: str, errors: list[str]) -> None:
        """Which lines were skipped and why (file:line: reason), in a window that stays."""
        box = QtWidgets.QMessageBox(
            QtWidgets.QMessageBox.Warning, "Mnemo import", f"{summary}.", parent=self.window
        )
        box.setObjectName("importReport")
        box.setInformativeText(
            "The skipped lines were not stored at all. Fix them and import the file again: "
            "what was imported already is not added twice."
        )
        shown = errors[:REPORT_LINES]
        more = len(errors) - len(shown)
        box.setDetailedText("\n".join(shown) + (self._whole_report(errors) if more else ""))
        box.setModal(False)
        box.setAttribute(Qt.WA_DeleteOnClose)
        self.window.import_report = box
        box.show()

    @staticmethod
    def _whole_report(errors: list[str]) -> str:
        """The end of a report too long to show: every skipped line goes to a file (private
        to the user: a reason may quote what was skipped), named here."""
        more = len(errors) - REPORT_LINES
        path = paths.state_dir() / "import-skipped.txt"
        try:
            paths.replace_file(path, lambda f: f.write("\n".join(errors) + "\n"))
        except OSError as exc:
            return f"\n… and {more} more (the whole list could not be written to {path}: {exc})"
        return f"\n… and {more} more: every skipped line is in {path}"

    def export_dialog(self) -> None:
        """Export every memory to JSONL (lossless) or markdown."""
        path, kind = QtWidgets.QFileDialog.getSaveFileName(
            self.window,
            "Export memories",
            "mnemo-export.jsonl",
            "JSONL, lossless (*.jsonl);;Markdown (*.md)",
        )
        if not path:
            return
        self.export_to(
            Path(path), "markdown" if path.endswith(".md") or "Markdown" in kind else "jsonl"
        )

    def export_to(self, path: Path, fmt: str, plain: bool = False) -> None:
        """Export in the background with a progress bar; written atomically. Out of an
        encrypted database only once the user says yes to a plain-text file."""
        report = self.window.worker.progress.emit

        def exported(count: int) -> None:
            self.window.progress.setVisible(False)
            self.window.statusBar().showMessage(f"Exported {count:,} memories to {path}.", 8000)

        def failed(failure) -> None:
            if not isinstance(getattr(failure, "error", None), PlainCopyRefused):
                self.window._failed_write(failure)
                return
            self.window.progress.setVisible(False)
            answer = QtWidgets.QMessageBox.question(
                self.window,
                "Export in plain text?",
                "Your memories are encrypted on disk. The export is a plain-text file that "
                "anyone who gets it can read.\n\nExport anyway?",
            )
            if answer == QtWidgets.QMessageBox.Yes:
                self.export_to(path, fmt, plain=True)

        self.window.progress.setRange(0, 0)
        self.window.progress.setVisible(True)
        self.window.worker.call(
            lambda e: e.export_to(
                Path(path), fmt, progress=lambda n, t: report("export", n, t), plain=plain
            ),
            exported,
            failed,
        )
