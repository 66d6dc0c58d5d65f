"""Where a line of mixed-direction text puts its words, as Qt lays it out."""

from __future__ import annotations

from app.gui.qt import Qt, QtGui


def _inside_x(line: str, font) -> list[float]:
    """For each cursor position in `line`, its x as a left-to-right line (the way the popup
    row paints it) shows it. Positions inside a word are unambiguous; at the edge of a
    right-to-left run a position has two places."""
    layout = QtGui.QTextLayout(line, font)
    option = QtGui.QTextOption()
    option.setTextDirection(Qt.LeftToRight)
    layout.setTextOption(option)
    layout.beginLayout()
    layout.createLine().setLineWidth(10_000)
    layout.endLayout()
    return [layout.lineAt(0).cursorToX(i)[0] for i in range(len(line) + 1)]


def reading_order(line: str, fields: list[str], font=None, laid_out=None) -> list[str]:
    """`fields` (substrings of `line`) sorted by where they show, left to right, when
    `line` is painted as a left-to-right line in `font`, or as `laid_out` (a QTextLine of a
    document's block holding `line`) shows it."""
    if laid_out is None:
        x = _inside_x(line, font)
    else:
        x = [laid_out.cursorToX(i)[0] for i in range(len(line) + 1)]

    def where(field):  # the leftmost cursor position inside the field's first word
        start = line.index(field)
        return min(x[start + 1 : start + len(field.split()[0])])

    return sorted(fields, key=where)
