"""What "Remember clipboard" may store: text only, never what a password manager marked."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.memory import MAX_TEXT_CHARS
from app.gui.qt import QtCore, QtGui

# Formats password managers set so clipboard tools leave their data alone.
KDE_HINT = "x-kde-passwordManagerHint"
MAC_CONCEALED = ("org.nspasteboard.ConcealedType", "org.nspasteboard.TransientType")
WIN_EXCLUDE = "ExcludeClipboardContentFromMonitorProcessing"
WIN_HISTORY = "CanIncludeInClipboardHistory"


@dataclass(frozen=True)
class ClipboardText:
    """The clipboard's text, or why there is none to store."""

    text: str = ""
    refusal: str = ""


def _formats(mime: QtCore.QMimeData) -> dict[str, bytes]:
    out = {}
    for name in mime.formats():
        # Qt exposes some native formats as application/x-qt-windows-mime;value="NAME".
        short = name.split('value="', 1)[1].rstrip('"') if 'value="' in name else name
        out[short] = bytes(mime.data(name))
    return out


def html_text(html: str) -> str:
    """The text of an HTML copy with what plain text would lose: each link's address after
    its words ("the docs (https://…)", unless the words are the address), and list items
    as "- " lines."""
    doc = QtGui.QTextDocument()
    doc.setHtml(html)
    lines = []
    block = doc.begin()
    while block.isValid():
        parts, href, words = [], "", ""  # the link being read and its words so far
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            fragments += 1
            if not fragment.isValid():
                continue
            form = fragment.charFormat()
            here = form.anchorHref() if form.isAnchor() else ""
            if href and here != href:
                parts.append(_address(href, words))
            words = words + fragment.text() if here and here == href else fragment.text()
            href = here
            parts.append(fragment.text())
        if href:
            parts.append(_address(href, words))
        line = "".join(parts).replace("\u2028", "\n").replace("\xa0", " ")
        lines.append(("- " + line) if block.textList() is not None else line)
        block = block.next()
    return "\n".join(lines)


def _address(href: str, words: str) -> str:
    """ " (href)" after a link's words; nothing when they say it already or it points inside
    the page."""
    address = href.removeprefix("mailto:")
    if href.startswith("#") or address.rstrip("/") in words:
        return ""
    return f" ({address})"


def read(mime: QtCore.QMimeData | None, name: str = "clipboard") -> ClipboardText:
    """Classify the clipboard (or the primary selection: `name` "selection"): text to
    store, or a clear reason not to."""
    if mime is None:
        return ClipboardText(refusal=f"The {name} is empty.")
    formats = _formats(mime)
    if (
        formats.get(KDE_HINT, b"").strip() == b"secret"
        or any(f in formats for f in MAC_CONCEALED)
        or WIN_EXCLUDE in formats
        or (WIN_HISTORY in formats and formats[WIN_HISTORY][:4] == b"\0\0\0\0")
    ):
        return ClipboardText(refusal=f"Not stored: a password manager marked the {name} as secret.")
    if mime.hasUrls() and all(url.isLocalFile() for url in mime.urls()):
        # A file manager's copy also offers the paths as text: that is not a note.
        return ClipboardText(
            refusal=f"The {name} holds files; Mnemo stores text only (use "
            "Import in the manager for .md and .txt files)."
        )
    text = mime.text() if mime.hasText() else ""
    if not text.strip() and mime.hasHtml():
        text = html_text(mime.html())
    if not text.strip():
        if mime.hasImage():
            return ClipboardText(refusal=f"The {name} holds an image; Mnemo stores text only.")
        if mime.hasUrls():
            return ClipboardText(
                refusal=f"The {name} holds files; Mnemo stores text only "
                "(use Import in the manager for .md and .txt files)."
            )
        if formats:
            return ClipboardText(refusal=f"The {name} holds no text Mnemo can store.")
        return ClipboardText(refusal=f"The {name} is empty.")
    if len(text) > MAX_TEXT_CHARS:
        return ClipboardText(
            refusal=f"The {name} holds {len(text):,} characters; the limit "
            f"is {MAX_TEXT_CHARS:,}. Nothing was stored."
        )
    if "\x00" in text:
        return ClipboardText(refusal=f"The {name} holds binary data, not text.")
    return ClipboardText(text=text)
