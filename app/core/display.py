"""Presentation helpers shared by the CLI and the GUI: ages, query snippets and lines of
fields that may mix writing directions."""

from __future__ import annotations

import difflib
import re
import unicodedata
from datetime import UTC, datetime

from app.core import origin
from app.core.storage import fts

_RIGHT_TO_LEFT = frozenset(("R", "AL"))
# Characters that change how the text around them shows without showing themselves: C1
# controls (U+0085 ends a line, U+009B starts a terminal escape on some terminals) and the
# explicit bidi embeddings, overrides and isolates ("gnp\u202eexe.png" shows as an .exe
# named "…exe.png"). Storing keeps them (they are the user's); showing makes them visible.
_HIDDEN = re.compile("[\u0080-\u009f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every hidden formatting character written out as <U+XXXX>."""
    return _HIDDEN.sub(lambda found: f"<U+{ord(found.group()):04X}>", text)


def isolated(text: str) -> str:
    """`text` (hidden formatting written out, `visible`) as one unit in its own writing
    direction (a Unicode first-strong isolate) when it holds right-to-left letters.
    Without it, two Hebrew tags side by side in a left-to-right line merge into one run
    and swap places with the separator."""
    text = visible(text)  # a field's own overrides could reorder the line around it
    if any(unicodedata.bidirectional(c) in _RIGHT_TO_LEFT for c in text):
        return f"\u2068{text}\u2069"
    return text


def fields_line(fields, sep: str = "  ·  ") -> str:
    """Non-empty `fields` joined on one line that reads in their order, whatever script
    each is written in."""
    return sep.join(isolated(f) for f in fields if f)


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


def written_by(origins: list[origin.Origin], now: datetime | None = None) -> str:
    """What a memory shown to an agent says of who wrote it when a person did not write or
    accept its words (`origin.marked`): 'written by codex, 3 days ago', 'captured from
    claude-code without review, 2 days ago'; '' for a person's, a file's, a device's."""
    one = origin.marked(origins)
    if one is None:
        return ""
    name = visible(one.name) or "an agent (name unknown)"
    if one.kind == origin.CAPTURE:
        text = f"captured from {name} without review"
    else:
        text = f"written by {name}"
    if one.device:
        text += f" on {visible(one.device)}"
    if one.at:
        text += f", {age(one.at, now)}"
    others = {o.name for o in origins if origin.marked([o]) is not None} - {one.name}
    return text + (f" (and {len(others)} more agent{'s' * (len(others) > 1)})" if others else "")


def query_words(query: str) -> list[str]:
    """The searchable words of a query (no stop words), for highlighting."""
    return [w for phrase in fts.terms(query) for w in phrase if w not in fts.STOP_WORDS]


def _match_pattern(query: str) -> re.Pattern | None:
    """The words a query matches (a word by its stem-ish prefix), or None for no words."""
    words = query_words(query)
    if not words:
        return None
    # a word starts where no word character (a letter, a digit, an emoji) is before it; one
    # with a digit stands whole (3 is not the start of 38, 100s not of 1000), another is
    # found by its stem's forms. (The character class once per group: it is large, and
    # once per word made a 500-word query's pattern take 0.6 s to build.)
    char = fts.WORD_CHAR
    whole = "|".join(re.escape(w) for w in words if any(c.isdigit() for c in w))
    stems = "|".join(re.escape(_stem(w)) for w in words if not any(c.isdigit() for c in w))
    parts = ([rf"(?:{whole})(?!{char})"] if whole else []) + (
        [rf"(?:{stems}){char}*"] if stems else []
    )
    return re.compile(rf"(?<!{char})(?:" + "|".join(parts) + ")", re.IGNORECASE)


def _stem(word: str) -> str:
    """The start every form of `word` shares, roughly as the keyword index's Porter stemmer
    sees it: 'restarting' and 'restarts' → 'restart', 'pods' → 'pod', 'probe' → 'prob'."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s", "e", "y"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """The (start, end) of every word of `text` the query matches, for highlighting."""
    pattern = _match_pattern(query)
    return [(m.start(), m.end()) for m in pattern.finditer(text)] if pattern else []


def snippet(text: str, query: str, width: int = 160) -> tuple[str, list[tuple[int, int]]]:
    """A one-line excerpt around the first matched word, and the (start, end) of each match."""
    flat = " ".join(text.split())
    pattern = _match_pattern(query)
    start = 0
    if pattern and (first := pattern.search(flat)) and first.end() > width * 2 // 3:
        start = max(0, first.start() - width // 4)  # a match far in: show the text around it
        if start > 0 and flat[start - 1] != " ":  # begin at a word, not inside one
            space = flat.find(" ", start, first.start())
            start = space + 1 if space >= 0 else first.start()
    end = start + width
    if end < len(flat) and flat[end] != " ":  # end after a word, not inside one
        space = flat.rfind(" ", start + width // 2, end)
        end = space if space >= 0 else end
    excerpt = flat[start:end].rstrip()
    if start > 0:
        excerpt = "…" + excerpt
    if end < len(flat):
        excerpt += "…"
    spans = [(m.start(), m.end()) for m in pattern.finditer(excerpt)] if pattern else []
    return excerpt, spans


def word_changes(old: str, new: str, most: int = 4, width: int = 60) -> list[str]:
    """What changed from `old` to `new`, word by word, for a glance at a version: each
    change as `“was” → “now”`, `+ “added”` or `− “removed”` (at most `most` of them, each
    cut to `width` characters; a last line says how many more)."""
    before, after = old.split(), new.split()

    def cut(words: list[str]) -> str:
        text = visible(" ".join(words))
        return text if len(text) <= width else text[: width - 1] + "…"

    found = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace":
            found.append(f"“{cut(before[i1:i2])}” → “{cut(after[j1:j2])}”")
        elif tag == "delete":
            found.append(f"− “{cut(before[i1:i2])}”")
        elif tag == "insert":
            found.append(f"+ “{cut(after[j1:j2])}”")
    if len(found) > most:
        found = found[:most] + [f"… and {len(found) - most} more changes"]
    return found
