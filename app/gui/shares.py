"""Team spaces in the manager and the popup (issue 45): the words of the manager's Space
column and of the popup's badge, the badge's colours, and the manager's filter by space and
its *Share in space ▸ NAME* and *Stop sharing*, done on the worker through
`engine.spaces` (`list`, `share_many`, `unshare`, `shared`)."""

from __future__ import annotations

from app.core import origin as origins
from app.core.errors import MnemoError
from app.core.memory import Memory
from app.core.origin import Origin
from app.gui.contrast import READABLE, ratio
from app.gui.qt import Qt, QtCore, QtGui, QtWidgets
from app.gui.worker import INTERACTIVE

ANY, MINE = None, ""  # the filter's first two choices (`Filters.space`)


def member(memory: Memory) -> Origin | None:
    """The member of a space who wrote the memory (`origin.author`); None when its words
    began on this device."""
    return origins.author(memory.origins)


def label(memory: Memory, space: str | None) -> str:
    """'team' for a memory of this device shared in the space `team`, 'team · alice' for one
    alice wrote; '' for one in no space."""
    if not space:
        return ""
    one = member(memory)
    return f"{space} · {one.name or 'a member'}" if one is not None else space


def take_found(spaces: dict[str, str], ids: list[str], found: dict[str, str]) -> None:
    """`spaces` (a results model's space by memory id) as `Spaces.shared` answered for
    `ids`: the ones it named in their space, the others in none."""
    for memory_id in ids:
        if memory_id in found:
            spaces[memory_id] = found[memory_id]
        else:
            spaces.pop(memory_id, None)


def tooltip(memory: Memory, space: str | None) -> str:
    """Who shared a memory of a space, in a sentence."""
    if not space:
        return ""
    one = member(memory)
    if one is None:
        return f"Shared by you in the space {space}"
    return f"Shared by {one.name or 'a member'} (device {one.device}) in the space {space}"


def _mixed(a: QtGui.QColor, b: QtGui.QColor, share: float) -> QtGui.QColor:
    return QtGui.QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * share,
        a.greenF() + (b.greenF() - a.greenF()) * share,
        a.blueF() + (b.blueF() - a.blueF()) * share,
    )


def badge_colors(palette: QtGui.QPalette, selected: bool) -> tuple[QtGui.QColor, QtGui.QColor]:
    """(text, fill) of a space's badge on a row: the row's text on a tint of the highlight
    colour, lighter when the text would read under 4.5:1 on it; on a selected row, the
    highlight darkened (or lightened) away from its text until it reads at 4.5:1 (light
    and dark themes; a theme's own highlight may give its text less)."""
    if selected:
        text, ground = palette.highlightedText().color(), palette.highlight().color()
        light = ratio(text, QtGui.QColor("black")) > ratio(text, QtGui.QColor("white"))
        accent, shares = QtGui.QColor("black" if light else "white"), (0.2, 0.35, 0.5, 0.65)
    else:
        text, ground = palette.text().color(), palette.base().color()
        accent, shares = palette.highlight().color(), (0.22, 0.15, 0.08, 0.0)
    for share in shares:
        fill = _mixed(ground, accent, share)
        if ratio(text, fill) >= READABLE:
            break
    return text, fill


