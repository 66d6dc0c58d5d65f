"""Passwords, PINs and passphrases said in prose, in 22 languages (Chinese in both scripts).

"La contraseña del banco es Girasol#1987", "パスワードは Hanabi_2016", "ПИН-код карты: 5172",
"Phrase secrète du coffre : « les chaussettes rouges dansent sous la pluie »". Each language
gives its words for a password, a PIN (or a door, alarm or safe code) and a passphrase, and the
words that lead from one to its value (a copula, "now", "changed to"). `spoken` finds such a
word, reads at most a few words saying whose or what for, and takes the value that follows a
colon, a dash, an arrow or one of those words (or the word itself, "heslo X"). The caller
judges whether a value looks chosen (`app/core/secrets.py`), so a value is held to the same
standard in a sentence as in a config file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from app.core.secrets.languages import LANGUAGES

# What leads to a value in every language: a colon (also the full-width one), =, a dash, an
# arrow, a table's next cell
_MARKS = r"[:：=—–→|]|->|=>|(?<!\S)-"
# The token after one of these words is a name, not a password: "(red Planta2): …", "WiFi名稱是
# ChenFamily_5G", "password for user deploy01 is …"
_NAMED = re.compile(
    r"(?:(?<!\S)(?:name[ds]?|called|ssid|user(?:name)?|heißt|heter|nom|nombre|nome|naam|nazwa|"
    r"název|jméno|adı|isim|tên|nama|όνομα|שם|اسم|называется|називається|имя|ім'я|namn|red|"
    r"réseau|rede|rete|netz|netzwerk|сеть|мережа|ağ|mạng|sieć|síť|nätverk|netwerk|δίκτυο|רשת|"
    r"شبكة|jaringan|benutzer|usuario|utilisateur|uživatel|użytkownik|usuário|användare|"
    r"kullanıcı|пользователь|користувач|χρήστης|משתמש|مستخدم|pengguna|utente|gebruiker)"
    r"|名[称稱前]|网络|網路|ネットワーク|네트워크|이름|नाम|ユーザー|用户|用戶|사용자)"
    r"\s*(?:[:：=]|\bis\b|是|は)?\s*$",
    re.I,
)
# "Password managers: 1Password, Bitwarden": the word names another thing, not a password
_THING = re.compile(
    r"\s*(?:managers?|policy|policies|rules?|requirements?|hints?|resets?|fields?|hash(?:es)?|"
    r"length|strength|generators?|complexity|expiry|expiration|rotation|reuse|vaults?|"
    r"gestionnaires?|gestor(?:es)?|gerenciador(?:es)?|менеджер\w*|richtlinie\w*|beleid|"
    r"politique|pol[ií]tica|polityka|"
    # a code that names a thing (Greek κωδικός is a password and any code): product, customer,
    # order, course, parcel, error, discount
    r"προϊόντος|πελάτη|παραγγελίας|μαθήματος|αποστολής|σφάλματος|έκπτωσης|κουπονιού)(?!\w)",
    re.I,
)
_JOINED = re.compile(r"[._/@-]\w|_")  # `password_digest`, `password-stdin`, `passwords.com`
# A value: quoted (words and all), or a run of printable ASCII and Latin letters (CJK, Cyrillic
# and the rest end it: "密码是Lanzhou#1962，别外传")
_VALUE = re.compile(
    r"(?P<open>[\"“„«「『‹'‘])(?P<quoted>[^\"“”„«»「」『』‹›'‘’\n]{1,200})[\"“”»」』›'’]"
    r"|(?P<token>[!#-&(-~\u00c0-\u024f]{1,4096})"
)
_SHAPED = re.compile(r"[^A-Za-z]|[a-z][A-Z]|[A-Z].*[A-Z]")  # a digit, a symbol or mixed case
_ASSIGNED = re.compile(r"[A-Za-z_][\w.-]*=")  # `user=postgres`: the `name=value` rules read it
_YEAR = re.compile(r"(?:19|20)\d\d")
_PIN = re.compile(r"[#*]?\d{4,8}[#*]?|\d{4,6}[A-Za-z]|\d{1,3}(?:[-–]\d{1,3}){2,4}")
# "PIN changed in 2023": a year, not a PIN
_WHEN = re.compile(
    r"(?<!\S)(?:in|since|until|from|seit|bis|depuis|desde|hasta|dal|sinds|sedan|sejak|с|до|od|"
    r"від|em|en|dès)\s*$",
    re.I,
)
# A network's name says its band or that it is for guests: `Telia-5G`, `Home_2.4GHz`, `Cafe-Gast`
_BAND = re.compile(r"(?i)(?:^|[-_ .])(?:(?:2\.?4|5)g(?:hz)?(?:$|[-_ .\d])|guest\b|gast\b)")
# ... or the maker of the router that named it: `Vodafone-A1B2C3`, `TP-Link_7F2C`, `Livebox-1A2B`
_MAKER = re.compile(
    r"(?i)(?:vodafone|fritz|telekom|magenta|o2|tp-?link|netgear|linksys|d-?link|huawei|zte|"
    r"livebox|freebox|sfr|bbox|orange|ziggo|kpn|telia|telenor|bthub|sky|virgin|xfinity|att|"
    r"spectrum|movistar|jazztel|tim|fastweb|vivo|claro|asus|tenda|xiaomi|mercusys|upc|"
    r"eero|ubiquiti|unifi|totolink|digi|turkcell|superonline|viettel|fpt|vnpt|indihome|"
    r"biznet|jio|airtel)[-_ ]?[A-Za-z0-9]*"
)
# How a rule for passwords talks: "at least 12 characters", "mindestens fünf Wörter"
_RULE_TALK = re.compile(
    r"(?i)\b(?:at\s+least|minimum|characters|chars|words|letters|digits|mindestens|zeichen|"
    r"wörter|au\s+moins|caractères|mots|al\s+menos|caracteres|palabras|almeno|caratteri|"
    r"parole|minimaal|tekens|woorden|co\s+najmniej|znaków|słów|не\s+менее|минимум|символов|"
    r"слов|minst|tecken|ord|en\s+az|karakter|kelime|tối\s+thiểu|ký\s+tự|minimal|huruf)\b"
    r"|文字|字符|字元|글자|자\s*이상"
)
# A few words of letters between the name and a value with no colon or copula: "Password wifi
# di rumah nenek Melati1958", "contraseña de la cuenta de Steam de Diego Minecraft4ever!" (but
# not "hashed with", "protected by")
_PLAIN_GAP = re.compile(r"\s+(?:[^\W\d_][^\W\d_'’-]*\s+){1,8}")
_WITH = re.compile(
    r"(?<!\S)(?:with|using|via|by|mit|avec|par|con|com|por|met|med|z|ze|с|з|ile|bằng|dengan|με|"
    r"עם|مع|से|hashed|encrypted|protected)(?!\S)",
    re.I,
)
_ENDS = re.compile(r"\s*(?:$|\n|[,;!(—–]|\s[-—–]\s)")
_SYMBOL = re.compile(r"[^\w\s]")
# A value that opens its line before a dash or a particle and the word: "Tapuach!Zahav22 — זו
# הסיסמה", "Hanabi_2016 がパスワード", "Lanzhou#1962是我的密码"
_LEADING = re.compile(
    r"\s*(?P<v>[!#-&(-~]{6,64})(?:\s+[—–-]\s+|\s*[がは是이가는은]\s*)[^\n]{0,12}$"
)
_LABEL = re.compile(r"[^\S\n]*[:：=]?[*_]{0,2}[^\S\n]*")  # "Passwort:", "**PIN:**" ending a line
_PROSE = re.compile(r"\s|[^\x00-\x7f]")
_SOMETHING = re.compile(r"\S{4}|[\"“„«「『‹]")
_WINDOW = 90  # characters after the word where its value may start
_GAP = 60  # at most this many between the word and its value
_KINDS = ("phrase", "pin", "either", "password", "wifi")


def _alternatives(pattern: str) -> list[str]:
    """`pattern` cut at each `|` outside parentheses and brackets."""
    parts, depth, start, escaped = [], 0, 0, False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


def _literal(alternative: str) -> list[str]:
    """The letters `alternative` always starts with (`pwd?` -> `pw`, `kata\\s+sandi` -> `kata`,
    `c[oó]digo` -> `codigo`, `código`)."""
    heads = [""]
    i = 0
    while i < len(alternative):
        char, then = alternative[i], alternative[i + 1 : i + 2]
        if char == "[" and then not in ("^", "\\"):
            close = alternative.index("]", i)
            if alternative[close + 1 : close + 2] in ("?", "*", "{"):
                break
            heads = [h + c for h in heads for c in alternative[i + 1 : close]]
            i = close + 1
            continue
        if char in "\\()[].?*+{|^$" or then in ("?", "*", "{"):
            break  # (a letter that may be missing is not always there)
        heads = [h + char for h in heads]
        i += 1
    return heads


@lru_cache(maxsize=1)
def literals() -> tuple[str, ...]:
    """What every word `spoken` reads starts with (`pw`, `hesl`, `kata`, `密码`), in lower case:
    a text that holds none of them has no password said in prose, and is not read for one."""
    found = set()
    for words in LANGUAGES.values():
        for kind in _KINDS:
            for a in _alternatives(getattr(words, kind)):
                for literal in _literal(a) if a else ():
                    assert len(literal) >= 2 or not literal.isascii(), a  # (not "c": every text)
                    found.add(literal)
    return tuple(sorted(found))


@lru_cache(maxsize=1)
def _words() -> re.Pattern:
    """Every language's words as one pattern, grouped by first letter and longest first
    (`pin-code` before `pin`): `re` skips to a possible first letter, then tries only the
    words that start with it (a megabyte of prose in 0.1 s; 0.3 s as one flat alternation)."""
    alternatives = sorted(
        {
            a
            for words in LANGUAGES.values()
            for kind in _KINDS
            for a in _alternatives(getattr(words, kind))
            if a
        },
        key=lambda a: (-len(a), a),
    )
    by_first: dict[str, list[str]] = {}
    for a in alternatives:
        assert a[0].isalpha() and a[1] not in "?*+{", a  # a letter, taken alone
        by_first.setdefault(a[0], []).append(a[1:])
    return re.compile("|".join(f"{c}(?:{'|'.join(rest)})" for c, rest in by_first.items()))


@dataclass(frozen=True)
class _Meaning:
    kind: str  # the first of _KINDS that the word is in some language
    lead: re.Pattern  # what may stand just before its value
    bare: bool
    joined: bool


@lru_cache(maxsize=512)
def _meaning(word: str) -> _Meaning:
    """What a word found by `_words` (in lower case) says: the kind of secret that follows, and
    the lead words of every language that has it (`password` is English, Italian, Indonesian)."""
    kinds = [
        (k, w)
        for k in _KINDS
        for w in LANGUAGES.values()
        if getattr(w, k) and re.fullmatch(getattr(w, k), word)
    ]
    languages = [w for _, w in kinds]
    leading = LANGUAGES.values() if any(w.everywhere for w in languages) else languages
    alternatives = "|".join(w.lead for w in leading if w.lead) or "(?!)"
    lead = re.compile(rf"(?:{_MARKS}|(?<![^\W\d_])(?:{alternatives}))\s*$", re.I)
    return _Meaning(
        kinds[0][0] if kinds else "password",
        lead,
        any(w.bare for w in languages),
        any(w.joined for w in languages),
    )


def spoken(text: str, password: Callable[[str], bool]) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each password, PIN and passphrase said in prose; `password`
    judges whether a single value looks like a chosen password."""
    if _PROSE.search(text) is None:
        return []  # no blank and no letter beyond ASCII: a token, a key, base64, not a sentence
    low = text.lower()
    if len(low) != len(text):  # a letter whose lower case is longer (`İ`): search as it is
        low, search = text, re.compile(_words().pattern, re.I)
    else:
        search = _words()
    words = []
    for w in search.finditer(low):
        meaning = _meaning(w.group().lower())
        if _prose(text, w, meaning):
            words.append((w, meaning))
    found = []
    for i, (word, meaning) in enumerate(words):
        # a value is read up to the line's end or the next such word (`password: ` a
        # hundred thousand times is read once), past a Wi-Fi aside ("Hasło do wifi u babci to X")
        stop = min(len(text), word.end() + _WINDOW)
        for following, then in words[i + 1 : i + 3]:
            if meaning.kind == "wifi" or then.kind != "wifi":
                stop = min(stop, following.start())
                break
        newline = text.find("\n", word.end(), stop)
        if newline >= 0 and _LABEL.fullmatch(text, word.end(), newline):
            # "Passwort:" alone on its line: the value is on the next one
            newline = text.find("\n", newline + 1, stop)
        stop = stop if newline < 0 else newline
        # (no four characters in a row and no quote: no value, not worth reading for one)
        hit = _SOMETHING.search(text, word.end(), stop) and _after(
            text, word.end(), meaning, stop, password
        )
        if hit or meaning.kind != "pin" and (hit := _before(text, word.start(), password)):
            found.append(hit)
    return found


