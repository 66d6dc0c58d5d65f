"""Turns any user string into a safe FTS5 expression: quoted phrases, OR-ed, no operators.

User text never reaches MATCH as typed. Each whitespace-separated chunk becomes one quoted
phrase made only of its word characters, so `E_CONN_RESET` or `config.yaml` match as the
identifiers they are, and `AND`, `NEAR`, `*`, `^`, `:` or quotes are plain words or nothing.
"""

from __future__ import annotations

import re

MAX_PHRASES = 32
MAX_WORDS_PER_PHRASE = 16
_WORD = re.compile(r"\w+", re.UNICODE)

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


def terms(text: str) -> list[list[str]]:
    """The query's phrases as lists of words, stop-word-only phrases dropped, de-duplicated."""
    phrases: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for chunk in text.split():
        words = [w.lower() for w in _WORD.findall(chunk)][:MAX_WORDS_PER_PHRASE]
        if not words or all(w in STOP_WORDS for w in words):
            continue
        key = tuple(words)
        if key not in seen:
            seen.add(key)
            phrases.append(words)
        if len(phrases) >= MAX_PHRASES:
            break
    return phrases


def build(text: str, prefix: bool = False) -> str | None:
    """The FTS5 MATCH expression for `text`, or None when nothing in it can be searched.

    With `prefix`, the last phrase also matches longer words (search as you type), unless the
    user has already typed a space after it.
    """
    phrases = terms(text)
    if not phrases:
        return None
    parts = ['"' + " ".join(words) + '"' for words in phrases]
    if prefix and text and not text[-1].isspace():
        last_words = [w.lower() for w in _WORD.findall(text.split()[-1])]
        if last_words and last_words[:MAX_WORDS_PER_PHRASE] == phrases[-1]:
            parts[-1] += " *"
    return " OR ".join(parts)
