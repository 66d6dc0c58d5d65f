"""The manager's History tab (issue 44, ADR 0023): the versions of the selected memory,
who wrote and replaced each, a version restored, and a merge undone from it."""

from __future__ import annotations

from app.core import origin
from app.core.engine import Engine
from app.gui.manager import Manager
from tests.gui.conftest import settle


def _manager(qtbot, worker, settings) -> Manager:
    manager = Manager(worker, settings)
    qtbot.addWidget(manager)
    with qtbot.waitSignal(manager.table_model.loaded, timeout=10_000):
        manager.show()
    return manager


def _open_history(qtbot, manager: Manager, memory_id: str) -> None:
    manager.select_memory(memory_id)
    qtbot.waitUntil(lambda: manager.current is not None and manager.current.id == memory_id)
    manager.side.setCurrentWidget(manager.history_view)
    view = manager.history_view
    qtbot.waitUntil(lambda: view.history is not None and view.history.memory.id == memory_id)


def test_the_history_tab_lists_versions_and_restores_one(qtbot, worker, settings, embedder):
    # GIVEN a memory an agent wrote and a person edited at the command line
    with Engine(embedder=embedder) as engine:
        memory = engine.remember(
            "The staging database listens on port 5432.",
            origin=origin.agent("claude-code"),
            force=True,
        ).memory
        engine.edit(
            memory.id,
            text="The staging database listens on port 6543.",
            origin=origin.person("cli"),
        )
    manager = _manager(qtbot, worker, settings)
    _open_history(qtbot, manager, memory.id)
    view = manager.history_view
    # THEN the tab lists the memory now and its version, who wrote and who replaced it
    rows = [view.entries.item(i).text() for i in range(view.entries.count())]
    assert rows[0].startswith("Now — changed") and rows[0].endswith("by you (cli)")
    assert rows[1].startswith("Version 1 — written") and "agent claude-code" in rows[1]
    assert "replaced by an edit" in rows[1] and "by you (cli)" in rows[1]
    # AND the version is selected, its words shown with what changed, restorable
    assert view.selected_version().number == 1
    assert view.words.toPlainText().startswith("The staging database listens on port 5432.")
    assert "“5432.” → “6543.”" in view.words.toPlainText()
    assert view.restore_button.isEnabled() and not view.unmerge_button.isVisible()
    # WHEN the person restores it
    with qtbot.waitSignal(view.restored, timeout=10_000):
        view.restore_button.click()
    settle(qtbot, worker, rounds=3)
    # THEN the memory says it again, the editor shows it, and the replaced words are kept
    qtbot.waitUntil(lambda: manager.f_text.toPlainText().endswith("5432."), timeout=10_000)
    qtbot.waitUntil(lambda: view.history is not None and len(view.history.versions) == 2)
    latest = view.history.versions[0]
    assert latest.text.endswith("6543.") and latest.why == "restore"
    assert (latest.replaced_by.kind, latest.replaced_by.name) == ("person", "manager")
    with Engine(embedder=embedder) as engine:
        assert engine.get(memory.id).text.endswith("5432.")


def test_the_history_tab_of_a_merge_lists_its_sources_and_unmerges(
    qtbot, worker, settings, embedder
):
    with Engine(embedder=embedder) as engine:
        a = engine.remember("Staging runs Postgres 16.", force=True).memory
        b = engine.remember("Staging backups run nightly at two.", force=True).memory
        merged = engine.merge([a.id, b.id])
    manager = _manager(qtbot, worker, settings)
    _open_history(qtbot, manager, merged.id)
    view = manager.history_view
    rows = [view.entries.item(i).text() for i in range(view.entries.count())]
    assert [r.split(" — ")[0] for r in rows] == [
        "Now",
        f"Merged from {a.id}",
        f"Merged from {b.id}",
    ]
    assert view.unmerge_button.isVisible() and not view.restore_button.isEnabled()
    view.entries.setCurrentRow(2)
    assert view.words.toPlainText() == "Staging backups run nightly at two."
    with qtbot.waitSignal(worker.changed, timeout=10_000):
        view.unmerge_button.click()
    settle(qtbot, worker, rounds=3)
    with Engine(embedder=embedder) as engine:
        assert engine.get(a.id).deleted_at is None and engine.get(b.id).deleted_at is None
        assert engine.get(merged.id).deleted_at is not None
    assert manager.current is None or manager.current.id != merged.id