def _prose(text: str, word: re.Match, meaning: _Meaning) -> bool:
    """Whether `word` is a word of a sentence, not part of a name in code, a flag or a link
    (`--password-stdin`, `${DB_PASSWORD}`, `pwnedpasswords.com`, `password_digest`), nor the
    end of another word (`spinning`) where the language makes no compounds."""
    start, end = word.span()
    before = text[start - 1 : start] if start else ""
    return (
        before not in ("_", ".", "/", "@", "$", "=", "\\", "{")
        and not (before.isalpha() and not meaning.joined)
        and _JOINED.match(text, end) is None
        and not text.startswith("--", max(0, start - 2))
        and _THING.match(text, end) is None
    )


def _after(
    text: str, at: int, meaning: _Meaning, stop: int, password: Callable[[str], bool]
) -> tuple[str, int, int] | None:
    """The value that follows the word ending at `at` and starts before `stop`, if one does:
    right after it, or after a colon, a dash or a lead word, at most `_GAP` characters on."""
    kind, word_end, loose = meaning.kind, at, None
    while (m := _VALUE.search(text, at, stop)) is not None:
        if m.group("token") is not None:
            if m.end() == stop:  # the whole token, wherever the window ends (a SealedSecret's
                m = _VALUE.match(text, m.start())  # ciphertext is judged whole)
            start, end = m.span("token")
            while end > start and text[end - 1] in ".,;:)]":
                end -= 1
            while start < end and text[start] in "([=:":
                start += 1
            value = text[start:end]
            if value.isalpha() and (value.islower() or value[1:].islower()):
                # a plain word is no value (and most words after a password's name are plain):
                # it only takes the value's place after a colon ("Passwort: siehe Tresor")
                at = m.end()
                if _marked(text[max(word_end, start - 4) : start]):
                    return None
                continue
            gap = text[word_end:start]
            if kind in ("pin", "either") and any(c.isdigit() for c in value):
                if (
                    not any(c.isdigit() for c in gap)
                    and _PIN.fullmatch(value)
                    and not trivial_pin(value)
                ):
                    # "PIN changed in 2023"; "La clave del curso 2024": a year, not a PIN
                    # (a password's word says a PIN is a year only after a colon or a copula)
                    year = (
                        kind == "either" and _YEAR.fullmatch(value) and not meaning.lead.search(gap)
                    )
                    return None if _WHEN.search(gap) or year else ("PIN", start, end)
                if kind == "pin":
                    return None  # the first number after a PIN's name is not one: no PIN
                kind = "password"  # `비밀번호 정책: 12자`: a password may still follow
            if value.isdigit():
                ok = len(value) >= 8  # digits alone: a FRITZ!Box's 20-digit key, not a year
            else:  # (a plain word is no password: not worth the judge's time)
                ok = (
                    _SHAPED.search(value) is not None
                    and _ASSIGNED.match(value) is None
                    and not (kind == "wifi" and (_BAND.search(value) or _MAKER.fullmatch(value)))
                    and password(value)
                )
        elif text[m.start() - 1].isalnum() or text[m.end() : m.end() + 1].isalnum():
            at = m.start() + 1  # a quote that closes (`"password": "…"`), not one that opens
            continue
        else:
            start, end = m.span("quoted")
            value, gap = text[start:end], text[word_end : m.start()]
            ok = _phrase(value) if " " in value or not value.isascii() else password(value)
        at = m.end()
        if not ok:
            if len(value) <= 2 and not any(c.isalnum() for c in value):
                continue  # markdown (`**Passwort:** X`), a table's `|`: not a value
            if _marked(gap):
                return None  # `password: ***`, `Passwort: siehe Tresor`: the value was given
            continue
        if len(gap) > _GAP:
            continue
        if _NAMED.search(gap) and (kind == "wifi" or not _NAMED.match(gap.lstrip())):
            continue  # a name ("…, user deploy01 is"), but "Das Passwort heißt X" is the password
        said = gap.rstrip(" \t\"'“„«「『‹(*_")  # (and markdown: `**Passwort:** X`)
        if (meaning.bare and not said.strip()) or meaning.lead.search(said):
            return _kind(kind, value), start, end
        if loose is None and meaning.bare and kind != "phrase" and _loose(text, gap, value, end):
            loose = (_kind(kind, value), start, end)
    return loose


