"""The popup's preview pane, its actions (Ctrl+K) and its scrolling list: real widgets, the
real engine and model (issue 12: what daily users of Raycast, Alfred or CopyQ expect)."""

from __future__ import annotations

from app.core.engine import Engine
from app.gui import popup as popup_module
from app.gui.popup import PREVIEW_CHARS, ROW_HEIGHT, VISIBLE_ROWS, WIDTH, Popup
from app.gui.qt import Qt, QtGui, QtWidgets
from tests.gui.bidi import reading_order


def _popup(qtbot, worker, settings) -> Popup:
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    qtbot.waitUntil(lambda: len(popup.model.rows) > 0, timeout=10_000)
    return popup


def _search(qtbot, popup, text: str) -> list:
    popup.search.clear()
    qtbot.keyClicks(popup.search, text)
    qtbot.waitUntil(
        lambda: popup.model.query == text and popup.last_mode == "hybrid" and not popup.model.stale,
        timeout=10_000,
    )
    return popup.model.rows


def _preview_text(popup) -> str:
    return popup.preview.toPlainText()


def test_the_preview_shows_the_selected_memory_whole_with_its_words_marked(
    qtbot, worker, settings, seeded
):
    popup = _popup(qtbot, worker, settings)
    # GIVEN a search whose best result is the Kubernetes note
    rows = _search(qtbot, popup, "crashloop debugging")
    assert rows[0].memory.id == seeded["k8s"]
    # THEN the preview beside the results shows it whole, with the matched words marked
    assert popup.preview.isVisible() and popup.width() > WIDTH
    shown = _preview_text(popup)
    assert "k8s pod restart debugging: CrashLoopBackOff came from an OOM kill" in shown
    assert "ops" in shown and f"id {seeded['k8s']}" in shown
    marked = popup.preview.toHtml()
    assert marked.count("background-color:#fce94f") >= 2  # "CrashLoopBackOff", "debugging"
    # WHEN the selection moves THEN the preview follows it
    if len(rows) > 1:
        qtbot.keyClick(popup.search, Qt.Key_Down)
        assert rows[1].memory.text in _preview_text(popup)


def test_the_preview_is_there_when_the_popup_opens_again(qtbot, worker, settings, seeded):
    # The desktop pass (issue 22, low): reopened, the preview was blank until the selection
    # moved. Not reproduced since the popup searches again as it opens (item 6); kept here,
    # for the empty box (recent memories) and for a query, with the second row selected.
    popup = _popup(qtbot, worker, settings)
    for text in ("", "crashloop debugging"):
        if text:
            _search(qtbot, popup, text)
        qtbot.keyClick(popup.search, Qt.Key_Down)
        chosen = popup.model.rows[popup.list.currentIndex().row()].memory
        qtbot.keyClick(popup.search, Qt.Key_Escape)
        assert not popup.isVisible()
        popup.present()
        qtbot.waitUntil(lambda c=chosen: c.text in _preview_text(popup), timeout=5000)
        assert popup.preview.isVisible()


def test_a_huge_memory_is_previewed_by_its_start_and_opens_whole_in_the_manager(
    qtbot, worker, settings, seeded, embedder
):
    engine = Engine(embedder=embedder)
    huge = "Zanzibar ferry timetable notes. " + "The harbour queue moves slowly. " * 800
    engine.remember(huge, force=True)
    engine.close()
    popup = _popup(qtbot, worker, settings)
    rows = _search(qtbot, popup, "zanzibar ferry")
    assert len(rows[0].memory.text) > PREVIEW_CHARS
    shown = _preview_text(popup)
    assert shown.count("Zanzibar ferry timetable notes.") == 1  # its title is its start
    assert "more characters: Ctrl+Enter opens the whole memory in the manager" in shown
    assert len(shown) < PREVIEW_CHARS + 2_000
    # PageDown scrolls the preview while typing stays in the search field
    bar = popup.preview.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == 0
    qtbot.keyClick(popup.search, Qt.Key_PageDown)
    assert bar.value() > 0 and popup.search.hasFocus()


