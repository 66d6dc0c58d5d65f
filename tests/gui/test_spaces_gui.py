"""Team spaces in the manager and the popup (issue 45): the Space column and its author, the
filter by space, Share in space ▸ NAME and Stop sharing, the popup's badge. The user is Bob
(the app's database); Alice is a second real home sharing one space folder with him."""

from __future__ import annotations

import pytest

from app.core.engine import Engine
from app.core.search.ranking import Scored
from app.gui.manager import SPACE_COLUMN, Manager
from app.gui.popup import Popup
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets
from tests.gui.conftest import settle

ALICES = "The staging database lives on port 5433"
SECRET = "the deploy key is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def team(embedder, seeded, tmp_path):
    """Bob's engine (the app's database) and Alice's, in the space `team`: Bob shared his
    k8s memory, Alice one of hers, and Bob's pass brought Alice's."""
    bob = Engine(embedder=embedder)
    alice = Engine(database=tmp_path / "alice.db", embedder=embedder)
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", bob.spaces.id(), "bob")
    bob.spaces.join(invitation, folder)
    alices = alice.remember(ALICES, force=True).memory.id
    alice.spaces.share(alices, "team")
    bob.spaces.share(seeded["k8s"], "team")  # (its pass brings Alice's)
    assert bob.get(alices).text == ALICES
    yield {"bob": bob, "alice": alice, "alices": alices}
    alice.close()
    bob.close()


def _manager(qtbot, worker, settings) -> Manager:
    manager = Manager(worker, settings)
    qtbot.addWidget(manager)
    with qtbot.waitSignal(manager.table_model.loaded, timeout=10_000):
        manager.show()
    return manager


def _space_shown(manager: Manager, memory_id: str, role=Qt.DisplayRole):
    model = manager.table_model
    row = next((i for i, m in model.loaded_rows() if m.id == memory_id), None)
    return None if row is None else model.data(model.index(row, SPACE_COLUMN), role)


def _select(manager: Manager, ids: list[str]) -> None:
    manager.table.clearSelection()
    selection = manager.table.selectionModel()
    for row, memory in manager.table_model.loaded_rows():
        if memory.id in ids:
            index = manager.table_model.index(row, 0)
            flags = QtCore.QItemSelectionModel.Select | QtCore.QItemSelectionModel.Rows
            selection.select(index, flags)


def test_the_space_column_names_the_space_and_the_member_who_wrote_it(
    qtbot, worker, settings, seeded, team
):
    manager = _manager(qtbot, worker, settings)
    assert manager.table_model.headerData(SPACE_COLUMN, Qt.Horizontal) == "Space"
    # THEN Alice's memory shows its space and Alice; Bob's shared one its space; his own none
    qtbot.waitUntil(lambda: _space_shown(manager, team["alices"]) == "team · alice")
    assert _space_shown(manager, seeded["k8s"]) == "team"
    assert _space_shown(manager, seeded["Parse"]) == ""
    tip = _space_shown(manager, team["alices"], Qt.ToolTipRole)
    assert tip.startswith("Shared by alice (device ") and tip.endswith("in the space team")
    assert _space_shown(manager, seeded["k8s"], Qt.ToolTipRole) == "Shared by you in the space team"


def test_the_filter_shows_one_space_or_only_the_users_own(qtbot, worker, settings, seeded, team):
    manager = _manager(qtbot, worker, settings)
    box = manager.space_filter
    qtbot.waitUntil(lambda: box.count() == 3)  # any space, not shared, team
    assert [box.itemText(i) for i in range(3)] == ["any space", "not shared", "team"]
    assert not box.isHidden()
    # WHEN the filter is `team` THEN only its two memories are listed
    box.setCurrentIndex(box.findText("team"))
    qtbot.waitUntil(lambda: manager.table_model.rowCount() == 2)
    shown = {m.id for _, m in manager.table_model.loaded_rows()}
    assert shown == {team["alices"], seeded["k8s"]}
    # WHEN it is "not shared" THEN the three memories in no space
    box.setCurrentIndex(box.findText("not shared"))
    qtbot.waitUntil(lambda: manager.table_model.rowCount() == 3)
    shown = {m.id for _, m in manager.table_model.loaded_rows()}
    assert shown == {seeded["Parse"], seeded["Grandma's"], seeded["The"]}


def test_the_filter_is_hidden_when_this_device_is_in_no_space(qtbot, worker, settings, seeded):
    manager = _manager(qtbot, worker, settings)
    settle(qtbot, worker)
    assert manager.space_filter.isHidden()
    menu = manager.findChild(QtGui.QAction, "actionShareIn").menu()
    assert [a.isEnabled() for a in menu.actions()] == [False]  # "No spaces yet"


