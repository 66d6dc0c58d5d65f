"""Presentation helpers shared by the CLI and the GUI: ages and query snippets."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from app.core import fts


def age(stamp: str | None, now: datetime | None = None) -> str:
    """'just now', '5 minutes ago', '3 days ago', ... for an ISO timestamp."""
    if not stamp:
        return "never"
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - then).total_seconds()
    for unit, size in (
        ("year", 31_536_000),
        ("month", 2_592_000),
        ("week", 604_800),
        ("day", 86_400),
        ("hour", 3_600),
        ("minute", 60),
    ):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def query_words(query: str) -> list[str]:
    """The searchable words of a query (no stop words), for highlighting."""
    return [w for phrase in fts.terms(query) for w in phrase if w not in fts.STOP_WORDS]


def snippet(text: str, query: str, width: int = 160) -> tuple[str, list[tuple[int, int]]]:
    """A one-line excerpt around the first matched word, and the (start, end) of each match."""
    flat = " ".join(text.split())
    words = query_words(query)
    pattern = (
        re.compile(
            r"\b(" + "|".join(re.escape(w[: max(4, len(w) - 2)]) for w in words) + r")\w*",
            re.IGNORECASE,
        )
        if words
        else None
    )
    start = 0
    if pattern and (first := pattern.search(flat)):
        start = max(0, first.start() - width // 4)
    excerpt = flat[start : start + width]
    if start > 0:
        excerpt = "…" + excerpt
    if start + width < len(flat):
        excerpt += "…"
    spans = [(m.start(), m.end()) for m in pattern.finditer(excerpt)] if pattern else []
    return excerpt, spans
