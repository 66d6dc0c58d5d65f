"""The memory manager: browse, search, filter, edit, delete with undo, merge, import/export.

Browsing asks the engine worker for pages of rows on demand (a lazy model: 100,000
memories never become 100,000 widgets). Nothing here runs SQL or blocks the GUI thread:
pages, counts, filter lists, searches and every write are worker calls.
"""

from __future__ import annotations

import time
from pathlib import Path

from app.core import origin as origins
from app.core.display import age, fields_line, isolated
from app.core.memory import Change, Memory
from app.core.search.recall import RecallResult
from app.core.storage.store import Filters
from app.core.writer import RememberResult
from app.gui import manager_layout, window_state
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets, Signal
from app.gui.removals import Removals
from app.gui.saving import Saving
from app.gui.shares import Shares, label, take_found, tooltip
from app.gui.transfers import Transfers
from app.gui.worker import INTERACTIVE, Worker

PAGE = 200
EDITOR_CHARS = 100_000  # a longer text opens by its start, read-only, until asked for whole
HEADERS = ("Title", "Category", "Tags", "Created", "Updated", "Recalls", "Embedding", "Written by")
HEADERS += ("Space",)  # a team space's name (issue 45), with its author when a member wrote it
SORT_COLUMNS = ("title", "category", "tags", "created_at", "updated_at", "recall_count", None)
SORT_COLUMNS += (None, None)  # (who wrote it, its space: not columns SQL sorts by)
ORIGIN_COLUMN, SPACE_COLUMN = 7, 8


