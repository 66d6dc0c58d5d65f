"""The recall popup: type, and the most relevant memories appear as you type.

Every keystroke runs a keyword/prefix search at once; a hybrid search follows after a short
pause. Results of superseded requests are dropped, so typing is never blocked. A query about
nothing stored gets nothing (the core decides); otherwise every match comes back, strong and
partial ones first, then the weak ones dimmed under a "weaker matches" line. The bar on each
row is the calibrated score, so a weak match has a short bar even when it is the best there is.
"""

from __future__ import annotations

import html
import os

from app.core import origin as origins
from app.core import superseding
from app.core.display import age, fields_line, isolated, match_spans, snippet, visible
from app.core.errors import LockedError, NotFoundError
from app.core.memory import Memory
from app.core.search.ranking import Band, Scored
from app.core.search.recall import RecallResult
from app.gui import shares
from app.gui.contrast import make_quiet, quiet
from app.gui.key_gate import KeyGate, replay
from app.gui.pending_enter import PendingEnter
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets, Signal
from app.gui.worker import INTERACTIVE, Worker

DEBOUNCE_MS = 100
HINT = "↑↓ move · Enter copy · Alt+Enter paste · Ctrl+K actions · Ctrl+S remember · Esc close"
HINT_PASTING = HINT.replace("Enter copy · Alt+Enter paste", "Enter paste · Alt+Enter copy")
LOCKED = "Mnemo is locked (encrypted, its key not at hand): choose Unlock… in the tray menu."
ROW_HEIGHT = 62
DIVIDER = 20  # the "weaker matches" line above the first weak row
WEAK_OPACITY = 0.55
VISIBLE_ROWS = 8  # rows shown at once; more scroll
PREVIEW_MIN_ROWS = 5  # with the preview, the list is at least this tall
WIDTH = 680
PREVIEW_WIDTH = 440
PREVIEW_CHARS = 20_000  # a huge memory is previewed by its start; the manager shows it all
MARK = "background-color:#fce94f;color:#000"  # matched words


def _marked(text: str, query: str) -> str:
    """`text` as HTML with the words the query matches marked."""
    parts, last = [], 0
    for start, end in match_spans(text, query):
        parts += [html.escape(text[last:start]), f"<span style='{MARK}'>"]
        parts += [html.escape(text[start:end]), "</span>"]
        last = end
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def preview_html(memory: Memory, query: str, quiet_color: str = "#595959") -> str:
    """The whole memory for the preview pane: title, facts, text and reasoning, with the
    query's words marked (of a huge text only PREVIEW_CHARS, from its start or from just
    before the first match: it opens whole in the manager)."""
    text, start = memory.text, 0
    more = before = ""
    if len(text) > PREVIEW_CHARS:
        spans = match_spans(text, query)  # a match past the start: the text around it
        if spans and spans[0][1] > PREVIEW_CHARS - 200:
            # a few lines above it (a word's start), and a whole window near the end
            start = min(max(0, spans[0][0] - 400), len(text) - PREVIEW_CHARS)
            space = text.find(" ", start, spans[0][0])
            start = space + 1 if space >= 0 else start
            before = f"<p><i>{start:,} characters before this …</i></p>" if start else ""
        end = start + PREVIEW_CHARS
        cut = text.rfind(" ", end - 200, end) if end < len(text) else len(text)
        text = text[start : cut if cut > 0 else end]
        rest = len(memory.text) - start - len(text)
        more = (
            f"<p><i>… {rest:,} more characters: Ctrl+Enter opens the whole memory in the "
            "manager.</i></p>"
            if rest > 0
            else ""
        )
    facts = [memory.category, *(f"#{t}" for t in memory.tags)]
    if memory.pinned:
        facts.insert(0, "★ pinned")
    dates = f"created {age(memory.created_at)}"
    if memory.updated_at and memory.updated_at != memory.created_at:
        dates += f", changed {age(memory.updated_at)}"
    if memory.changed:  # it superseded an older memory (issue 44)
        dates += f", {superseding.described(memory.changed)}"
    used = f"recalled {memory.recall_count}×" if memory.recall_count else ""  # by anyone
    seen = f"seen {memory.observation_count}×" if memory.observation_count > 1 else ""
    small = f"font-size:small;color:{quiet_color}"  # readable: 4.5:1 at least
    body = [
        f"<p style='font-size:large'><b>{_marked(memory.title, query)}</b></p>"
        if memory.own_title
        else "",
        f"<p style='{small}'>{html.escape(fields_line(facts))}</p>",
        before,
        f"<div style='white-space:pre-wrap'>{_marked(text, query)}</div>",
        more,
    ]
    if memory.reasoning:
        body.append(f"<p><b>Why:</b> {_marked(memory.reasoning, query)}</p>")
    if memory.references:
        body.append(
            f"<p style='{small}'>References: {html.escape(', '.join(memory.references))}</p>"
        )
    # who wrote it (issue 44): its origin, else the source word of an origin-less row
    written = f"by {origins.summary(memory.origins)}" if memory.origins else ""
    written = written or f"from {memory.source}"
    origin = ", ".join(x for x in (dates, written, used, seen, f"id {memory.id}") if x)
    body.append(f"<p style='{small}'>{html.escape(origin)}</p>")
    return "".join(body)


