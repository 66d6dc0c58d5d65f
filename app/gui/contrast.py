"""Quiet text that stays readable: hints, help lines and small facts in a colour between the
text's and the background's, as light as it can be while it keeps WCAG's 4.5:1 contrast
against the background (a disabled label's colour, used before, gave about 1.5:1)."""

from __future__ import annotations

from app.gui.qt import QtGui

READABLE = 4.5  # WCAG 2 AA for normal text


def _luminance(color: QtGui.QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return (
        0.2126 * channel(color.redF())
        + 0.7152 * channel(color.greenF())
        + 0.0722 * channel(color.blueF())
    )


def ratio(a: QtGui.QColor, b: QtGui.QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def quiet(text: QtGui.QColor, background: QtGui.QColor, wanted: float = READABLE) -> QtGui.QColor:
    """The colour furthest from `text` towards `background` that still reads at `wanted`."""
    best = QtGui.QColor(text)
    for step in range(1, 20):
        share = step / 20
        mixed = QtGui.QColor.fromRgbF(
            text.redF() + (background.redF() - text.redF()) * share,
            text.greenF() + (background.greenF() - text.greenF()) * share,
            text.blueF() + (background.blueF() - text.blueF()) * share,
        )
        if ratio(mixed, background) < wanted:
            break
        best = mixed
    return best


def make_quiet(label, background_role=QtGui.QPalette.Window) -> None:
    """Show a label's text in the quiet colour of its palette (light and dark themes)."""
    palette = label.palette()
    color = quiet(palette.color(QtGui.QPalette.WindowText), palette.color(background_role))
    for group in (QtGui.QPalette.Active, QtGui.QPalette.Inactive):
        palette.setColor(group, QtGui.QPalette.WindowText, color)
    label.setPalette(palette)
