"""The recall popup's keyboard flow, with real widgets and the real engine."""

from __future__ import annotations

import os
import threading

from app.core.display import age
from app.core.engine import Engine
from app.core.memory import Change
from app.core.search.ranking import Scored, band_of
from app.core.search.recall import RecallResult
from app.gui.popup import DIVIDER, ROW_HEIGHT, Popup
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets
from app.gui.worker import INTERACTIVE
from tests.gui.bidi import reading_order
from tests.gui.conftest import settle


def _popup(qtbot, worker, settings) -> Popup:
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    qtbot.waitUntil(lambda: len(popup.model.rows) > 0, timeout=10_000)  # recent memories
    return popup


def _type(qtbot, popup, text: str) -> None:
    qtbot.keyClicks(popup.search, text)


def test_empty_query_shows_pinned_first_then_recent(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    ids = [r.memory.id for r in popup.model.rows]
    assert ids[0] == seeded["Grandma's"] and len(ids) == 4


def test_typing_finds_by_meaning_and_enter_copies_and_counts(
    qtbot, worker, settings, seeded, embedder
):
    popup = _popup(qtbot, worker, settings)
    used = []
    popup.used.connect(used.append)
    _type(qtbot, popup, "kubernetes troubleshooting")
    qtbot.waitUntil(
        lambda: (
            bool(popup.model.rows)
            and popup.model.query == popup.search.text()
            and popup.model.rows[0].memory.id == seeded["k8s"]
        ),
        timeout=10_000,
    )
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        qtbot.keyClick(popup.search, Qt.Key_Return)
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart debugging")
    assert used == [seeded["k8s"]]


def test_arrows_ctrl_n_p_and_ctrl_number_pick(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    assert popup.list.currentIndex().row() == 0
    qtbot.keyClick(popup.search, Qt.Key_Down)
    qtbot.keyClick(popup.search, Qt.Key_N, Qt.ControlModifier)
    assert popup.list.currentIndex().row() == 2
    qtbot.keyClick(popup.search, Qt.Key_P, Qt.ControlModifier)
    qtbot.keyClick(popup.search, Qt.Key_Up)
    assert popup.list.currentIndex().row() == 0
    second = popup.model.rows[1].memory
    with qtbot.waitSignal(popup.hidden, timeout=5000):  # copied once read again
        qtbot.keyClick(popup.search, Qt.Key_2, Qt.ControlModifier)
    assert QtGui.QGuiApplication.clipboard().text() == second.text
    assert not popup.isVisible()


def test_prefix_results_appear_while_typing(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "lasag")  # a word not finished yet
    qtbot.waitUntil(lambda: popup.model.query == "lasag" and bool(popup.model.rows), timeout=5000)
    assert popup.model.rows[0].memory.id == seeded["Grandma's"]


def test_no_results_offers_ctrl_s_and_ctrl_s_remembers(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "quantum chromodynamics")
    qtbot.waitUntil(lambda: "Ctrl+S" in popup.status.text(), timeout=5000)
    assert popup.model.rows == []
    with qtbot.waitSignal(popup.rememberText, timeout=2000) as signal:
        qtbot.keyClick(popup.search, Qt.Key_S, Qt.ControlModifier)
    assert signal.args == ["quantum chromodynamics"]
    assert popup.search.text() == ""


def test_a_key_press_activation_token_goes_to_qt_as_it_shows_the_popup(
    qtbot, worker, settings, monkeypatch
):
    # Qt's Wayland plugin activates the window it shows with XDG_ACTIVATION_TOKEN (and
    # unsets it; this offscreen Qt leaves it): the portal's token of the press goes there
    monkeypatch.setenv("XDG_ACTIVATION_TOKEN", "")
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present("kwin-7")
    assert os.environ["XDG_ACTIVATION_TOKEN"] == "kwin-7"
    popup.hide()
    monkeypatch.setenv("XDG_ACTIVATION_TOKEN", "")
    popup.present()  # no token (the tray, `mnemo popup`): none is made up
    assert os.environ["XDG_ACTIVATION_TOKEN"] == ""


def test_ctrl_enter_opens_in_manager_and_escape_hides(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    first = popup.model.rows[0].memory.id
    with qtbot.waitSignal(popup.openMemory, timeout=2000) as signal:
        qtbot.keyClick(popup.search, Qt.Key_Return, Qt.ControlModifier)
    assert signal.args == [first] and not popup.isVisible()
    popup.present()
    qtbot.keyClick(popup.search, Qt.Key_Escape)
    assert not popup.isVisible()


def test_keys_kept_by_the_hotkey_grab_are_typed_into_the_popup_in_order(
    qtbot, worker, settings, seeded
):
    # Issue 22, item 3: what was typed before the popup had the focus (kept by the X11 grab)
    # arrives as a list of (Qt key, modifiers, text) and acts as typing would, Enter included
    popup = _popup(qtbot, worker, settings)
    shift = Qt.ShiftModifier.value
    keys = [(Qt.Key_K, shift, "K"), (Qt.Key_X, 0, "x"), (int(Qt.Key_Backspace), 0, "\x08")]
    keys += [(ord(c.upper()), 0, c) for c in "ubernetes troubleshooting"]
    popup.type_keys(keys)
    assert popup.search.text() == "Kubernetes troubleshooting"
    qtbot.waitUntil(lambda: popup.model.query == popup.search.text(), timeout=10_000)
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        popup.type_keys([(int(Qt.Key_Return), 0, "\r")])
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart debugging")
    popup.present()
    popup.type_keys([(int(Qt.Key_Escape), 0, "\x1b"), (Qt.Key_A, 0, "a")])
    assert not popup.isVisible()
    assert popup.search.text() == "Kubernetes troubleshooting"  # nothing typed once hidden


def test_keys_typed_after_the_hand_over_wait_for_the_keys_the_grab_kept(
    qtbot, worker, settings, seeded
):
    # Issue 46, item 1: "OPS-2166" arrived as "SOP-2166". After the hand-over, a key typed
    # once the grab let go reaches the popup through the window system, and on a busy
    # machine before the kept keys (a queued signal) are typed in. From the hand-over on,
    # keys the window system delivers wait behind the kept ones, Enter included.
    popup = _popup(qtbot, worker, settings)
    popup.search.clear()
    popup.key_gate.shut()  # the app does this at the hand-over while the grab holds keys
    qtbot.keyClicks(popup.search, " pod restart")  # typed after the grab let go
    assert popup.search.text() == ""  # they wait
    qtbot.keyClick(popup.search, Qt.Key_Return)
    assert popup.isVisible()  # Enter waits with them: it acts on the whole text
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        popup.type_keys([(ord(c.upper()), 0, c) for c in "k8s"])
    assert popup.search.text() == "k8s pod restart"
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart debugging")
    assert not popup.key_gate.shut_now


def test_keys_wait_for_the_kept_ones_only_so_long(qtbot, worker, settings, seeded):
    # A listener that never hands the kept keys over costs the keys typed after at most
    # WAIT_MS, and they are never lost; a popup hidden meanwhile lets the gate go
    popup = _popup(qtbot, worker, settings)
    popup.search.clear()
    popup.key_gate.shut()
    qtbot.keyClicks(popup.search, "lasagne")
    assert popup.search.text() == ""
    qtbot.waitUntil(lambda: popup.search.text() == "lasagne", timeout=6000)
    popup.key_gate.shut()
    popup.hide()
    assert not popup.key_gate.shut_now


def test_a_typo_read_as_a_word_of_the_collection_is_said_as_the_cli_says_it(
    qtbot, worker, settings, seeded
):
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "lasagme")
    qtbot.waitUntil(
        lambda: (
            popup.status.isVisible() and popup.status.text() == "Matched “lasagme” as “lasagne”"
        ),
        timeout=10_000,
    )
    assert popup.model.rows[0].memory.id == seeded["Grandma's"]


def test_stale_results_are_dropped(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "lasagne")
    popup.search.clear()
    _type(qtbot, popup, "crash")
    qtbot.waitUntil(lambda: popup.model.query == "crash" and bool(popup.model.rows), timeout=5000)
    qtbot.waitUntil(lambda: not popup._debounce.isActive(), timeout=5000)  # hybrid asked
    settle(qtbot, worker)  # every pending answer arrived
    assert popup.model.query == "crash"
    assert popup.model.rows[0].memory.id == seeded["k8s"]


def test_copy_counts_as_a_recall_through_the_worker(qtbot, worker, settings, seeded, embedder):
    popup = _popup(qtbot, worker, settings)
    popup.used.connect(
        lambda memory_id: worker.call(lambda e: e.mark_used([memory_id]), writes=True)
    )
    with qtbot.waitSignal(worker.changes, timeout=5000) as change:
        qtbot.keyClick(popup.search, Qt.Key_Return)
    engine = Engine(embedder=embedder)
    copied = popup.model.rows[0].memory.id
    assert engine.get(copied).recall_count == 1
    # the database says what the write was, whatever the caller declared: a use of it
    assert change.args[0] == [Change("usage", (copied,))]


def _hybrid_rows(qtbot, popup, text: str) -> list:
    _type(qtbot, popup, text)
    qtbot.waitUntil(
        lambda: popup.model.query == text and popup.last_mode == "hybrid", timeout=10_000
    )
    return popup.model.rows


def _bar_fill(popup, row: int) -> float:
    """The share of a row's relevance bar painted in the highlight colour, from pixels."""
    popup.list.clearSelection()
    popup.list.setCurrentIndex(popup.model.index(-1))
    rect = popup.list.visualRect(popup.model.index(row))
    image = popup.list.viewport().grab().toImage()
    ratio = image.devicePixelRatio()
    color = popup.list.palette().highlight().color()
    y = int((rect.top() + 6 + 5 + 3) * ratio)
    right = rect.right() - 10
    xs = range(int((right - 44) * ratio), int(right * ratio))
    filled = sum(1 for x in xs if QtGui.QColor(image.pixel(x, y)).name() == color.name())
    return filled / len(xs)


def test_gibberish_shows_no_rows_and_offers_to_remember(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    assert _hybrid_rows(qtbot, popup, "zxqv blorft wibble") == []
    assert not popup.list.isVisible()
    assert "Nothing relevant" in popup.status.text() and "Ctrl+S" in popup.status.text()


def test_the_relevance_bar_is_absolute_short_for_a_weak_match(qtbot, worker, settings, seeded):
    popup = _popup(qtbot, worker, settings)
    # "italian food" shares no word with the lasagne note; meaning ties them, weakly
    rows = _hybrid_rows(qtbot, popup, "italian food")
    assert rows[0].memory.id == seeded["Grandma's"] and rows[0].score < 0.5
    weak = _bar_fill(popup, 0)
    assert 0 < weak < 0.5  # the old bar was full: the best candidate always scored 1.00
    popup.search.clear()
    rows = _hybrid_rows(qtbot, popup, "killed pod")
    assert rows[0].memory.id == seeded["k8s"]
    assert _bar_fill(popup, 0) > 0.85


def test_weak_matches_are_shown_dimmed_under_a_line_not_hidden(qtbot, worker, settings, seeded):
    # Issue 20: the popup used to hide results under half of the best one's score
    popup = _popup(qtbot, worker, settings)
    engine = Engine()
    memories = [engine.get(seeded[k]) for k in ("k8s", "Parse", "The")]
    engine.close()
    # GIVEN an answer of a strong, a partial and a weak match
    answer = RecallResult(
        query="q",
        mode="hybrid",
        results=[
            Scored(memory=m, seq=i, score=s, band=band_of(s))
            for i, (m, s) in enumerate(zip(memories, (0.9, 0.46, 0.2), strict=True))
        ],
    )
    popup.search.setText("q")
    popup._on_result("q", answer)
    # THEN all three are listed, with the "weaker matches" line above the weak one
    assert [r.score for r in popup.model.rows] == [0.9, 0.46, 0.2]
    assert popup.model.divider == 2
    delegate = popup.list.itemDelegate()
    option = QtWidgets.QStyleOptionViewItem()
    heights = [delegate.sizeHint(option, popup.model.index(i)).height() for i in range(3)]
    assert heights == [ROW_HEIGHT, ROW_HEIGHT, ROW_HEIGHT + DIVIDER]
    # (at least 5 rows tall beside the preview, when the screen has room for it)
    tall = {3 * ROW_HEIGHT + DIVIDER + 4, 5 * ROW_HEIGHT + DIVIDER + 4}
    qtbot.waitUntil(lambda: popup.list.height() in tall)
    # AND the weak row is painted fainter than the partial one above it
    assert _ink(popup, 2) < 0.8 * _ink(popup, 1)
    # WHEN every match is weak THEN the line says so and there is no divider
    only_weak = RecallResult(query="r", mode="hybrid", results=answer.results[2:])
    popup.search.setText("r")
    popup._on_result("r", only_weak)
    assert popup.model.divider == -1 and "only weak matches" in popup.status.text().lower()
    # WHEN a time was asked THEN the line parts that time's matches from other times
    dated = [Scored(memory=m, seq=i, score=s, band=band_of(s)) for i, (m, s) in
             enumerate(zip(memories, (0.3, 0.9, 0.5), strict=True))]  # fmt: skip
    dated[0].in_window = True
    popup.search.setText("s")
    popup._on_result("s", RecallResult(query="s", mode="hybrid", results=dated))
    assert popup.model.divider == 1 and popup.model.label == "other times"


def _ink(popup, row: int) -> float:
    """How dark the text of a row is: the mean darkness of its pixels (white is 0)."""
    rect = popup.list.visualRect(popup.model.index(row))
    popup.list.clearSelection()
    popup.list.setCurrentIndex(QtCore.QModelIndex())
    image = popup.list.viewport().grab(rect).toImage()
    dark = 0.0
    for y in range(image.height()):
        for x in range(0, image.width(), 2):
            dark += 255 - QtGui.QColor(image.pixel(x, y)).lightness()
    return dark / (image.width() * image.height())


def test_enter_while_busy_copies_a_result_of_the_text_in_the_box(qtbot, worker, settings, seeded):
    # Issue 12, defect 1: Enter used to copy the previous query's top row while the engine
    # was busy. GIVEN results for "lasagne" on screen
    popup = _popup(qtbot, worker, settings)
    _hybrid_rows(qtbot, popup, "lasagne")
    assert popup.model.rows[0].memory.id == seeded["Grandma's"]
    # WHEN the engine is busy, the user types another query and presses Enter at once
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    QtGui.QGuiApplication.clipboard().setText("before")
    popup.search.clear()
    _type(qtbot, popup, "killed pod")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    # THEN the old rows are dimmed, meaning is said to be on its way, nothing is copied yet
    assert popup.model.stale and "searching by meaning" in popup.hint.text()
    assert QtGui.QGuiApplication.clipboard().text() == "before" and popup.isVisible()
    # and once the engine answers, the new query's top result is copied
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        gate.set()
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart")


def _remember(worker, *texts: str) -> None:
    for text in texts:
        worker.runner.submit(lambda e, t=text: e.remember(t, force=True), INTERACTIVE).result(30)


TICKET = "OPS-2166: the billing export times out when the invoice batch is over 5,000 rows"
DECOY = "OPS-2161 was a flaky login test"


def test_enter_on_rows_of_an_earlier_text_acts_on_the_answers_top_row(
    qtbot, worker, settings, seeded
):
    # Issue 46, item 2 (bench.desktop --order: 2 of 200 presses copied nothing): the
    # hotkey, `OPS-2166` and Enter at once; the Enter came while the rows of `OPS-21` were
    # on screen with their second row selected (the memory copied at the last opening,
    # selected again), and was kept as "row 1", which the answer for OPS-2166 (one row)
    # does not have. An Enter on rows that never answered the text means its top row.
    _remember(worker, TICKET, DECOY)
    popup = _popup(qtbot, worker, settings)
    rows = _hybrid_rows(qtbot, popup, "OPS-21")
    assert {r.memory.text for r in rows[:2]} == {TICKET, DECOY}
    popup.list.setCurrentIndex(popup.model.index(1))  # (selected again, not by the user)
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    QtGui.QGuiApplication.clipboard().setText("before")
    _type(qtbot, popup, "66")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    assert popup.model.stale and QtGui.QGuiApplication.clipboard().text() == "before"
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        gate.set()
    assert QtGui.QGuiApplication.clipboard().text() == TICKET


def test_enter_on_a_row_the_user_chose_among_rows_of_an_earlier_text_acts_on_that_memory(
    qtbot, worker, settings, seeded
):
    _remember(worker, TICKET, DECOY)
    popup = _popup(qtbot, worker, settings)
    rows = _hybrid_rows(qtbot, popup, "OPS-21")
    assert {r.memory.text for r in rows[:2]} == {TICKET, DECOY}
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    _type(qtbot, popup, "6")  # OPS-216: its rows are not there yet
    qtbot.keyClick(popup.search, Qt.Key_Down)  # the user picks the decoy's row they see
    if popup.model.rows[popup.list.currentIndex().row()].memory.text != DECOY:
        qtbot.keyClick(popup.search, Qt.Key_Up)
    assert popup.model.stale
    QtGui.QGuiApplication.clipboard().setText("before")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        gate.set()
    assert QtGui.QGuiApplication.clipboard().text() == DECOY


def test_enter_that_must_wait_says_so_and_acts_when_the_answer_comes(
    qtbot, worker, settings, seeded
):
    # Issue 46, item 2: an Enter that waited longer than a moment was given up, and the
    # answer then drew over the "press Enter again" line: the right row on screen, settled,
    # nothing copied and nothing said. Now it says it waits, and acts when the answer comes.
    popup = _popup(qtbot, worker, settings)
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    QtGui.QGuiApplication.clipboard().setText("before")
    _type(qtbot, popup, "killed pod")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    qtbot.waitUntil(lambda: "Still searching" in popup.status.text(), timeout=2000)
    assert popup.status.isVisible() and popup.isVisible()
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        gate.set()
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart")


def test_an_enter_still_waiting_is_forgotten_when_the_user_types_on_or_closes(
    qtbot, worker, settings, seeded
):
    popup = _popup(qtbot, worker, settings)
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    QtGui.QGuiApplication.clipboard().setText("before")
    _type(qtbot, popup, "killed")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    _type(qtbot, popup, " pod")  # typed on: that Enter was for "killed"
    gate.set()
    qtbot.waitUntil(lambda: popup.model.query == "killed pod", timeout=10_000)
    settle(qtbot, worker)
    assert popup.isVisible() and QtGui.QGuiApplication.clipboard().text() == "before"
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    _type(qtbot, popup, "s")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    qtbot.keyClick(popup.search, Qt.Key_Escape)
    gate.set()
    settle(qtbot, worker)
    assert not popup.isVisible() and QtGui.QGuiApplication.clipboard().text() == "before"


def test_enter_at_once_on_a_query_only_meaning_answers_copies_its_top_result(
    qtbot, worker, settings, seeded
):
    # Found trying paste under openbox: the keyword stage of "kubernetes troubleshooting"
    # finds nothing, and an Enter pressed before meaning answered was used up on no rows.
    popup = _popup(qtbot, worker, settings)
    QtGui.QGuiApplication.clipboard().setText("before")
    _type(qtbot, popup, "kubernetes troubleshooting")
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        qtbot.keyClick(popup.search, Qt.Key_Return)
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart")


def test_no_nothing_relevant_while_meaning_is_still_coming_and_the_preview_fills(
    qtbot, worker, settings, seeded
):
    popup = _popup(qtbot, worker, settings)
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    _type(qtbot, popup, "kubernetes troubleshooting")
    gate.set()
    said = []
    qtbot.waitUntil(
        lambda: said.append(popup.status.text()) or popup.model.query == popup.search.text(),
        timeout=10_000,
    )
    qtbot.waitUntil(lambda: bool(popup.model.rows), timeout=10_000)
    assert not any("Nothing relevant" in s for s in said), said
    assert popup.preview.isVisible()
    assert "CrashLoopBackOff" in popup.preview.toPlainText()


def test_enter_after_an_empty_keyword_answer_waits_for_meaning(qtbot, worker, settings, seeded):
    # GIVEN the keyword answer of "kubernetes troubleshooting" (no rows) on screen, and
    # meaning still to come (a long debounce holds it back)
    popup = _popup(qtbot, worker, settings)
    popup._debounce.setInterval(1500)
    QtGui.QGuiApplication.clipboard().setText("before")
    _type(qtbot, popup, "kubernetes troubleshooting")
    qtbot.waitUntil(lambda: popup.model.query == popup.search.text(), timeout=5000)
    assert popup.model.rows == [] and "searching by meaning" in popup.hint.text()
    # WHEN Enter is pressed THEN it waits for meaning and copies its top result
    qtbot.keyClick(popup.search, Qt.Key_Return)
    assert popup.isVisible() and QtGui.QGuiApplication.clipboard().text() == "before"
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        pass
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart")


def _painted(popup, memory, query: str) -> list[str]:
    """Every text the delegate draws for `memory` as the one row of `query`."""
    popup.model.set_rows([Scored(memory=memory, seq=0, score=0.8)], query)
    drawn: list[str] = []

    class Recording(QtGui.QPainter):
        def drawText(self, *args):  # noqa: N802 - Qt API
            drawn.append(next(a for a in args if isinstance(a, str)))
            return super().drawText(*args)

    image = QtGui.QImage(800, 80, QtGui.QImage.Format_ARGB32)
    painter = Recording(image)
    option = QtWidgets.QStyleOptionViewItem()
    popup.list.initViewItemOption(option)
    option.rect = QtCore.QRect(0, 0, 600, 64)
    popup.list.itemDelegate().paint(painter, option, popup.model.index(0))
    painter.end()
    return drawn


def test_right_to_left_tags_keep_their_order_in_a_row(qtbot, worker, settings, seeded):
    # Issue 12: "right-to-left text laid out correctly in result metadata". Two Hebrew tags
    # side by side used to merge into one right-to-left run with the separator between
    # them: the row showed the second tag first, and the age before the tags.
    engine = Engine()
    engine.edit(seeded["Grandma's"], tags=["מתכון", "ארוחה"])
    memory = engine.get(seeded["Grandma's"])
    engine.close()
    popup = _popup(qtbot, worker, settings)
    drawn = _painted(popup, memory, "lasagne")
    meta = next(line for line in drawn if "מתכון" in line)
    fields = [memory.category, "מתכון", "ארוחה", age(memory.created_at)]
    # THEN the fields read left to right in their order, as any other tags do
    assert reading_order(meta, fields, popup.font()) == fields, meta


def test_hidden_formatting_in_a_row_is_written_out(qtbot, worker, settings, seeded):
    # Red team (issue 21, low), the desktop sibling of the CLI's finding: a right-to-left
    # override in a title reversed its end ("gnp<RLO>exe.png" read as an image name)
    engine = Engine()
    done = engine.remember("gnp\u202eexe.png came from the share", tags=["in\u202ebox"], force=True)
    memory = engine.get(done.memory.id)
    engine.close()
    popup = _popup(qtbot, worker, settings)
    drawn = _painted(popup, memory, "share")
    # THEN the title and the tags show the override as <U+202E>, never the character itself
    assert any("gnp<U+202E>exe.png" in line for line in drawn), drawn
    assert any("in<U+202E>box" in line for line in drawn), drawn
    assert not any("\u202e" in line for line in drawn)


def _ink_left(image: QtGui.QImage, top: int, bottom: int, background: QtGui.QColor) -> int:
    """The leftmost x with a pixel unlike the background between rows top and bottom."""
    for x in range(image.width()):
        for y in range(top, bottom):
            if QtGui.QColor(image.pixel(x, y)).lightness() < background.lightness() - 60:
                return x
    return image.width()


def test_a_right_to_left_snippet_starts_where_its_title_does(qtbot, worker, settings, seeded):
    # Found by review: an Arabic row had its title at the left and its snippet pushed to the
    # right edge, the row looked broken. Both now start at the row's left, each read in its
    # own direction.
    engine = Engine()
    memory = engine.remember(
        "اجتماع العميل\nاجتماع مع العميل يوم الخميس لمناقشة العقد الجديد", force=True
    ).memory
    engine.close()
    popup = _popup(qtbot, worker, settings)
    popup.model.set_rows([Scored(memory=memory, seq=0, score=0.8)], "")
    image = QtGui.QImage(600, 64, QtGui.QImage.Format_RGB32)
    background = QtGui.QColor("white")
    image.fill(background)
    painter = QtGui.QPainter(image)
    option = QtWidgets.QStyleOptionViewItem()
    popup.list.initViewItemOption(option)
    option.rect = QtCore.QRect(0, 0, 600, 64)
    option.state &= ~QtWidgets.QStyle.State_Selected
    popup.list.itemDelegate().paint(painter, option, popup.model.index(0))
    painter.end()
    title_left = _ink_left(image, 6, 24, background)
    snippet_left = _ink_left(image, 27, 42, background)
    assert title_left < 40 and snippet_left < 40, (title_left, snippet_left)


def test_an_exact_id_outranks_the_longer_ids_it_begins(qtbot, worker, settings, seeded, embedder):
    # The desktop pass (issue 22, item 1): typing OPS-216 and Enter copied OPS-2165; the
    # word being typed matched only as a prefix, so the exact ticket ranked no higher
    engine = Engine(embedder=embedder)
    for text in (
        "Ticket OPS-216: the login page times out behind the proxy",
        "OPS-2165: rotate the TLS certificates on the edge nodes before March",
        "OPS-2169: the nightly backup job writes to the wrong bucket",
    ):
        engine.remember(text, force=True)
    engine.close()
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "OPS-216")
    qtbot.waitUntil(
        lambda: popup.model.query == "OPS-216" and popup.hint.text() == popup.keys_hint(),
        timeout=10_000,
    )  # the meaning-based answer is in: the order is settled
    assert popup.model.rows[0].memory.text.startswith("Ticket OPS-216")
    with qtbot.waitSignal(popup.hidden, timeout=5000):
        qtbot.keyClick(popup.search, Qt.Key_Return)
    assert QtGui.QGuiApplication.clipboard().text().startswith("Ticket OPS-216")


def test_a_memory_trashed_elsewhere_is_not_copied_and_leaves_the_open_popup(
    qtbot, worker, settings, seeded, embedder
):
    # The desktop pass (issue 22, item 6): a memory forgotten by the CLI stayed in the open
    # popup, Enter copied it and counted a use of a trashed memory; reopening showed the
    # old rows without searching again
    popup = _popup(qtbot, worker, settings)
    _type(qtbot, popup, "killed pod")
    qtbot.waitUntil(
        lambda: (
            popup.model.query == "killed pod"
            and bool(popup.model.rows)
            and popup.model.rows[0].memory.id == seeded["k8s"]
        ),
        timeout=10_000,
    )
    other = Engine(embedder=embedder)  # the CLI or an agent, in another connection
    other.forget([seeded["k8s"]])
    QtGui.QGuiApplication.clipboard().setText("before")
    qtbot.keyClick(popup.search, Qt.Key_Return)  # before the app has noticed the change
    qtbot.waitUntil(lambda: "moved to the trash meanwhile" in popup.status.text(), timeout=5000)
    assert QtGui.QGuiApplication.clipboard().text() == "before" and popup.isVisible()
    assert other.get(seeded["k8s"]).recall_count == 0
    qtbot.waitUntil(
        lambda: (
            popup.model.query == "killed pod"
            and popup.hint.text() == popup.keys_hint()
            and seeded["k8s"] not in [r.memory.id for r in popup.model.rows]
        ),
        timeout=10_000,
    )  # searched again, the meaning-based answer in, and the message still said
    assert "moved to the trash meanwhile" in popup.status.text()
    # AND a change made elsewhere while the popup is open reaches its rows by itself
    other.restore([seeded["k8s"]])
    qtbot.waitUntil(
        lambda: seeded["k8s"] in [r.memory.id for r in popup.model.rows], timeout=10_000
    )
    # AND reopening searches again: a memory trashed while it was hidden is not shown
    popup.hide()
    other.forget([seeded["k8s"]])
    other.close()
    popup.present()
    qtbot.waitUntil(
        lambda: (
            popup.model.query == "killed pod"
            and not popup.model.stale
            and seeded["k8s"] not in [r.memory.id for r in popup.model.rows]
        ),
        timeout=10_000,
    )


def test_enter_on_dimmed_rows_acts_on_the_settled_answer_not_the_keyword_pass(
    qtbot, worker, settings, seeded
):
    # The desktop pass (issue 22, item 5): typed fast, Enter on the dimmed rows of the
    # previous text copied the first (keyword) answer for the new text, a list never shown,
    # which the meaning-based answer reordered 100-300 ms later
    popup = _popup(qtbot, worker, settings)
    _hybrid_rows(qtbot, popup, "lasagne")
    gate = threading.Event()
    worker.submit(lambda e: gate.wait(10), INTERACTIVE)
    popup.search.clear()
    _type(qtbot, popup, "killed pod")
    qtbot.keyClick(popup.search, Qt.Key_Return)
    assert popup.model.stale and popup.isVisible()
    at_copy = []
    popup.hidden.connect(lambda: at_copy.append((popup.hint.text(), popup.last_mode)))
    with qtbot.waitSignal(popup.hidden, timeout=10_000):
        gate.set()
    hint, mode = at_copy[0]
    assert "searching by meaning" not in hint and mode == "hybrid", at_copy
    assert QtGui.QGuiApplication.clipboard().text().startswith("k8s pod restart")


FIT_SCRIPT = r"""
import json, sys, time
from app.core.engine import Engine
from app.core.memory import Change
from app.core.settings import Settings
from app.gui.qt import QtCore, QtWidgets
from app.gui.popup import Popup
from app.gui.worker import Worker

app = QtWidgets.QApplication(["mnemo"])
engine = Engine()
for i in range(24):
    engine.remember(f"Garden note {i}: the shed, the lawn and bed {i} need work", force=True)
engine.close()
settings = Settings()
worker = Worker(lambda: Engine(settings=settings))
popup = Popup(worker, settings)
popup.present()
popup.search.setText("garden note")
popup._on_text("garden note")
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not (
    popup.model.query == "garden note" and len(popup.model.rows) >= 8
    and popup.hint.text() == popup.keys_hint()
):
    app.processEvents(QtCore.QEventLoop.AllEvents, 50)
for _ in range(20):
    app.processEvents(QtCore.QEventLoop.AllEvents, 20)
shown, area = popup.frameGeometry(), popup.screen().availableGeometry()
print(json.dumps({"rows": len(popup.model.rows), "top": shown.top(), "bottom": shown.bottom(),
                  "left": shown.left(), "right": shown.right(), "area": [area.top(),
                  area.bottom(), area.left(), area.right()]}))
worker.stop()
"""


def test_the_popup_fits_a_small_or_scaled_screen(tmp_path):
    # The desktop pass (issue 22, item 12): QT_SCALE_FACTOR=2 on 1920 x 1080 (960 x 540 to
    # lay out in) put the popup's bottom off the screen
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    screens = tmp_path / "screens.json"
    screens.write_text(
        json.dumps(
            {
                "screens": [
                    {
                        "name": "hd",
                        "x": 0,
                        "y": 0,
                        "width": 1920,
                        "height": 1080,
                        "logicalDpi": 96,
                        "logicalBaseDpi": 96,
                        "dpr": 1,
                    }
                ]
            }  # fmt: skip
        )
    )
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": f"offscreen:configfile={screens}",
        "QT_SCALE_FACTOR": "2",
        "MNEMO_HOME": str(tmp_path / "home"),
    }
    done = subprocess.run(
        [sys.executable, "-c", FIT_SCRIPT],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    top, bottom, left, right = got["area"]
    assert got["rows"] >= 8
    assert top <= got["top"] and got["bottom"] <= bottom, got
    assert left <= got["left"] and got["right"] <= right, got


def test_its_state_says_when_the_rows_are_the_settled_answer_of_the_text(
    qtbot, worker, settings, seeded
):
    # (what `mnemo status` reports, so an end-to-end test waits on it instead of sleeping)
    popup = Popup(worker, settings)
    qtbot.addWidget(popup)
    popup.present()
    assert not popup.state()["settled"]  # the recent memories are on their way
    qtbot.waitUntil(lambda: popup.state()["settled"], timeout=10_000)
    assert popup.state()["visible"] and popup.state()["mode"] == "recent"
    _type(qtbot, popup, "lasagne")
    state = popup.state()
    assert state["text_length"] == len("lasagne") and not state["settled"]
    qtbot.waitUntil(lambda: popup.state()["settled"], timeout=10_000)
    state = popup.state()
    assert state["rows_for_text"] and state["mode"] == "hybrid"
    assert state["rows"] >= 1 and popup.model.rows[0].memory.id == seeded["Grandma's"]
    # a search sent again for the same text (after a pin, a trash) is under way too
    popup.report("Pinned")
    assert not popup.state()["settled"]
    qtbot.waitUntil(lambda: popup.state()["settled"], timeout=10_000)
    # blanks ask for the recent memories, and are answered by them
    popup.search.selectAll()
    _type(qtbot, popup, "   ")
    qtbot.waitUntil(lambda: popup.state()["settled"], timeout=10_000)
    assert popup.state()["mode"] == "recent" and popup.state()["rows_for_text"]
    popup.hide()
    assert not popup.state()["visible"]


def test_the_preview_of_a_huge_memory_shows_where_the_match_is():
    # Issue 46, item 8: a 300k-character memory was previewed by its first 20,000
    # characters, and the word searched for, far in, was nowhere on screen
    from app.core.memory import Memory
    from app.gui.popup import PREVIEW_CHARS, preview_html

    filler = "The quarterly report lists every shipment by week and region. " * 5000
    text = filler[:200_000] + " The Zanzibar warehouse key is in the blue box. " + filler[:100_000]
    shown = preview_html(Memory(id="a1", text=text), "zanzibar warehouse")
    assert "Zanzibar</span>" in shown and "warehouse</span>" in shown
    assert "characters before this" in shown and "more characters" in shown
    assert len(shown) < PREVIEW_CHARS * 2  # a window of it, not the whole
    start = preview_html(Memory(id="a2", text="Zanzibar first. " + filler), "zanzibar")
    assert "characters before" not in start and "Zanzibar</span>" in start


def test_the_window_of_a_huge_memory_has_context_and_holds_the_match_anywhere():
    # helper-16's review: without a space before the match the window began at 0 (the
    # match far past it); a match near the end showed a window of 55 characters
    from app.core.memory import Memory
    from app.gui.popup import PREVIEW_CHARS, preview_html

    dense = "x" * 200_000 + " Zanzibar " + "y" * 100_000  # base64-like: no spaces near
    shown = preview_html(Memory(id="a1", text=dense), "zanzibar")
    assert "Zanzibar</span>" in shown and "characters before this" in shown
    filler = "The quarterly report lists every shipment by week and region. " * 5000
    late = filler[:299_000] + " Zanzibar at the very end."
    shown = preview_html(Memory(id="a2", text=late), "zanzibar")
    assert "Zanzibar</span>" in shown and len(shown) > PREVIEW_CHARS * 0.9
    assert "more characters" not in shown  # it shows to the end
