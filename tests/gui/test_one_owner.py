"""The engine is the one owner of settings and the one door to the data (issue 7).

Each test here failed on the code before: the dialog saved through the app's own Settings,
the engine kept another, and the manager read a widget on the engine's thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from app.core.engine import Engine
from app.core.model.embedder import inspect_model
from app.core.settings import Settings
from app.gui.manager import Manager
from app.gui.popup import Popup
from app.gui.qt import Qt, QtWidgets
from app.gui.settings_dialog import SettingsDialog
from app.gui.worker import INTERACTIVE
from tests.gui.conftest import MEMORIES, settle


def test_weights_saved_in_the_dialog_reach_the_next_popup_search(qtbot, worker, settings):
    # GIVEN a running worker and the settings dialog
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.fields["weight_vector"].setValue(0.2)
    dialog.fields["weight_keyword"].setValue(0.6)
    dialog.fields["weight_prominence"].setValue(0.9)
    # WHEN the weights 0.2/0.6/0.9 are saved
    with qtbot.waitSignal(dialog.applied, timeout=5000):
        dialog.save()
    # THEN the next hybrid search from the popup ranks with them, without a restart
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    qtbot.keyClicks(popup.search, "kubernetes troubleshooting")
    qtbot.waitUntil(
        lambda: popup.last_result is not None and popup.last_result.mode == "hybrid",
        timeout=10_000,
    )
    # (in effect: meaning and keywords scaled so the larger is 1, prominence's share w/3)
    weights = popup.last_result.weights
    assert (weights.vector, weights.keyword, weights.prominence) == pytest.approx((1 / 3, 1, 0.3))
    assert Settings()["weight_prominence"] == 0.9  # and it was saved


def test_a_bad_value_changes_nothing_and_says_why(qtbot, worker, settings, mnemo_home):
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.fields["weight_keyword"].setValue(0.7)
    dialog.fields["model_path"].setText(str(mnemo_home / "no-such-model.gguf"))
    with qtbot.waitSignal(dialog.failed, timeout=5000) as failed:
        dialog.save()
    assert "not switched" in failed.args[0] and "no-such-model" in failed.args[0]
    assert "Not saved" in dialog.status.text()
    assert settings["weight_keyword"] == 0.5  # all or nothing
    assert not (mnemo_home / "config" / "settings.json").exists()


@pytest.fixture
def running_app(qtbot, qapp, embedder, seeded, tmp_path, monkeypatch):
    """The desktop app (tray, worker, hotkey, IPC) on the seeded database, model loaded."""
    from app.gui.app import MnemoApp

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    app = MnemoApp(qapp, engine_factory=lambda s: Engine(settings=s, embedder=embedder))
    qtbot.waitUntil(lambda: app.status()["model"] == "ready", timeout=10_000)
    yield app
    app.hotkey.unregister()
    app.server.close()
    app.worker.stop()


def test_forcing_a_hotkey_backend_takes_effect_without_a_restart(qtbot, running_app):
    app = running_app
    app.show_settings()
    app.settings_dialog.fields["hotkey_backend"].setCurrentText("none")
    with qtbot.waitSignal(app.settings_dialog.applied, timeout=5000):
        app.settings_dialog.save()
    assert app.hotkey.key == "none" and app.status()["hotkey_error"] is None


def test_choosing_another_model_in_the_dialog_switches_the_running_app(
    qtbot, running_app, embedder, q8_model
):
    app = running_app
    assert app.status()["model_id"] == embedder.info.model_id
    # WHEN the user picks the Q8 model in the dialog and saves
    app.show_settings()
    app.settings_dialog.fields["model_path"].setText(str(q8_model))
    with qtbot.waitSignal(app.settings_dialog.applied, timeout=10_000):
        app.settings_dialog.save()
    # THEN `mnemo status` reports the new model, and its vectors are being made
    q8_id = inspect_model(q8_model, "auto", "auto").model_id
    assert q8_id != embedder.info.model_id
    qtbot.waitUntil(lambda: app.status()["model_id"] == q8_id, timeout=10_000)
    assert app.status()["model"] == "ready"
    # and the memories are re-embedded with it in the background
    deadline = time.monotonic() + 60
    while _missing(app, qtbot) and time.monotonic() < deadline:
        qtbot.wait(200)
    assert _missing(app, qtbot) == 0


def _missing(app, qtbot) -> int:
    """Live memories without current vectors, asked of the running engine."""
    answer = {}
    app.worker.call(lambda e: e.vector_status(), lambda v: answer.update(v))
    qtbot.waitUntil(lambda: bool(answer), timeout=5000)
    return answer["missing"] + answer["stale"]


def test_manager_search_reads_its_widgets_on_the_gui_thread(qtbot, worker, settings, seeded):
    # GIVEN a manager whose search is queued behind a busy worker
    manager = Manager(worker, settings)
    qtbot.addWidget(manager)
    with qtbot.waitSignal(manager.table_model.loaded, timeout=10_000):
        manager.show()
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    manager.mode.blockSignals(True)
    manager.mode.setCurrentText("keyword")
    manager.search.setText("kubernetes")
    manager._search()
    # WHEN the user switches the mode before the worker gets to it
    manager.mode.setCurrentText("semantic")
    gate.set()
    # THEN the search that runs is the one the user asked for (the mode of that moment)
    qtbot.waitUntil(lambda: manager.last_search is not None, timeout=10_000)
    assert manager.last_search.mode == "keyword"


def test_settings_dialog_converts_a_model_on_the_worker(
    qtbot, worker, settings, minilm_source, tmp_path, monkeypatch
):
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    threads = []
    original = Engine.convert_model

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(Engine, "convert_model", staticmethod(spy))
    out = tmp_path / "converted.gguf"
    dialog.convert(minilm_source, out)
    assert not dialog.convert_button.isEnabled()  # busy, and the GUI thread is free
    qtbot.waitUntil(lambda: dialog.fields["model_path"].text() == str(out), timeout=60_000)
    assert threads == [worker.thread_ident] and out.stat().st_size > 10_000_000
    assert dialog.convert_button.isEnabled()


def _touch_later(path) -> None:
    stamp = time.time() + 2  # coarse mtimes: make sure the stamp moves
    os.utime(path, (stamp, stamp))


def test_settings_saved_by_another_process_are_taken_not_overwritten(qtbot, worker, settings):
    # GIVEN the dialog open on the current settings
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    # WHEN `mnemo settings popup_results 5` runs in another process meanwhile
    other = Settings()
    other.apply({"popup_results": 5})
    _touch_later(other.path)
    # THEN the running app takes it with its next request, and says so
    with qtbot.waitSignal(worker.settingsChanged, timeout=5000) as signal:
        worker.call(lambda e: None, lambda _: None)
    assert signal.args[0] == "popup_results" and settings["popup_results"] == 5
    # AND saving the user's own edit in the dialog does not undo it
    dialog.fields["weight_keyword"].setValue(0.5)
    with qtbot.waitSignal(dialog.applied, timeout=5000):
        dialog.save()
    on_disk = Settings()
    assert on_disk["popup_results"] == 5 and on_disk["weight_keyword"] == 0.5


def test_new_categories_reach_an_open_manager(qtbot, running_app):
    app = running_app
    app.show_manager()
    app.show_settings()
    app.settings_dialog.fields["categories"].setText("note, recipes")
    with qtbot.waitSignal(app.settings_dialog.applied, timeout=5000):
        app.settings_dialog.save()
    box = app.manager.f_category
    assert [box.itemText(i) for i in range(box.count())] == ["note", "recipes"]


def test_results_nobody_asked_for_are_not_kept(qtbot, worker):
    # Fire-and-forget calls (marking a memory used) and superseded ones keep nothing.
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE, keep=False)
    for _ in range(10):
        worker.call(lambda e: "x" * 1000, writes=False)
    seen = []
    worker.call(lambda e: "old", seen.append, channel="c")
    worker.call(lambda e: "new", seen.append, channel="c")
    gate.set()
    qtbot.waitUntil(lambda: seen == ["new"], timeout=5000)
    qtbot.wait(50)
    assert worker._results == {} and worker._keep == set()


def test_ctrl_s_with_a_secret_asks_above_the_popup_and_never_shows_it(
    qtbot, running_app, monkeypatch
):
    # Issue 12, defect 3: the warning opened behind the always-on-top popup, and Esc left
    # "Remembering “deploy token ghp_…”…" on screen forever, the token in plain text.
    app = running_app
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    asked = []

    def answer_no(box):
        asked.append((box.parent(), bool(box.windowFlags() & Qt.WindowStaysOnTopHint)))
        assert token not in app.popup.status.text()
        return QtWidgets.QMessageBox.No  # as Esc does

    monkeypatch.setattr(QtWidgets.QMessageBox, "exec", answer_no)
    app.show_popup()
    qtbot.keyClicks(app.popup.search, f"deploy token {token}")
    qtbot.keyClick(app.popup.search, Qt.Key_S, Qt.ControlModifier)
    assert asked == [(app.popup, True)]  # above the popup, which stays on top
    assert "Nothing remembered" in app.popup.status.text()
    assert token not in app.popup.status.text()
    assert app.status()["last_notification"] == ["Nothing remembered", "The text held a secret."]
    assert Engine().count() == 4  # nothing stored


@pytest.mark.parametrize("content", [b"not a model at all" * 100, b"GGUF\x03\x00\x00\x00junk"])
def test_a_bad_model_file_shows_as_unavailable_not_loading(
    qtbot, qapp, seeded, tmp_path, monkeypatch, content
):
    # Issue 12, defect 6: `mnemo status` said "loading" forever, no red dot, no message.
    from app.gui.app import MnemoApp

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(content)
    monkeypatch.setenv("MNEMO_MODEL", str(bad))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    app = MnemoApp(qapp)
    try:
        qtbot.waitUntil(lambda: app.status()["model"] != "loading", timeout=10_000)
        state = app.status()
        assert state["model"] == "unavailable" and "not a usable GGUF" in state["model_detail"]
        assert state["last_notification"][0] == "Search by meaning is unavailable"
        if app.tray is not None:
            assert app.tray.toolTip() and "unavailable" in app.tray.toolTip().lower()
        # and searching still works, by keywords
        found = []
        app.worker.search("lasagne", None, 5, done=found.append)
        qtbot.waitUntil(lambda: bool(found), timeout=5000)
        assert found[0].mode == "keyword" and found[0].results
    finally:
        app.hotkey.unregister()
        app.server.close()
        app.worker.stop()


def test_the_near_duplicate_question_never_takes_focus_or_keys(qtbot, running_app, seeded):
    # Issue 12, defect 2: the modal question took the focus from the window the user typed
    # in, and a space typed there pressed Merge.
    app = running_app
    near = "k8s pod restart debugging: CrashLoopBackOff came from an OOM kill!"
    app.remember_text(near, "clipboard")
    qtbot.waitUntil(lambda: app.duplicate_choice is not None, timeout=10_000)
    choice = app.duplicate_choice
    assert choice.isVisible()  # (that it takes no focus is checked under openbox, tests/e2e)
    assert choice.testAttribute(Qt.WA_ShowWithoutActivating)
    assert choice.windowFlags() & Qt.WindowDoesNotAcceptFocus
    assert all(b.focusPolicy() == Qt.NoFocus and not b.isDefault() for b in choice.buttons.values())
    chosen = []
    choice.chosen.connect(chosen.append)
    for key in (Qt.Key_Space, Qt.Key_Return, Qt.Key_Enter):
        qtbot.keyClick(choice, key)
    assert chosen == [] and choice.isVisible()  # keys press nothing
    # A deliberate click does: Keep both stores the new memory as well
    with qtbot.waitSignal(app.worker.changed, timeout=10_000):
        qtbot.mouseClick(choice.buttons["keep"], Qt.LeftButton)
    assert chosen == ["keep"]
    assert Engine().count() == 5


def test_a_merge_chosen_in_the_near_duplicate_question_can_be_undone(qtbot, running_app):
    # Issue 46, item 7: a merge made from the near-duplicate question could not be undone
    # in the app. Its notification now offers Undo merge: both statements back, each alone.
    app = running_app
    near = "k8s pod restart debugging: CrashLoopBackOff came from an OOM kill, twice!"
    app.remember_text(near, "clipboard")
    qtbot.waitUntil(lambda: app.duplicate_choice is not None, timeout=10_000)
    with qtbot.waitSignal(app.worker.changed, timeout=10_000):
        qtbot.mouseClick(app.duplicate_choice.buttons["merge"], Qt.LeftButton)
    qtbot.waitUntil(lambda: app.status()["last_notification"][:1] == ["Merged"], timeout=10_000)
    assert Engine().count() == 4  # one merged memory in place of the two
    label, undo = app.last_action  # what the notification offers
    assert label == "Undo merge"
    with qtbot.waitSignal(app.worker.changed, timeout=10_000):
        undo()  # clicked
    qtbot.waitUntil(
        lambda: app.status()["last_notification"][:1] == ["Merge undone"], timeout=10_000
    )
    texts = {m.text for m in Engine().listing()}
    assert near in texts and MEMORIES[0][0] in texts and len(texts) == 5


def test_paste_where_it_cannot_work_copies_and_says_so(qtbot, running_app):
    # Under this Qt platform (offscreen, like Wayland) no application types into another
    # window: Alt+Enter copies, and the user is told to paste themselves.
    app = running_app
    app.show_popup()
    qtbot.waitUntil(lambda: bool(app.popup.model.rows), timeout=10_000)
    with qtbot.waitSignal(app.popup.hidden, timeout=5000):  # copied once read again
        qtbot.keyClick(app.popup.search, Qt.Key_Return, Qt.AltModifier)
    title, text = app.status()["last_notification"]
    assert title == "Copied, not pasted" and "X11" in text and "paste it yourself" in text
    assert not app.popup.paste_wanted  # asked once, not again on the next hide


def test_a_secret_on_the_clipboard_is_asked_about_without_taking_focus_or_keys(
    qtbot, running_app, seeded
):
    # Found by review: Ctrl+Alt+C with a token on the clipboard opened a modal question that
    # took the focus from the window the user typed in, and a typed "y" stored the copy.
    app = running_app
    token = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
    app.remember_text(f"deploy bot token: {token}", "clipboard")
    qtbot.waitUntil(lambda: app.secret_choice is not None, timeout=5000)
    choice = app.secret_choice
    assert choice.isVisible() and app.secret_box is None  # no modal dialog
    assert choice.testAttribute(Qt.WA_ShowWithoutActivating)
    assert choice.windowFlags() & Qt.WindowDoesNotAcceptFocus
    assert all(b.focusPolicy() == Qt.NoFocus and not b.isDefault() for b in choice.buttons.values())
    assert "a GitHub token" in choice.findChild(QtWidgets.QLabel).text()
    assert token not in choice.findChild(QtWidgets.QLabel).text()
    for key in (Qt.Key_Y, Qt.Key_Space, Qt.Key_Return):
        qtbot.keyClick(choice, key)
    assert choice.isVisible() and Engine().count() == 4  # keys answer nothing
    # A deliberate click stores the redacted copy
    with qtbot.waitSignal(app.worker.changed, timeout=10_000):
        qtbot.mouseClick(choice.buttons["redact"], Qt.LeftButton)
    engine = Engine()
    stored = [m.text for m in engine.recent(10)]
    engine.close()
    assert any("[REDACTED" in t for t in stored) and not any(token in t for t in stored)


def test_a_redacted_clipboard_is_titled_from_its_redacted_text(qtbot, running_app, seeded):
    # Issue 46, item 8: the title was made from the clipboard's text as it was, then redacted
    # on its own: cut inside the password, it kept "pw USE-un…" where the text said
    # "pw [REDACTED:password]"
    app = running_app
    secret = "USE-unaware-6442"
    text = f"psql on orders-db.c8xkq2.eu-west-1.rds.amazonaws.com, user tkowalski, pw {secret}"
    app.remember_text(text, "clipboard")
    qtbot.waitUntil(lambda: app.secret_choice is not None, timeout=5000)
    with qtbot.waitSignal(app.worker.changed, timeout=10_000):
        qtbot.mouseClick(app.secret_choice.buttons["redact"], Qt.LeftButton)
    engine = Engine()
    stored = next(m for m in engine.recent(10) if m.text.startswith("psql on orders-db"))
    engine.close()
    assert stored.text.endswith("pw [REDACTED:password]")
    assert stored.title.endswith("pw [REDACTED:password]"), stored.title
    assert "USE-un" not in stored.title


def test_a_refused_secret_typed_in_the_popup_comes_back_to_be_edited(
    qtbot, running_app, monkeypatch
):
    # Found by review: after Ctrl+S with a token and "Don't save", the box was empty but the
    # rows of the earlier query stayed, undimmed; and what was typed was gone, though the
    # user may have wanted to take the token out and save the rest.
    app = running_app
    monkeypatch.setattr(QtWidgets.QMessageBox, "exec", lambda box: QtWidgets.QMessageBox.No)
    app.show_popup()
    popup = app.popup
    qtbot.keyClicks(popup.search, "lasagne")
    qtbot.waitUntil(lambda: popup.model.query == "lasagne" and popup.last_mode == "hybrid",
                    timeout=10_000)  # fmt: skip
    typed = "deploy bot token: ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
    popup.search.setText(typed)
    qtbot.keyClick(popup.search, Qt.Key_S, Qt.ControlModifier)
    qtbot.waitUntil(lambda: "Nothing remembered" in popup.status.text(), timeout=5000)
    assert popup.search.text() == typed and popup.search.selectedText() == typed
    qtbot.waitUntil(lambda: popup.model.query == typed and not popup.model.stale, timeout=10_000)
    assert "Nothing remembered" in popup.status.text()  # said above the rows, not wiped
    assert Engine().count() == 4  # nothing stored


def test_a_remembered_title_is_shown_but_not_logged(qtbot, running_app, caplog):
    # Red team (issue 21, low): mnemo.log held memory titles ("Remembered: <title>")
    app = running_app
    caplog.set_level(logging.INFO, logger="app")
    app.remember_text("Codename Bluebird ships on the ninth", "clipboard")
    qtbot.waitUntil(
        lambda: (app.status()["last_notification"] or [""])[0] == "Remembered", timeout=10_000
    )
    # THEN the notification names it, and the log names only its id
    assert "Bluebird" in app.status()["last_notification"][1]
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("app")]
    assert any(line.startswith("Remembered: memory ") for line in logged), logged
    assert not any("Bluebird" in line for line in logged), logged


def test_a_copy_from_the_popup_does_not_reload_the_open_manager(qtbot, running_app, seeded):
    # Issue 23: `changed` carried nothing, so copying a popup result (a recall-count bump)
    # reloaded an open manager's filters, page and status. Now a use is a change of kind
    # "usage": the manager updates that row's count in place and reads nothing else.
    app = running_app
    app.show_manager()
    manager = app.manager
    qtbot.waitUntil(lambda: len(manager.table_model.loaded_rows()) == 4, timeout=10_000)
    reloads = []
    manager.table_model.loaded.connect(lambda: reloads.append("page"))
    calls = []
    real_call = app.worker.call

    def counting(fn, *args, **kwargs):
        calls.append(kwargs.get("channel") or "")
        return real_call(fn, *args, **kwargs)

    app.worker.call = counting
    target = seeded["Grandma's"]
    row = next(r for r, m in manager.table_model.loaded_rows() if m.id == target)
    with qtbot.waitSignal(app.worker.changes, timeout=5000):
        app.popup.used.emit(target)  # what Enter in the popup does after copying
    qtbot.waitUntil(
        lambda: manager.table_model.index(row, 5).data() == "1", timeout=5000
    )  # the recall count, updated in place
    settle(qtbot, app.worker)
    assert reloads == [] and "manager-filters" not in calls and "manager-page" not in calls


def test_an_agents_search_in_another_process_does_not_reload_the_open_manager(
    qtbot, running_app, seeded
):
    # Issue 23: a write by another process was only "something changed", so an agent's
    # search (its MCP server counts each memory it shows) reloaded an open manager's filters,
    # page and status every time. Now the database's journal says what changed: a use is a
    # count updated in place; an edit elsewhere still reloads the list.
    app = running_app
    app.worker.poll_s = 0.1
    app.show_manager()
    manager = app.manager
    qtbot.waitUntil(lambda: len(manager.table_model.loaded_rows()) == 4, timeout=10_000)
    settle(qtbot, app.worker)
    reloads = []
    manager.table_model.loaded.connect(lambda: reloads.append("page"))
    target = seeded["Grandma's"]
    row = next(r for r, m in manager.table_model.loaded_rows() if m.id == target)
    with Engine() as agent:  # another connection, as the MCP server's or `mnemo recall`'s
        agent.mark_used([target])
    qtbot.waitUntil(lambda: manager.table_model.index(row, 5).data() == "1", timeout=5000)
    settle(qtbot, app.worker)
    assert reloads == []
    with Engine() as agent:
        agent.edit(target, tags="family")
    qtbot.waitUntil(lambda: reloads != [], timeout=5000)


def test_the_popup_and_the_clipboard_store_as_the_persons_from_each(qtbot, running_app):
    # Issue 44: what the popup and Remember clipboard store is the person's, from each
    app = running_app

    def stored() -> dict:
        with Engine() as engine:
            return {m.text.split()[1]: m for m in engine.listing()}

    app.remember_text("Codename Bluebird ships on the ninth", "clipboard")
    app.remember_text("The boat leaves from pier four at dawn", "manual")  # (the popup's)
    qtbot.waitUntil(lambda: {"Bluebird", "boat"} <= set(stored()), timeout=10_000)
    found = stored()
    assert [(o.kind, o.name) for o in found["Bluebird"].origins] == [("person", "clipboard")]
    assert [(o.kind, o.name) for o in found["boat"].origins] == [("person", "popup")]


def test_a_new_value_remembered_in_the_app_is_proposed_and_its_notification_opens_the_inbox(
    qtbot, running_app
):
    # Issue 44: the popup and Remember clipboard store a new value (not the near-duplicate
    # question) and say it waits in the inbox as superseding the old one.
    app = running_app
    app.remember_text("The weekly standup starts at 9:30.", "clipboard")
    qtbot.waitUntil(lambda: app.status()["last_notification"][:1] == ["Remembered"], timeout=10_000)
    app.remember_text("The weekly standup now starts at 10:15.", "clipboard")
    qtbot.waitUntil(lambda: "superseding" in app.status()["last_notification"][1], timeout=10_000)
    assert app.duplicate_choice is None
    label, review = app.last_action
    assert label == "Review in the inbox"
    review()  # clicked: the inbox opens with the proposal
    dialog = app.manager.inbox_dialog
    qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=10_000)
    assert dialog.candidates[0].rule == "supersedes" and "9:30" in dialog.said.text()
