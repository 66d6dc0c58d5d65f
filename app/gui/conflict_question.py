"""The question an editor's save asks when the memory was changed elsewhere (the CLI, an
agent) after it was opened: replace that version with the editor's, keep both, or go on
editing, with what changed there shown beside the editor's version."""

from __future__ import annotations

from app.core.memory import Memory
from app.gui.qt import Qt, QtWidgets

REPLACE, BOTH, CANCEL = "replace", "both", "cancel"

# What the conflict question names, in the words it uses
CONFLICT_FIELDS = {
    "title": "the title", "text": "the text", "reasoning": "the reasoning",
    "category": "the category", "tags": "the tags", "references": "the references",
    "source_project": "the project", "confidence": "the confidence", "pinned": "pinned",
}  # fmt: skip


def _shown(value) -> str:
    """A field's value as the conflict question shows it."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def ask(parent, loaded: Memory, other: Memory, changes: dict) -> str:
    """REPLACE, BOTH or CANCEL, asked over `parent` (modal to that window only): `loaded` as
    the editor opened it, `other` as it is now, `changes` the editor's fields."""
    box = QtWidgets.QMessageBox(
        QtWidgets.QMessageBox.Warning,
        "Mnemo",
        "This memory was changed elsewhere (the command line or an agent) after you "
        "opened it here.",
        QtWidgets.QMessageBox.Yes | QtWidgets.QMessageBox.Save | QtWidgets.QMessageBox.Cancel,
        parent,
    )

    def value(memory: Memory, field: str) -> str:  # a title made from the text is none
        return _shown(memory.own_title if field == "title" else getattr(memory, field))

    differ = [f for f in CONFLICT_FIELDS if value(loaded, f) != value(other, f)]
    said = ", ".join(CONFLICT_FIELDS[f] for f in differ) or "nothing you can see"
    preview = other.text if len(other.text) <= 300 else other.text[:299] + "…"
    box.setInformativeText(
        f"Changed there: {said}.\n\nTheir text: “{preview}”\n\n"
        "Replace it with yours, or keep both: yours is saved as a new memory and the "
        "other stays as it is now."
    )
    mine = changes  # the editor's fields, as they would be saved
    box.setDetailedText(
        "\n\n".join(
            f"{CONFLICT_FIELDS[f].upper()} there:\n{value(other, f)}\n\n"
            f"{CONFLICT_FIELDS[f].upper()} yours:\n{_shown(mine.get(f, getattr(loaded, f)))}"
            for f in differ
        )
    )
    box.button(QtWidgets.QMessageBox.Yes).setText("Replace it with mine")
    box.button(QtWidgets.QMessageBox.Save).setText("Keep both")
    box.setDefaultButton(QtWidgets.QMessageBox.Cancel)
    box.setWindowModality(Qt.WindowModal)  # blocks this window only, not the others
    answer = box.exec()
    if answer == QtWidgets.QMessageBox.Yes:
        return REPLACE
    return BOTH if answer == QtWidgets.QMessageBox.Save else CANCEL