def markdown(memory: Memory) -> str:
    """A memory as Markdown, for pasting into notes or a chat."""
    lines = [f"**{memory.display_title}**", "", memory.text]
    if memory.reasoning:
        lines += ["", f"_Why:_ {memory.reasoning}"]
    if memory.tags:
        lines += ["", " ".join(f"#{t}" for t in memory.tags)]
    return "\n".join(lines)


class ResultsModel(QtCore.QAbstractListModel):
    """The rows of the popup: scored memories (or recent ones, with no score), and the team
    space each one is shared in (read on the worker after the rows: their badges)."""

    def __init__(self, parent=None, worker: Worker | None = None):
        super().__init__(parent)
        self.worker = worker
        self.spaces: dict[str, str] = {}  # {memory id: its space's name}, as read last
        self.rows: list[Scored] = []
        self.query = ""
        self.stale = False  # rows of an earlier query, shown dimmed until new ones come
        self.divider = -1  # the first weak row after stronger ones: a line above it
        self.label = "weaker matches"  # or "other times", when a time was asked

    def rowCount(self, parent=None) -> int:  # noqa: N802 - Qt API
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.DisplayRole:
            return row.memory.display_title
        if role == Qt.UserRole:
            return row
        return None

    def set_rows(self, rows: list[Scored], query: str) -> None:
        """Replace every row (they belong to `query`, so they are not stale)."""
        self.beginResetModel()
        self.rows, self.query, self.stale = rows, query, False
        if any(r.in_window for r in rows):  # a time was asked: its matches, then the rest
            self.label = "other times"
            self.divider = next(
                (i for i in range(1, len(rows)) if rows[i - 1].in_window and not rows[i].in_window),
                -1,
            )
        else:
            self.label = "weaker matches"
            self.divider = next(
                (i for i in range(1, len(rows)) if weak(rows[i]) and not weak(rows[i - 1])), -1
            )
        self.endResetModel()
        ids = [r.memory.id for r in rows]
        if ids and self.worker is not None:
            self.worker.call(
                lambda e: e.spaces.shared(ids),
                lambda found: self._spaces_arrived(ids, found),
                None,
                INTERACTIVE,
                channel="popup-spaces",
            )

    def _spaces_arrived(self, ids: list[str], found: dict[str, str]) -> None:
        shares.take_found(self.spaces, ids, found)
        if self.rows:
            self.dataChanged.emit(self.index(0), self.index(len(self.rows) - 1))

    def badge(self, row: Scored) -> str:
        """The badge of a row of a team space: 'team', or 'team · alice' when alice wrote
        it; '' for one in no space."""
        return shares.label(row.memory, self.spaces.get(row.memory.id))

    def height(self, shown: int) -> int:
        """Pixels for the first `shown` rows (and the divider line among them)."""
        return shown * ROW_HEIGHT + (DIVIDER if 0 <= self.divider < shown else 0)

    def mark_stale(self) -> None:
        """The text changed: these rows belong to an earlier query until new ones come."""
        if not self.stale:
            self.stale = True
            if self.rows:
                self.dataChanged.emit(self.index(0), self.index(len(self.rows) - 1))


def status_line(text: str, result: RecallResult, coming: bool) -> str:
    """The line under the box for an answer to `text` (meaning-based results `coming`)."""
    rows = result.results
    if not text.strip():
        return "" if rows else "No memories yet. Type something and press Ctrl+S."
    if rows and all(weak(r) for r in rows) and not coming:
        said = "; ".join(filter(None, [result.notice, "only weak matches"]))
        return said[0].upper() + said[1:]
    if rows or coming:  # what the search read differently (a typo), said as the CLI does
        notice = result.notice or ""
        return notice[:1].upper() + notice[1:]
    if result.notice and result.notice.startswith(("nothing was stored", "no memory")):
        return result.notice[0].upper() + result.notice[1:] + "."
    typed = text.strip() if len(text.strip()) <= 60 else text.strip()[:59] + "…"
    return f"Nothing relevant to “{typed}”. Ctrl+S remembers it."


def weak(row: Scored) -> bool:
    """Whether a row is a weak match (recent memories, unscored, are not)."""
    return row.band is Band.WEAK