class MemoryTable(QtCore.QAbstractTableModel):
    """Every row of the view counted, each page read from the engine worker when a row of it
    is first shown (scrolling, Ctrl+End, dragging the scrollbar anywhere); or a fixed list of
    results. `rows[i]` is None until its page has arrived."""

    loaded = Signal()  # the first page (or the results) arrived
    failed = Signal(str)  # a page could not be read (e.g. the database is locked)

    def __init__(self, worker: Worker, parent=None):
        super().__init__(parent)
        self.worker = worker
        self.filters = Filters()
        self.order = "updated_at DESC"
        # (memory, has current vectors) per row; None: its page is not read yet
        self.rows: list[tuple[Memory, bool] | None] = []
        self.spaces: dict[str, str] = {}  # {memory id: its space's name}, read as rows come
        self._results: list[tuple[Memory, bool]] | None = None
        self._generation = 0  # bumped by every reload: older pages are dropped
        self._asked: set[int] = set()  # pages asked for in this generation

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
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row = self.rows[index.row()]
        if row is None:  # shown before its page arrived: ask for it, say it is coming
            self._ask(index.row() // PAGE)
            return ("…" if index.column() == 0 else "") if role == Qt.DisplayRole else None
        memory, embedded = row
        column = index.column()
        if role == Qt.DisplayRole:
            return (
                ("★ " if memory.pinned else "") + isolated(memory.display_title),
                isolated(memory.category),
                fields_line(memory.tags, ", "),
                age(memory.created_at),
                age(memory.updated_at),
                str(memory.recall_count),
                "✓" if embedded else "missing",
                isolated(origins.summary(memory.origins)),
                isolated(label(memory, self.spaces.get(memory.id))),
            )[column]
        if role == Qt.ToolTipRole and column == ORIGIN_COLUMN:  # every origin of a merge
            return "\n".join(o.describe(f" ({o.at[:16]})" if o.at else "") for o in memory.origins)
        if role == Qt.ToolTipRole and column == SPACE_COLUMN:
            return tooltip(memory, self.spaces.get(memory.id)) or None
        if role == Qt.ToolTipRole and column in (3, 4):
            return memory.created_at if column == 3 else memory.updated_at
        if role == Qt.ToolTipRole and column == 0:  # the whole title, when the column cuts it
            return memory.display_title
        if role == Qt.UserRole:
            return memory
        if role == Qt.ForegroundRole and memory.deleted_at:
            return QtGui.QColor("gray")
        return None

    def update_memories(self, memories: list[Memory]) -> None:
        """Show these memories' new fields in the rows that hold them (no reload)."""
        fresh = {m.id: m for m in memories}
        for row, memory in self.loaded_rows():
            if memory.id in fresh:
                self.rows[row] = (fresh[memory.id], self.rows[row][1])
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))

    def memory_at(self, row: int) -> Memory | None:
        """The memory of a row, None when its page has not arrived (or past the end)."""
        found = self.rows[row] if 0 <= row < len(self.rows) else None
        return found[0] if found is not None else None

    def loaded_rows(self) -> list[tuple[int, Memory]]:
        """(row, memory) for each row whose page has arrived."""
        return [(i, r[0]) for i, r in enumerate(self.rows) if r is not None]

    def _ask(self, page: int) -> None:
        if self._results is not None or page in self._asked:
            return
        self._asked.add(page)
        generation, offset = self._generation, page * PAGE
        filters, order = self.filters, self.order
        self.worker.call(
            lambda e: e.page(filters, order, offset, PAGE),
            lambda rows: self._arrived(generation, offset, rows),
            lambda message: self._fetch_failed(generation, page, message),
            INTERACTIVE,
        )

    def _arrived(self, generation: int, offset: int, page: list[tuple[Memory, bool]]) -> None:
        if generation != self._generation:
            return  # a reload happened meanwhile
        page = page[: max(0, len(self.rows) - offset)]  # rows deleted meanwhile: reload next
        if not page:
            return
        self.rows[offset : offset + len(page)] = page
        self.dataChanged.emit(
            self.index(offset, 0), self.index(offset + len(page) - 1, len(HEADERS) - 1)
        )
        self._ask_spaces([m.id for m, _ in page])

    def _ask_spaces(self, ids: list[str]) -> None:
        """The spaces of these rows' memories, read on the worker (the column, when they
        arrive)."""
        if ids:
            self.worker.call(
                lambda e: e.spaces.shared(ids),
                lambda found: self._spaces_arrived(ids, found),
                None,
                INTERACTIVE,
            )

    def _spaces_arrived(self, ids: list[str], found: dict[str, str]) -> None:
        take_found(self.spaces, ids, found)
        if self.rows:
            last = len(self.rows) - 1
            self.dataChanged.emit(self.index(0, SPACE_COLUMN), self.index(last, SPACE_COLUMN))

    def _fetch_failed(self, generation: int, page: int, message: str) -> None:
        if generation == self._generation:
            self._asked.discard(page)  # asked again when it is shown again
            self.failed.emit(message)

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        name = SORT_COLUMNS[column]
        if name is None or self._results is not None:
            return
        wanted = f"{name} {'ASC' if order == Qt.AscendingOrder else 'DESC'}"
        if wanted != self.order or not self.rows:
            self.order = wanted
            self.reload()

    # ---- loading -------------------------------------------------------------------
    def reload(self) -> None:
        """Count the rows and read the first page again (after a write, a sort or a filter
        change); the other pages are read again as they are shown."""
        self._generation += 1
        self._asked = {0}
        if self._results is not None:
            self._reset(self._generation, len(self._results), self._results)
            return
        generation, filters, order = self._generation, self.filters, self.order
        self.worker.call(
            lambda e: (e.count(filters), e.page(filters, order, 0, PAGE)),
            lambda answer: self._reset(generation, *answer),
            self.failed.emit,
            INTERACTIVE,
            channel="manager-page",
        )

    def _reset(self, generation: int, total: int, rows: list[tuple[Memory, bool]]) -> None:
        if generation != self._generation:
            return
        self.beginResetModel()
        rows = list(rows[:total])
        self.rows = rows + [None] * (total - len(rows))
        self.endResetModel()
        self._ask_spaces([m.id for m, _ in rows])
        self.loaded.emit()

    def show_results(self, results: list[tuple[Memory, bool]] | None) -> None:
        """Show search results as (memory, embedded) pairs (None: back to browsing)."""
        self._results = results
        self.reload()

    @property
    def total(self) -> int:
        """Rows in the current view (all pages)."""
        return len(self.rows)