def test_share_and_stop_sharing_from_the_manager(qtbot, worker, settings, seeded, team):
    bob = team["bob"]
    manager = _manager(qtbot, worker, settings)
    qtbot.waitUntil(lambda: manager.findChild(QtGui.QAction, "shareIn:team") is not None)
    share = manager.findChild(QtGui.QAction, "shareIn:team")
    # WHEN Bob selects two of his memories and shares them in `team`
    _select(manager, [seeded["Parse"], seeded["Grandma's"]])
    with qtbot.waitSignal(worker.changed, timeout=10_000):
        share.trigger()
    # THEN both are in the space, the column says so, and the status line counts them
    both = [seeded["Parse"], seeded["Grandma's"]]
    assert bob.spaces.shared(both) == {i: "team" for i in both}
    qtbot.waitUntil(lambda: _space_shown(manager, seeded["Parse"]) == "team")
    assert "Shared in “team”: 2 memories." in manager.statusBar().currentMessage()
    # WHEN he stops sharing one THEN it is his own again
    _select(manager, [seeded["Parse"]])
    with qtbot.waitSignal(worker.changed, timeout=10_000):
        manager.findChild(QtGui.QAction, "actionStopSharing").trigger()
    assert bob.spaces.shared(both) == {seeded["Grandma's"]: "team"}
    qtbot.waitUntil(lambda: _space_shown(manager, seeded["Parse"]) == "")
    assert "Stopped sharing: 1 memory." in manager.statusBar().currentMessage()


def test_a_memory_holding_a_secret_is_refused_and_the_others_go(
    qtbot, worker, settings, seeded, team
):
    bob = team["bob"]
    secret = bob.remember(SECRET, force=True, secrets="allow").memory.id
    manager = _manager(qtbot, worker, settings)
    qtbot.waitUntil(lambda: manager.findChild(QtGui.QAction, "shareIn:team") is not None)
    _select(manager, [secret, seeded["Parse"]])
    with qtbot.waitSignal(worker.changed, timeout=10_000):
        manager.findChild(QtGui.QAction, "shareIn:team").trigger()
    # THEN the other one is shared, the secret is not, and the line says which and why
    assert bob.spaces.shared([secret, seeded["Parse"]]) == {seeded["Parse"]: "team"}
    said = manager.statusBar().currentMessage()
    assert said.startswith("Shared in “team”: 1 memory.") and "not shared" in said, said


def test_an_unknown_space_is_said_and_nothing_changes(
    qtbot, worker, settings, seeded, team, monkeypatch
):
    said: list[str] = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning", lambda *a: said.append(a[2]))
    manager = _manager(qtbot, worker, settings)
    _select(manager, [seeded["Parse"]])
    manager.shares.share_selected("nowhere")
    qtbot.waitUntil(lambda: bool(said), timeout=10_000)
    assert "no space named 'nowhere'" in said[0]
    assert team["bob"].spaces.shared([seeded["Parse"]]) == {}


def _painted(popup: Popup, row: int) -> list[str]:
    """Every text the delegate draws for a row of the popup."""
    drawn: list[str] = []

    class Recording(QtGui.QPainter):
        def drawText(self, *args):  # noqa: N802 - Qt API
            drawn.append(next(a for a in args if isinstance(a, str)))
            return super().drawText(*args)

    image = QtGui.QImage(800, 80, QtGui.QImage.Format_ARGB32)
    painter = Recording(image)
    option = QtWidgets.QStyleOptionViewItem()
    popup.list.initViewItemOption(option)
    option.rect = QtCore.QRect(0, 0, 660, 62)
    popup.list.itemDelegate().paint(painter, option, popup.model.index(row))
    painter.end()
    return drawn


def test_the_popup_badges_a_result_of_a_space_with_its_author(
    qtbot, worker, settings, seeded, team
):
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    qtbot.keyClicks(popup.search, "staging database port")
    qtbot.waitUntil(lambda: any(r.memory.id == team["alices"] for r in popup.model.rows))
    row = next(i for i, r in enumerate(popup.model.rows) if r.memory.id == team["alices"])
    qtbot.waitUntil(lambda: popup.model.badge(popup.model.rows[row]) == "team · alice")
    assert "team · alice" in _painted(popup, row)
    # AND a memory in no space has none
    own = Scored(memory=team["bob"].get(seeded["Parse"]), seq=0, score=0.8)
    popup.model.set_rows([own], "dates")
    settle(qtbot, worker)
    assert popup.model.badge(own) == "" and "team" not in " ".join(_painted(popup, 0))


