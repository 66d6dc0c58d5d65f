"""The settings dialog, built from the settings declaration in `app.core.settings`."""

from __future__ import annotations

from pathlib import Path

from app.core import paths
from app.core.engine import SettingsChange
from app.core.settings import HOTKEY_SETTINGS, LABELS, SETTINGS, Setting, Settings
from app.gui.agents_page import AgentsPage
from app.gui.contrast import make_quiet
from app.gui.privacy_page import PrivacyPage
from app.gui.qt import QtGui, QtWidgets, Signal
from app.gui.spaces_page import SpacesPage
from app.gui.sync_page import SyncPage
from app.gui.worker import INTERACTIVE, Worker

# What an empty text field means.
PLACEHOLDERS = {
    "model_path": f"the bundled model, {paths.DEFAULT_MODEL.name}",
    "mirror_dir": "nowhere (off)",
}


class Choices(QtWidgets.QWidget):
    """A list setting with known choices: a check box for each."""

    def __init__(self, choices: tuple, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.boxes = {}
        for choice in choices:
            box = QtWidgets.QCheckBox(str(choice), objectName=f"choice_{choice}")
            layout.addWidget(box)
            self.boxes[choice] = box
        layout.addStretch(1)

    def set_chosen(self, values: list) -> None:
        for choice, box in self.boxes.items():
            box.setChecked(choice in values)

    def chosen(self) -> list:
        return [choice for choice, box in self.boxes.items() if box.isChecked()]


class SettingsDialog(QtWidgets.QDialog):
    """One tab per settings group; a widget per setting chosen by its type.

    It shows the engine's settings and hands changes to the engine through the worker
    (`Engine.apply_settings`), so the running engine uses them at once.
    """

    applied = Signal(list)  # the keys that changed
    failed = Signal(str)  # why nothing was saved

    def __init__(self, settings: Settings, worker: Worker, parent=None):
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle("Mnemo settings")
        self.setMinimumWidth(820)  # the model file's name fits beside its buttons
        self.settings = settings
        self.worker = worker
        self.fields: dict[str, QtWidgets.QWidget] = {}
        tabs = QtWidgets.QTabWidget()
        groups: dict[str, QtWidgets.QFormLayout] = {}
        for setting in SETTINGS:
            if setting.group == "Sync":  # its own page (SyncPage): set up, not just typed
                continue
            if setting.group not in groups:
                page = QtWidgets.QWidget()
                groups[setting.group] = QtWidgets.QFormLayout(page)
                # Scrolled, so rows keep the height their wrapped help needs (a squeezed
                # row drew its help over the field above it).
                scroller = QtWidgets.QScrollArea(widgetResizable=True)
                scroller.setFrameShape(QtWidgets.QFrame.NoFrame)
                scroller.setWidget(page)
                tabs.addTab(scroller, setting.group)
            widget = self._widget(setting)
            widget.setObjectName(f"setting_{setting.key}")
            widget.setToolTip(f"{setting.help} (mnemo settings {setting.key})")
            self.fields[setting.key] = widget
            field = QtWidgets.QWidget()
            column = QtWidgets.QVBoxLayout(field)
            column.setContentsMargins(0, 0, 0, 4)
            column.setSpacing(1)
            column.addWidget(self._with_extras(setting, widget))
            help_line = QtWidgets.QLabel(setting.help, objectName=f"help_{setting.key}")
            help_line.setWordWrap(True)
            make_quiet(help_line)  # quieter than the labels, and still readable
            small = help_line.font()
            small.setPointSizeF(small.pointSizeF() * 0.85)
            help_line.setFont(small)
            column.addWidget(help_line)
            groups[setting.group].addRow(LABELS[setting.key], field)
        self.status = QtWidgets.QLabel(objectName="settingsStatus")
        self.status.setWordWrap(True)
        buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.Save | QtWidgets.QDialogButtonBox.Cancel
        )
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self.load()
        # Tall enough for the longest page without scrolling, where the screen allows.
        pages = [tabs.widget(i).widget() for i in range(tabs.count())]
        wanted = max(page.heightForWidth(760) for page in pages) + 140
        room = self.screen().availableGeometry().height() - 60
        self.resize(self.width(), max(self.sizeHint().height(), min(wanted, room)))
        self.agents = AgentsPage()  # `mnemo agents`: what is wired into which agent
        tabs.addTab(self.agents, "Agents")
        self.privacy = PrivacyPage(worker)  # `mnemo encrypt`, snapshots
        tabs.addTab(self.privacy, "Privacy")
        self.sync = SyncPage(worker)  # `mnemo sync`
        tabs.addTab(self.sync, "Sync")
        self.spaces = SpacesPage(worker)  # `mnemo space`: team spaces' people (issue 45)
        tabs.addTab(self.spaces, "Spaces")
        self.tabs = tabs

    def _widget(self, setting: Setting) -> QtWidgets.QWidget:
        if setting.key in HOTKEY_SETTINGS:
            edit = QtWidgets.QKeySequenceEdit()
            edit.setClearButtonEnabled(True)  # the way to empty it: Backspace is a key too
            if hasattr(edit, "setMaximumSequenceLength"):  # Qt 6.5: one combination
                edit.setMaximumSequenceLength(1)
            return edit
        if setting.choices and setting.type is list:
            return Choices(setting.choices)
        if setting.choices:
            box = QtWidgets.QComboBox()
            box.addItems([str(c) for c in setting.choices])
            return box
        if setting.type is bool:
            return QtWidgets.QCheckBox()
        if setting.type is int:
            box = QtWidgets.QSpinBox()
            box.setRange(int(setting.minimum or 0), int(setting.maximum or 1_000_000))
            return box
        if setting.type is float:
            box = QtWidgets.QDoubleSpinBox()
            box.setDecimals(3)
            box.setSingleStep(0.05)
            box.setRange(
                setting.minimum if setting.minimum is not None else -1e9,
                setting.maximum if setting.maximum is not None else 1e9,
            )
            return box
        edit = QtWidgets.QLineEdit()
        edit.setPlaceholderText(PLACEHOLDERS.get(setting.key, ""))
        return edit

    def _with_extras(self, setting: Setting, widget: QtWidgets.QWidget) -> QtWidgets.QWidget:
        if setting.key not in ("model_path", "mirror_dir"):
            return widget
        row = QtWidgets.QWidget()
        layout = QtWidgets.QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(widget, 1)
        browse = QtWidgets.QPushButton("Choose…")
        layout.addWidget(browse)
        if setting.key == "mirror_dir":
            browse.clicked.connect(lambda: self._choose_folder(widget))
            return row
        browse.clicked.connect(lambda: self._choose_model(widget))
        self.convert_button = QtWidgets.QPushButton("Convert folder…", objectName="convertModel")
        self.convert_button.clicked.connect(self._convert)
        layout.addWidget(self.convert_button)
        reembed = QtWidgets.QPushButton("Re-embed now", objectName="reembed")
        reembed.clicked.connect(self._reembed)
        layout.addWidget(reembed)
        return row

    def _choose_model(self, widget: QtWidgets.QLineEdit) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Choose a GGUF embedding model", "", "GGUF models (*.gguf)"
        )
        if path:
            widget.setText(path)

    def _choose_folder(self, widget: QtWidgets.QLineEdit) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Choose the mirror folder")
        if path:
            widget.setText(path)

    def _convert(self) -> None:
        src = QtWidgets.QFileDialog.getExistingDirectory(
            self, "Choose a sentence-transformers model folder (BERT)"
        )
        if not src:
            return
        out, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Save the GGUF model as", str(Path(src).name) + ".gguf", "GGUF (*.gguf)"
        )
        if out:
            self.convert(Path(src), Path(out))

    def convert(self, src: Path, out: Path) -> None:
        """Convert a model folder to GGUF on the worker (it takes seconds), then offer it."""
        self.status.setText(f"Converting {src.name}… (this takes a few seconds)")
        self.convert_button.setEnabled(False)

        def converted(path: Path) -> None:
            self.convert_button.setEnabled(True)
            self.fields["model_path"].setText(str(path))
            self.status.setText(
                f"Converted to {path}. Save to switch to it; memories are then "
                "re-embedded in the background."
            )

        def not_converted(message: str) -> None:
            self.convert_button.setEnabled(True)
            self.status.setText(f"Not converted: {message}")

        self.worker.call(lambda e: e.convert_model(src, out), converted, not_converted, INTERACTIVE)

    def _reembed(self) -> None:
        self.worker.reload_model()
        self.status.setText(
            "Re-embedding in the background; progress shows in the tray and "
            "the manager's status bar."
        )

    def load(self) -> None:
        """Show the current values."""
        for setting in self._shown_settings():
            widget, value = self.fields[setting.key], self.settings[setting.key]
            if isinstance(widget, Choices):
                widget.set_chosen(value)
            elif isinstance(widget, QtWidgets.QKeySequenceEdit):
                widget.setKeySequence(QtGui.QKeySequence(value))
            elif isinstance(widget, QtWidgets.QComboBox):
                widget.setCurrentText(str(value))
            elif isinstance(widget, QtWidgets.QCheckBox):
                widget.setChecked(bool(value))
            elif isinstance(widget, QtWidgets.QSpinBox | QtWidgets.QDoubleSpinBox):
                widget.setValue(value)
            else:
                widget.setText(", ".join(value) if isinstance(value, list) else str(value))
        self._shown = self.values()

    def _value(self, setting: Setting):
        widget = self.fields[setting.key]
        if isinstance(widget, Choices):
            return widget.chosen()
        if isinstance(widget, QtWidgets.QKeySequenceEdit):
            return widget.keySequence().toString()
        if isinstance(widget, QtWidgets.QComboBox):
            return widget.currentText()
        if isinstance(widget, QtWidgets.QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QtWidgets.QSpinBox | QtWidgets.QDoubleSpinBox):
            return widget.value()
        return widget.text()

    def values(self) -> dict:
        """What the widgets say now, by setting key."""
        return {setting.key: self._value(setting) for setting in self._shown_settings()}

    def _shown_settings(self) -> list[Setting]:
        """The settings with a field here (the Sync page sets its own)."""
        return [setting for setting in SETTINGS if setting.key in self.fields]

    def edits(self) -> dict:
        """Only what the user changed since the dialog showed the settings (so a value
        another process saved meanwhile is not overwritten with the old one)."""
        return {k: v for k, v in self.values().items() if v != self._shown.get(k)}

    def save(self) -> None:
        """Hand the edits to the engine (validated, saved, applied); close when done."""
        values = self.values()
        if not values.get("hotkey") and values.get("hotkey_backend") != "none":
            # An empty field used to save the default silently.
            self._not_saved(
                "the hotkey is empty: press a key combination in the Hotkey field, or "
                "choose “none” as the hotkey backend to have no global hotkey"
            )
            return
        self.status.setText("Saving…")
        self.worker.apply_settings(self.edits(), self._saved, self._not_saved)

    def _saved(self, change: SettingsChange) -> None:
        if change.model_reloaded and change.model_error:
            self.status.setText(f"Saved, but the model does not load: {change.model_error}")
        else:
            self.status.setText("")
        self.load()  # show what the engine took (e.g. clamped values)
        self.applied.emit(change.changed)
        self.accept()

    def _not_saved(self, message: str) -> None:
        self.status.setText(f"Not saved: {message}")
        self.failed.emit(message)