def tags_typed(text: str) -> tuple[str, ...]:
    """The tags a filter field holds: comma-separated, blanks and repeats dropped."""
    return tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


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
        self.settings = settings  # read only: the engine owns them
        self.table_model = MemoryTable(worker, self)
        self._report_until = 0.0  # until then, an import's summary holds the status bar
        self._text_cut = False  # the editor shows only the start of a huge text
        self.import_report: QtWidgets.QMessageBox | None = None
        self._current: Memory | None = None
        self._keep_selected: str | None = None  # select this id when the rows arrive
        self._overview: dict | None = None
        self.last_search: RecallResult | None = None

        self.transfers = Transfers(self)  # imports and exports
        self.removals = Removals(self)  # trash, purge, merge, and their undo
        self.saving = Saving(self)  # the editor's saves, and a memory changed meanwhile
        self.shares = Shares(self)  # the filter by team space, Share in space, Stop sharing
        self.inbox_dialog = None
        self.conflicts_dialog = None
        manager_layout.set_up(self)  # the widgets, as Qt Designer's setupUi
        self._pending_row: int | None = None  # selected before its page arrived
        self._connect(worker)
        window_state.restore("manager", self, self.splitter, self.table)
        self._load(None)
        self._select_first = True
        self.table_model.reload()
        self._fill_filters()
        self._update_status()
        self._count_inbox()

    def _connect(self, worker: Worker) -> None:
        """Timers, the widgets' signals, the worker's reports and the shortcuts."""
        self._status_timer = QtCore.QTimer(self, singleShot=True, interval=2000)
        self._status_timer.timeout.connect(self._update_status)
        self._debounce = QtCore.QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self._search)
        self.search.textChanged.connect(lambda _t: self._debounce.start())
        self.mode.currentIndexChanged.connect(lambda _i: self._search())
        for box in self.filters.values():
            box.currentIndexChanged.connect(self._filters_changed)
        self._tag_debounce = QtCore.QTimer(self, singleShot=True, interval=250)
        self._tag_debounce.timeout.connect(self._filters_changed)
        self.tag_filter.textEdited.connect(lambda _t: self._tag_debounce.start())
        self.tag_completer.activated.connect(lambda _t: self._filters_changed())
        self.trash.toggled.connect(self._filters_changed)
        self.space_filter.currentIndexChanged.connect(self._filters_changed)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        self.table_model.loaded.connect(self._rows_arrived)
        self.table_model.dataChanged.connect(self._page_arrived)
        self.table_model.failed.connect(lambda message: self._failed(f"Not loaded: {message}"))
        worker.changed.connect(self.refresh)
        worker.changes.connect(self._on_change)
        worker.backfillProgress.connect(self._on_backfill)
        worker.progress.connect(self._on_progress)
        self._model_state = worker.model_state  # (it may have failed before this window)
        worker.modelState.connect(self._on_model_state)
        QtGui.QShortcut(QtGui.QKeySequence.Delete, self.table, self.removals.delete_selected)
        QtGui.QShortcut(QtGui.QKeySequence.Undo, self, self.removals.undo)
        QtGui.QShortcut(QtGui.QKeySequence.Find, self, self.search.setFocus)
        QtGui.QShortcut(QtGui.QKeySequence.Save, self, self.save_current)
        QtGui.QShortcut(QtGui.QKeySequence.Refresh, self, self.list_again)
        # Changes made by the CLI or an agent show up here within two seconds (the worker
        # watches the database for the whole app).
        worker.changedElsewhere.connect(self._changed_elsewhere)
        self.history_view.restored.connect(self._restored)
        self.history_view.unmerge_asked.connect(self.removals.unmerge)

    # ---- browsing --------------------------------------------------------------------
    def _fill_filters(self) -> None:
        self.shares.fill()
        self.worker.call(
            lambda e: e.filter_values(),
            self._set_filter_values,
            self._failed,
            INTERACTIVE,
            channel="manager-filters",
        )

    def _set_filter_values(self, values: dict[str, list[str]]) -> None:
        self.tag_completer.model().setStringList(values.get("tag", []))
        for name, box in self.filters.items():
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItem(f"any {name}", None)
            for value in values.get(name, []):
                box.addItem(value, value)
            index = box.findText(current)
            box.setCurrentIndex(max(index, 0))
            box.blockSignals(False)

    def set_categories(self, categories: list[str]) -> None:
        """Offer these categories in the editor (after a settings change)."""
        current = self.f_category.currentText()
        self.f_category.clear()
        self.f_category.addItems(categories)
        self.f_category.setCurrentText(current)

    def current_filters(self) -> Filters:
        """The filters the combo boxes and the trash switch describe."""
        value = {name: box.currentData() for name, box in self.filters.items()}
        return Filters(
            category=value["category"],
            project=value["project"],
            source=value["source"],
            origin=value["origin"],
            tags=tags_typed(self.tag_filter.text()),
            space=self.space_filter.currentData(),
            only_deleted=self.trash.isChecked(),
        )

    def _filters_changed(self) -> None:
        self.table_model.filters = self.current_filters()
        self._search()

    def _search(self) -> None:
        text = self.search.text().strip()
        if not text:
            self.table_model.show_results(None)
            self.table.horizontalHeader().setSortIndicatorShown(True)
            self._update_status()
            return
        # Every widget value is read here, on the GUI thread, before the job is queued.
        filters, mode = self.current_filters(), self.mode.currentText()

        def search(engine):
            result = engine.recall(text, mode=mode, limit=200, track=False, filters=filters)
            embedded = engine.embedded(r.memory.id for r in result.results)
            return result, embedded

        self.worker.call(
            search, self._show_search, self._failed, INTERACTIVE, channel="manager-search"
        )

    def _show_search(self, answer: tuple[RecallResult, set[str]]) -> None:
        result, embedded = answer
        self.last_search = result
        self.table_model.show_results([(r.memory, r.memory.id in embedded) for r in result.results])
        # Results are in order of relevance: no column's sort arrow, and from the top.
        self.table.horizontalHeader().setSortIndicatorShown(False)
        self.table.scrollToTop()
        note = f" — {result.notice}" if result.notice else ""
        n = len(result.results)
        found = f"{n} result{'s' if n != 1 else ''}" if n else "No relevant memories"
        if time.monotonic() >= self._report_until:  # an import's summary is not replaced
            self.statusBar().showMessage(f"{found} ({result.mode}){note}", 6000)
        self._update_status()

    def list_again(self) -> None:
        """F5: the search's results again, or every memory when nothing is searched (also
        after one memory was opened from the popup), keeping the selection."""
        self._keep_selected = self._current.id if self._current else None
        if self.search.text().strip():
            self._search()
        else:
            self.table_model.show_results(None)

    def show_inbox(self) -> None:
        """Open (or raise) the capture inbox."""
        from app.gui.inbox import InboxDialog

        if self.inbox_dialog is None:
            self.inbox_dialog = InboxDialog(self.worker, self)
            self.inbox_dialog.counted.connect(self._show_inbox_count)
        else:
            self.inbox_dialog.load()
        self.inbox_dialog.show()
        self.inbox_dialog.raise_()
        self.inbox_dialog.activateWindow()

    def _count_inbox(self) -> None:
        self.worker.call(
            lambda e: e.inbox_count(),
            self._show_inbox_count,
            None,
            INTERACTIVE,
            channel="manager-inbox",
        )

    def _show_inbox_count(self, count: int) -> None:
        self.inbox_action.setText(f"Inbox ({count})" if count else "Inbox")

    def _on_change(self, changes: list[Change]) -> None:
        """A use (a copy from the popup, an agent's recall) changes only counts: the rows
        shown of those memories are read again in place; nothing else is reloaded. A
        capture changes the inbox's count."""
        if any(c.moves_inbox for c in changes):
            self._count_inbox()
        shown = {m.id for _, m in self.table_model.loaded_rows()}
        used = [c for c in changes if c.only_counts]
        ids = [i for c in used for i in c.ids if i in shown]
        if not ids:
            return
        self.worker.call(
            lambda e: [e.get(i) for i in ids],
            self.table_model.update_memories,
            None,
            INTERACTIVE,
            channel="manager-usage",
        )

    def refresh(self) -> None:
        """Re-read after a write (keeps the selection when it can)."""
        self._keep_selected = self._current.id if self._current else None
        self._fill_filters()
        if self.search.text().strip():
            self._search()
        else:
            self.table_model.reload()
        self.history_view.reload()
        self._update_status()

    def _rows_arrived(self) -> None:
        rows = {m.id: row for row, m in self.table_model.loaded_rows()}
        wanted, self._keep_selected = self._keep_selected, None
        if wanted in rows:  # keep the selection only if it is still in view
            self.table.selectRow(rows[wanted])
        elif self._select_first and rows:
            self.table.selectRow(0)
        self._select_first = False
        self._update_status()

    def select_memory(self, memory_id: str) -> None:
        """Select a memory in the table (fetching it by id if it is not in view)."""
        for row, memory in self.table_model.loaded_rows():
            if memory.id == memory_id:
                self.table.selectRow(row)
                self.table.scrollTo(self.table_model.index(row, 0))
                return

        def fetch(engine):
            memory = engine.get(memory_id)
            return memory, memory.id in engine.embedded([memory.id])

        def show(pair) -> None:
            if self.editor_dirty() and not self._may_drop_edits():
                return
            self._keep_selected = pair[0].id
            self.table_model.show_results([pair])
            self._load(pair[0])
            self.statusBar().showMessage(
                f"Showing only “{pair[0].display_title}”, opened from the search. F5 lists all.",
                15_000,
            )

        self.worker.call(fetch, show, self._failed, INTERACTIVE)

    @property
    def current(self) -> Memory | None:
        """The memory in the editor (None: a new one, or nothing selected)."""
        return self._current

    def selected(self) -> list[Memory]:
        """The selected memories."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        found = [self.table_model.memory_at(r) for r in rows]
        return [m for m in found if m is not None]  # a row whose page is still coming: not yet

    def _changed_elsewhere(self) -> None:
        if time.monotonic() >= self._report_until:
            self.statusBar().showMessage("The list shows changes made elsewhere.", 4000)
        self.refresh()

    def editor_dirty(self) -> bool:
        """Whether the editor holds changes not saved yet."""
        return self._editor_values() != self._loaded_values

    def _editor_values(self) -> tuple:
        return (
            self.f_title.text(),
            self.f_text.toPlainText(),
            self.f_reasoning.toPlainText(),
            self.f_category.currentText(),
            self.f_tags.text(),
            self.f_keywords.text(),
            self.f_references.text(),
            self.f_project.text(),
            self.f_confidence.currentText(),
            self.f_pinned.isChecked(),
        )

    def _page_arrived(self, top, bottom, *_roles) -> None:
        """A page came: the row selected while it was coming opens in the editor now."""
        current = self.table.currentIndex()
        if (
            self._pending_row is not None
            and current.isValid()
            and current.row() == self._pending_row
            and top.row() <= current.row() <= bottom.row()
        ):
            self._pending_row = None
            self._row_changed(current, None)

    def _row_changed(self, current, _previous) -> None:
        self._pending_row = None
        memory = self.table_model.memory_at(current.row()) if current.isValid() else None
        if memory is None:  # its page is still coming: loaded when it arrives
            if current.isValid():
                self._pending_row = current.row()
            return
        if self._current is not None and memory.id == self._current.id and self.editor_dirty():
            return  # the same memory, re-read: keep what the user is typing
        if self.editor_dirty() and not self._may_drop_edits():
            return
        self._load(memory)

    def _may_drop_edits(self) -> bool:
        """Ask before unsaved edits are replaced: Save, Discard, or Cancel (keep editing)."""
        box = QtWidgets.QMessageBox(
            QtWidgets.QMessageBox.Question,
            "Mnemo",
            "The memory in the editor has changes that are not saved.",
            QtWidgets.QMessageBox.Save
            | QtWidgets.QMessageBox.Discard
            | QtWidgets.QMessageBox.Cancel,
            self,
        )
        box.setDefaultButton(QtWidgets.QMessageBox.Cancel)
        box.setWindowModality(Qt.WindowModal)  # blocks this window only, not the others
        answer = box.exec()
        if answer == QtWidgets.QMessageBox.Save:
            self.save_current()
            return False  # the save selects the saved memory when it is done
        return answer == QtWidgets.QMessageBox.Discard

    def _load(self, memory: Memory | None) -> None:
        self._current = memory
        if memory is None or self.history_view.memory_id != memory.id:
            self.history_view.show_memory(memory)
        m = memory or Memory(id="", text="")
        self.f_title.setText(m.title)
        # A huge text (a pasted log, a book) opens by its start at once, read-only; the
        # button loads it whole for editing. Saving never stores the shortened text.
        self._text_cut = len(m.text) > EDITOR_CHARS
        self.f_text.setPlainText(m.text[:EDITOR_CHARS] if self._text_cut else m.text)
        self.f_text.setReadOnly(self._text_cut)
        self.whole_text_button.setVisible(self._text_cut)
        if self._text_cut:
            # Short, so a huge memory does not widen the editor and squeeze the table.
            self.whole_text_button.setText(f"Edit all {len(m.text):,} characters")
            self.whole_text_button.setToolTip(
                f"Showing the first {EDITOR_CHARS:,} of {len(m.text):,} characters, read-only."
            )
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
        if self._text_cut:
            self.f_info.setText(
                self.f_info.text() + f" · the text shows its first {EDITOR_CHARS:,} characters,"
                " read-only"
            )
        self._loaded_values = self._editor_values()

    def _load_whole_text(self) -> None:
        """The whole of a huge text in the editor, editable (may take a second)."""
        if self._current is None or not self._text_cut:
            return
        dirty = self.editor_dirty()
        self.f_text.setPlainText(self._current.text)
        self.f_text.setReadOnly(False)
        self._text_cut = False
        self.whole_text_button.hide()
        if not dirty:
            self._loaded_values = self._editor_values()

    # ---- editing ---------------------------------------------------------------------
    def new_memory(self) -> None:
        """Clear the editor for a new memory."""
        self.table.clearSelection()
        self._load(None)
        self.f_text.setFocus()

    def save_current(self) -> None:
        """Save the editor: a new memory, or changes (re-embedded in the background;
        `saving.py`)."""
        self.saving.save()

    def _write(self, fn, done) -> None:
        """A change on the worker; a failure is shown in a message box, nothing is lost."""
        self.worker.call(fn, done, self._failed_write, INTERACTIVE, writes=True)

    def _saved(self, result) -> None:
        memory = result.memory if isinstance(result, RememberResult) else result
        self._current = memory
        self._loaded_values = self._editor_values()  # saved: nothing to lose any more
        self.statusBar().showMessage(
            f"Saved “{memory.display_title}”; re-embedding in the background.", 5000
        )
        # The refresh that follows every write selects it when it is in view; the list
        # is never narrowed to this one memory.
        self._keep_selected = memory.id

    def _restored(self, memory_id: str, message: str) -> None:
        """A version restored from the History tab: the refresh that follows selects it."""
        self._keep_selected = memory_id
        self.statusBar().showMessage(message, 8000)

    # ---- trash, purge and merge (`removals.py`) ----------------------------------------
    def delete_selected(self) -> None:
        """The selected memories to the trash (those in it: deleted for good, after a yes)."""
        self.removals.delete_selected()

    def undo_delete(self) -> None:
        """Undo the last delete (or merge)."""
        self.removals.undo()

    def restore_selected(self) -> None:
        """Bring the selected memories back from the trash."""
        self.removals.restore_selected()

    def merge_selected(self) -> None:
        """Merge the selected memories into a new one keeping every statement."""
        self.removals.merge_selected()

    def find_duplicates(self) -> None:
        """List near-duplicate pairs (cosine ≥ the duplicate threshold) with merge buttons."""
        threshold = self.settings["duplicate_threshold"]
        self.statusBar().showMessage("Looking for near-duplicates…")
        self.worker.call(
            lambda e: e.duplicate_pairs(threshold), self._show_duplicates, self._failed
        )

    def show_conflicts(self) -> None:
        """The memories edited on two devices apart, each with its versions, to resolve."""
        self.statusBar().showMessage("Looking for memories edited apart…")
        self.worker.call(
            lambda e: e.sync.conflicts() if e.sync.configured() else [],
            self._show_conflicts,
            self._failed,
        )

    def _show_conflicts(self, conflicts: list[dict]) -> None:
        from app.gui.conflicts import ConflictsDialog

        self.statusBar().showMessage(f"{len(conflicts)} edited on two devices apart.", 5000)
        if self.conflicts_dialog is None:
            self.conflicts_dialog = ConflictsDialog(conflicts, self.worker, self)
        else:
            self.conflicts_dialog.fill(conflicts)
        self.conflicts_dialog.show()
        self.conflicts_dialog.raise_()

    def _show_duplicates(self, pairs) -> None:
        from app.gui.duplicates import DuplicatesDialog

        self.statusBar().showMessage(f"{len(pairs)} near-duplicate pairs.", 5000)
        dialog = DuplicatesDialog(pairs, self.worker, self)
        dialog.show()

    # ---- import / export (`transfers.py`) -----------------------------------------------
    def import_paths(self, files: list[Path]) -> None:
        """Import in the background; new memories are embedded next."""
        self.transfers.import_paths(files)

    def export_to(self, path: Path, fmt: str, plain: bool = False) -> None:
        """Export in the background with a progress bar (`Transfers.export_to`)."""
        self.transfers.export_to(path, fmt, plain)

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt API
        if self.transfers.importable(event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt API
        files = self.transfers.importable(event.mimeData().urls())
        if files:
            self.transfers.import_paths(files)

    # ---- results -----------------------------------------------------------------------
    def _failed(self, message: str) -> None:
        self.progress.setVisible(False)
        self.statusBar().showMessage(message, 8000)

    def _failed_write(self, message: str) -> None:
        self.progress.setVisible(False)
        QtWidgets.QMessageBox.warning(self, "Mnemo", message)

    def _on_progress(self, job: str, done: int, total: int) -> None:
        self.progress.setVisible(True)
        self.progress.setRange(0, total)  # 0..0 shows a busy bar when the total is unknown
        self.progress.setValue(done)
        self.progress.setFormat(f"{job} %v/%m" if total else job)
        verb = {"import": "Imported", "export": "Exported"}.get(job, job)
        self.statusBar().showMessage(f"{verb} {done:,}{f' of {total:,}' if total else ''}…")

    def _on_backfill(self, done: int, total: int) -> None:
        self.progress.setVisible(total > 0)
        if total:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setFormat("embedding %v/%m")
            if not self._status_timer.isActive():  # the counts, at most every 2 s
                self._status_timer.start()
        else:
            self._update_status()

    def _update_status(self) -> None:
        self.worker.call(
            lambda e: e.overview(), self._show_status, None, INTERACTIVE, channel="manager-status"
        )

    def _on_model_state(self, state: str, detail: str) -> None:
        self._model_state = (state, detail)
        self._update_status()

    def _show_status(self, info: dict) -> None:
        self._overview = info
        shown = self.table_model.total
        n = info["memories"]
        counts = (
            f"{n:,} {'memory' if n == 1 else 'memories'} "
            f"({shown:,} shown, {info['trash']:,} in trash)"
        )
        state, detail = self._model_state
        if state == "unavailable":  # keyword search still works; say why meaning does not
            self.status_label.setText(
                f"{counts} · model unavailable: search by keywords only"
                f" · {info['embedded']:,} embedded"
            )
            self.status_label.setToolTip(detail)
            return
        self.status_label.setToolTip("")
        self.status_label.setText(
            f"{counts} · model {info['model_name']} ({info['model_dimension']}d) · "
            f"{info['embedded']:,} embedded, {max(info['memories'] - info['embedded'], 0):,} "
            "waiting"
        )

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        if self.editor_dirty():
            if not self._may_drop_edits():
                event.ignore()
                return
            self._load(self._current)  # discarded: the window opens again without them
        window_state.save("manager", self, self.splitter, self.table)
        self.closed.emit()
        super().closeEvent(event)
