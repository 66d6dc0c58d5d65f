"""The manager window's widgets, made and laid out (as Qt Designer's `setupUi(window)`):
the filter bar, the table, the editor, the toolbar and the status bar, set on the window as
its attributes; the window (`manager.py`) connects and drives them."""

from __future__ import annotations

from app.gui.history_view import HistoryView
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets


def set_up(window) -> None:
    """Make the manager's widgets and lay them out."""
    bar = _filter_bar(window)
    _table(window)
    window.editor = _editor(window)
    # the selected memory: its fields to edit, and the versions of its words (issue 44)
    window.history_view = HistoryView(window.worker)
    window.side = QtWidgets.QTabWidget(objectName="sideTabs")
    window.side.addTab(window.editor, "Edit")
    window.side.addTab(window.history_view, "History")
    split = window.splitter = QtWidgets.QSplitter(objectName="managerSplitter")
    split.addWidget(window.table)
    split.addWidget(window.side)
    split.setSizes([720, 380])
    central = QtWidgets.QWidget()
    layout = QtWidgets.QVBoxLayout(central)
    layout.addLayout(bar)
    layout.addWidget(split, 1)
    window.setCentralWidget(central)
    _toolbar(window)
    _status_bar(window)


def _filter_bar(window) -> QtWidgets.QHBoxLayout:
    """The search box, its mode, the filters and the trash switch."""
    window.search = QtWidgets.QLineEdit(objectName="managerSearch")
    window.search.setPlaceholderText("Search (meaning and keywords)…")
    window.search.setClearButtonEnabled(True)
    window.mode = QtWidgets.QComboBox(objectName="managerMode")
    window.mode.addItems(["hybrid", "semantic", "keyword"])
    window.filters = {}
    bar = QtWidgets.QHBoxLayout()
    bar.addWidget(window.search, 3)
    bar.addWidget(window.mode)
    for name in ("category", "project", "source", "origin"):
        box = QtWidgets.QComboBox(objectName=f"filter_{name}")
        box.setMinimumWidth(110)
        window.filters[name] = box
        bar.addWidget(box)
    # Tags are typed (completed from the known ones) and combine: "work, urgent" shows
    # memories carrying both.
    window.tag_filter = QtWidgets.QLineEdit(objectName="filter_tags")
    window.tag_filter.setPlaceholderText("tags: a, b")
    window.tag_filter.setClearButtonEnabled(True)
    window.tag_filter.setMinimumWidth(150)
    window.tag_completer = TagCompleter(window.tag_filter)
    bar.insertWidget(bar.count() - 2, window.tag_filter)
    # Team spaces (issue 45): any, only the user's own (in no space), or one space's; shown
    # when this device is in a space (`shares.Shares` fills it)
    window.space_filter = QtWidgets.QComboBox(objectName="filter_space")
    window.space_filter.setMinimumWidth(110)
    window.space_filter.setToolTip("Memories shared in a team space, or your own")
    bar.addWidget(window.space_filter)
    window.shares.listed([])
    window.trash = QtWidgets.QCheckBox("Trash", objectName="showTrash")
    bar.addWidget(window.trash)
    return bar


def _table(window) -> None:
    """The table of memories, over the lazily read model."""
    window.table = QtWidgets.QTableView(objectName="memoryTable")
    window.table.setModel(window.table_model)
    window.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectRows)
    window.table.setSortingEnabled(True)
    window.table.sortByColumn(4, Qt.DescendingOrder)
    window.table.verticalHeader().setVisible(False)
    window.table.verticalHeader().setDefaultSectionSize(26)
    header = window.table.horizontalHeader()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(0, QtWidgets.QHeaderView.Stretch)
    # Dates fit "11 months ago"; the title takes what is left.
    width_of = window.table.fontMetrics().horizontalAdvance
    dates = width_of("11 months ago") + 16
    for column, width in enumerate((0, 100, 110, dates, dates, 60, 80, 150, 120)):
        if width:
            window.table.setColumnWidth(column, width)
    # The Space column (`manager.SPACE_COLUMN`, the model's last) is shown after the title,
    # where it is in view: the columns past Recalls are off to the right at the default size
    header.moveSection(8, 1)
    window.table.setAlternatingRowColors(True)
    window.table.setWordWrap(False)  # a long title is cut mid-word with "…", not to "Book …"
    window.table.setContextMenuPolicy(Qt.CustomContextMenu)  # Share in space, Stop sharing
    window.table.customContextMenuRequested.connect(window.shares.context_menu)


def _status_bar(window) -> None:
    """The counts, the undo button and the backfill's progress."""
    window.status_label = QtWidgets.QLabel(objectName="managerStatus")
    window.progress = QtWidgets.QProgressBar(objectName="backfillProgress")
    widest = window.progress.fontMetrics().horizontalAdvance("embedding 9999999/9999999")
    window.progress.setFixedWidth(widest + 48)  # the text is never clipped
    window.progress.setVisible(False)
    window.undo_button = QtWidgets.QPushButton("Undo", objectName="undoDelete")
    window.undo_button.setVisible(False)
    window.undo_button.clicked.connect(window.removals.undo)
    window.statusBar().addWidget(window.status_label, 1)
    window.statusBar().addPermanentWidget(window.undo_button)
    window.statusBar().addPermanentWidget(window.progress)


