"""The manager's saves (`Manager.saving`): the editor's fields stored as a new memory, or as
changes checked against the version the editor loaded. A memory changed elsewhere meanwhile
(the CLI, an agent) is a question (replace it, keep both, go on editing); one trashed or
deleted meanwhile keeps the editor's text for a new memory: nothing is lost, and nothing
is written over without an answer."""

from __future__ import annotations

from app.core import origin
from app.core.errors import ConflictError, NotFoundError, TrashedError
from app.core.memory import Memory
from app.core.runner import embed_now
from app.gui import conflict_question
from app.gui.worker import INTERACTIVE

# Fields an editor save checks against what it loaded (keywords are also made by the
# backfill, so a label arriving meanwhile is no conflict).
CHECKED_FIELDS = (
    "title", "text", "reasoning", "category", "tags", "references", "source_project",
    "confidence", "pinned", "deleted_at",
)  # fmt: skip


MANAGER = origin.person("manager")  # who writes through the manager's editor


class Saving:
    """The saves of one manager window's editor (`Manager.saving`)."""

    def __init__(self, window) -> None:
        self.window = window  # its editor's fields, the memory loaded, worker, status bar

    def save(self) -> None:
        """Save the editor: a new memory, or changes (re-embedded in the background)."""
        window = self.window
        fields = dict(
            title=window.f_title.text().strip(),
            # the shortened start of a huge text is never saved in place of the whole
            text=window._current.text
            if window._text_cut and window._current is not None
            else window.f_text.toPlainText(),
            reasoning=window.f_reasoning.toPlainText(),
            category=window.f_category.currentText().strip() or "note",
            tags=window.f_tags.text(),
            references=window.f_references.text(),
            confidence=window.f_confidence.currentText(),
        )
        project = window.f_project.text().strip() or None
        inline = embed_now(len(fields["text"]))
        if window._current is None:
            pinned = window.f_pinned.isChecked()

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
                    origin=MANAGER,
                    force=True,
                    embed=inline,  # a long text: in the background, slice by slice
                )
                if pinned:
                    engine.edit(result.memory.id, pinned=True, origin=MANAGER)
                return result

            window._write(create, window._saved)
            return
        memory_id = window._current.id
        keywords = window.f_keywords.text()
        changes = dict(fields, source_project=project, pinned=window.f_pinned.isChecked())
        if keywords != ", ".join(window._current.keywords or []):
            changes["keywords"] = keywords

        loaded = window._current
        expect = {field: getattr(loaded, field) for field in CHECKED_FIELDS}

        def gone(message: str) -> None:
            error = getattr(message, "error", None)
            if isinstance(error, ConflictError) and not isinstance(error, TrashedError):
                window.worker.call(
                    lambda e: e.get(memory_id),
                    lambda other: self._conflict(memory_id, inline, changes, loaded, other),
                    gone,
                    INTERACTIVE,
                )
                return
            if isinstance(error, TrashedError):
                how = "moved to the trash (a merge undone, or deleted elsewhere)"
            elif isinstance(error, NotFoundError):
                how = "deleted elsewhere"
            else:
                window._failed_write(message)
                return
            # Trashed or purged meanwhile: the editor keeps the text, and the next save
            # stores it as a new memory (never into the trash, where nothing finds it).
            window._current = None
            window.f_info.setText(f"New memory (the one you edited was {how.split(' (')[0]})")
            window._failed_write(
                f"This memory was {how} while you edited it. Your text is still in the "
                "editor: Save again to keep it as a new memory."
            )

        def edit(engine):
            memory = engine.edit(memory_id, embed=inline, expect=expect, origin=MANAGER, **changes)
            return memory, engine.spaces.unsent(memory_id)  # (a space that no longer takes it)

        window.worker.call(edit, self._saved, gone, INTERACTIVE, writes=True)

    def _saved(self, out) -> None:
        """Saved; said so, and when the memory's space does not take it any more, that it
        stays on this device (removed, left: `Spaces.unsent`)."""
        memory, unsent = out
        self.window._saved(memory)
        if unsent:
            self.window.statusBar().showMessage(f"Saved, not shared: {unsent}.", 15_000)

    def _conflict(
        self, memory_id: str, inline: bool, changes: dict, loaded: Memory, other: Memory
    ) -> None:
        """The memory was changed elsewhere (the CLI, an agent) after it was opened here:
        replace that version with the editor's, keep both, or go on editing, with what
        changed there shown beside the editor's version. Nothing is written without an
        answer."""
        window = self.window
        if other.deleted_at:  # trashed meanwhile as well: said as such (`gone`)
            window._current = None
            window._failed_write(
                "This memory was moved to the trash while you edited it. Your text is still "
                "in the editor: Save again to keep it as a new memory."
            )
            return
        answer = conflict_question.ask(window, loaded, other, changes)
        if answer == conflict_question.REPLACE:
            window.worker.call(
                lambda e: e.edit(memory_id, embed=inline, origin=MANAGER, **changes),
                window._saved,
                window._failed_write,
                INTERACTIVE,
                writes=True,
            )
        elif answer == conflict_question.BOTH:
            window._load_whole_text()  # a huge text shown by its start is saved whole
            window._current = None  # the editor's fields go into a new memory
            self.save()
        else:
            window.statusBar().showMessage(
                "Not saved: select the memory again to see the other version.", 8000
            )