def test_the_preview_can_be_turned_off_and_a_narrow_screen_has_none(
    qtbot, worker, settings, seeded
):
    settings.apply({"popup_preview": False})
    popup = _popup(qtbot, worker, settings)
    assert popup.width() == WIDTH and not popup.preview.isVisible()
    settings.apply({"popup_preview": True})
    assert popup._width(1000) == WIDTH  # a screen too narrow for both
    popup.present()
    assert popup.width() > WIDTH and popup.preview.isVisible()


def _menu_action(qtbot, popup, label: str) -> None:
    """Open the actions menu with Ctrl+K and choose `label` as a user would (keys)."""
    qtbot.keyClick(popup.search, Qt.Key_K, Qt.ControlModifier)
    menu = popup.actions_menu
    assert menu is not None and menu.isVisible()
    labels = [a.text().split("\t")[0].replace("&", "") for a in menu.actions()]
    assert labels == [
        "Copy",
        "Paste into the previous window",
        "Copy title",
        "Copy as Markdown",
        "Unpin" if popup.model.rows[popup.list.currentIndex().row()].memory.pinned else "Pin",
        "Open in the manager",
        "Move to the trash",
    ]
    for _ in range(labels.index(label)):
        qtbot.keyClick(menu, Qt.Key_Down)
    qtbot.keyClick(menu, Qt.Key_Return)
    qtbot.waitUntil(lambda: popup.actions_menu is None, timeout=2000)