class ResultDelegate(QtWidgets.QStyledItemDelegate):
    """Paints title, highlighted snippet, category/tags/age and a relevance bar; weak
    matches dimmed, under a "weaker matches" line."""

    def sizeHint(self, option, index) -> QtCore.QSize:  # noqa: N802 - Qt API
        extra = DIVIDER if index.row() == index.model().divider else 0
        return QtCore.QSize(WIDTH - 24, ROW_HEIGHT + extra)

    def paint(self, painter: QtGui.QPainter, option, index) -> None:
        row: Scored = index.data(Qt.UserRole)
        model: ResultsModel = index.model()
        palette = option.palette
        area = QtCore.QRect(option.rect)
        painter.save()
        if index.row() == model.divider:
            line = QtCore.QRect(area.left() + 10, area.top(), area.width() - 20, DIVIDER)
            small = QtGui.QFont(option.font)
            small.setPointSizeF(option.font.pointSizeF() * 0.8)
            painter.setFont(small)
            faint = QtGui.QColor(palette.text().color())
            faint.setAlpha(120)
            painter.setPen(faint)
            label = model.label
            painter.drawText(line, Qt.AlignLeft | Qt.AlignVCenter, label)
            start = line.left() + painter.fontMetrics().horizontalAdvance(label) + 8
            middle = line.center().y() + 1
            painter.drawLine(start, middle, line.right(), middle)
            area.setTop(area.top() + DIVIDER)
        rect = area.adjusted(10, 6, -10, -6)
        if model.stale:
            painter.setOpacity(0.4)  # an earlier query's rows: Enter waits for the new ones
        elif weak(row):
            painter.setOpacity(WEAK_OPACITY)  # shown, not hidden: but not an answer
        selected = bool(option.state & QtWidgets.QStyle.State_Selected)
        if selected:
            painter.fillRect(area, palette.highlight())
        text_color = palette.highlightedText().color() if selected else palette.text().color()
        dim = QtGui.QColor(text_color)
        dim.setAlpha(150)
        number = index.row() + 1
        title_font = QtGui.QFont(option.font)
        title_font.setBold(True)
        painter.setFont(title_font)
        painter.setPen(text_color)
        bar_width = 44
        title_rect = QtCore.QRect(rect.left(), rect.top(), rect.width() - bar_width - 8, 18)
        title = row.memory.display_title
        painter.drawText(
            title_rect,
            Qt.AlignLeft | Qt.AlignVCenter,
            painter.fontMetrics().elidedText(isolated(title), Qt.ElideRight, title_rect.width()),
        )
        # Relevance bar and the Ctrl+N shortcut hint.
        if row.score:
            bar = QtCore.QRect(rect.right() - bar_width, rect.top() + 5, bar_width, 6)
            painter.setPen(Qt.NoPen)
            painter.setBrush(dim)
            painter.drawRoundedRect(bar, 3, 3)
            filled = QtCore.QRect(
                bar.left(), bar.top(), max(4, int(bar_width * min(row.score, 1))), 6
            )
            painter.setBrush(palette.highlightedText() if selected else palette.highlight())
            painter.drawRoundedRect(filled, 3, 3)
        small = QtGui.QFont(option.font)
        small.setPointSizeF(option.font.pointSizeF() * 0.85)
        painter.setFont(small)
        if number <= 9:
            painter.setPen(dim)
            painter.drawText(
                QtCore.QRect(rect.right() - bar_width, rect.top() + 14, bar_width, 16),
                Qt.AlignRight,
                f"Ctrl+{number}",
            )
        # Snippet with the query's words in bold.
        body = " ".join(row.memory.text.split())
        if not title.endswith("…") and body.startswith(" ".join(title.split())):
            body = body[len(" ".join(title.split())) :].lstrip(" .;:,-")  # title = first line
        # As many characters as fit the line (ending at a word, with "…"), not a fixed count
        # the clip would cut mid-word.
        room = rect.width() - bar_width - 8
        fits = max(20, int(room / QtGui.QFontMetrics(small).averageCharWidth() * 0.9))
        excerpt, spans = snippet(body, model.query, fits) if body else ("", [])
        if visible(excerpt) != excerpt:  # hidden formatting written out: spans would be off
            excerpt, spans = visible(excerpt), []
        parts, last = [], 0
        for start, end in spans:
            parts += [html.escape(excerpt[last:start]), f"<b>{html.escape(excerpt[start:end])}</b>"]
            last = end
        parts.append(html.escape(excerpt[last:]))
        doc = QtGui.QTextDocument()
        one_line = QtGui.QTextOption()
        one_line.setWrapMode(QtGui.QTextOption.NoWrap)  # a second line would overlap the next
        # At the row's left like the title, also when read right to left (its own direction).
        one_line.setAlignment(Qt.AlignLeft | Qt.AlignAbsolute)
        doc.setDefaultTextOption(one_line)
        doc.setDefaultFont(small)
        doc.setDocumentMargin(0)
        doc.setHtml(f"<span style='color:{text_color.name()}'>{''.join(parts)}</span>")
        doc.setTextWidth(rect.width() - bar_width - 8)
        painter.translate(rect.left(), rect.top() + 20)
        painter.setClipRect(QtCore.QRect(0, 0, rect.width() - bar_width - 8, 17))
        doc.drawContents(painter)
        painter.setClipping(False)
        painter.translate(-rect.left(), -(rect.top() + 20))
        meta = [
            row.memory.category,
            *(f"#{t}" for t in row.memory.tags[:4]),
            age(row.memory.created_at),
        ]
        if row.memory.pinned:
            meta.insert(0, "★ pinned")
        line = QtCore.QRect(rect.left(), rect.top() + 36, rect.width(), 16)
        if badge := model.badge(row):  # its team space (issue 45), at the line's right
            taken = shares.draw_badge(painter, palette, selected, line, badge)
            line.setRight(line.right() - taken - 8)
        painter.setPen(dim)
        painter.drawText(
            line,
            Qt.AlignLeft,
            painter.fontMetrics().elidedText(fields_line(meta), Qt.ElideRight, line.width()),
        )
        painter.restore()


