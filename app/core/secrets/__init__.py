"""Finds secrets in text so Mnemo never stores them: keys, tokens, passwords in URLs.

Used by every way in (CLI, MCP, clipboard): the caller either refuses the text or stores
`redact(text)`, where each secret is replaced by `[REDACTED:kind]`.

All rules are data in `rules.py`: `RULES` (kind, check, keywords, regex), the words of the
generic `name = value` rule, and the placeholder and documented example values that are
never secrets. Documented vendor examples (AWS's `AKIAIOSFODNN7EXAMPLE`, Stripe's doc keys,
jwt.io's sample) are benign: they are public and unusable, and people paste docs.
The corpus that measures these rules is in tests/core/data/secrets/.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from urllib.parse import unquote

from app.core.secrets import bip39
from app.core.secrets.prose import literals, postcode, spoken, trivial_pin
from app.core.secrets.rules import (
    ASSIGNMENT,
    DEFINE,
    EXAMPLES,
    NAME_VALUE,
    NOT_SECRET_SUFFIXES,
    PASSWORD_WORDS,
    PLACEHOLDER_PART,
    PLACEHOLDER_WORDS,
    PUBLIC_PREFIXES,
    PUBLIC_WORDS,
    RULES,
    SECRET_PAIRS,
    SECRET_WORDS,
    SHORT_WORDS,
    SPACED,
    TERRAFORM,
    TYPED,
    VALUE,
    VOWELS,
    XML_ELEMENT,
    XML_SETTING,
)

_RUN = re.compile(r"x{4,}|X{4,}|\*{3,}|0{8,}|#{3,}")
_CALL = re.compile(r"[A-Za-z_][\w.]*\s*[(\[]")  # at the start: `models.CharField(`
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+|[A-Z_]+")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_CHUNK = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_HEX = re.compile(
    r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[0-9a-f]{16,}|[0-9A-F]{16,}"
)
_QUERY_NEXT = re.compile(r"&\w+=")
_CONSONANTS = re.compile(r"[^aeiouyAEIOUY]{5}")


@dataclass(frozen=True)
class Finding:
    """One secret: what kind, and where in the text."""

    kind: str
    start: int
    end: int


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


def _example(value: str) -> bool:
    """A documented example or an obvious stand-in (`AKIAXXXXXXXXXXXXXXXX`, `sk-...`)."""
    return (
        value in EXAMPLES
        or "EXAMPLE" in value
        or _RUN.search(value) is not None
        or any(p in value for p in ("...", "…", "<", ">"))
    )


def _placeholder(value: str) -> bool:
    """A documented example, a template or a stand-in such as `xxxx`, `<token>`, `changeme`."""
    low = value.lower()
    return (
        _example(value)
        or low.strip("_-.").rstrip("0123456789!") in PLACEHOLDER_WORDS
        or PLACEHOLDER_PART.search(value) is not None
        or value.startswith(("$", "[", "%", "@", "#"))
        or value.startswith(PUBLIC_PREFIXES)
    )


def _code(value: str) -> bool:
    """A reference in code, not a literal: `settings.API_KEY`, `env("X")`, `TEMPLATE_NAME`
    (`INrh9j4c5.pYgaI` is dotted too, but its parts are random, and `Cobalt.Maple65` is
    capitalised words and a number: passwords)."""
    return (
        value.startswith(("(", "[", "{", "$", "%", "<", "@", "&", "*"))
        or _CALL.match(value) is not None
        or (
            _DOTTED.fullmatch(value) is not None
            and not any(_random(p, 8) for p in re.split(r"\.|::|->", value))
            and _CHOSEN_DOTTED.fullmatch(value) is None
        )
    )


_CHOSEN_DOTTED = re.compile(r"(?:[A-Z][a-z]+\.)+[A-Z][a-z]+\d+")


def _chunks(value: str) -> list[str]:
    return [c for part in _SEPARATORS.split(value) for c in _CHUNK.findall(part)]


def _wordlike(value: str) -> bool:
    """Made of words (`accounts.User`, `dev-secret-change-me`), not random characters."""
    chunks = _chunks(value)
    if not chunks or not all(c.isalpha() and len(c) <= 20 for c in chunks):
        return False
    words = [c for c in chunks if len(c) >= 3 and not VOWELS.isdisjoint(c)]
    # short chunks without a vowel pass as abbreviations (`db`, `js`) if words dominate
    short = [c for c in chunks if c not in words]
    return bool(words) and len(short) <= len(words) and all(2 <= len(c) <= 3 for c in short)


def _identifier(value: str) -> bool:
    """Code rather than a key: `sodium_crypto_box_keygen`, `Ed25519PrivateKey`, `self.db.x`.

    Mostly words and numbers, structured by separators or CamelCase. About 0.5 % of random
    16-character keys (and more of upper-case-only ones) pass too: only weak contexts use it.
    """
    if _DOTTED.fullmatch(value):
        return True
    if re.fullmatch(r"[0-9a-fA-F_.-]+", value):
        return False
    if not any(c.islower() for c in value):  # CONSTANT_NAMES: words between separators
        parts = [p for p in re.split(r"[_.-]+", value) if p]
        short = [p for p in parts if p.isdigit() or (p.isalpha() and len(p) <= 3)]
        words = [p for p in parts if p not in short and _word(p)]
        return len(words) >= 2 and len(words) + len(short) == len(parts)
    chunks = _chunks(value)
    words = [c for c in chunks if _word(c)]
    numbers = [c for c in chunks if c.isdigit() and len(c) >= 2]
    structured = bool(re.search(r"[_.-]", value)) or sum(w[0].isupper() for w in words) >= 2
    alnum = sum(c.isalnum() for c in value)
    return len(words) >= 2 and structured and sum(map(len, words + numbers)) >= 0.7 * alnum


def _word(chunk: str) -> bool:
    """A pronounceable word of 4 to 16 letters, or a common short one (`key`, `url`)."""
    if chunk.lower() in SHORT_WORDS:
        return True
    return (
        chunk.isalpha()
        and 4 <= len(chunk) <= 16
        and not VOWELS.isdisjoint(chunk)
        and _CONSONANTS.search(chunk) is None
    )


def _hexish(value: str) -> bool:
    """A hash or an id with words around it (`node-modules-3f9a…`), typical of benign text."""
    rest = _HEX.sub("", value)
    return rest != value and (not rest.strip("-_.:/") or _wordlike(rest))


_FILE = re.compile(r"[\w-]+\.[A-Za-z0-9]{1,5}")


def _path(value: str) -> bool:
    """A path of words, numbers and file names (`uploads/2026/11/28/3f9a-report.pdf`, an S3
    object's key), not base64 (whose slashes cut random runs)."""
    parts = [p for p in value.split("/") if p]
    plain = [p for p in parts if p.isdigit() or _wordlike(p) or _FILE.fullmatch(p)]
    return len(plain) >= 2 and 2 * len(plain) >= len(parts)


def _random(value: str, min_len: int = 16, hex_ok: bool = False) -> bool:
    """Looks like a generated key: long, varied, not words, not a hash (unless `hex_ok`)."""
    if len(value) < min_len or " " in value or _placeholder(value) or _wordlike(value):
        return False
    if value.count("/") >= 2 and _path(value):
        return False
    if _hexish(value) and not hex_ok:
        return False
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    digit = any(c.isdigit() for c in value)
    # random text of n characters over k symbols has about log2(min(n, k)) bits per character
    symbols = 16 if _HEX.fullmatch(value) or value.isdigit() else 62
    floor = min(3.3, 0.75 * math.log2(min(len(value), symbols)))
    return (digit or (upper and lower)) and (upper or lower) and entropy(value) >= floor


def _password(value: str) -> bool:
    """Looks like a chosen password: letters with digits or symbols, not a word or a template."""
    if value[:1] in "*&@%#$!^" and _symbol_first(value):
        return True
    if not 4 <= len(value) <= 4096 or _placeholder(value) or _code(value) or _costly(value):
        return False
    if value.startswith(("/", "~", "./")) or "://" in value:  # a path or a link
        return False
    if " " in value:  # a quoted passphrase: digits in it, or four plain words
        return len(value) >= 8 and (any(c.isdigit() for c in value) or _words(value))
    letters = any(c.isascii() and c.isalpha() for c in value)
    if value.isascii() and value.isalpha():  # only letters: random mixed case, not words
        words = sum(len(c) for c in _chunks(value) if _word(c))
        return (
            len(value) >= 10
            and not value.islower()
            and not value.isupper()
            and (words < len(value) / 2)
        )
    if _wordlike(value) and (_JOINER.search(value) is None or "/" in value or ":" in value):
        return False  # (words joined by `@`, `&`, `#`… were chosen: `Feijoada@Sabado`)
    return len(value) >= 6 and letters


_JOINER = re.compile(r"[A-Za-z][!#$%&*+?@^~][A-Za-z]")
_CRYPT = re.compile(r"\$\w{1,10}\$")  # `$6$…`, `$2y$05$…`: a password hash's head
_NAME = re.compile(r"[A-Za-z_][\w.]*")  # `$DB_PASSWORD`, `@alice`, `#general`: names


def _symbol_first(value: str) -> bool:
    """A generated password that starts with a symbol (`*Xfis4Nkk_767=`, `@cz8TM$RMT_rlv`,
    `%KYMF_Wp-tX9`), not a template or a variable (`${X}`, `$DB_PASS`, `%(pw)s`, `@{x}`), a
    mention or a channel (`@alice`, `#general`), nor a password hash (`$6$…`)."""
    rest = value[1:]
    if len(value) < 10 or " " in value or any(c in value for c in "{}()[]<>"):
        return False
    if _NAME.fullmatch(rest) and not _random(rest, 10) or _CRYPT.match(value) or _placeholder(rest):
        return False
    kinds = sum(
        (
            any(c.islower() for c in rest),
            any(c.isupper() for c in rest),
            any(c.isdigit() for c in rest),
            any(not c.isalnum() for c in rest),
        )
    )
    return kinds >= 3 and any(c.isdigit() for c in rest) and _password(rest)


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SYMBOL = re.compile(r"[^\w\s.'-]")
_HOST = re.compile(r"(?:[\w-]+\.)+[a-z]{2,}")
_CODE_ID = re.compile(r"[A-Z0-9]+(?:-[A-Z0-9]+)+")  # a product, ticket or course code: AB-1234-X
_REGEX = re.compile(r"\.[*+]|\\[dwsDWS]|\[\w-\w\]|\(\?[=!:<]|\{\d+,\d*\}")


def _said(value: str) -> bool:
    """A password said in a sentence: chosen-looking, with a digit or a symbol (`e-Devlet` and
    `Wi-Fi` are words) unless random mixed case; no e-mail address, host name, regular
    expression or code in capitals and dashes (`AB-1234-X`)."""
    if not _password(value) or _EMAIL.fullmatch(value) or value.lower() == "1password":
        return False  # (a password manager's name: "stored in 1Password")
    if _HOST.fullmatch(value) or _CODE_ID.fullmatch(value) or len(_REGEX.findall(value)) >= 2:
        return False
    digit = any(c.isdigit() for c in value)
    return (value.isascii() and value.isalpha()) or digit or _SYMBOL.search(value) is not None


def _opaque(value: str) -> bool:
    """Long letters and digits that are not words: a generated password in a URL."""
    return (
        len(value) >= 12
        and value.isalnum()
        and not _placeholder(value)
        and not (_code(value) or _wordlike(value))
    )


def _basic(value: str) -> bool:
    if _example(value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, _, password = decoded.partition(":")
    return bool(user) and bool(password) and decoded.isprintable() and not _placeholder(password)


def _costly(value: str) -> bool:
    """A password hash made to be slow: bcrypt at cost 10 or more (OWASP's floor, about 100 ms
    a guess), argon2, scrypt, PBKDF2 at 100,000 rounds or more. As safe to show as the docs
    and fixtures that show one; md5crypt, SHA-crypt and a cheap bcrypt (`$2y$05$`) are
    cracked offline: secrets."""
    if _SLOW_HASH.match(value):
        return True
    cost = _BCRYPT_COST.match(value)
    rounds = _PBKDF2_ROUNDS.match(value)
    return (cost is not None and int(cost.group(1)) >= 10) or (
        rounds is not None and int(rounds.group(1)) >= 100_000
    )


_SLOW_HASH = re.compile(r"(?:argon2\$)?\$?argon2(?:id|i|d)\$|\$scrypt\$|scrypt:\d+:\d+:\d+\$")
_BCRYPT_COST = re.compile(r"(?:bcrypt(?:_sha256)?\$)?\$2[abxy]\$(\d\d)\$")
_PBKDF2_ROUNDS = re.compile(r"pbkdf2_sha(?:256|512|1)\$(\d+)\$")


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# Words no passphrase or seed phrase is made of, but every sentence about one has
_STOP = frozenset(
    "the a an and or of to in on at for with is are was were be been it its this that these "
    "those by from as not no you your we our i my me they them he she his her but if then than "
    "so do does did use used must should can could will would may might at least every each "
    "more most less than into over under about after before when where which who what how "
    "why there here have has had get set one two three four five six seven eight nine ten see "
    "siehe voir ver vedi zie "
    "words word characters letters digits random long".split()
)


def _wif(value: str) -> bool:
    """A Bitcoin private key in wallet import format: base58 with its checksum."""
    number = 0
    for char in value:
        number = number * 58 + _BASE58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    body, checksum = raw[:-4], raw[-4:]
    digest = hashlib.sha256(hashlib.sha256(body).digest()).digest()
    return digest[:4] == checksum and body[:1] in (b"\x80", b"\xef")


def _words(value: str) -> bool:
    """A passphrase or seed phrase of plain words: four or more, none a function word."""
    words = re.split(r"[ \n\t.)\d-]+", value.lower())
    words = [w for w in words if w]
    return len(words) >= 4 and not any(w in _STOP for w in words) and len(set(words)) >= 3


_CHECKS = {
    "": lambda v: not _placeholder(v),
    "wif": _wif,
    "long": lambda v: len(v) >= 32 and " " not in v,  # WordPress's stand-in has spaces
    "shape": lambda v: not _example(v),  # the shape says it all, whatever it starts with
    # after "the password is", in a URL or a .pgpass line: a leading & or * is part of it
    "spoken password": lambda v: _password(v) or (len(v) >= 8 and _password(v.lstrip("&*@"))),
    "wif or said": lambda v: _wif(v) or not _example(v),  # "WIF:" said beside it
    "words": _words,
    "community": lambda v: v.lower() not in ("public", "private") and _password(v),
    "random": _random,
    "mixed case": lambda v: not _example(v) and not v.islower() and not v.isupper(),
    "random or hex": lambda v: _random(v, hex_ok=True) and not _identifier(v),
    "bare random": lambda v: _random(v) and not _identifier(v),
    "quoted random": lambda v: _random(v) and not _identifier(v),  # and `_named` below
    "password": _password,
    "pin": lambda v: not trivial_pin(v),
    "pem": lambda v: re.search(r"[A-Za-z0-9+/]{40}", v) is not None,  # a body, not a header
    "url password": lambda v: (
        _password(unquote(v)) or _opaque(v) or (len(v) >= 8 and _password(unquote(v).lstrip("*&")))
    ),
    "basic": _basic,
    "crackable": lambda v: not _example(v) and not _costly(v),
}


@cache
def _rule(index: int) -> tuple[str, Callable[[str], bool], re.Pattern, bool]:
    """A rule (kind, check, pattern, whether a quoted value's name decides), compiled the first
    time a text wakes it: a command that scans nothing, or a note that wakes a few rules, does
    not pay for the rest (all of them take about 50 ms)."""
    kind, check, _, rx = RULES[index]
    return kind, _CHECKS[check], re.compile(rx), check == "quoted random"


_ENCODED_HINTS = ("auth", "base64", "b64", "cred", "secret", "passw", "token", "login", "docker")
# What the name of a `name = value` must hold for `_secret_name` to find a secret in it (every
# word of PASSWORD_WORDS and SECRET_WORDS, `key`, `secret`): a text without one has no such name
_NAMES = "|".join(sorted({*PASSWORD_WORDS, *SECRET_WORDS, "key", "secret"}))
# The parts read only when a text holds some of their keywords (`a|b & c`: a or b, and c), as
# for a rule; `spoken` when the text holds how one of prose's words starts
_PARTS = {
    ASSIGNMENT: f":|= & {_NAMES}",
    TYPED: f": & = & {_NAMES}",
    SPACED: _NAMES,
    XML_ELEMENT: f"</ & {_NAMES}",
    XML_SETTING: "key & value",
    DEFINE: "define",
    NAME_VALUE: "name & value",
    TERRAFORM: "variable & default",
    "encoded": "|".join(_ENCODED_HINTS),
    "sealed": "sealedsecret|encrypteddata",
}


def _trie(words: list[str]) -> str:
    """A pattern matching the longest of `words` that starts where it is tried: one step a
    letter (`re` tries one alternative a first letter, not every word in turn)."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        steps = [re.escape(c) + pattern(n) for c, n in sorted(node.items()) if c]
        if not steps:
            return ""
        either = steps[0] if len(steps) == 1 else f"(?:{'|'.join(steps)})"
        return f"(?:{either})?" if "" in node else either

    return pattern(tree)


@dataclass(frozen=True)
class _Plan:
    """Which rules and parts a text wakes: its keywords are found in one pass (`search`); each
    keyword found wakes what has it in its first group (`wakes`), if its other groups are met."""

    search: re.Pattern  # the longest keyword at each place, place after place (no overlaps)
    beyond: re.Pattern  # the same for the keywords beyond ASCII, read in a text that has some
    inside: dict[str, frozenset[str]]  # the keywords in a keyword found
    across: dict[str, tuple[str, ...]]  # those that may start in it and end after it
    wakes: dict[str, tuple]
    rest: dict[object, tuple[frozenset[str], ...]]
    always: tuple


@cache
def _plan() -> _Plan:
    """Rules and parts by keyword: a text is searched once for every keyword (a trie, in
    about 20 µs for a note of 250 characters; a test of each of 500 keywords took 90)."""
    specs: dict = {i: keywords for i, (_, _, keywords, _) in enumerate(RULES)}
    specs |= _PARTS
    specs["prose"] = "|".join(literals())
    wakes: dict[str, list] = {}
    rest, always, keywords = {}, [], set()
    for part, spec in specs.items():
        groups = [frozenset(g.split("|")) for g in spec.split(" & ")] if spec else []
        if not groups:
            always.append(part)
            continue
        assert all(all(g) for g in groups), part  # ("" is in every text)
        keywords.update(*groups)
        for keyword in groups[0]:
            wakes.setdefault(keyword, []).append(part)
        if len(groups) > 1:
            rest[part] = tuple(groups[1:])
    # A keyword found hides those that start in it: they are in it, or they start with its end
    # (`sk-` found, `-pass` after it: `sk-pass`), and are looked for then
    inside = {
        w: frozenset(w[i:j] for i in range(len(w)) for j in range(i + 1, len(w) + 1)) & keywords
        for w in keywords
    }
    starting: dict[str, set[str]] = {}
    for k in keywords:
        for n in range(1, len(k)):
            starting.setdefault(k[:n], set()).add(k)
    across = {
        w: tuple(
            sorted(set().union(*(starting.get(w[i:], ()) for i in range(1, len(w)))) - inside[w])
        )
        for w in keywords
    }
    # (apart: `re` tries each first letter in turn, and those beyond ASCII doubled the time)
    return _Plan(
        re.compile(_trie(sorted(k for k in keywords if k.isascii()))),
        re.compile(_trie(sorted(k for k in keywords if not k.isascii()))),
        inside,
        across,
        {k: tuple(v) for k, v in wakes.items()},
        rest,
        tuple(always),
    )


def _woken(low: str) -> tuple[list[int], set]:
    """The rules (in order) and the parts a lower-cased text wakes."""
    plan = _plan()
    found: set[str] = set()
    matches = plan.search.findall(low)
    if not low.isascii():
        matches += plan.beyond.findall(low)
    for match in set(matches):
        found |= plan.inside[match]
        found.update(k for k in plan.across[match] if k in low)
    woken = set(plan.always)
    for keyword in found:
        woken.update(plan.wakes.get(keyword, ()))
    woken = {p for p in woken if all(not g.isdisjoint(found) for g in plan.rest.get(p, ()))}
    rules = sorted(p for p in woken if isinstance(p, int))
    return rules, woken


# The name a quoted value is given just before it: `"VersionId": "…"`, `prefs['x'] = '…'`
_NAMED = re.compile(r"[\"']?(?P<name>[A-Za-z_][\w.\-]{0,60})[\"']?\]?\s*(?::|=|=>)\s*$")


def _named_plainly(text: str, start: int) -> bool:
    """Whether a quoted value (`start` inside its quotes) is given a name that says it is
    no secret (`"VersionId": "…"`, `localStorage['prefs'] = '…'`): that name's rule decides."""
    m = _NAMED.search(text, max(0, start - 81), start - 1)
    return m is not None and _secret_name(m.group("name").rsplit(".", 1)[-1]) is None


# A redaction marker is never a secret, so a redacted text scans clean. It is read as a stand-in
# (`xxxx`), not as blanks: `password=[REDACTED:password]` has its value, and the line after it
# (`host=127.0.0.1`) is not taken for one. A title made from a text never cuts one in two.
MARKER = re.compile(r"\[REDACTED:[^\]\n]{1,60}\]")


def _span(m: re.Match) -> tuple[int, int]:
    for group in ("s", "q1", "q2", "u"):
        if group in m.re.groupindex and m.group(group) is not None:
            start, end = m.span(group)
            if group == "u":  # a bare value ends before trailing punctuation
                end -= len(m.group(group)) - len(m.group(group).rstrip(".,;)"))
            return start, end
    return m.span()


@lru_cache(maxsize=1024)
def _secret_name(name: str) -> str | None:
    """The kind of secret a variable or key name holds, or None."""
    words = [w.lower() for w in _chunks(name)]
    if not words or words[-1] in NOT_SECRET_SUFFIXES or not PUBLIC_WORDS.isdisjoint(words):
        return None
    if any(w in PASSWORD_WORDS or "password" in w or "passwd" in w for w in words):
        return "password"
    for w in words:
        for word, kind in SECRET_WORDS.items():
            if w.endswith(word):  # also PGTOKEN, authtoken, clientsecret
                return kind
    for a, b in zip(words, words[1:], strict=False):
        if a in SECRET_PAIRS and b in ("key", "secret"):
            return "API key" if b == "key" else "secret"
    if words[-1] == "key":
        return "key"  # FERNET_KEY, HMAC_KEY: a secret only if the value looks random
    return None


def _assignments(text: str, woken: set) -> list[Finding]:
    """Values given a secret's name: `name = value`, `<name>value</name>`, `name  value`…
    (each shape only in a text with its keywords: `woken`)."""
    found = []
    patterns = (ASSIGNMENT, XML_SETTING, DEFINE, XML_ELEMENT, SPACED, NAME_VALUE, TYPED, TERRAFORM)
    for pattern in patterns:
        if pattern not in woken:
            continue
        at = 0
        while (head := pattern.search(text, at)) is not None:
            # The value of a match that is no secret may hold one: "notes: TOKEN=…"
            kind = _secret_name(head.group("name").rsplit(".", 1)[-1])
            m = (
                None
                if kind is None
                else VALUE.match(text, head.end())
                if pattern is ASSIGNMENT
                else head
            )
            if m is None:
                at = head.end() if pattern is ASSIGNMENT else _span(head)[0]
                at = max(at, head.start() + 1)
                continue
            start, end = _span(m)
            value = text[start:end]
            if m.group("u") is not None:  # a URL query goes on after `&`: password=x&ssl=true
                value = _QUERY_NEXT.split(value)[0]
                end = start + len(value)
            if kind == "password":
                ok = _password(value)
            elif kind == "key":  # a bare *_KEY may hold a hash or a public key: be stricter
                ok = _random(value, 24) and not value.startswith(("ssh-", "MII", "AAAA"))
            else:
                ok = _random(value, 12, hex_ok=True)
            if kind != "password" and m.group("u") is not None and _identifier(value):
                ok = False  # `private_key: PKCS7PrivateKeyTypes`, a type or a name in code
            if ok and not (m.group("u") is not None and _code(value)):
                found.append(Finding(kind, start, end))
                at = max(end, head.start() + 1)
            elif end - start > 256:  # a long run that is no secret: past it, not through it
                at = max(end, head.start() + 1)  # (each `=` in it would read it again)
            else:
                at = max(start, head.start() + 1)
    return found


_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/]{16,4096}={0,2}(?![A-Za-z0-9+/=_-])")
_USER_PASSWORD = re.compile(r"[\w.@+-]{1,64}:(?P<p>[^\s:]{3,200})")


def _encoded(text: str) -> list[Finding]:
    """Base64 that hides a secret: `user:password` (a Docker `auth`, npm's `_auth`, a Basic
    header kept aside) or text the rules find a secret in (a Kubernetes secret's value)."""
    found = []
    for m in _BASE64.finditer(text):
        value = m.group()
        if len(value) % 4 or _example(value):
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if not decoded.replace("\n", "").replace("\r", "").replace("\t", "").isprintable():
            continue  # (a whole file encoded, a Kubernetes secret's .env, has lines)
        pair = _USER_PASSWORD.fullmatch(decoded)
        if pair and _password(pair.group("p")) or scan(decoded, _depth=1):
            found.append(Finding("encoded credentials", m.start(), m.end()))
    return found


def _sealed(value: str) -> bool:
    """A Bitnami SealedSecret's ciphertext (`Ag…`, long base64)."""
    return value.startswith("Ag") and len(value) > 100 and _BASE64.fullmatch(value) is not None


def scan(text: str, _depth: int = 0) -> list[Finding]:
    """Every secret found, in order, without overlaps."""
    if "[REDACTED:" in text:
        text = MARKER.sub(lambda m: "x" * len(m.group()), text)
    low = text.replace("İ", "I").lower()  # (as long as the text: `İ` is two letters lower)
    woken_rules, woken = _woken(low)
    found: list[Finding] = []
    for index in woken_rules:
        kind, check, pattern, named = _rule(index)
        for m in pattern.finditer(text):
            start, end = _span(m)
            if start < end and check(text[start:end]):
                if named and _named_plainly(text, start):
                    continue
                if kind == "PIN" and postcode(text, m.start(), start, end):
                    continue  # ("PIN code 560001, Bengaluru")
                found.append(Finding(kind, start, end))
    found += _assignments(text, woken)
    if "prose" in woken:
        found += [Finding(kind, start, end) for kind, start, end in spoken(text, _said)]
    found += [Finding("seed phrase", start, end) for start, end in bip39.phrases(text)]
    # encrypted for one cluster's controller: safe to share (`encryptedData:` is a SealedSecret's
    # spec, also when the manifest is pasted without its kind)
    if "sealed" in woken:
        found = [f for f in found if not _sealed(text[f.start : f.end])]
    if _depth == 0 and "encoded" in woken:
        found += _encoded(text)
    # A secret runs to the end of its token, whatever length a rule's pattern stops at
    # (`AWS_SESSION_TOKEN=` and 313 characters: 113 of them were left in the text)
    found = [Finding(f.kind, f.start, _token_end(text, f.end)) for f in found]
    found.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for f in found:
        if merged and f.start < merged[-1].end:
            if f.end > merged[-1].end:  # overlapping spans: one redaction covers both
                merged[-1] = Finding(merged[-1].kind, merged[-1].start, f.end)
            continue
        merged.append(f)
    return merged


_TOKEN_CHAR = re.compile(r"[A-Za-z0-9+/=_\-.~%]")


def _token_end(text: str, end: int) -> int:
    """`end`, moved past the token characters (letters, digits, `+/=_-.~%`) that follow it
    without a break, a sentence's final full stop left out."""
    if 0 < end < len(text) and _TOKEN_CHAR.match(text[end - 1]):
        moved = end
        while moved < len(text) and _TOKEN_CHAR.match(text[moved]):
            moved += 1
        while moved > end and text[moved - 1] in ".-":
            moved -= 1
        return moved
    return end


def redact(text: str, findings: list[Finding] | None = None) -> str:
    """The text with every secret replaced by `[REDACTED:kind]`."""
    findings = scan(text) if findings is None else findings
    out, last = [], 0
    for f in findings:
        out += [text[last : f.start], f"[REDACTED:{f.kind}]"]
        last = f.end
    out.append(text[last:])
    return "".join(out)


def describe(findings: list[Finding]) -> str:
    """'an AWS access key and a JWT' style summary."""
    kinds = [_article(k) for k in dict.fromkeys(f.kind for f in findings)]
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def _article(kind: str) -> str:
    """'a GitHub token', 'an AWS access key'; a plural or a kind with its own article as is."""
    first = kind.split()[0].lower() if kind.split() else ""
    if first in ("a", "an", "the") or kind.endswith("s"):
        return kind
    vowel = kind[:1].lower() in "aeiou" and not kind.lower().startswith(("uni", "use"))
    return ("an " if vowel else "a ") + kind
