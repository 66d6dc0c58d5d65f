"""The memory manager: browse, search, filter, edit, delete with undo, merge, import/export.

Browsing reads pages of rows from SQLite on demand (a lazy model: 100,000 memories never
become 100,000 widgets); every write goes to the engine worker.
"""

from __future__ import annotations

from pathlib import Path

from app.core import paths, transfer
from app.core.db import Database
from app.core.display import age
from app.core.engine import RememberResult
from app.core.memory import Memory
from app.core.recall import RecallResult
from app.core.store import COLUMNS, Filters, Store, row_to_memory
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets, Signal
from app.gui.worker import INTERACTIVE, Worker

PAGE = 200
HEADERS = ("Title", "Category", "Tags", "Created", "Updated", "Recalls", "Embedding")
SORT_COLUMNS = ("title", "category", "tags", "created_at", "updated_at", "recall_count", None)


class MemoryTable(QtCore.QAbstractTableModel):
    """Rows read from SQLite a page at a time, or a fixed list of search results."""

    def __init__(self, db: Database, parent=None):
        super().__init__(parent)
        self.db = db
        self.filters = Filters()
        self.order = "updated_at DESC"
        self.rows: list[tuple[Memory, bool]] = []  # (memory, has current vectors)
        self._total = 0
        self._results: list[Memory] | None = None

    # ---- Qt model API ----------------------------------------------------------------
    def rowCount(self, parent=None) -> int:  # noqa: N802 - Qt API
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent=None) -> int:  # noqa: N802 - Qt API
        return len(HEADERS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802 - Qt API
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return HEADERS[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        memory, embedded = self.rows[index.row()]
        column = index.column()
        if role == Qt.DisplayRole:
            return (
                ("★ " if memory.pinned else "") + memory.display_title,
                memory.category,
                ", ".join(memory.tags),
                age(memory.created_at),
                age(memory.updated_at),
                str(memory.recall_count),
                "✓" if embedded else "missing",
            )[column]
        if role == Qt.ToolTipRole and column in (3, 4):
            return memory.created_at if column == 3 else memory.updated_at
        if role == Qt.UserRole:
            return memory
        if role == Qt.ForegroundRole and memory.deleted_at:
            return QtGui.QColor("gray")
        return None

    def canFetchMore(self, parent=None) -> bool:  # noqa: N802 - Qt API
        return self._results is None and len(self.rows) < self._total

    def fetchMore(self, parent=None) -> None:  # noqa: N802 - Qt API
        page = self._page(len(self.rows))
        if page:
            self.beginInsertRows(
                QtCore.QModelIndex(), len(self.rows), len(self.rows) + len(page) - 1
            )
            self.rows += page
            self.endInsertRows()

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        name = SORT_COLUMNS[column]
        if name is None or self._results is not None:
            return
        wanted = f"{name} {'ASC' if order == Qt.AscendingOrder else 'DESC'}"
        if wanted != self.order or not self.rows:
            self.order = wanted
            self.reload()

    # ---- loading -------------------------------------------------------------------
    def _model_id(self) -> str:
        return self.db.get_meta("model_id", "") or ""

    def _page(self, offset: int) -> list[tuple[Memory, bool]]:
        where, args = self.filters.sql()
        rows = self.db.query(
            f"SELECT EXISTS (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id "
            f"AND e.model_id = ?), {', '.join('m.' + c.strip() for c in COLUMNS.split(','))} "
            # The tiebreak runs the same way as the sort, so an index can serve both.
            f"FROM memories m WHERE 1{where} ORDER BY m.{self.order}, "
            f"m.seq {self.order.split()[1]} LIMIT ? OFFSET ?",
            (self._model_id(), *args, PAGE, offset),
        )
        return [(row_to_memory(r[1:]), bool(r[0])) for r in rows]

    def reload(self) -> None:
        """Re-read the first page (after a write, a sort or a filter change)."""
        self.beginResetModel()
        if self._results is None:
            where, args = self.filters.sql()
            self._total = self.db.query(
                f"SELECT count(*) FROM memories m WHERE 1{where}", tuple(args)
            )[0][0]
            self.rows = self._page(0)
        else:
            model_id = self._model_id()
            store = Store(self.db)
            self.rows = [(m, store.vectors_of(m.id, model_id) is not None) for m in self._results]
        self.endResetModel()

    def show_results(self, memories: list[Memory] | None) -> None:
        """Show search results (None: back to browsing)."""
        self._results = memories
        self.reload()

    @property
    def total(self) -> int:
        """Rows in the current view (all pages)."""
        return len(self.rows) if self._results is not None else self._total


class Manager(QtWidgets.QMainWindow):
    """The manager window."""

    closed = Signal()

    def __init__(self, worker: Worker, settings, parent=None):
        super().__init__(parent)
        self.setObjectName("manager")
        self.setWindowTitle("Mnemo — memories")
        self.resize(1100, 680)
        self.setAcceptDrops(True)
        self.worker = worker
        self.settings = settings
        self.db = Database(paths.database_path())
        self.table_model = MemoryTable(self.db, self)
        self._last_deleted: list[str] = []
        self._requests: dict[int, str] = {}
        self._current: Memory | None = None

        # Search and filters.
        self.search = QtWidgets.QLineEdit(objectName="managerSearch")
        self.search.setPlaceholderText("Search (meaning and keywords)…")
        self.search.setClearButtonEnabled(True)
        self.mode = QtWidgets.QComboBox(objectName="managerMode")
        self.mode.addItems(["hybrid", "semantic", "keyword"])
        self.filters = {}
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(self.search, 3)
        bar.addWidget(self.mode)
        for name in ("category", "tag", "project", "source"):
            box = QtWidgets.QComboBox(objectName=f"filter_{name}")
            box.setMinimumWidth(110)
            self.filters[name] = box
            bar.addWidget(box)
        self.trash = QtWidgets.QCheckBox("Trash", objectName="showTrash")
        bar.addWidget(self.trash)

        # Table and editor.
        self.table = QtWidgets.QTableView(objectName="memoryTable")
        self.table.setModel(self.table_model)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectRows)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(4, Qt.DescendingOrder)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(26)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.Stretch)
        for column, width in enumerate((0, 100, 110, 80, 80, 60, 80)):
            if width:
                self.table.setColumnWidth(column, width)
        self.table.setAlternatingRowColors(True)
        self.editor = self._build_editor()
        split = QtWidgets.QSplitter()
        split.addWidget(self.table)
        split.addWidget(self.editor)
        split.setSizes([720, 380])
        central = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(central)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        self.setCentralWidget(central)
        self._build_toolbar()

        # Status bar.
        self.status_label = QtWidgets.QLabel(objectName="managerStatus")
        self.progress = QtWidgets.QProgressBar(objectName="backfillProgress")
        self.progress.setMaximumWidth(220)
        self.progress.setVisible(False)
        self.undo_button = QtWidgets.QPushButton("Undo", objectName="undoDelete")
        self.undo_button.setVisible(False)
        self.undo_button.clicked.connect(self.undo_delete)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.undo_button)
        self.statusBar().addPermanentWidget(self.progress)

        self._debounce = QtCore.QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self._search)
        self.search.textChanged.connect(lambda _t: self._debounce.start())
        self.mode.currentIndexChanged.connect(lambda _i: self._search())
        for box in self.filters.values():
            box.currentIndexChanged.connect(self._filters_changed)
        self.trash.toggled.connect(self._filters_changed)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.changed.connect(self.refresh)
        worker.backfillProgress.connect(self._on_backfill)
        worker.progress.connect(self._on_progress)
        worker.modelState.connect(lambda *_: self._update_status())
        QtGui.QShortcut(QtGui.QKeySequence.Delete, self.table, self.delete_selected)
        QtGui.QShortcut(QtGui.QKeySequence.Undo, self, self.undo_delete)
        QtGui.QShortcut(QtGui.QKeySequence.Find, self, self.search.setFocus)
        self.table_model.reload()
        # Counting and the filter lists scan every memory: do them just after the window
        # shows, so a 100,000-memory database still opens at once.
        QtCore.QTimer.singleShot(0, self._fill_filters)
        QtCore.QTimer.singleShot(0, self._update_status)
        if self.table_model.rows:
            self.table.selectRow(0)
        else:
            self._load(None)

    # ---- building --------------------------------------------------------------------
    def _build_editor(self) -> QtWidgets.QWidget:
        box = QtWidgets.QWidget(objectName="editor")
        form = QtWidgets.QFormLayout(box)
        self.f_title = QtWidgets.QLineEdit(objectName="editTitle")
        self.f_text = QtWidgets.QPlainTextEdit(objectName="editText")
        self.f_reasoning = QtWidgets.QPlainTextEdit(objectName="editReasoning")
        self.f_reasoning.setMaximumHeight(70)
        self.f_category = QtWidgets.QComboBox(objectName="editCategory")
        self.f_category.setEditable(True)
        self.f_category.addItems(self.settings["categories"])
        self.f_tags = QtWidgets.QLineEdit(objectName="editTags")
        self.f_keywords = QtWidgets.QLineEdit(objectName="editKeywords")
        self.f_references = QtWidgets.QLineEdit(objectName="editReferences")
        self.f_project = QtWidgets.QLineEdit(objectName="editProject")
        self.f_confidence = QtWidgets.QComboBox(objectName="editConfidence")
        self.f_confidence.addItems(["low", "medium", "high"])
        self.f_pinned = QtWidgets.QCheckBox("Pinned", objectName="editPinned")
        self.f_info = QtWidgets.QLabel(objectName="editInfo")
        self.f_info.setWordWrap(True)
        self.save_button = QtWidgets.QPushButton("Save", objectName="saveMemory")
        self.save_button.clicked.connect(self.save_current)
        form.addRow("Title", self.f_title)
        form.addRow("Text", self.f_text)
        form.addRow("Reasoning", self.f_reasoning)
        form.addRow("Category", self.f_category)
        form.addRow("Tags", self.f_tags)
        form.addRow("Keywords", self.f_keywords)
        form.addRow("References", self.f_references)
        form.addRow("Project", self.f_project)
        form.addRow("Confidence", self.f_confidence)
        form.addRow("", self.f_pinned)
        form.addRow("", self.f_info)
        form.addRow("", self.save_button)
        return box

    def _build_toolbar(self) -> None:
        bar = self.addToolBar("Memories")
        bar.setObjectName("managerToolbar")
        bar.setMovable(False)
        for name, text, slot, shortcut in (
            ("actionNew", "New", self.new_memory, QtGui.QKeySequence.New),
            ("actionDelete", "Delete", self.delete_selected, None),
            ("actionRestore", "Restore", self.restore_selected, None),
            ("actionMerge", "Merge selected", self.merge_selected, None),
            ("actionDuplicates", "Find duplicates", self.find_duplicates, None),
            ("actionImport", "Import…", self.import_dialog, None),
            ("actionExport", "Export…", self.export_dialog, None),
        ):
            action = bar.addAction(text, slot)
            action.setObjectName(name)
            if shortcut:
                action.setShortcut(shortcut)

    # ---- browsing --------------------------------------------------------------------
    def _fill_filters(self) -> None:
        queries = {
            "category": "SELECT DISTINCT category FROM memories WHERE deleted_at IS NULL",
            "tag": "SELECT DISTINCT j.value FROM memories m, json_each(m.tags) j "
            "WHERE m.deleted_at IS NULL",
            "project": "SELECT DISTINCT source_project FROM memories WHERE source_project "
            "IS NOT NULL AND deleted_at IS NULL",
            "source": "SELECT DISTINCT source FROM memories WHERE deleted_at IS NULL",
        }
        for name, sql in queries.items():
            box = self.filters[name]
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItem(f"any {name}", None)
            for (value,) in sorted(self.db.query(sql + " LIMIT 500")):
                box.addItem(str(value), value)
            index = box.findText(current)
            box.setCurrentIndex(max(index, 0))
            box.blockSignals(False)

    def current_filters(self) -> Filters:
        """The filters the combo boxes and the trash switch describe."""
        value = {name: box.currentData() for name, box in self.filters.items()}
        return Filters(
            category=value["category"],
            project=value["project"],
            source=value["source"],
            tags=(value["tag"],) if value["tag"] else (),
            only_deleted=self.trash.isChecked(),
        )

    def _filters_changed(self) -> None:
        self.table_model.filters = self.current_filters()
        self._search()

    def _search(self) -> None:
        text = self.search.text().strip()
        if not text:
            self.table_model.show_results(None)
            self._update_status()
            return
        filters = self.current_filters()
        request = self.worker.submit(
            lambda e: e.recall(
                text, mode=self.mode.currentText(), limit=200, track=False, filters=filters
            ),
            INTERACTIVE,
            channel="manager-search",
        )
        self._requests[request] = "search"

    def refresh(self) -> None:
        """Re-read after a write (keeps the selection when it can)."""
        selected = self._current.id if self._current else None
        self._fill_filters()
        if self.search.text().strip():
            self._search()
        else:
            self.table_model.reload()
        rows = [m.id for m, _ in self.table_model.rows]
        if selected in rows:  # keep the selection only if it is still in view
            self.table.selectRow(rows.index(selected))
        self._update_status()

    def select_memory(self, memory_id: str) -> None:
        """Select a memory in the table (searching for it by id if needed)."""
        for row, (memory, _) in enumerate(self.table_model.rows):
            if memory.id == memory_id:
                self.table.selectRow(row)
                self.table.scrollTo(self.table_model.index(row, 0))
                return
        try:
            memory = Store(self.db).get(memory_id)
        except Exception:
            return
        self.table_model.show_results([memory])
        self.table.selectRow(0)
        self._load(memory)

    def selected(self) -> list[Memory]:
        """The selected memories."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.table_model.rows[r][0] for r in rows if r < len(self.table_model.rows)]

    def _row_changed(self, current, _previous) -> None:
        if current.isValid() and current.row() < len(self.table_model.rows):
            self._load(self.table_model.rows[current.row()][0])

    def _load(self, memory: Memory | None) -> None:
        self._current = memory
        m = memory or Memory(id="", text="")
        self.f_title.setText(m.title)
        self.f_text.setPlainText(m.text)
        self.f_reasoning.setPlainText(m.reasoning)
        self.f_category.setCurrentText(m.category)
        self.f_tags.setText(", ".join(m.tags))
        self.f_keywords.setText(", ".join(m.keywords or []))
        self.f_references.setText(", ".join(m.references))
        self.f_project.setText(m.source_project or "")
        self.f_confidence.setCurrentText(m.confidence)
        self.f_pinned.setChecked(m.pinned)
        for field in (self.f_title, self.f_tags, self.f_keywords, self.f_references):
            field.setCursorPosition(0)
        self.f_info.setText(
            f"id {m.id} · from {m.source} · seen {m.observation_count}× · recalled "
            f"{m.recall_count}× · created {age(m.created_at)}"
            if memory
            else "New memory"
        )

    # ---- editing ---------------------------------------------------------------------
    def new_memory(self) -> None:
        """Clear the editor for a new memory."""
        self.table.clearSelection()
        self._load(None)
        self.f_text.setFocus()

    def save_current(self) -> None:
        """Save the editor: a new memory, or changes (re-embedded in the background)."""
        fields = dict(
            title=self.f_title.text().strip(),
            text=self.f_text.toPlainText(),
            reasoning=self.f_reasoning.toPlainText(),
            category=self.f_category.currentText().strip() or "note",
            tags=self.f_tags.text(),
            references=self.f_references.text(),
            confidence=self.f_confidence.currentText(),
        )
        project = self.f_project.text().strip() or None
        if self._current is None:
            pinned = self.f_pinned.isChecked()

            def create(engine):
                result = engine.remember(
                    fields["text"],
                    title=fields["title"] or None,
                    category=fields["category"],
                    tags=fields["tags"],
                    project=project,
                    reasoning=fields["reasoning"],
                    references=fields["references"],
                    confidence=fields["confidence"],
                    force=True,
                )
                if pinned:
                    engine.edit(result.memory.id, pinned=True)
                return result

            self._requests[self.worker.write(create, INTERACTIVE)] = "create"
            return
        memory_id = self._current.id
        keywords = self.f_keywords.text()
        changes = dict(fields, source_project=project, pinned=self.f_pinned.isChecked())
        if keywords != ", ".join(self._current.keywords or []):
            changes["keywords"] = keywords
        self._requests[self.worker.write(lambda e: e.edit(memory_id, **changes), INTERACTIVE)] = (
            "edit"
        )

    def delete_selected(self) -> None:
        """Move the selected memories to the trash (Undo brings them back)."""
        ids = [m.id for m in self.selected() if not m.deleted_at]
        if not ids:
            return
        self._requests[self.worker.write(lambda e: e.forget(ids), INTERACTIVE)] = "delete"

    def undo_delete(self) -> None:
        """Restore what the last delete moved to the trash."""
        ids, self._last_deleted = self._last_deleted, []
        self.undo_button.setVisible(False)
        if ids:
            self._requests[self.worker.write(lambda e: e.restore(ids), INTERACTIVE)] = "restore"

    def restore_selected(self) -> None:
        """Bring the selected memories back from the trash."""
        ids = [m.id for m in self.selected() if m.deleted_at]
        if ids:
            self._requests[self.worker.write(lambda e: e.restore(ids), INTERACTIVE)] = "restore"

    def merge_selected(self) -> None:
        """Merge the selected memories into the first (the others go to the trash)."""
        ids = [m.id for m in self.selected()]
        if len(ids) < 2:
            self.statusBar().showMessage("Select two or more memories to merge.", 4000)
            return
        self._requests[self.worker.write(lambda e: e.merge(ids), INTERACTIVE)] = "merge"

    def find_duplicates(self) -> None:
        """List near-duplicate pairs (cosine ≥ the duplicate threshold) with merge buttons."""
        threshold = self.settings["duplicate_threshold"]
        self.statusBar().showMessage("Looking for near-duplicates…")
        self._requests[self.worker.submit(lambda e: e.duplicate_pairs(threshold))] = "duplicates"

    # ---- import / export -------------------------------------------------------------
    def import_dialog(self) -> None:
        """Choose markdown/JSONL files to import."""
        files, _ = QtWidgets.QFileDialog.getOpenFileNames(
            self, "Import memories", "", "Markdown, text or JSONL (*.md *.markdown *.txt *.jsonl)"
        )
        if files:
            self.import_paths([Path(f) for f in files])

    def import_paths(self, files: list[Path]) -> None:
        """Import in the background (with a running count); new memories are embedded next."""
        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        self.statusBar().showMessage(f"Importing {len(files)} file(s)…")
        report = self.worker.progress.emit
        self._requests[
            self.worker.write(
                lambda e: transfer.import_paths(
                    e.store, files, progress=lambda n: report("import", n, 0)
                ),
                INTERACTIVE,
            )
        ] = "import"

    def export_dialog(self) -> None:
        """Export every memory to JSONL (lossless) or markdown."""
        path, kind = QtWidgets.QFileDialog.getSaveFileName(
            self,
            "Export memories",
            "mnemo-export.jsonl",
            "JSONL, lossless (*.jsonl);;Markdown (*.md)",
        )
        if not path:
            return
        self.export_to(
            Path(path), "markdown" if path.endswith(".md") or "Markdown" in kind else "jsonl"
        )

    def export_to(self, path: Path, fmt: str) -> None:
        """Export in the background with a progress bar; written atomically."""
        report = self.worker.progress.emit

        def run_export(engine):
            total = engine.store.counts()["memories"]

            def counted(pieces):
                for n, piece in enumerate(pieces, 1):
                    if n % 200 == 0:
                        report("export", n, total)
                    yield piece

            return transfer.write_atomically(
                Path(path), counted(transfer.export(engine.store, fmt))
            )

        self.progress.setRange(0, 0)
        self.progress.setVisible(True)
        self._requests[self.worker.submit(run_export)] = f"export:{path}"

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt API
        if any(
            u.toLocalFile().lower().endswith(transfer.MARKDOWN_SUFFIXES + (".jsonl",))
            for u in event.mimeData().urls()
        ):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt API
        files = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        files = [f for f in files if f.suffix.lower() in (*transfer.MARKDOWN_SUFFIXES, ".jsonl")]
        if files:
            self.import_paths(files)

    # ---- results -----------------------------------------------------------------------
    def _on_finished(self, request: int) -> None:
        kind = self._requests.pop(request, None)
        if kind is None:
            return
        result = self.worker.result(request)
        if kind == "search" and isinstance(result, RecallResult):
            self.table_model.show_results([r.memory for r in result.results])
            note = f" — {result.notice}" if result.notice else ""
            self.statusBar().showMessage(
                f"{len(result.results)} results ({result.mode}){note}", 6000
            )
        elif kind == "delete":
            self._last_deleted = list(result)
            self.undo_button.setText(f"Undo delete ({len(result)})")
            self.undo_button.setVisible(True)
            self.statusBar().showMessage(f"Moved {len(result)} to the trash.", 8000)
        elif kind in ("edit", "create"):
            memory = result.memory if isinstance(result, RememberResult) else result
            self._current = memory
            self.statusBar().showMessage(
                f"Saved “{memory.display_title}”; re-embedding in the background.", 5000
            )
            QtCore.QTimer.singleShot(0, lambda: self.select_memory(memory.id))
        elif kind == "merge":
            self.statusBar().showMessage(
                f"Merged into “{result.display_title}”; the others are in the trash.", 8000
            )
        elif kind == "import":
            self.progress.setVisible(False)
            updated = f", {result.updated} updated" if result.updated else ""
            self.statusBar().showMessage(
                f"Imported {result.added} new ({result.skipped} already known{updated}); "
                "embedding them in the background.",
                8000,
            )
        elif kind.startswith("export:"):
            self.progress.setVisible(False)
            self.statusBar().showMessage(f"Exported to {kind[7:]}.", 8000)
        elif kind == "duplicates":
            from app.gui.duplicates import DuplicatesDialog

            self.statusBar().showMessage(f"{len(result)} near-duplicate pairs.", 5000)
            dialog = DuplicatesDialog(result, self.worker, self)
            dialog.show()

    def _on_failed(self, request: int, message: str) -> None:
        if self._requests.pop(request, None) is not None:
            self.progress.setVisible(False)
            QtWidgets.QMessageBox.warning(self, "Mnemo", message)

    def _on_progress(self, job: str, done: int, total: int) -> None:
        self.progress.setVisible(True)
        self.progress.setRange(0, total)  # 0..0 shows a busy bar when the total is unknown
        self.progress.setValue(done)
        verb = {"import": "Imported", "export": "Exported"}.get(job, job)
        self.statusBar().showMessage(f"{verb} {done:,}{f' of {total:,}' if total else ''}…")

    def _on_backfill(self, done: int, total: int) -> None:
        self.progress.setVisible(total > 0)
        if total:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setFormat("embedding %v/%m")
        else:
            self._update_status()

    def _update_status(self) -> None:
        store = Store(self.db)
        counts = store.counts()
        model = self.db.get_meta("model_name", "no model")
        dim = self.db.get_meta("model_dimension", "?")
        embedded = store.embedded_count(self.db.get_meta("model_id", "") or "")
        shown = self.table_model.total
        self.status_label.setText(
            f"{counts['memories']:,} memories ({shown:,} shown, {counts['trash']:,} in trash) · "
            f"model {model} ({dim}d) · {embedded:,} embedded, "
            f"{counts['memories'] - embedded:,} waiting"
        )

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.closed.emit()
        super().closeEvent(event)
