"""Settings persistence, the worker's threading contract, and what the clipboard may give."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from app.core.settings import SETTINGS, Settings
from app.gui import clipboard
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets
from app.gui.settings_dialog import SettingsDialog
from app.gui.worker import BACKGROUND, INTERACTIVE


def test_dialog_has_a_widget_for_every_declared_setting(qtbot, settings, worker):
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    assert set(dialog.fields) == {s.key for s in SETTINGS if s.group != "Sync"}
    # the sync settings are set up on their own page (a folder is joined, not just typed)
    assert dialog.sync.folder is not None and dialog.sync.name is not None


def test_settings_are_named_in_plain_words_with_their_help_visible(qtbot, settings, worker):
    from app.gui.qt import QtWidgets

    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.show()
    # (the Sync page sets the sync settings up with its own form: `mnemo sync init`)
    forms = [f for f in dialog.findChildren(QtWidgets.QFormLayout) if f.parent() is not None]
    forms = [f for f in forms if not dialog.sync.isAncestorOf(f.parentWidget())]
    fielded = [s for s in SETTINGS if s.group != "Sync"]
    labels = {}
    for form in forms:
        for row in range(form.rowCount()):
            label = form.itemAt(row, QtWidgets.QFormLayout.LabelRole).widget().text()
            field = form.itemAt(row, QtWidgets.QFormLayout.FieldRole).widget()
            labels[label] = field
    # every setting has a label in words, none is a key with its underscores
    assert len(labels) == len(fielded)
    assert "How much meaning counts" in labels and "Weight vector" not in labels
    assert not [label for label in labels if "_" in label]
    # the help line is shown under each field, not only as a tooltip
    for setting in fielded:
        help_line = dialog.findChild(QtWidgets.QLabel, f"help_{setting.key}")
        assert help_line is not None and help_line.text() == setting.help
    qtbot.waitExposed(dialog)
    assert dialog.findChild(QtWidgets.QLabel, f"help_{SETTINGS[0].key}").isVisible()  # 1st tab
    # an empty model field says which model is in use
    assert "all-MiniLM-L6-v2" in dialog.fields["model_path"].placeholderText()


def test_settings_persist_and_report_what_changed(qtbot, settings, worker, mnemo_home):
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.fields["hotkey"].setKeySequence(QtGui.QKeySequence("Ctrl+Shift+M"))
    dialog.fields["weight_keyword"].setValue(0.25)
    dialog.fields["popup_results"].setValue(5)
    dialog.fields["start_at_login"].setChecked(True)
    with qtbot.waitSignal(dialog.applied, timeout=2000) as signal:
        dialog.save()
    assert sorted(signal.args[0]) == ["hotkey", "popup_results", "start_at_login", "weight_keyword"]
    fresh = Settings()
    assert (
        fresh["hotkey"],
        fresh["weight_keyword"],
        fresh["popup_results"],
        fresh["start_at_login"],
    ) == ("Ctrl+Shift+M", 0.25, 5, True)
    reopened = SettingsDialog(fresh, worker)
    qtbot.addWidget(reopened)
    assert reopened.fields["hotkey"].keySequence().toString() == "Ctrl+Shift+M"


def test_what_agents_get_unasked_is_a_check_box_per_origin(qtbot, settings, worker, mnemo_home):
    """Issue 44: `inject_origins` on the Capture page, the defaults ticked, agents not."""
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    boxes = dialog.fields["inject_origins"].boxes
    ticked = {kind for kind, box in boxes.items() if box.isChecked()}
    assert ticked == {"person", "capture", "import", "device", "unknown"}
    assert not boxes["agent"].isChecked() and not boxes["auto-capture"].isChecked()
    boxes["agent"].setChecked(True)
    boxes["unknown"].setChecked(False)
    with qtbot.waitSignal(dialog.applied, timeout=2000) as signal:
        dialog.save()
    assert signal.args[0] == ["inject_origins"]
    assert Settings()["inject_origins"] == ["person", "capture", "import", "device", "agent"]


def test_spin_boxes_clamp_to_the_declared_bounds(qtbot, settings, worker):
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.fields["popup_results"].setValue(0)
    dialog.fields["weight_vector"].setValue(7.0)
    with qtbot.waitSignal(dialog.applied, timeout=5000):
        dialog.save()
    fresh = Settings()
    assert fresh["popup_results"] == 1 and fresh["weight_vector"] == 1.0


def test_worker_runs_in_its_own_thread_and_signals_arrive_in_the_gui_thread(qtbot, worker):
    seen = {}

    def probe(engine):
        seen["worker"] = threading.get_ident()
        return engine.stats()["memories"]

    def on_finished(request):
        seen["slot"] = threading.get_ident()
        seen["result"] = worker.result(request)

    worker.finished.connect(on_finished)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.submit(probe)
    assert seen["worker"] == worker.thread_ident != threading.get_ident()
    assert seen["slot"] == threading.get_ident()  # delivered in the GUI thread
    assert seen["result"] == 4


def test_worker_module_never_touches_widgets():
    source = (Path(__file__).parents[2] / "app" / "gui" / "worker.py").read_text()
    assert not re.search(r"QtWidgets|QWidget|QtGui", source)


def test_queries_go_ahead_of_background_work(qtbot, worker):
    order = []
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(5), INTERACTIVE)  # hold the worker busy
    worker.submit(lambda e: order.append("background"), BACKGROUND)
    worker.submit(lambda e: order.append("query"), INTERACTIVE)
    gate.set()
    qtbot.waitUntil(lambda: len(order) == 2, timeout=5000)
    assert order == ["query", "background"]


def test_superseded_requests_on_a_channel_are_skipped(qtbot, worker):
    ran = []
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(5), INTERACTIVE)
    for word in ("a", "ab", "abc"):
        worker.submit(lambda e, w=word: ran.append(w), INTERACTIVE, channel="typing")
    gate.set()
    qtbot.waitUntil(lambda: ran == ["abc"], timeout=5000)
    qtbot.wait(100)
    assert ran == ["abc"]


def test_clipboard_refuses_password_manager_hints(qapp):
    kde = QtCore.QMimeData()
    kde.setText("hunter2")
    kde.setData("x-kde-passwordManagerHint", b"secret")
    mac = QtCore.QMimeData()
    mac.setText("hunter2")
    mac.setData("org.nspasteboard.ConcealedType", b"")
    win = QtCore.QMimeData()
    win.setText("hunter2")
    win.setData("CanIncludeInClipboardHistory", b"\0\0\0\0")
    for mime in (kde, mac, win):
        assert "password manager" in clipboard.read(mime).refusal


def test_clipboard_text_html_images_files_empty_and_huge(qapp):
    plain = QtCore.QMimeData()
    plain.setText("a note")
    assert clipboard.read(plain).text == "a note"
    rich = QtCore.QMimeData()
    rich.setHtml("<p>Hello <b>world</b></p>")
    assert clipboard.read(rich).text.strip() == "Hello world"
    image = QtCore.QMimeData()
    image.setImageData(QtGui.QImage(4, 4, QtGui.QImage.Format_RGB32))
    assert "image" in clipboard.read(image).refusal
    files = QtCore.QMimeData()
    files.setUrls([QtCore.QUrl.fromLocalFile("/tmp/x.pdf")])
    assert "files" in clipboard.read(files).refusal
    assert "empty" in clipboard.read(QtCore.QMimeData()).refusal
    huge = QtCore.QMimeData()
    huge.setText("x" * 2_000_001)
    assert "limit" in clipboard.read(huge).refusal


def test_an_html_only_copy_keeps_its_link_addresses_and_list_items(qapp):
    # The desktop pass (issue 22, low): a copy from a browser or mail client offering HTML
    # only lost every link's address ("the runbook" without where it is)
    rich = QtCore.QMimeData()
    rich.setHtml(
        '<p>Restart steps are in <a href="https://wiki.example.com/ops/runbook">the <b>ops'
        '</b> runbook</a>, see <a href="https://example.com/">https://example.com</a>'
        ' or <a href="mailto:ops@example.com">mail us</a> <a href="#top">up</a>.</p>'
        "<ul><li>drain the node</li><li>cordon it</li></ul>"
    )
    assert clipboard.read(rich).text == (
        "Restart steps are in the ops runbook (https://wiki.example.com/ops/runbook), see "
        "https://example.com or mail us (ops@example.com) up.\n- drain the node\n- cordon it"
    )


def test_an_empty_hotkey_is_refused_not_silently_replaced(qtbot, settings, worker, mnemo_home):
    # Issue 12, defect 9: clearing the field saved the default without a word.
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.fields["hotkey"].setKeySequence(QtGui.QKeySequence("Ctrl+Shift+M"))
    with qtbot.waitSignal(dialog.applied, timeout=2000):
        dialog.save()
    again = SettingsDialog(settings, worker)
    qtbot.addWidget(again)
    again.fields["hotkey"].clear()
    with qtbot.waitSignal(again.failed, timeout=2000) as failed:
        again.save()
    assert "hotkey is empty" in failed.args[0] and "Not saved" in again.status.text()
    assert Settings()["hotkey"] == "Ctrl+Shift+M"  # nothing changed
    # With no global hotkey wanted, say so: backend "none"
    again.fields["hotkey_backend"].setCurrentText("none")
    with qtbot.waitSignal(again.applied, timeout=2000):
        again.save()
    assert Settings()["hotkey_backend"] == "none"


def _empty_key_field(qtbot, settings, worker):
    """A shown settings dialog, its emptied search-key field, and the widget taking keys."""
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.show()
    field = dialog.fields["hotkey"]
    field.clear()
    return dialog, field, _focus(qtbot, dialog, field)


def _focus(qtbot, dialog, field):
    """The widget inside `field` that takes the keys, once it has the focus."""
    tabs = dialog.findChild(QtWidgets.QTabWidget)
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(field)))
    dialog.activateWindow()
    field.setFocus()

    def focused():
        widget = QtWidgets.QApplication.focusWidget()
        return widget is not None and (widget is field or field.isAncestorOf(widget))

    qtbot.waitUntil(focused, timeout=2000)
    return QtWidgets.QApplication.focusWidget()


@pytest.mark.parametrize(
    "keys, why",
    [
        ([(Qt.Key_G, Qt.NoModifier)], "Ctrl, Alt or Super"),  # would eat every typed g
        ([(Qt.Key_Backspace, Qt.NoModifier)], "Ctrl, Alt or Super"),
        ([(Qt.Key_Q, Qt.ShiftModifier)], "Ctrl, Alt or Super"),  # Shift+Q is a capital Q
    ],
)
def test_a_key_that_would_take_typing_from_every_window_is_refused(
    qtbot, settings, worker, mnemo_home, keys, why
):
    # Found by review: one stray key pressed in the field saved "G"; typing "g" anywhere
    # then opened the popup and never reached the window it was typed in.
    dialog, field, target = _empty_key_field(qtbot, settings, worker)
    for key, modifiers in keys:
        qtbot.keyClick(target, key, modifiers)
    qtbot.wait(1200)  # QKeySequenceEdit finishes a recording after a second
    with qtbot.waitSignal(dialog.failed, timeout=2000) as failed:
        dialog.save()
    assert why in failed.args[0] and dialog.isVisible(), failed.args[0]
    assert Settings()["hotkey"] == "Ctrl+Alt+Space"  # nothing changed


def test_the_key_field_records_one_combination_and_can_be_cleared(qtbot, settings, worker):
    dialog, field, target = _empty_key_field(qtbot, settings, worker)
    qtbot.keyClick(target, Qt.Key_A, Qt.ControlModifier)
    qtbot.keyClick(target, Qt.Key_Backspace)
    qtbot.wait(1200)
    assert "," not in field.keySequence().toString(), field.keySequence().toString()
    assert field.isClearButtonEnabled()


def test_memories_another_process_stores_unembedded_are_embedded_by_the_app(
    qtbot, worker, embedder
):
    # Found by review: `mnemo import --no-embed` while the app ran left 300 notes "waiting"
    # until some unrelated save of the app's own started a backfill.
    from app.core.engine import Engine

    qtbot.waitUntil(lambda: worker.model_id != "", timeout=10_000)  # loaded, backfill done
    changed = []
    worker.changedElsewhere.connect(lambda: changed.append(1))
    other = Engine(embedder=embedder)  # another process's connection, as the CLI's
    other.remember("Imported while the app ran: the spare key is under the blue pot", embed=False)
    assert other.vector_status()["missing"] == 1
    qtbot.waitUntil(lambda: other.vector_status()["missing"] == 0, timeout=15_000)
    # and views were told another process wrote (at the runner's next look, within 2 s: the
    # backfill that follows the model's load may have embedded it before that look)
    qtbot.waitUntil(lambda: bool(changed), timeout=15_000)
    other.close()


def test_every_help_line_gets_the_height_its_wrapped_text_needs(qtbot, settings, worker):
    # Found by review: "What Remember clipboard reads" was squeezed into one line, drawn
    # over the box above it with its last word cut off.
    dialog = SettingsDialog(settings, worker)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.resize(820, 560)  # a laptop's screen, or a dialog made smaller by hand
    tabs = dialog.findChild(QtWidgets.QTabWidget)
    for i in range(tabs.count()):
        tabs.setCurrentIndex(i)
        qtbot.wait(20)
        for label in tabs.widget(i).findChildren(QtWidgets.QLabel):
            if label.objectName().startswith("help_"):
                needed = label.heightForWidth(label.width())
                assert label.height() >= needed, (label.objectName(), label.height(), needed)
                field = label.parentWidget().layout().itemAt(0).widget()  # the box above
                assert label.y() >= field.y() + field.height(), label.objectName()


def test_the_vectors_are_ready_before_the_first_search(qtbot, worker, monkeypatch):
    # At 1M memories the first search after a start made the int8 copy: 0.7 s on a keystroke.
    from app.core.search import vectors
    from app.gui.worker import BACKGROUND

    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 1)
    qtbot.waitUntil(lambda: worker.model_id != "", timeout=10_000)
    seen = []
    worker.call(  # queued behind the background work the model's arrival started
        lambda e: (
            (index := e.model.index_read) is not None,
            index and index.quantized,
            index and index.rows_held,
        ),
        seen.append,
        priority=BACKGROUND,
    )
    qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    loaded, quantized, rows = seen[0]
    assert loaded and rows > 0 and quantized


def test_the_vectors_are_ready_before_the_first_search_on_a_busy_machine(
    qtbot, embedder, seeded, settings, monkeypatch
):
    # GIVEN a runner thread that is slow right after it says the model is ready (a busy
    # machine: the test above failed once in a full suite run beside other work)
    import time

    from app.core.engine import Engine
    from app.core.search import vectors
    from app.gui.worker import BACKGROUND, Worker

    monkeypatch.setattr(vectors, "QUANTIZE_ABOVE", 1)
    said = Worker.model_moved

    def slow(self, state, detail):
        said(self, state, detail)
        if state == "ready":
            time.sleep(0.5)

    monkeypatch.setattr(Worker, "model_moved", slow)
    worker = Worker(lambda: Engine(settings=settings, embedder=embedder))
    try:
        # WHEN a search is queued as soon as the model is known
        qtbot.waitUntil(lambda: worker.model_id != "", timeout=10_000)
        seen = []
        worker.call(
            lambda e: (index := e.model.index_read) is not None and index.quantized,
            seen.append,
            priority=BACKGROUND,
        )
        qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
        # THEN it runs after the vectors were prepared, not before
        assert seen == [True]
    finally:
        worker.stop()


def test_only_requests_whose_result_is_kept_say_finished(qtbot, worker):
    # The background warm-up after the model loads said `finished` too: a view waiting for
    # its own request took that one's (empty) result, and a full run crashed on it.
    qtbot.waitUntil(lambda: worker.model_id != "", timeout=10_000)
    seen = []
    worker.finished.connect(seen.append)
    quiet = worker.submit(lambda e: 1, keep=False)
    kept = worker.submit(lambda e: 2)
    qtbot.waitUntil(lambda: kept in seen, timeout=5000)
    assert quiet not in seen and worker.result(kept) == 2


def test_a_model_refused_in_the_settings_leaves_the_model_state_as_it_was(
    qtbot, settings, worker, tmp_path
):
    # The desktop pass (issue 22, item 13): a model refused in Settings left the tray amber
    # and `mnemo status` on "loading" for good
    qtbot.waitUntil(lambda: worker.model_state[0] == "ready", timeout=20_000)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(64))
    states: list[str] = []
    worker.modelState.connect(lambda state, _detail: states.append(state))
    failures: list[str] = []
    worker.apply_settings({"model_path": str(broken)}, None, failures.append)
    qtbot.waitUntil(lambda: bool(failures), timeout=10_000)
    assert "model not switched" in failures[0]
    qtbot.waitUntil(lambda: worker.model_state[0] == "ready", timeout=5000)
    assert states[-1] == "ready" and settings["model_path"] == ""


def test_a_typed_error_reaches_the_failed_callback_as_its_type(qtbot, worker, seeded):
    # Issue 23: failures crossed the thread as strings, so the manager branched on
    # "changed elsewhere" in the message although ConflictError exists
    from app.core.errors import ConflictError, NotFoundError, TrashedError

    got = []
    for error in (ConflictError("changed"), TrashedError("gone to the trash"), None):

        def fail(engine, error=error):
            if error is None:
                return engine.get("no-such-id")  # NotFoundError from the engine itself
            raise error

        worker.call(fail, failed=got.append)
    qtbot.waitUntil(lambda: len(got) == 3, timeout=5000)
    assert [type(g.error) for g in got] == [ConflictError, TrashedError, NotFoundError]
    assert got[0] == "changed" and isinstance(got[0], str)  # still the message to show