def draw_badge(
    painter: QtGui.QPainter, palette, selected: bool, box: QtCore.QRect, text: str
) -> int:
    """A space's badge at the right of `box` (one line, in the painter's font), cut with
    "…" to half the box; the width it took."""
    metrics = painter.fontMetrics()
    shown = metrics.elidedText(text, Qt.ElideRight, box.width() // 2 - 12)
    width = metrics.horizontalAdvance(shown) + 12
    place = QtCore.QRect(box.right() - width, box.top(), width, box.height())
    color, fill = badge_colors(palette, selected)
    painter.save()
    painter.setPen(Qt.NoPen)
    painter.setBrush(fill)
    painter.drawRoundedRect(place, 4, 4)
    painter.setPen(color)
    painter.drawText(place, Qt.AlignCenter, shown)
    painter.restore()
    return width


def _each(ids: list[str], act) -> tuple[list[str], list[tuple[str, str]]]:
    """`act` on each id: those done, and (id, why) for each one refused (a secret in it)."""
    done, refused = [], []
    for memory_id in ids:
        try:
            act(memory_id)
            done.append(memory_id)
        except MnemoError as exc:
            refused.append((memory_id, str(exc)))
    return done, refused


class Shares:
    """The Space filter and the share actions of one manager window (`Manager.shares`):
    `menu` (*Share in space ▸ NAME*, one action per space) and `stop` (*Stop sharing*),
    on the toolbar and the table's context menu."""

    def __init__(self, window) -> None:
        self.window = window  # its selection, filter box, status bar and worker
        self.spaces: list[dict] = []
        self.menu = QtWidgets.QMenu("Share in space", window)
        self.menu.setObjectName("menuShareIn")
        self.stop = QtGui.QAction("Stop sharing", window)
        self.stop.setObjectName("actionStopSharing")
        self.stop.setToolTip("Withdraw the selected memories from their space")
        self.stop.triggered.connect(self.stop_sharing)
        self.listed([])

    def fill(self) -> None:
        """Read the spaces this device is in (on the worker) into the filter and the menu."""
        self.window.worker.call(
            lambda e: e.spaces.list(),
            self.listed,
            None,
            INTERACTIVE,
            channel="manager-spaces",
        )

    def listed(self, spaces: list[dict]) -> None:
        """Show these spaces (`engine.spaces.list()`) in the filter and the menu."""
        self.spaces = spaces
        self.menu.clear()
        for space in spaces:
            member = space.get("member", True)  # (removed, or left: nothing would go out)
            action = self.menu.addAction(space["name"] + ("" if member else " (not a member)"))
            action.setObjectName(f"shareIn:{space['name']}")
            action.setEnabled(member)
            action.triggered.connect(lambda _c=False, n=space["name"]: self.share_selected(n))
        if not spaces:
            none = self.menu.addAction("No spaces yet (Settings → Spaces)")
            none.setEnabled(False)
        box = getattr(self.window, "space_filter", None)
        if box is None:
            return
        current = box.currentData() if box.currentIndex() > 0 else ANY
        box.blockSignals(True)
        box.clear()
        box.addItem("any space", ANY)
        box.addItem("not shared", MINE)
        box.setItemData(1, "Memories in no space", Qt.ToolTipRole)
        for space in spaces:
            box.addItem(space["name"], space["id"])
        found = box.findData(current) if current is not ANY else 0
        box.setCurrentIndex(max(found, 0))
        box.blockSignals(False)
        box.setVisible(bool(spaces) or current is not ANY)
        if current is not ANY and found < 0:  # (the space it showed was left)
            self.window.table_model.filters = self.window.current_filters()
            self.window.table_model.reload()

    def context_menu(self, at: QtCore.QPoint) -> None:
        """The table's context menu: share the selected memories, or stop sharing them."""
        menu = QtWidgets.QMenu(self.window)
        menu.setAttribute(Qt.WA_DeleteOnClose)  # (one made at each right click)
        menu.addMenu(self.menu)
        menu.addAction(self.stop)
        menu.popup(self.window.table.viewport().mapToGlobal(at))

    def share_selected(self, name: str) -> None:
        """Share the selected memories in the space `name` with one pass; one refused (a
        secret in it) is said and the others go. An unknown space, or one this device is
        not a member of: said, nothing changed."""
        chosen = [m for m in self.window.selected() if not m.deleted_at]
        if not chosen:
            self.window.statusBar().showMessage("Select the memories to share.", 4000)
            return
        ids = [m.id for m in chosen]
        titles = {m.id: m.display_title for m in chosen}

        def share(engine):
            out = engine.spaces.share_many(ids, name)  # (one pass for them all)
            return out["shared"], out["not_shared"]

        self.window._write(share, lambda out: self._said(f"Shared in “{name}”", out, titles))

    def stop_sharing(self) -> None:
        """Withdraw each selected memory from its space (its members drop it from their
        view; what they had stays theirs)."""
        chosen = self.window.selected()
        if not chosen:
            self.window.statusBar().showMessage("Select the memories to stop sharing.", 4000)
            return
        ids = [m.id for m in chosen]
        titles = {m.id: m.display_title for m in chosen}

        def unshare(engine):
            shared = engine.spaces.shared(ids)  # (those in no space: nothing to do)
            return _each([i for i in ids if i in shared], engine.spaces.unshare)

        self.window._write(unshare, lambda out: self._said("Stopped sharing", out, titles))

    def _said(self, what: str, out: tuple[list[str], list[tuple[str, str]]], titles) -> None:
        """One line: how many went, and the first refused with why."""
        done, refused = out
        if not done and not refused:
            self.window.statusBar().showMessage("None of them is in a space.", 6000)
            return
        line = f"{what}: {len(done)} {'memory' if len(done) == 1 else 'memories'}."
        if refused:
            memory_id, why = refused[0]
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            line += f" “{titles.get(memory_id, memory_id)}”: {why}{more}."
        if refused and not done:
            self.window._failed_write(line)
        else:
            self.window.statusBar().showMessage(line, 10_000)
