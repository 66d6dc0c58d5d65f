"""A QR code of a short text (a device id, an invitation) as a Qt image, drawn from the
modules segno computes (pure Python, no file written): for a phone or a webcam to read off
the screen instead of typing 44 or 900 characters (Settings → Spaces, issue 45)."""

from __future__ import annotations

import segno

from app.gui.qt import Qt, QtGui

BORDER = 4  # the quiet zone the QR standard asks for, in modules


def modules(text: str) -> list[list[bool]]:
    """The QR code of `text`, quiet zone included: each row's modules, True where dark."""
    code = segno.make(text, micro=False)  # (error correction raised while the size allows)
    return [[bool(m) for m in row] for row in code.matrix_iter(scale=1, border=BORDER)]


def qr_image(text: str, scale: int = 4) -> QtGui.QImage:
    """The QR code of `text`, black on white, `scale` pixels per module (a square image)."""
    rows = modules(text)
    side = len(rows) * scale
    image = QtGui.QImage(side, side, QtGui.QImage.Format_RGB32)
    image.fill(Qt.white)
    painter = QtGui.QPainter(image)
    try:
        for y, row in enumerate(rows):
            for x, dark in enumerate(row):
                if dark:
                    painter.fillRect(x * scale, y * scale, scale, scale, Qt.black)
    finally:
        painter.end()
    return image


def qr_pixmap(text: str, scale: int = 4) -> QtGui.QPixmap:
    """`qr_image` as a pixmap, for a label (GUI thread)."""
    return QtGui.QPixmap.fromImage(qr_image(text, scale))