def trivial_pin(value: str) -> bool:
    """A PIN of one digit over and over or counting (`0000`, `1234`): a default or an example
    ("the default PIN is 0000, change it"), not someone's secret."""
    digits = value.strip("#*")
    return digits.isdigit() and (
        len(set(digits)) == 1 or digits in "0123456789" or digits in "9876543210"
    )


def _marked(gap: str) -> bool:
    """Whether `gap` ends with one of `_MARKS` (a test of its last characters: this runs for
    every word after a password's name)."""
    tail = gap.rstrip()
    return (
        tail.endswith((":", "：", "=", "—", "–", "→", "|"))
        or tail[-2:] in (" -", "->", "=>")
        or tail == "-"
    )


def _phrase(value: str) -> bool:
    """Words in quotes that make a passphrase: four to twelve, or a run of CJK or kana (not a
    rule for one, "at least five random words", nor a place, "on the fridge")."""
    if _words().search(value.lower()) or _RULE_TALK.search(value):
        return False
    if any(p in value.lower() for p in ("<", "...", "…", "your")):
        return False
    words = value.split()
    if len(words) > 1:
        return 4 <= len(words) <= 12 and words[0].lower() not in _WHERE
    return len(value) >= 6 and all(c.isalpha() and not c.isascii() for c in value)


_WHERE = frozenset("on in at under behind inside next auf im unter hinter sur dans sous".split())


def _loose(text: str, gap: str, value: str, end: int) -> bool:
    """A value after a few plain words and nothing else, that ends its line or clause and
    looks chosen (a digit, and a symbol or mixed case): "Password wifi di rumah nenek
    Melati1958"."""
    return (
        _PLAIN_GAP.fullmatch(gap) is not None
        and _WITH.search(gap) is None
        and any(c.isdigit() for c in value)
        and (_SYMBOL.search(value) is not None or value.lower() != value != value.upper())
        and _ENDS.match(text, end) is not None
    )


def _kind(kind: str, value: str) -> str:
    return "passphrase" if kind == "phrase" or " " in value else "password"


def _before(text: str, at: int, password: Callable[[str], bool]) -> tuple[str, int, int] | None:
    """A value that opens the line before a dash or a particle and the word starting at `at`."""
    earliest = max(0, at - 100)  # the value, a dash and a word or two: no further
    line = text.rfind("\n", earliest, at) + 1
    if line == 0 and earliest > 0:
        return None
    m = _LEADING.match(text, line, at)
    if m and password(m.group("v")):
        return "password", m.start("v"), m.end("v")
    return None