def _editor(window) -> QtWidgets.QWidget:
    """The fields of the memory being edited, and Save."""
    box = QtWidgets.QWidget(objectName="editor")
    form = QtWidgets.QFormLayout(box)
    window.f_title = QtWidgets.QLineEdit(objectName="editTitle")
    window.f_text = QtWidgets.QPlainTextEdit(objectName="editText")
    window.f_reasoning = QtWidgets.QPlainTextEdit(objectName="editReasoning")
    window.f_reasoning.setMaximumHeight(70)
    window.f_category = QtWidgets.QComboBox(objectName="editCategory")
    window.f_category.setEditable(True)
    window.f_category.addItems(window.settings["categories"])
    window.f_tags = QtWidgets.QLineEdit(objectName="editTags")
    window.f_keywords = QtWidgets.QLineEdit(objectName="editKeywords")
    window.f_references = QtWidgets.QLineEdit(objectName="editReferences")
    window.f_project = QtWidgets.QLineEdit(objectName="editProject")
    window.f_confidence = QtWidgets.QComboBox(objectName="editConfidence")
    window.f_confidence.addItems(["low", "medium", "high"])
    window.f_pinned = QtWidgets.QCheckBox("Pinned", objectName="editPinned")
    window.f_info = QtWidgets.QLabel(objectName="editInfo")
    window.f_info.setWordWrap(True)
    window.save_button = QtWidgets.QPushButton("Save", objectName="saveMemory")
    window.save_button.clicked.connect(window.save_current)
    form.addRow("Title", window.f_title)
    window.whole_text_button = QtWidgets.QPushButton(objectName="wholeText")
    window.whole_text_button.clicked.connect(window._load_whole_text)
    window.whole_text_button.hide()
    text_box = QtWidgets.QWidget()
    text_column = QtWidgets.QVBoxLayout(text_box)
    text_column.setContentsMargins(0, 0, 0, 0)
    text_column.addWidget(window.f_text)
    text_column.addWidget(window.whole_text_button)
    form.addRow("Text", text_box)
    form.addRow("Reasoning", window.f_reasoning)
    form.addRow("Category", window.f_category)
    form.addRow("Tags", window.f_tags)
    form.addRow("Keywords", window.f_keywords)
    form.addRow("References", window.f_references)
    form.addRow("Project", window.f_project)
    form.addRow("Confidence", window.f_confidence)
    form.addRow("", window.f_pinned)
    form.addRow("", window.f_info)
    form.addRow("", window.save_button)
    return box


def _toolbar(window) -> None:
    """New, Delete, Restore, Empty trash, Merge, Duplicates, Import, Export, Conflicts, Inbox."""
    bar = window.addToolBar("Memories")
    bar.setObjectName("managerToolbar")
    bar.setMovable(False)
    for name, text, slot, shortcut in (
        ("actionNew", "New", window.new_memory, QtGui.QKeySequence.New),
        ("actionDelete", "Delete", window.removals.delete_selected, None),
        ("actionRestore", "Restore", window.removals.restore_selected, None),
        ("actionEmptyTrash", "Empty trash…", window.removals.empty_trash, None),
        ("actionMerge", "Merge selected", window.removals.merge_selected, None),
        ("actionDuplicates", "Find duplicates", window.find_duplicates, "Ctrl+Shift+D"),
        ("actionImport", "Import…", window.transfers.import_dialog, None),
        ("actionImportFolder", "Import folder…", window.transfers.import_folder_dialog, None),
        ("actionExport", "Export…", window.transfers.export_dialog, None),
        ("actionConflicts", "Conflicts", window.show_conflicts, "Ctrl+Shift+C"),
        ("actionInbox", "Inbox", window.show_inbox, None),
    ):
        action = bar.addAction(text, slot)
        action.setObjectName(name)
        if shortcut:
            action.setShortcut(shortcut)
    window.inbox_action = bar.actions()[-1]
    window.inbox_action.setToolTip("What your agents captured, to accept or reject")
    conflicts = bar.actions()[-2]
    conflicts.setToolTip("Memories edited on two of your devices apart, to review")
    share = window.shares.menu.menuAction()  # (its menu: one action per space)
    share.setObjectName("actionShareIn")
    share.setToolTip("Share the selected memories in a team space")
    bar.insertAction(conflicts, share)
    bar.insertAction(conflicts, window.shares.stop)
    button = bar.widgetForAction(share)
    if isinstance(button, QtWidgets.QToolButton):  # (the menu opens on a click)
        button.setPopupMode(QtWidgets.QToolButton.InstantPopup)


class TagCompleter(QtWidgets.QCompleter):
    """Completes the tag being typed after the last comma, keeping the ones before it."""

    def __init__(self, field: QtWidgets.QLineEdit):
        super().__init__(field)
        self.setModel(QtCore.QStringListModel(self))
        self.setCaseSensitivity(Qt.CaseInsensitive)
        self.setFilterMode(Qt.MatchContains)
        field.setCompleter(self)

    def splitPath(self, path: str) -> list[str]:  # noqa: N802 - Qt API
        return [path.rsplit(",", 1)[-1].strip()]

    def pathFromIndex(self, index) -> str:  # noqa: N802 - Qt API
        typed = self.widget().text()
        before = [t.strip() for t in typed.split(",")[:-1] if t.strip()]
        return ", ".join([*before, index.data()])