def test_the_tables_context_menu_offers_the_spaces_and_stop_sharing(
    qtbot, worker, settings, seeded, team
):
    manager = _manager(qtbot, worker, settings)
    qtbot.waitUntil(lambda: manager.findChild(QtGui.QAction, "shareIn:team") is not None)
    _select(manager, [seeded["Parse"]])
    manager.table.customContextMenuRequested.emit(QtCore.QPoint(10, 10))
    qtbot.waitUntil(lambda: QtWidgets.QApplication.activePopupWidget() is not None)
    menu = QtWidgets.QApplication.activePopupWidget()
    entries = [a.text() for a in menu.actions()]
    assert entries == ["Share in space", "Stop sharing"]
    assert [a.text() for a in menu.actions()[0].menu().actions()] == ["team"]
    menu.close()


def test_the_app_says_when_someone_joins_a_space(qtbot, qapp, embedder, tmp_path, monkeypatch):
    """Issue 45: a notification when a member joins a space, also one another member
    invited (the app learns it from the folder, in its background pass)."""
    from app.core.engine import Engine
    from app.gui.app import MnemoApp
    from tests.gui.conftest import close_app

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    folder = tmp_path / "shared" / "team"
    bob = Engine(database=tmp_path / "bob.db", embedder=embedder)
    carol = Engine(database=tmp_path / "carol.db", embedder=embedder)
    try:
        with Engine(embedder=embedder) as alice:  # the app's own database
            alice.spaces.create("team", folder, "alice")
            invitation, _ = alice.spaces.invite("team", bob.spaces.id(), "bob")
            bob.spaces.join(invitation, folder)
            alice.spaces.sync("team")  # (what this device knew of the space before)
        app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=embedder))
        try:
            # WHEN Bob invites Carol (Alice's device learns it from the folder only)
            invitation, _ = bob.spaces.invite("team", carol.spaces.id(), "carol")
            carol.spaces.join(invitation, folder)
            # THEN Alice's app says so, once
            qtbot.waitUntil(
                lambda: (
                    (app.status()["last_notification"] or [""])[0] == "Someone joined a team space"
                ),
                timeout=30_000,
            )
            assert "carol" in app.status()["last_notification"][1]
            assert "team" in app.status()["last_notification"][1]
        finally:
            close_app(app)
    finally:
        bob.close()
        carol.close()


def _held_team(me: Engine, alice: Engine, folder, count: int) -> list[str]:
    """Alice makes `team`, invites `me`, shares `count` memories that `me` takes; then she
    trashes them all (her pass writes it): `me`'s next pass holds them for a person."""
    alice.spaces.create("team", folder, "alice")
    invitation, _ = alice.spaces.invite("team", me.spaces.id(), "me")
    me.spaces.join(invitation, folder)
    ids = []
    for n in range(count):
        memory = alice.remember(f"Crate number {n} on shelf {n % 7} holds cables", force=True)
        ids.append(memory.memory.id)
        alice.spaces.share(memory.memory.id, "team")
    assert me.spaces.sync("team")["applied"] == count
    return ids


def _ask(qtbot, worker, fn):
    got: list = []
    worker.call(fn, got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    return got[0]


def test_the_app_says_a_held_removal_and_settings_spaces_applies_it(
    qtbot, qapp, word_model, tmp_path, monkeypatch
):
    """Issue 45: a notification when a member's removals en masse are held (once), whose
    click opens Settings → Spaces, where Apply does what `mnemo space removals NAME apply
    MEMBER` does: the memories go to the trash here."""
    from app.core.sync.holding import HOLD_MIN
    from app.gui.app import MnemoApp
    from tests.gui.conftest import close_app

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    alice = Engine(database=tmp_path / "alice.db", embedder=word_model)
    try:
        with Engine(embedder=word_model) as me:  # the app's own database
            ids = _held_team(me, alice, tmp_path / "shared" / "team", HOLD_MIN + 1)
        app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=word_model))
        try:
            titles, notify = [], app.notify  # (each notification's title, in order)
            monkeypatch.setattr(
                app, "notify", lambda t, *a, **k: (titles.append(t), notify(t, *a, **k))
            )
            # WHEN Alice trashes them all (the app's background pass meets it)
            alice.forget(ids)
            alice.spaces.sync("team")
            # THEN the app says so, naming her, the count and the space
            qtbot.waitUntil(
                lambda: (
                    (app.status()["last_notification"] or [""])[0]
                    == "Removals held in a team space"
                ),
                timeout=30_000,
            )
            title, text = app.status()["last_notification"]
            assert "alice" in text and str(len(ids)) in text and "'team'" in text, text
            assert "Settings → Spaces" in text
            assert _ask(qtbot, app.worker, lambda e: [i for i in ids if e.get(i).deleted_at]) == []
            # AND its click opens Settings → Spaces on the space, the hold listed
            app.last_action[1]()
            dialog = app.settings_dialog
            page = dialog.spaces
            assert dialog.isVisible() and dialog.tabs.currentWidget() is page
            qtbot.waitUntil(lambda: page.held.topLevelItemCount() == 1, timeout=10_000)
            assert page.held_box.isVisible()
            row = [page.held.topLevelItem(0).text(c) for c in range(2)]
            assert row == ["alice", str(len(ids))]
            # WHEN the person presses Apply
            with qtbot.waitSignal(page.said, timeout=30_000) as said:
                page.apply_button.click()
            # THEN the memories are in the trash here, and the row is gone
            assert said.args[0].startswith(f"{len(ids)} memories alice withdrew or trashed")
            gone = _ask(qtbot, app.worker, lambda e: [i for i in ids if e.get(i).deleted_at])
            assert sorted(gone) == sorted(ids)
            qtbot.waitUntil(lambda: not page.held_box.isVisible(), timeout=10_000)
            assert page.held.topLevelItemCount() == 0
            assert _ask(qtbot, app.worker, lambda e: e.spaces.removals("team")) == []
            # (told once: the passes since did not tell it again)
            settle(qtbot, app.worker)
            assert titles.count("Removals held in a team space") == 1, titles
        finally:
            close_app(app)
    finally:
        alice.close()


