"""Whether a new memory restates an older one with another value (issue 44).

"The staging database now listens on port 6543." after "The staging database listens on
port 5432." is not a near-duplicate to hold back nor a rival to keep beside it: it says the
value changed. No LLM: the two texts are aligned word by word (`difflib`) and every place
where they differ must be a *value* (a number, a version, a name, a yes/no word) put for
another, a negation added or taken away ("we don't use tabs"), or a word that only says
"now" ("now", "currently", "instead", "from now on"). Anything else that differs (another
noun: "staging" → "production", "database" → "cache"; words added) makes them two facts,
and nothing is proposed. Exactly one value (or negation) must change, and not in what the
sentence is about (its first two words, after "the", "our"…): "Server web-02 runs Ubuntu
22.04" beside "Server web-01 runs Ubuntu 22.04", "Tom works in Berlin" beside "Sarah works
in Berlin", "Staging uses Postgres 15" beside "Production uses Postgres 15" are about
another thing, not a new value (the price: "Bob owns billing" after "Alice owns billing" is
not proposed either). Whether it supersedes is then a person's call (the inbox's
`supersedes` proposal); this only finds the candidates.
"""

from __future__ import annotations

import difflib
import re
from datetime import datetime

# A word: letters and digits, with inner apostrophes, dots, colons, slashes, dashes, @ and
# + kept (don't, 20.12, 10.0.0.1:8080, v1.2.3-rc1, user@host)
_WORD = re.compile(r"\w+(?:['’.:/@+\-]\w+)*")
NEGATIONS = frozenset(
    "not no never don't dont doesn't doesnt isn't isnt aren't arent won't wont can't cannot "
    "shouldn't mustn't didn't wasn't weren't longer anymore".replace("’", "'").split()
)
YES_NO = frozenset(
    "yes no true false on off enabled disabled enable disable allowed forbidden required "
    "optional always never".split()
)
# words that say only that the value is new ("now listens", "is currently", "instead")
NOW_WORDS = frozenset("now currently actually instead still today nowadays".split())
# capitalised because they open a sentence, not because they name something
_NOT_NAMES = frozenset(
    "a an the this that these those it its we our us i my you your they their he she his "
    "her use prefer always never do don't please run make keep set put there here in on at "
    "for to of and or but if when our".split()
)
# words before what a sentence is about ("the Paris office", "our CI")
_OPENERS = frozenset("the a an our my your their his her its this that these those".split())
SUBJECT_WORDS = 2  # what a sentence is about: its first words after those
MOST_WORDS = 4  # of a place where the two differ (a longer change is more than a value)
MOST_PLACES = 3  # places where they differ
# words of the longer text compared at most: a fact whose value changes is a few sentences;
# aligning two 60,000-word texts took 0.4 s, on every `remember` beside each neighbour
MOST_COMPARED = 1_000


# phrases that, like a "now" word, only say the value is new ("From now on we deploy on
# Thursdays": the capture rule's own words)
_NOW_PHRASES = re.compile(
    r"\b(?:from now on|as of (?:now|today)|going forward|from today on|these days)\b",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    return _WORD.findall(_NOW_PHRASES.sub(" ", text.replace("’", "'")))


def _is_value(word: str) -> bool:
    """A number, a version, an address, a yes/no word, or a name (capitalised, not a word
    that opens sentences)."""
    low = word.lower()
    if any(c.isdigit() for c in word) or low in YES_NO:
        return True
    return word[:1].isupper() and low not in _NOT_NAMES


def _changes(old: list[str], new: list[str]) -> list[tuple[int, list[str], list[str]]] | None:
    """The places where two word lists differ (where in `old`, old words, new words), or
    None when they share too little to be one statement or are too long to compare (an
    edit says it; the near-duplicate question asks)."""
    if max(len(old), len(new)) > MOST_COMPARED:
        return None
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in old], b=[w.lower() for w in new])
    same = sum(block.size for block in matcher.get_matching_blocks())
    if same < 3 or same < 0.5 * max(len(old), len(new)):
        return None
    return [
        (i1, old[i1:i2], new[j1:j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _subject_end(old: list[str]) -> int:
    """Where what a sentence is about ends: its first SUBJECT_WORDS words after "the",
    "our"… (a value changed there names another thing: another server, person, office)."""
    start = 0
    while start < len(old) and old[start].lower() in _OPENERS | NOW_WORDS:
        start += 1
    return start + SUBJECT_WORDS


def _negation(before: list[str], after: list[str]) -> bool:
    """Whether a place only adds or takes away a negation ("use" → "don't use")."""
    rest = {w.lower() for w in before + after} - NOW_WORDS
    has = [bool({w.lower() for w in side} & NEGATIONS) for side in (before, after)]
    return bool(rest) and rest <= NEGATIONS and has[0] != has[1]


def _value_change(before: list[str], after: list[str]) -> bool | None:
    """True when one place says another value (or flips a negation), False when it only
    adds or drops a "now" word, None when it changes more than a value."""
    if len(before) > MOST_WORDS or len(after) > MOST_WORDS:
        return None
    lows = {w.lower() for w in before + after}
    if lows <= NOW_WORDS:
        return False
    if _negation(before, after):
        return True  # "we use tabs" → "we don't use tabs"
    core_before = [w for w in before if w.lower() not in NOW_WORDS]
    core_after = [w for w in after if w.lower() not in NOW_WORDS]
    if core_before and core_after and all(map(_is_value, core_before + core_after)):
        return True  # 5432 → 6543, Tuesdays → Thursdays, 18 → 20.12, Alice → Bob
    return None


def restates(new: str, old: str) -> bool:
    """Whether `new` says what `old` says with another value (a person decides whether it
    supersedes it)."""
    old_words = words(old)
    changes = _changes(old_words, words(new))
    if not changes or len(changes) > MOST_PLACES:
        return False
    subject = _subject_end(old_words)
    seen = []
    for at, before, after in changes:
        found = _value_change(before, after)
        if found and at < subject and not _negation(before, after):
            found = None  # another thing, not another value of it
        seen.append(found)
    return None not in seen and seen.count(True) == 1


def was(old: str, new: str) -> str:
    """The old values where `new` differs from `old` ("5432"; "not" for a negation taken
    away), for "was 5432 until 28 Nov"; empty when they do not align."""
    changes = _changes(words(old), words(new)) or []
    said = [
        " ".join(w for w in before if w.lower() not in NOW_WORDS | NEGATIONS)
        for _, before, _ in changes
    ]
    return ", ".join(s for s in said if s)


def change(old: str, new: str, until: str) -> dict:
    """What a memory that superseded `old` shows: {"was": the old values (or the old text,
    shortened, when they no longer align: it was edited since), "until": when}."""
    said = was(old, new) or f"“{old if len(old) <= 80 else old[:79] + '…'}”"
    return {"was": said, "until": until}


def described(changed: dict, now: datetime | None = None) -> str:
    """ "was 5432 until 28 Nov" (the year when it is not this one; the local day)."""
    try:
        at = datetime.fromisoformat(str(changed["until"]).replace("Z", "+00:00")).astimezone()
    except (KeyError, ValueError):
        return f"was {changed.get('was', '')}"
    year = "" if at.year == (now or datetime.now().astimezone()).year else f" {at.year}"
    return f"was {changed['was']} until {at.day} {at:%b}{year}"