class Popup(QtWidgets.QWidget):
    """The frameless search window the hotkey opens."""

    used = Signal(str)  # a memory was copied (counts as a recall)
    openMemory = Signal(str)  # Ctrl+Enter: show this memory in the manager
    rememberText = Signal(str)  # Ctrl+S: store what was typed
    openInbox = Signal()  # Ctrl+I: what agents captured, to review
    hidden = Signal()
    focused = Signal()  # the popup became the window typing goes to

    def __init__(self, worker: Worker, settings, parent=None):
        super().__init__(parent, Qt.Tool | Qt.FramelessWindowHint | Qt.WindowStaysOnTopHint)
        self.setObjectName("popup")
        self.setAttribute(Qt.WA_TranslucentBackground, False)
        self.worker = worker
        worker.changedElsewhere.connect(self._changed_elsewhere)
        self.settings = settings  # read only: the engine owns them
        self.last_mode = ""  # mode of the results on screen (keyword, hybrid, recent)
        self.last_result: RecallResult | None = None  # the answer on screen
        self.setWindowTitle("Mnemo search")
        self.setFixedWidth(WIDTH)

        self.search = QtWidgets.QLineEdit(objectName="popupSearch")
        self.search.setPlaceholderText("Search your memories…")
        self.search.setClearButtonEnabled(True)
        font = self.search.font()
        font.setPointSizeF(font.pointSizeF() * 1.35)
        self.search.setFont(font)
        self.search.setMinimumHeight(40)
        self.model = ResultsModel(self, worker)
        self.list = QtWidgets.QListView(objectName="popupResults")
        self.list.setModel(self.model)
        self.list.setItemDelegate(ResultDelegate(self.list))
        self.list.setUniformItemSizes(False)  # the row under the "weaker matches" line
        self.list.setFocusPolicy(Qt.NoFocus)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.list.setVerticalScrollBarPolicy(Qt.ScrollBarAsNeeded)
        self.list.setFixedWidth(WIDTH - 20)
        self.preview = QtWidgets.QTextBrowser(objectName="popupPreview")
        self.preview.setFocusPolicy(Qt.NoFocus)  # typing stays in the search field
        self.preview.setOpenLinks(False)
        self.preview.setFixedWidth(PREVIEW_WIDTH)
        self.preview.hide()
        self.actions_menu: QtWidgets.QMenu | None = None  # Ctrl+K, while it is open
        self._copying = ""  # the memory a copy is being checked for (see `_copy`)
        self._area: QtCore.QRect | None = None  # the screen's free area it was shown on
        self._trashed: Memory | None = None  # the last memory trashed here (Ctrl+Z)
        self._select_id = ""  # after a refresh, select this memory again
        self._done_message = ""  # what an action did, said above the refreshed rows
        self.status = QtWidgets.QLabel(objectName="popupStatus")
        self.status.setWordWrap(True)
        hint = self.hint = QtWidgets.QLabel(HINT)
        hint.setObjectName("popupHint")
        hint_font = hint.font()
        hint_font.setPointSizeF(hint_font.pointSizeF() * 0.85)
        hint.setFont(hint_font)
        make_quiet(hint)

        frame = QtWidgets.QFrame(objectName="popupFrame")
        frame.setFrameShape(QtWidgets.QFrame.StyledPanel)
        inner = QtWidgets.QVBoxLayout(frame)
        inner.setContentsMargins(10, 10, 10, 8)
        inner.addWidget(self.search)
        inner.addWidget(self.status)
        body = QtWidgets.QHBoxLayout()
        body.setSpacing(8)
        body.addWidget(self.list, 0, Qt.AlignTop)
        body.addWidget(self.preview, 0, Qt.AlignTop)
        body.addStretch(1)
        inner.addLayout(body)
        inner.addWidget(hint)
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(frame)

        self._was_active = False  # activated since shown: losing it then means a blur
        self.blurred = False  # the last hide came from another window taking the focus
        self.enter_wait = PendingEnter(self, self._say_waiting)  # an Enter before its rows
        self._chosen = False  # the user moved the selection since the text changed
        self.paste_wanted = False  # the last copy asked to be pasted into the previous window
        self._meaning_for = ""  # the text whose meaning-based results are still coming
        self.inbox_count = 0  # candidates agents captured, waiting for review (Ctrl+I)
        self.key_gate = KeyGate(self, lambda keys: replay(keys, self, self.search))
        QtGui.QGuiApplication.instance().focusWindowChanged.connect(self._focus_moved)
        self._debounce = QtCore.QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self._hybrid_search)
        self.search.textEdited.connect(self._on_text)
        self.search.installEventFilter(self)
        self.list.doubleClicked.connect(lambda index: self._copy(index.row()))
        self.list.clicked.connect(lambda index: self.list.setCurrentIndex(index))
        self.list.selectionModel().currentChanged.connect(lambda *_: self._show_preview())
        self._resize_for(0)

    # ---- showing and hiding ------------------------------------------------------------
    def present(self, activation_token: str = "") -> None:
        """Show on the screen under the mouse, focused, with the last query selected; with
        the desktop's xdg-activation token of the key press, when there is one (Wayland:
        Qt activates the window it shows with XDG_ACTIVATION_TOKEN, and unsets it)."""
        if activation_token:
            os.environ["XDG_ACTIVATION_TOKEN"] = activation_token
        self.blurred = False
        self._trashed = None
        self.paste_wanted = False
        self.hint.setText(self.keys_hint())
        self.worker.call(
            lambda e: e.inbox_count(), self._show_inbox_count, None, INTERACTIVE, "popup-inbox"
        )
        screen = QtGui.QGuiApplication.screenAt(QtGui.QCursor.pos()) or self.screen()
        self._area = area = screen.availableGeometry()
        self.setFixedWidth(self._width(area.width()))
        self._resize_for(len(self.model.rows))
        self._place()
        self.show()
        self.raise_()
        self.activateWindow()
        # Shown while the hotkey's keyboard grab is still on, the activation can be lost
        # (the window has the X focus, Qt does not know): ask again once it is mapped.
        QtCore.QTimer.singleShot(150, self._activate_again)
        self.search.setFocus(Qt.ActiveWindowFocusReason)
        self.search.selectAll()
        self._search_again()  # the rows of the last opening may be out of date

    def prepare(self) -> None:
        """Before the first press: the recent rows, painted once off screen (`_on_result`).
        The first opening did that for the first time (PySide's enums, the preview's HTML,
        fonts: 0.1-0.3 s under load) before its window could be mapped, and on Wayland the
        keys typed meanwhile went to the window before (nothing can keep them there)."""
        self._show_recent()

    def state(self) -> dict:
        """What `mnemo status` says of the popup: whether it shows, how long the text in
        its box is (never the text: it may be a secret given back), whether the rows on
        screen answer that text, in which mode, and whether that answer is settled (no
        search under way or about to start for it)."""
        text = self.search.text()
        asked = text if text.strip() else ""  # blank: the recent memories
        return {
            "visible": self.isVisible(),
            "text_length": len(text),
            "rows_for_text": self.model.query == asked,
            "mode": self.last_mode,
            "rows": len(self.model.rows),
            "settled": self.model.query == asked
            and not self._debounce.isActive()
            and not any(self.worker.waiting(c) for c in ("popup-keyword", "popup-hybrid")),
        }

    def _search_again(self) -> None:
        """Search the text in the box again (the recent list when empty), keeping the
        selected memory selected: memories changed, went to the trash or came in since."""
        row = self.list.currentIndex().row()
        if 0 <= row < len(self.model.rows):
            self._select_id = self.model.rows[row].memory.id
        text = self.search.text()
        if text.strip():
            self._on_text(text)
        else:
            self._show_recent()

    def _changed_elsewhere(self) -> None:
        """Another process (the CLI, an agent) wrote: rows on screen are searched again."""
        if self.isVisible():
            self._search_again()

    def _place(self) -> None:
        """Centred, a fifth down the screen, and never past its bottom (QT_SCALE_FACTOR=2 on
        1920 x 1080 leaves 960 x 540 to fit in)."""
        area = self._area
        top = area.top() + area.height() // 5
        if top + self.height() > area.bottom():
            top = max(area.top(), area.bottom() - self.height())
        self.move(area.left() + max(0, (area.width() - self.width()) // 2), top)

    def _rows_that_fit(self, wanted: int) -> int:
        """How many of `wanted` rows fit on the screen with the box, the status and the hint
        (at least one: the rest scroll)."""
        if self._area is None:
            return wanted
        chrome = self.height() - self.list.height() if self.list.isVisible() else 150
        room = self._area.height() - max(chrome, 120) - 8
        while wanted > 1 and self.model.height(wanted) + 4 > room:
            wanted -= 1
        return wanted

    def _width(self, screen_width: int) -> int:
        """The popup's width: the results, and the preview beside them when it fits."""
        wide = WIDTH + PREVIEW_WIDTH + 8
        return wide if self.settings["popup_preview"] and screen_width >= wide + 40 else WIDTH

    def _activate_again(self) -> None:
        if not self.isVisible():
            return
        if self.has_focus():
            self._was_active = True
            self.focused.emit()
        else:
            self.raise_()
            self.activateWindow()

    def has_focus(self) -> bool:
        """Whether the popup is the window typing goes to."""
        # Not isActiveWindow(): re-shown while Qt's focus window never changed (nothing
        # else took it), the popup has the focus but Qt does not call it active.
        handle = self.windowHandle()
        return handle is not None and QtGui.QGuiApplication.focusWindow() == handle

    def _focus_moved(self, window) -> None:
        """Qt's focus window changed: to us (now a blur can happen), or away (a blur)."""
        if not self.isVisible():
            return
        mine = self.windowHandle()
        if window is not None and window == mine:
            self._was_active = True
            self.focused.emit()
        elif window is not None and window.transientParent() == mine:
            pass  # a question asked above the popup (a secret found): it stays open
        elif self.actions_menu is not None and self.actions_menu.isVisible():
            pass  # its own actions menu (Ctrl+K)
        elif self._was_active and self.settings["popup_hide_on_blur"]:
            self.blurred = True  # the focus went where the user clicked: not given back
            self.hide()  # another window took the focus, as with every launcher

    def type_keys(self, keys: list) -> None:
        """Keys typed before the popup had the focus ([(Qt key, modifiers, text)], kept by
        the hotkey's grab): they are typed into it now, in order, as if they had come; then
        those that reached it directly meanwhile (`key_gate`)."""
        replay([*keys, *self.key_gate.open()], self, self.search)

    def hide(self) -> None:
        """Hide on purpose (Esc, Enter, the hotkey): the focus loss that follows is not a
        blur, and the previous window gets the focus back."""
        self._was_active = False
        super().hide()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt API
        self._was_active = False
        self.enter_wait.forget()  # (an Enter still waiting: closed instead)
        self.key_gate.open()  # (typed into a popup going away: meant for nothing)
        super().hideEvent(event)
        self.hidden.emit()

    # ---- searching -------------------------------------------------------------------
    def _on_text(self, text: str) -> None:
        self.model.mark_stale()
        self._chosen = False
        self.enter_wait.forget(unless_for=text)  # typed on: that Enter was for another text
        if not text.strip():
            self._debounce.stop()
            self._set_busy("")
            self._show_recent()
            return
        self._search(text, "keyword", "popup-keyword")
        self._set_busy(text)
        self._debounce.start()

    def _set_busy(self, text: str) -> None:
        """Say, in the hint line, that meaning-based results for `text` are still coming."""
        self._meaning_for = text
        self.hint.setText(
            f"searching by meaning…  ·  {self.keys_hint()}" if text else self.keys_hint()
        )

    def keys_hint(self) -> str:
        """The line of keys under the results (and how many captures wait), when nothing
        else is said there."""
        keys = HINT_PASTING if self.settings["popup_enter_pastes"] else HINT
        waiting = self.inbox_count
        return f"{waiting} captured from agents: Ctrl+I reviews  ·  {keys}" if waiting else keys

    def _show_inbox_count(self, count: int) -> None:
        self.inbox_count = count
        if not self._meaning_for:
            self.hint.setText(self.keys_hint())

    def _hybrid_search(self) -> None:
        text = self.search.text()
        if text.strip():
            self._search(text, None, "popup-hybrid")

    def _search(self, text: str, mode: str | None, channel: str) -> None:
        self.worker.search(
            text,
            mode,
            self._limit(),
            prefix=True,
            channel=channel,
            done=lambda result: self._on_result(text, result, final=mode is None),
            failed=self._on_failure,
        )

    def _limit(self) -> int:
        return int(self.settings["popup_results"])

    def _show_recent(self) -> None:
        limit = self._limit()

        def recent(engine):
            rows = engine.recent(limit)
            return RecallResult(
                query="", mode="recent", results=[Scored(memory=m, seq=0) for m in rows]
            )

        self.worker.call(
            recent,
            lambda result: self._on_result("", result),
            self._on_failure,
            INTERACTIVE,
            channel="popup-keyword",
        )

    def _on_result(self, text: str, result: RecallResult, final: bool = True) -> None:
        if text != self.search.text() and not (text == "" and not self.search.text().strip()):
            return  # the user typed on: this answer is stale
        self.last_mode = result.mode
        self.last_result = result
        rows = result.results
        self.model.set_rows(rows, text)
        if final and self._meaning_for == text:
            self._set_busy("")  # the meaning-based answer (or keywords, if meaning is off)
        if self.model.rows:
            ids = [r.memory.id for r in self.model.rows]
            keep = ids.index(self._select_id) if self._select_id in ids else 0
            self.list.setCurrentIndex(self.model.index(keep))
        self._select_id = ""
        coming = self._meaning_for == text  # meaning-based results for this text are due
        self.status.setText(status_line(text, result, coming))
        if self._done_message:
            self.status.setText(self._done_message)
            if final:  # kept above the meaning-based answer that follows the keyword one
                self._done_message = ""
        self.status.setVisible(bool(self.status.text()))
        self._resize_for(len(rows))
        self._show_preview()  # now that the pane is shown (or hidden) for these rows
        if self._area is None:  # never shown yet (`prepare`): its first paint, off screen
            self.grab()
        # An Enter held for this text acts on its settled answer (the keyword rows that come
        # first were never seen, and the meaning-based answer may reorder them)
        shown = [r.memory.id for r in self.model.rows]
        waited = None if coming else self.enter_wait.answered(text, shown)
        if waited is not None and waited[0] is None:
            self.show_message("The row chosen is not among these results: choose again.")
        elif waited is not None:
            self._act(*waited)
        elif self.enter_wait.said:
            self._say_waiting()  # (still: over what this answer said)

    def _say_waiting(self) -> None:
        self.show_message("Still searching: Enter acts on the results when they appear.")

    def _on_failure(self, message: str) -> None:
        self._set_busy("")
        self.enter_wait.forget()
        if isinstance(getattr(message, "error", None), LockedError):
            # (encrypted and its key not at hand: no rows of before, and what to do)
            self.model.set_rows([], "")
            self._resize_for(0)
            message = LOCKED
        self.status.setText(message)
        self.status.setVisible(True)

    def _resize_for(self, rows: int) -> None:
        previewing = rows > 0 and self.width() > WIDTH
        shown = min(rows, VISIBLE_ROWS)
        if previewing:
            shown = max(shown, PREVIEW_MIN_ROWS)  # room to read the memory beside
        shown = self._rows_that_fit(shown)
        self.list.setVisible(rows > 0)
        self.list.setFixedHeight(self.model.height(shown) + 4)
        self.preview.setVisible(previewing)
        self.preview.setFixedHeight(self.model.height(shown) + 4)
        self.status.setVisible(bool(self.status.text()))
        self.adjustSize()
        # Hidden rows and preview leave the layout's size only once its posted update ran:
        # fit again then (a message alone sat in a panel as tall as the rows that went).
        QtCore.QTimer.singleShot(0, self._fit)

    def _fit(self) -> None:
        self.adjustSize()
        if self._area is not None and self.isVisible():
            self._place()

    def _show_preview(self) -> None:
        """The selected memory, whole, in the preview pane."""
        row = self.list.currentIndex().row()
        if not 0 <= row < len(self.model.rows) or not self.preview.isVisible():
            self.preview.clear()
            return
        palette = self.preview.palette()
        color = quiet(palette.color(QtGui.QPalette.Text), palette.color(QtGui.QPalette.Base))
        memory = self.model.rows[row].memory
        self.preview.setHtml(preview_html(memory, self.model.query, color.name()))
        self.preview.verticalScrollBar().setValue(0)

    # ---- keys --------------------------------------------------------------------------
    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if obj is self.search and event.type() == QtCore.QEvent.KeyPress:
            return self._key(event)
        return super().eventFilter(obj, event)

    def _key(self, event: QtGui.QKeyEvent) -> bool:
        key, mods = event.key(), event.modifiers()
        ctrl = bool(mods & Qt.ControlModifier)
        # Enter copies and Alt+Enter pastes into the previous window, or the other way round
        paste = bool(mods & Qt.AltModifier) != bool(self.settings["popup_enter_pastes"])
        if key == Qt.Key_Escape:
            self.hide()
        elif key in (Qt.Key_Down, Qt.Key_Up) or (ctrl and key in (Qt.Key_N, Qt.Key_P)):
            self._move(1 if key in (Qt.Key_Down, Qt.Key_N) else -1)
        elif key in (Qt.Key_Return, Qt.Key_Enter):
            self._enter(max(self.list.currentIndex().row(), 0), open_it=ctrl, paste=paste)
        elif ctrl and Qt.Key_1 <= key <= Qt.Key_9:
            self._enter(key - Qt.Key_1, open_it=False, paste=paste, picked=True)
        elif key in (Qt.Key_PageDown, Qt.Key_PageUp) and self.preview.isVisible():
            bar = self.preview.verticalScrollBar()
            step = bar.pageStep() if key == Qt.Key_PageDown else -bar.pageStep()
            bar.setValue(bar.value() + step)
        elif (ctrl and key == Qt.Key_K) or (key == Qt.Key_Tab and self.model.rows):
            self.show_actions()
        elif ctrl and key == Qt.Key_Delete:
            self._trash(self.list.currentIndex().row())
        elif ctrl and key == Qt.Key_I:
            self.hide()
            self.openInbox.emit()
        elif ctrl and key == Qt.Key_Z and self._trashed is not None:
            self._undo_trash()
        elif ctrl and key == Qt.Key_S:
            text = self.search.text().strip()
            if text:
                self.search.clear()  # (programmatic: textEdited does not fire)
                self._on_text("")  # the recent list, not the rows of the text just taken
                self.status.setText("Remembering…")  # never the text: it may hold a secret
                self.status.setVisible(True)
                self.rememberText.emit(text)
        else:
            return False
        return True

    def _move(self, step: int) -> None:
        if not self.model.rows:
            return
        self._chosen = True
        row = (self.list.currentIndex().row() + step) % len(self.model.rows)
        self.list.setCurrentIndex(self.model.index(row))

    def _enter(self, row: int, open_it: bool, paste: bool = False, picked: bool = False) -> None:
        """Copy, paste or open a row the user sees for the text in the box: on rows of an
        earlier query (dimmed), or on no rows while meaning is still coming, wait for this
        text's settled answer (`PendingEnter`), then act on its top row, or
        on the memory the user `picked` there (Ctrl+digit) or moved to."""
        text = self.search.text()
        answered = self.model.query == text and (self.model.rows or self._meaning_for != text)
        if answered or (not text.strip() and self.last_mode == "recent"):
            self._act(row, open_it, paste)
            return
        picked = self._chosen or picked  # (a row selected again by a refresh is no choice)
        on_screen = 0 <= row < len(self.model.rows)
        chosen = self.model.rows[row].memory.id if picked and on_screen else ""
        self.enter_wait.hold(text, chosen, open_it, paste)

    def _act(self, row: int, open_it: bool, paste: bool = False) -> None:
        if not 0 <= row < len(self.model.rows):
            return
        if open_it:
            self.openMemory.emit(self.model.rows[row].memory.id)
            self.hide()
        else:
            self._copy(row, paste)

    def _copy(self, row: int, paste: bool = False) -> None:
        """Copy a row's memory and hide; with `paste`, the app then pastes it into the
        window the user was in (`App._restore_focus`)."""
        if not 0 <= row < len(self.model.rows):
            return
        memory_id = self.model.rows[row].memory.id
        self._copying = memory_id
        # Read again first: the row may be out of date by a moment (trashed or edited by the
        # CLI or an agent since it was shown); what is copied is the memory as it is now.
        self.worker.call(
            lambda engine: engine.get(memory_id),
            lambda memory: self._copy_checked(memory, paste),
            self._copy_failed,
            INTERACTIVE,
        )

    def _copy_checked(self, memory: Memory, paste: bool) -> None:
        if memory.id != self._copying or not self.isVisible():
            return  # another copy was asked for since, or the popup was closed
        self._copying = ""
        if memory.deleted_at:
            self._not_copied(f"“{memory.display_title}” was moved to the trash meanwhile")
            return
        QtGui.QGuiApplication.clipboard().setText(memory.text)
        self.used.emit(memory.id)
        self.paste_wanted = paste
        self.hide()

    def _copy_failed(self, message: str) -> None:
        self._copying = ""
        if isinstance(getattr(message, "error", None), NotFoundError):
            self._not_copied("That memory was deleted meanwhile")
            return
        self._on_failure(message)

    def _not_copied(self, why: str) -> None:
        """Say why nothing was copied, above the rows searched again."""
        self._done_message = f"{why}: not copied."
        self.show_message(self._done_message)
        self._search_again()

    # ---- actions on a result (Ctrl+K) ---------------------------------------------------
    def show_actions(self) -> None:
        """The actions on the selected result, in a menu under it (keyboard-driven)."""
        row = self.list.currentIndex().row()
        if not 0 <= row < len(self.model.rows) or self.model.stale:
            return
        memory = self.model.rows[row].memory
        copy_keys, paste_keys = "Enter", "Alt+Enter"
        if self.settings["popup_enter_pastes"]:
            copy_keys, paste_keys = paste_keys, copy_keys
        menu = QtWidgets.QMenu(self)
        menu.setObjectName("popupActions")
        entries = [
            ("&Copy", copy_keys, lambda: self._copy(row)),
            ("P&aste into the previous window", paste_keys, lambda: self._copy(row, True)),
            ("Copy &title", "", lambda: self._copy_as(memory, memory.display_title)),
            ("Copy as &Markdown", "", lambda: self._copy_as(memory, markdown(memory))),
            ("Un&pin" if memory.pinned else "&Pin", "", lambda: self._pin(memory)),
            ("&Open in the manager", "Ctrl+Enter", lambda: self._act(row, open_it=True)),
            ("Move to the t&rash", "Ctrl+Delete", lambda: self._trash(row)),
        ]
        for label, keys, run in entries:
            action = menu.addAction(f"{label}\t{keys}" if keys else label)
            action.triggered.connect(run)
        menu.aboutToHide.connect(self._actions_closed)
        self.actions_menu = menu
        place = self.list.visualRect(self.model.index(row)).bottomLeft()
        menu.popup(self.list.viewport().mapToGlobal(place + QtCore.QPoint(24, 0)))
        menu.setActiveAction(menu.actions()[0])  # Enter at once copies; arrows move from there

    def _actions_closed(self) -> None:
        # The menu closed (an action, Esc or a click elsewhere): typing goes on in the box.
        QtCore.QTimer.singleShot(0, self._after_actions)

    def _after_actions(self) -> None:
        self.actions_menu = None
        if self.isVisible():
            self.activateWindow()
            self.search.setFocus(Qt.OtherFocusReason)

    def _copy_as(self, memory: Memory, text: str) -> None:
        QtGui.QGuiApplication.clipboard().setText(text)
        self.used.emit(memory.id)
        self.hide()

    def _pin(self, memory: Memory) -> None:
        pinned = not memory.pinned
        self._select_id = memory.id
        self.worker.call(
            lambda engine: engine.edit(memory.id, pinned=pinned, origin=origins.person("popup")),
            lambda _memory: self.report(
                f"{'Pinned' if pinned else 'Unpinned'} “{memory.display_title}”."
            ),
            self._on_failure,
            INTERACTIVE,
            writes=True,
        )

    def _trash(self, row: int) -> None:
        if not 0 <= row < len(self.model.rows) or self.model.stale:
            return
        memory = self.model.rows[row].memory
        below = self.model.rows[row + 1].memory.id if row + 1 < len(self.model.rows) else ""
        self._select_id = below
        self.worker.call(
            lambda engine: engine.forget([memory.id]),
            lambda _ids: self._trashed_done(memory),
            self._on_failure,
            INTERACTIVE,
            writes=True,
        )

    def _trashed_done(self, memory: Memory) -> None:
        self._trashed = memory
        self.report(f"Moved “{memory.display_title}” to the trash. Ctrl+Z brings it back.")

    def _undo_trash(self) -> None:
        memory, self._trashed = self._trashed, None
        self._select_id = memory.id
        self.worker.call(
            lambda engine: engine.restore([memory.id]),
            lambda _ids: self.report(f"“{memory.display_title}” is back from the trash."),
            self._on_failure,
            INTERACTIVE,
            writes=True,
        )

    def give_back(self, text: str, message: str) -> None:
        """Put taken text back in the box (a save that did not happen), selected, with its
        results and why it is back."""
        self.search.setText(text)
        self.search.selectAll()
        self._on_text(text)
        self._done_message = message
        self.show_message(message)

    def report(self, message: str) -> None:
        """Say what was done, and search again so the rows show it (the message stays
        above the rows that answer after it)."""
        if not self.isVisible():
            return
        self.show_message(message)
        self._done_message = message
        text = self.search.text()
        if text.strip():
            self._search(text, None, "popup-hybrid")
        else:
            self._show_recent()

    def show_message(self, text: str) -> None:
        """A line under the search field (e.g. "Remembered")."""
        self.status.setText(text)
        self.status.setVisible(True)