def test_keep_mine_in_settings_spaces_keeps_the_copies_unshared(qtbot, qapp, word_model, tmp_path):
    """Keep mine does what `mnemo space removals NAME keep MEMBER` does: the copies stay
    here, out of the trash, no longer shared."""
    from app.core.settings import Settings
    from app.core.sync.holding import HOLD_MIN
    from app.gui.spaces_page import SpacesPage
    from app.gui.worker import Worker

    alice = Engine(database=tmp_path / "alice.db", embedder=word_model)
    try:
        with Engine(database=tmp_path / "me.db", embedder=word_model) as me:
            ids = _held_team(me, alice, tmp_path / "shared" / "team", HOLD_MIN + 1)
            alice.forget(ids)
            alice.spaces.sync("team")
            assert me.spaces.sync("team")["held_removals"] == {"alice": len(ids)}
        worker = Worker(
            lambda: Engine(Settings(tmp_path / "me.json"), tmp_path / "me.db", word_model)
        )
        try:
            page = SpacesPage(worker)
            qtbot.addWidget(page)
            page.show()
            qtbot.waitUntil(lambda: page.held.topLevelItemCount() == 1, timeout=10_000)
            assert page.keep_button.isEnabled() and page.apply_button.isEnabled()
            # WHEN the person presses Keep mine
            with qtbot.waitSignal(page.said, timeout=30_000) as said:
                page.keep_button.click()
            # THEN the copies stay here, out of the trash and no longer shared; the row goes
            assert (
                said.args[0]
                == f"Kept {len(ids)} memories of alice here: no longer shared, yours now."
            )
            assert _ask(qtbot, worker, lambda e: [i for i in ids if e.get(i).deleted_at]) == []
            assert _ask(qtbot, worker, lambda e: e.spaces.shared(ids)) == {}
            qtbot.waitUntil(lambda: page.held.topLevelItemCount() == 0, timeout=10_000)
            assert not page.held_box.isVisible() and not page.keep_button.isEnabled()
        finally:
            worker.stop()
    finally:
        alice.close()


def test_a_removed_members_manager_says_an_edit_stays_here_and_offers_no_share(
    qtbot, worker, settings, seeded, team
):
    # GIVEN Alice removed Bob, and Bob's pass saw it
    team["alice"].spaces.remove("team", "bob")
    assert team["bob"].spaces.sync("team")["member"] is False
    manager = _manager(qtbot, worker, settings)
    # THEN Share in space ▸ team is there but cannot be chosen

    def offered() -> str:
        action = manager.findChild(QtGui.QAction, "shareIn:team")
        return "" if action is None else f"{action.text()} {action.isEnabled()}"

    qtbot.waitUntil(lambda: offered() == "team (not a member) False")
    # WHEN he edits Alice's memory THEN the save says it stays on this device, and why
    row = next(i for i, m in manager.table_model.loaded_rows() if m.id == team["alices"])
    manager.table.selectRow(row)
    manager.f_tags.setText("x")
    qtbot.mouseClick(manager.save_button, Qt.LeftButton)
    qtbot.waitUntil(
        lambda: "Saved, not shared" in manager.statusBar().currentMessage(),
        timeout=10_000,
    )
    assert "alice removed it" in manager.statusBar().currentMessage()