def test_ctrl_k_pins_a_result_and_typing_goes_on_in_the_box(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _search(qtbot, popup, "explicit date format")
    target = popup.model.rows[0].memory
    assert target.id == seeded["Parse"] and not target.pinned
    _menu_action(qtbot, popup, "Pin")
    qtbot.waitUntil(lambda: popup.status.text().startswith("Pinned “"), timeout=10_000)
    assert popup.isVisible() and popup.search.hasFocus()
    qtbot.waitUntil(
        lambda: bool(popup.model.rows) and popup.model.rows[0].memory.pinned, timeout=5000
    )
    assert Engine().get(target.id).pinned
    assert "★ pinned" in _preview_text(popup)


def test_copy_title_and_copy_as_markdown(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _search(qtbot, popup, "lasagne nutmeg")
    used = []
    popup.used.connect(used.append)
    _menu_action(qtbot, popup, "Copy as Markdown")
    clip = QtGui.QGuiApplication.clipboard().text()
    assert clip.startswith("**Grandma's lasagne") and clip.endswith("#food")
    assert used == [seeded["Grandma's"]] and not popup.isVisible()
    popup.present()
    _search(qtbot, popup, "lasagne nutmeg")
    _menu_action(qtbot, popup, "Copy title")
    assert QtGui.QGuiApplication.clipboard().text() == popup.model.rows[0].memory.display_title


def test_ctrl_delete_trashes_a_result_and_ctrl_z_brings_it_back(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _search(qtbot, popup, "oom kill crashloop")
    assert popup.model.rows[0].memory.id == seeded["k8s"]
    qtbot.keyClick(popup.search, Qt.Key_Delete, Qt.ControlModifier)
    qtbot.waitUntil(lambda: "trash" in popup.status.text(), timeout=10_000)
    qtbot.waitUntil(
        lambda: seeded["k8s"] not in [r.memory.id for r in popup.model.rows], timeout=5000
    )
    assert Engine().get(seeded["k8s"]).deleted_at is not None
    assert "Ctrl+Z" in popup.status.text()
    qtbot.keyClick(popup.search, Qt.Key_Z, Qt.ControlModifier)
    qtbot.waitUntil(lambda: popup.status.text().endswith("is back from the trash."), timeout=10_000)
    qtbot.waitUntil(
        lambda: bool(popup.model.rows) and popup.model.rows[0].memory.id == seeded["k8s"],
        timeout=5000,
    )
    assert Engine().get(seeded["k8s"]).deleted_at is None
    assert popup.search.text() == "oom kill crashloop"  # the typed text was not undone


def test_more_results_than_fit_scroll(qtbot, worker, settings, seeded, embedder):
    engine = Engine(embedder=embedder)
    for i in range(14):
        engine.remember(f"Sourdough starter feeding log, day {i}: rye flour and water", force=True)
    engine.close()
    popup = _popup(qtbot, worker, settings)
    rows = _search(qtbot, popup, "sourdough starter feeding")
    assert len(rows) > VISIBLE_ROWS  # the default lists 20, not 8
    assert popup.list.height() == VISIBLE_ROWS * ROW_HEIGHT + 4
    bar = popup.list.verticalScrollBar()
    assert bar.maximum() > 0
    for _ in range(len(rows) - 1):
        qtbot.keyClick(popup.search, Qt.Key_Down)
    last = popup.model.index(len(rows) - 1)
    assert popup.list.viewport().rect().intersects(popup.list.visualRect(last))  # scrolled to


def test_the_actions_menu_does_not_count_as_the_focus_leaving(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    qtbot.keyClick(popup.search, Qt.Key_K, Qt.ControlModifier)
    assert isinstance(popup.actions_menu, QtWidgets.QMenu)
    qtbot.keyClick(popup.actions_menu, Qt.Key_Escape)
    qtbot.waitUntil(lambda: popup.actions_menu is None, timeout=2000)
    assert popup.isVisible()
    assert popup_module.HINT.count("Ctrl+K") == 1


def test_the_preview_shows_markup_in_a_memory_as_text(qtbot, worker, settings, seeded, embedder):
    engine = Engine(embedder=embedder)
    hostile = "Template bug: <b>not bold</b> &amp; <script>alert(1)</script> שלום عربي 🙂"
    engine.remember(hostile, force=True)
    engine.close()
    popup = _popup(qtbot, worker, settings)
    _search(qtbot, popup, "template bug")
    assert hostile in _preview_text(popup)  # every character as typed, nothing interpreted
    assert "<script>" not in popup.preview.toHtml().replace("&lt;script&gt;", "")


def test_the_preview_keeps_right_to_left_tags_in_order(qtbot, worker, settings, seeded, embedder):
    # Issue 12: right-to-left text in the metadata. A category and two tags in Hebrew used to
    # make the whole facts line one right-to-left run, the tags swapped.
    engine = Engine(embedder=embedder)
    engine.edit(seeded["Grandma's"], category="מטבח", tags=["מתכון", "ארוחה"])
    engine.close()
    popup = _popup(qtbot, worker, settings)
    _search(qtbot, popup, "lasagne")
    block = popup.preview.document().begin()
    while block.isValid() and "מתכון" not in block.text():
        block = block.next()
    line = block.text()
    fields = ["pinned", "מטבח", "מתכון", "ארוחה"]
    assert reading_order(line, fields, laid_out=block.layout().lineAt(0)) == fields, line


def test_alt_enter_asks_to_paste_and_the_setting_swaps_it_with_enter(
    qtbot, worker, settings, seeded
):
    popup = _popup(qtbot, worker, settings)
    assert "Enter copy · Alt+Enter paste" in popup.hint.text()
    _search(qtbot, popup, "lasagne nutmeg")
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        qtbot.keyClick(popup.search, Qt.Key_Return, Qt.AltModifier)
    assert popup.paste_wanted and QtGui.QGuiApplication.clipboard().text().startswith("Grandma")
    popup.present()
    assert not popup.paste_wanted  # each showing starts afresh
    settings.apply({"popup_enter_pastes": True})
    popup.present()
    assert "Enter paste · Alt+Enter copy" in popup.hint.text()
    _search(qtbot, popup, "lasagne nutmeg")
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        qtbot.keyClick(popup.search, Qt.Key_Return)
    assert popup.paste_wanted
    popup.present()
    _search(qtbot, popup, "lasagne nutmeg")
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        qtbot.keyClick(popup.search, Qt.Key_Return, Qt.AltModifier)
    assert not popup.paste_wanted


def test_trashing_the_only_result_shrinks_the_popup_to_its_message(qtbot, worker, settings, seeded):
    # Found by review: the message sat in the middle of an empty panel as tall as the rows
    # that were gone.
    popup = _popup(qtbot, worker, settings)
    rows = _search(qtbot, popup, "lasagne")
    assert [r.memory.id for r in rows] == [seeded["Grandma's"]]
    tall = popup.height()
    qtbot.keyClick(popup.search, Qt.Key_Delete, Qt.ControlModifier)
    qtbot.waitUntil(lambda: "trash" in popup.status.text(), timeout=10_000)
    qtbot.waitUntil(lambda: not popup.model.rows, timeout=5000)
    qtbot.waitUntil(lambda: popup.height() < tall / 2, timeout=5000)  # it shrinks to its box
