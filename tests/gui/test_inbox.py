"""The capture inbox in the manager (issue 25, item 3): candidates a hook proposed from
another process appear with their count, are accepted as edited or rejected, with the real
manager, worker and database."""

from __future__ import annotations

from app.core.engine import Engine
from app.core.storage.inbox import Candidate
from app.gui.manager import Manager
from app.gui.qt import QtCore


def _propose(embedder, settings, *texts: str) -> None:
    """What the hook helper does, from another connection (another process's engine)."""
    engine = Engine(settings=settings, embedder=embedder)
    try:
        for text in texts:
            engine.capture(Candidate(text, "remember", agent="claude", said=f"remember {text}"))
    finally:
        engine.close()


def test_candidates_captured_elsewhere_are_reviewed_in_the_manager(
    qtbot, worker, settings, embedder
):
    manager = Manager(worker, settings)
    qtbot.addWidget(manager)
    manager.show()
    assert manager.inbox_action.text() == "Inbox"
    # WHEN a hook captures two statements in another process
    _propose(embedder, settings, "The VPN config lives in ops/vpn.", "Standups are at 9:30.")
    # THEN the manager's Inbox shows the count, without reloading its list
    qtbot.waitUntil(lambda: manager.inbox_action.text() == "Inbox (2)", timeout=15_000)
    manager.show_inbox()
    dialog = manager.inbox_dialog
    qtbot.waitUntil(lambda: dialog.list.count() == 2, timeout=10_000)
    # WHEN the first is edited and accepted
    dialog.list.setCurrentRow(0)
    first = dialog.candidates[0]
    assert dialog.text.toPlainText() == first.text
    assert first.text in dialog.said.text()
    dialog.text.setPlainText(first.text.replace(".", " (ask Zebulon)."))
    qtbot.mouseClick(dialog.accept_button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=15_000)
    assert dialog.status.text() == "Stored 1 as memories"
    # THEN it is a memory as edited, and the count went down
    found = []
    worker.call(lambda e: e.recall("ask Zebulon", mode="keyword", track=False), found.append)
    qtbot.waitUntil(lambda: bool(found), timeout=15_000)
    assert found[0].results[0].memory.text == first.text.replace(".", " (ask Zebulon).")
    qtbot.waitUntil(lambda: manager.inbox_action.text() == "Inbox (1)", timeout=15_000)
    # WHEN the other is rejected THEN the inbox is empty and says so
    dialog.list.setCurrentRow(0)
    qtbot.mouseClick(dialog.reject_button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.count() == 0, timeout=15_000)
    assert "Nothing waits" in dialog.status.text() or "Rejected 1" in dialog.status.text()
    assert not dialog.accept_button.isEnabled()
    qtbot.waitUntil(lambda: manager.inbox_action.text() == "Inbox", timeout=15_000)


def test_the_popup_says_what_waits_and_ctrl_i_opens_the_inbox(qtbot, worker, settings, embedder):
    from app.gui.popup import Popup

    _propose(embedder, settings, "The VPN config lives in ops/vpn.")
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    qtbot.waitUntil(lambda: popup.hint.text().startswith("1 captured from agents"), timeout=15_000)
    with qtbot.waitSignal(popup.openInbox, timeout=5_000):
        qtbot.keyClick(popup.search, QtCore.Qt.Key_I, QtCore.Qt.ControlModifier)
    assert not popup.isVisible()


def test_a_capture_arriving_while_one_is_shown_keeps_it_shown(qtbot, worker, settings, embedder):
    # Seen in the screenshots: the list reloaded on a capture lost its current row, and the
    # text to edit went blank
    from app.gui.inbox import InboxDialog

    _propose(embedder, settings, "The VPN config lives in ops/vpn.")
    dialog = InboxDialog(worker)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=10_000)
    assert dialog.text.toPlainText() == "The VPN config lives in ops/vpn."
    _propose(embedder, settings, "Standups are at 9:30.")
    qtbot.waitUntil(lambda: dialog.list.count() == 2, timeout=15_000)
    assert dialog.text.toPlainText() == "The VPN config lives in ops/vpn."
    assert dialog.text.isEnabled()


def test_a_files_imported_candidates_are_accepted_at_once(qtbot, worker, settings, embedder):
    # GIVEN three statements imported from an agent's memory file and one a hook captured
    engine = Engine(settings=settings, embedder=embedder)
    try:
        for text in ("Use uv, never pip.", "Squash merge every pull request.", "Tabs, not spaces."):
            candidate = Candidate(text, "agent-file", agent="claude", source="/h/.claude/CLAUDE.md")
            assert engine.capture_imported(candidate) == "proposed"
        engine.capture(Candidate("The VPN config lives in ops/vpn.", "remember", agent="codex"))
    finally:
        engine.close()
    manager = Manager(worker, settings)
    qtbot.addWidget(manager)
    manager.show()
    manager.show_inbox()
    dialog = manager.inbox_dialog
    qtbot.waitUntil(lambda: dialog.list.count() == 4, timeout=10_000)
    # WHEN one of the file's is current and the whole file is selected
    row = next(n for n, c in enumerate(dialog.candidates) if c.source)
    dialog.list.setCurrentRow(row)
    assert "From claude: /h/.claude/CLAUDE.md" in dialog.said.text()
    assert ".claude/CLAUDE.md" in dialog.list.item(row).text()
    qtbot.mouseClick(dialog.same_file, QtCore.Qt.LeftButton)
    assert len(dialog.list.selectedItems()) == 3
    assert dialog.status.text().startswith("3 selected from .claude/CLAUDE.md")
    # THEN one click accepts the three, and the hook's candidate still waits
    qtbot.mouseClick(dialog.accept_button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=15_000)
    assert dialog.status.text() == "Stored 3 as memories"
    assert dialog.candidates[0].text == "The VPN config lives in ops/vpn."
    assert not dialog.same_file.isEnabled()  # (it came from no file)


def test_a_proposal_to_supersede_shows_both_texts_and_accepting_it_keeps_the_older_words(
    qtbot, worker, settings, embedder
):
    from app.gui.inbox import InboxDialog

    old = "The staging database listens on port 5432."
    new = "The staging database now listens on port 6543."
    engine = Engine(settings=settings, embedder=embedder)  # (another process's, as an agent's)
    try:
        older = engine.remember(old).memory
        newer = engine.remember(new).memory
    finally:
        engine.close()
    dialog = InboxDialog(worker)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=15_000)
    # THEN it shows the newer text, read-only, and the older beside it with what accepting does
    assert dialog.text.toPlainText() == new and dialog.text.isReadOnly()
    said = dialog.said.text()
    assert f"Older memory {older.id}" in said and old in said and "History" in said
    assert dialog.text_label.text().startswith("Newer memory")
    assert "supersedes" in dialog.list.item(0).text()
    # WHEN it is accepted
    qtbot.mouseClick(dialog.accept_button, QtCore.Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.list.count() == 0, timeout=15_000)
    assert dialog.status.text().startswith("1 older memory superseded: their words")
    assert dialog.status.text().endswith("Nothing else waits.")
    # THEN the older words are a version of the newer memory, the older one is in the trash
    found = []
    worker.call(lambda e: (e.history(newer.id), e.get(older.id)), found.append)
    qtbot.waitUntil(lambda: bool(found), timeout=15_000)
    history, gone = found[0]
    assert [v.text for v in history.versions] == [old] and gone.deleted_at
