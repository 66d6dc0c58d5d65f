"""Passwords, PINs and passphrases said in prose, in 33 languages (Chinese in both scripts).

"La contraseña del banco es Girasol#1987", "パスワードは Hanabi_2016", "ПИН-код карты: 5172",
"Phrase secrète du coffre : « les chaussettes rouges dansent sous la pluie »". Each language
gives its words for a password, a PIN (or a door, alarm or safe code) and a passphrase, and the
words that lead from one to its value (a copula, "now", "changed to"). `spoken` finds such a
word, reads at most a few words saying whose or what for, and takes the value that follows a
colon, a dash, an arrow or one of those words (or the word itself, "heslo X"), or that opens
the line before it ("Midsommar&Sill7 är nya lösenordet"), or stands alone on the next line
after a label ("contraseña del router⏎merluza1987"). A code is a PIN when a thing it opens is
named beside it ("Hotellin tallelokeron koodi on 5370"); a lock, a safe, an alarm take the
number said after a colon or a lead ("Safe in the closet: 5-29-41"). The caller
judges whether a value looks chosen (`app/core/secrets.py`), so a value is held to the same
standard in a sentence as in a config file.
"""

from __future__ import annotations

import re
import unicodedata
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
    r"kullanıcı|пользователь|користувач|χρήστης|משתמש|مستخدم|pengguna|utente|gebruiker|"
    r"bruger(?:navn)?|bruker(?:navn)?|käyttäjä(?:tunnus)?|felhasználó(?:név)?|utilizator|"
    r"používateľ|gumagamit|netværk|nettverk|verkko|hálózat|rețea|rangkaian|sieť|user\s+id)"
    r"|名[称稱前]|网络|網路|ネットワーク|네트워크|이름|아이디|नाम|यूज़र|ユーザー|用户|用戶|사용자|"
    r"ব্যবহারকারী|ইউজার|نام\s*کاربری|کاربر|ชื่อผู้ใช้|ผู้ใช้|เครือข่าย|شبکه|"
    r"নেটও(?:\u09df|\u09af\u09bc)ার্ক)"
    r"\s*(?:[:：=]|\bis\b|是|は)?\s*$",
    re.I,
)
# "Password managers: 1Password, Bitwarden": the word names another thing, not a password
_THING = re.compile(
    r"\s*(?:managers?|policy|policies|rules?|requirements?|hints?|resets?|fields?|hash(?:es)?|"
    r"length|strength|generators?|complexity|expiry|expiration|rotation|reuse|vaults?|hashing|"
    r"prompts?|dialogs?|screens?|forms?|inputs?|pads?|terminals?|readers?|models?|pages?|"
    r"flows?|buttons?|links?|urls?|attempts?|issues?|bugs?|problems?|errors?|failures?|"
    r"reviews?|coverage|quality|style|snippets?|examples?|samples?|blocks?|comments?|editors?|"
    r"owners?|base|generation|smells?|"
    r"gestionnaires?|gestor(?:es)?|gerenciador(?:es)?|менеджер\w*|richtlinie\w*|beleid|"
    r"politique|pol[ií]tica|polityka|"
    # a code that names a thing (Greek κωδικός is a password and any code): product, customer,
    # order, course, parcel, error, discount
    r"προϊόντος|πελάτη|παραγγελίας|μαθήματος|αποστολής|σφάλματος|έκπτωσης|κουπονιού|"
    # ... and Arabic, Persian `رمز` a postcode, an error's, a check's
    r"البريدي|بريدي|الخطأ|خطأ|التحقق|پستی|خطا|تأیید|تایید)(?!\w)",
    re.I,
)
# Digits of the scripts a PIN is written in besides ASCII: Arabic-Indic, Persian, Devanagari,
# Bengali, Thai, full-width ("کد دزدگیر ۶۹۰۳۱۵", "暗証番号は５０４７")
_DIGITS = "\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\u09e6-\u09ef\u0e50-\u0e59\uff10-\uff19"
_JOINED = re.compile(r"[._/@-]\w|_")  # `password_digest`, `password-stdin`, `passwords.com`
# A value: quoted (words and all), or a run of printable ASCII and Latin letters (CJK, Cyrillic
# and the rest end it: "密码是Lanzhou#1962，别外传")
_VALUE = re.compile(
    r"(?P<open>[\"“„«»「『‹'‘‚《])(?P<quoted>[^\"“”„«»「」『』‹›'‘’‚《》\n]{1,200})[\"“”»«」』›'’《》]"
    r"|(?P<token>[!#-&(-~\u00c0-\u024f" + _DIGITS + r"]{1,4096})"
)
_SHAPED = re.compile(r"[^A-Za-z]|[a-z][A-Z]|[A-Z].*[A-Z]")  # a digit, a symbol or mixed case
# `user=postgres`: the `name=value` rules read it (a name of a setting: `cP=8H9X…`, `EJDF=a3aF…`
# are passwords)
_ASSIGNED = re.compile(
    r"(?i)(?=[\w.-]*(?:user|name|login|pass|pw|key|token|secret|host|port|db|id|mail|auth|[_.]))"
    r"[a-z_][\w.-]*="
)
_YEAR = re.compile(r"(?:19|20)\d\d")
# (and a code with a letter, as a door's keypad takes it: `27B41`, `4821B`, `A4821`)
_PIN = re.compile(
    r"[#*]?\d{4,8}[#*]?|\d{4,6}[A-Za-z]|[A-Za-z]\d{4,6}|\d{2,4}[A-Za-z]\d{1,4}|"
    r"\d{1,3}(?:[-–]\d{1,3}){2,4}"
)
# A combination said digit by digit ("8 1 4"), and a number with a case ending ("2719-re",
# Turkish "3615'e": onto, to)
_SPACED_PIN = re.compile(r"\d{1,2}(?: \d{1,2}){2,7}(?![\w-])")
_SUFFIXED = re.compile(r"(?P<n>\d{4,8})[-'’][^\W\d_]{1,4}")
# "PIN changed in 2023": a year, not a PIN
_WHEN = re.compile(
    r"(?<!\S)(?:in|since|until|from|seit|bis|depuis|desde|hasta|dal|sinds|sedan|sejak|с|до|od|"
    r"від|em|en|dès|siden|fra|vuonna|óta|din|pada|noong|mula|از|থেকে|ตั้งแต่)\s*$",
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
    r"biznet|jio|airtel)[-_ !]?[A-Za-z0-9]*"
)
# How a rule for passwords talks: "at least 12 characters", "mindestens fünf Wörter"
_RULE_TALK = re.compile(
    r"(?i)\b(?:at\s+least|minimum|characters|chars|words|letters|digits|mindestens|zeichen|"
    r"wörter|au\s+moins|caractères|mots|al\s+menos|caracteres|palabras|almeno|caratteri|"
    r"parole|minimaal|tekens|woorden|co\s+najmniej|znaków|słów|не\s+менее|минимум|символов|"
    r"слов|minst|tecken|ord|en\s+az|karakter|kelime|tối\s+thiểu|ký\s+tự|minimal|huruf|"
    r"mindst|tegn|vähintään|merkkiä|sanaa|legalább|karakter\w*|szó|cel\s+puțin|caractere|"
    r"cuvinte|sekurang-kurangnya|aksara|perkataan|aspoň|alespoň|znakov|znaků|slov|salita)\b"
    r"|文字|字符|字元|글자|자\s*이상|حداقل|کاراکتر|অন্তত|অক্ষর|อย่างน้อย|ตัวอักษร"
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
_ENDS = re.compile(r"\s*(?:$|\n|[,;!(—–，、；！。،]|\s[-—–]\s)")
_SYMBOL = re.compile(r"[^\w\s]")
# A value that opens its line before a dash, a particle or a copula and the word:
# "Tapuach!Zahav22 — זו הסיסמה", "Hanabi_2016 がパスワード", "Lanzhou#1962是我的密码"
_LEADING = re.compile(r"[^\S\n]*(?P<v>[!#-&(-~]{6,64})(?P<gap>[^\n]*)$")
_ADJACENT = re.compile(r"(?<!\S)(?P<v>[!#-&(-~]{8,64})[ \t]+$")
_STRONG = re.compile(r"(?=.*\d)(?=.*[a-z])(?=.*(?:[A-Z]|[^\w\s]))")  # a digit, a letter, more
_PARTICLE = re.compile(r"\s*[がは是이가는은]")
_LABEL = re.compile(r"[^\S\n]*[:：=]?[*_]{0,2}[^\S\n]*")  # "Passwort:", "**PIN:**" ending a line
_PROSE = re.compile(r"\s|[^\x00-\x7f]")
_SOMETHING = re.compile(r"\S{4}|[\"“„«「『‹]|\d \d \d")
_WINDOW = 90  # characters after the word where its value may start
_GAP = 60  # at most this many between the word and its value
_KINDS = ("phrase", "pin", "either", "password", "wifi", "lock", "alarm", "code")
_END = r"(?![0-9_a-z\u00c0-\u024f\u0370-\u052f])"  # the end of a Latin, Greek, Cyrillic word


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
        # (the longest start first: Turkish `parola\s+öbeği` before Romanian `parol(?:a|ă)`)
        key=lambda a: (-max(map(len, _literal(a))), -len(a), a),
    )
    by_first: dict[str, list[str]] = {}
    for a in alternatives:
        assert a[0].isalpha() and a[1:2] not in ("?", "*", "+", "{"), a  # a letter, taken alone
        # a word's end is a letter of its own script, not kana or hangul: "Wi-Fiは", "PIN은"
        by_first.setdefault(a[0], []).append(a[1:].replace(r"\b", _END))
    return re.compile("|".join(f"{c}(?:{'|'.join(rest)})" for c, rest in by_first.items()))


@dataclass(frozen=True)
class _Meaning:
    kind: str  # the first of _KINDS that the word is in some language
    lead: re.Pattern  # what may stand just before its value
    first: re.Pattern  # a lead that may follow a value opening the line ("X is the password")
    after: re.Pattern | None  # a copula that may follow its value ("X है")
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
    alternatives = "|".join(w.lead for w in leading if w.lead and w.spaced) or "(?!)"
    # (a lead of a language without blanks between words needs none before it: "…ทดสอบเป็น X")
    unspaced = "|".join(w.lead for w in leading if w.lead and not w.spaced) or "(?!)"
    after = "|".join(w.after for w in languages if w.after)
    first = "|".join(w.first for w in languages if w.first) or "(?!)"
    return _Meaning(
        kinds[0][0] if kinds else "password",
        re.compile(rf"(?:{_MARKS}|(?<![^\W\d_])(?:{alternatives})|{unspaced})\s*$", re.I),
        re.compile(rf"\s*(?:[—–-]\s|(?:{alternatives}|{unspaced}|{first})(?![^\W\d_]))", re.I),
        re.compile(rf"[^\S\n]*(?:{after})(?![^\W\d_])", re.I) if after else None,
        any(w.bare for w in languages),
        any(w.joined for w in languages),
    )


@lru_cache(maxsize=1)
def _things() -> re.Pattern:
    """What a code opens, in every language: a door, a gate, a safe, a lock, an alarm…"""
    return re.compile("|".join(w.thing for w in LANGUAGES.values() if w.thing), re.I)


# A code that names no lock: an error's, a postcode, a product's, a one-time code's
_NO_LOCK = re.compile(
    r"(?i)(?:error|status|exit|return|response|http|zip|post(?:al)?|area|country|product|promo|"
    r"discount|coupon|voucher|tracking|order|source|qr|bar|verification|confirmation|otp|sms|"
    r"2fa|one-time|activation|referral|invite|booking|fault|fehler|fout|erreur|errore|erro|"
    r"błąd|chyba|hiba|virhe|fejl|feil|eroare|ошибк\w*|помилк\w*|hata|lỗi|خطأ|خطا|שגיאה|"
    r"verif\w*|bestätigung\w*|ověřovací|overovací|ellenőrző|vahvistus\w*|bekræftelse\w*|"
    r"bekreftelse\w*|engangs\w*|engångs\w*|postcode|postleitzahl|plz|cep|tasdik|doğrulama|"
    r"xác\s+minh|otp|تأیید|تایید|التحقق|אימות|सत्यापन|確認|인증|验证|驗證|ยืนยัน)"
    r"[\w\s-]{0,12}$"
)
# A number that counts or measures ("1200 lines", "2500 per month", "1200 kg"): no PIN
_UNIT = re.compile(
    r"\s*(?:mm|cm|m|km|kg|g|lbs?|%|€|\$|eur|euros?|usd|dollars?|kr|zł|ft|x|px|mb|gb|kb|per|a\s+"
    r"month|lines?|items?|people|users?|files?|rows?|pages?|words?|times|pieces?|s|secs?|"
    r"seconds?|mins?|minutes?|hours?|days?|weeks?|months?|years?)(?![^\W\d_])",
    re.I,
)


def spoken(text: str, password: Callable[[str], bool]) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each password, PIN and passphrase said in prose; `password`
    judges whether a single value looks like a chosen password."""
    if _PROSE.search(text) is None:
        return []  # no blank and no letter beyond ASCII: a token, a key, base64, not a sentence
    low = text.replace("İ", "I").lower()  # (Turkish `ŞİFRE`: `İ` is two letters in lower case)
    if len(low) != len(text):  # another letter whose lower case is longer: search as it is
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
        # hundred thousand times is read once), past a Wi-Fi aside ("Hasło do wifi u babci to
        # X") or the lock a code opens ("Kód k trezoru: 3052")
        stop = min(len(text), word.end() + _WINDOW)
        for following, then in words[i + 1 : i + 3]:
            if not _aside(meaning.kind, then.kind):
                stop = min(stop, following.start())
                break
        newline = text.find("\n", word.end(), stop)
        if newline >= 0 and _LABEL.fullmatch(text, word.end(), newline):
            # "Passwort:" alone on its line: the value is on the next one
            newline = text.find("\n", newline + 1, stop)
        stop = stop if newline < 0 else newline
        # (no four characters in a row and no quote: no value, not worth reading for one)
        hit = _SOMETHING.search(text, word.end(), stop) and _after(
            text, word, meaning, stop, password
        )
        if not hit and newline >= 0 and meaning.kind != "wifi":
            hit = _below(text, word, meaning, newline, password)
        if not hit and meaning.kind not in _NUMBERS:
            hit = _before(text, word, meaning, password)
        if hit:
            found.append(hit)
    return found


_NUMBERS = ("pin", "code", "lock", "alarm")  # kinds whose value is a number


def _aside(kind: str, then: str) -> bool:
    """Whether a word of kind `then` after one of `kind` is an aside, read past for the value:
    a Wi-Fi's name after another word, a lock after a code, a PIN or a password ("senha do
    alarme da loja 159357", "Frase-passe do cofre: …")."""
    return (
        (kind != "wifi" and then == "wifi")
        or (kind not in ("lock", "alarm") and then in ("lock", "alarm"))
        or (kind not in _NUMBERS and then == "code")  # "…ổ đĩa mã hóa: X" (encrypted)
    )


def _prose(text: str, word: re.Match, meaning: _Meaning) -> bool:
    """Whether `word` is a word of a sentence, not part of a name in code, a flag or a link
    (`--password-stdin`, `${DB_PASSWORD}`, `pwnedpasswords.com`, `password_digest`), nor the
    end of another word (`spinning`) where the language makes no compounds."""
    start, end = word.span()
    before = text[start - 1 : start] if start else ""
    start_ascii = text[start].isascii()
    return (
        before not in ("_", ".", "/", "@", "$", "=", "\\", "{")
        # (a letter of another script is a word's end: "別荘のWi-Fi", "民宿wifi")
        and not (before.isalpha() and not meaning.joined and before.isascii() == start_ascii)
        and _JOINED.match(text, end) is None
        and not text.startswith("--", max(0, start - 2))
        and _THING.match(text, end) is None
    )


def _opens(text: str, word: re.Match, upto: int) -> bool:
    """Whether a code word names a thing it opens: a door, a safe… in its clause before it
    (`Dørkoden`, "Kluisje in de sportschool, code") or between it and its value, and is not an
    error's, a postcode's or a one-time code's."""
    start = word.start()
    line = text.rfind("\n", 0, start) + 1
    before = text[max(line, start - 50) : start]
    if _NO_LOCK.search(before + word.group()):
        return False
    return _things().search(before) is not None or _things().search(text, word.end(), upto)


def _number(
    text: str, start: int, end: int, value: str, gap: str, word: re.Match, meaning: _Meaning
) -> tuple[str, int, int] | bool | None:
    """A number after a PIN's, a code's or a lock's word: a PIN (its span), no PIN and nothing
    more to read (None), or not a number at all (False)."""
    kind = meaning.kind
    spaced = _SPACED_PIN.match(text, start)
    suffixed = _SUFFIXED.fullmatch(value)
    if spaced and len(spaced.group()) > len(value) and kind != "either":
        end, value = spaced.end(), spaced.group()
    elif suffixed:
        end, value = start + suffixed.end("n"), suffixed.group("n")
    if not _PIN.fullmatch(value) and not spaced:
        return False if kind in ("either", "code") else None  # (a password may follow)
    if any(c.isdigit() for c in gap):
        return None if kind != "either" else False
    if trivial_pin(value):
        return None if kind != "either" else False
    said = gap.rstrip(" \t\"'“„«「『‹(*_")
    set_to = _marked(gap) or meaning.lead.search(said) is not None or suffixed is not None
    # ("Warehouse alarm disarms with 923290", "Le cadenas s'ouvre avec 3-7-8")
    set_to = set_to or _WITH_END.search(said) is not None
    if _UNIT.match(text, end):
        return None
    if kind in ("lock", "alarm"):
        if not set_to or _YEAR.fullmatch(value):
            return None
        if kind == "alarm" and value.isdigit() and len(value) == 4:
            return None  # (`alarm: 0630` rings at half past six)
    if kind == "code" and not _opens(text, word, start):
        return None
    if postcode(text, word.start(), start, end):
        return None
    # "PIN changed in 2023"; "La clave del curso 2024": a year, not a PIN (a password's word
    # says a PIN is a year only after a colon or a copula)
    # "PIN changed in 2023"; "Combination lock sold out, 2024 edition": a year in another
    # clause (but "PINCODE TELEFOON OMA 1947" is one); "La clave del curso 2024": a password's
    # word says a PIN is a year only after a colon or a copula
    if _YEAR.fullmatch(value) and (
        _WHEN.search(gap)
        or not set_to
        and (_BREAK.search(gap) is not None or kind == "either" and not meaning.lead.search(gap))
    ):
        return None
    return "PIN", start, end


# India's postcode is a "PIN code" of six digits ("PIN code 110001, Delhi"): said with a place
_PLACE = re.compile(
    r"(?i)address|addr\b|postal|post\s+office|india|delhi|mumbai|bengaluru|bangalore|"
    r"chennai|kolkata|hyderabad|pune|road|nagar|street|sector|district|पता|पोस्ट|डाक|दिल्ली|"
    r"मुंबई|नगर|रोड|ज़िला|जिला"
)
_CARD = re.compile(r"(?i)card|atm|bank|sim\b|debit|credit|phone|कार्ड|एटीएम|बैंक|फ़ोन|फोन|मोबाइल")
_NEXT_PLACE = re.compile(r",?\s*(?:[A-Z][a-z]|(?!है|हैं|था|थी|और)[\u0900-\u097f])")


_PIN_CODE = re.compile(r"(?i)pin[\s-]+code|पिन\s+कोड")


def postcode(text: str, name: int, start: int, end: int) -> bool:
    """Whether the six digits at `start:end`, after a "PIN code" named at `name`, are India's
    postcode: a place or an address near them, no card, bank or phone ("पिन कोड 110001
    दिल्ली", "PIN code: 560001, Bengaluru")."""
    value = text[start:end]
    if not (value.isdigit() and len(value) == 6 and value[0] != "0"):
        return False
    if not _PIN_CODE.match(text, name):
        return False
    around = text[max(0, name - 40) : end + 40]
    if _CARD.search(text, max(0, name - 40), start):
        return False
    return _PLACE.search(around) is not None or _NEXT_PLACE.match(text, end) is not None


_BREAK = re.compile(r"[,;.!?，。；！？،]")
_SPECIAL = re.compile(r"[^\w\s.]|_")
_JOINING = re.compile(r"[!#$%&*+=?@^~_]")  # (not a dash: "Py3-compatible")
# "is", in the languages whose word for a code also says a password (Danish `koden`, Thai
# `รหัส`): a preposition would lead to a place ("the code is in src_main2")
_COPULA = re.compile(
    r"(?:(?<![^\W\d_])(?:is|er|är|ar|es|est|ist|je|on|là|é|è|это|jest|este|είναι|adalah|ialah|"
    r"ay|nu)|คือ|เป็น|是|は)\s*$",
    re.I,
)
_WITH_END = re.compile(_WITH.pattern + r"\s*$", re.I)


def _digits(text: str, end: int, value: str, gap: str, meaning: _Meaning) -> bool:
    """Whether digits after a password's word and a colon or a copula are its value: not a
    year, a count (`1200 lines`), a default (`0000`) or a number after another."""
    said = gap.rstrip(" \t\"'“„«「『‹(*_")
    return (
        (_marked(gap) or meaning.lead.search(said) is not None)
        and not any(c.isdigit() for c in gap)
        and not trivial_pin(value)
        and _YEAR.fullmatch(value) is None
        and _UNIT.match(text, end) is None
        and _WHEN.search(gap) is None
    )


def _coded(
    text: str, word: re.Match, meaning: _Meaning, gap: str, value: str, password: Callable
) -> bool:
    """Whether a code's word names a password: after a colon or an arrow, mixed case or a
    symbol (not a promo code in capitals, `WINTER10`), and not an error's or a promo's code."""
    said = gap.rstrip(" \t\"'“„«「『‹(*_")
    led = _COPULA.search(said) is not None
    return (
        # (after a copula, only with a symbol: "koden til Netflix er nu Lantern_Pepper67")
        (_marked(gap) or led and _JOINING.search(value) is not None)
        and value.upper() != value
        and (_SYMBOL.search(value) is not None or value.lower() != value)
        and _NO_LOCK.search(text[max(0, word.start() - 30) : word.end()]) is None
        and password(value)
    )


def _after(
    text: str, word: re.Match, meaning: _Meaning, stop: int, password: Callable[[str], bool]
) -> tuple[str, int, int] | None:
    """The value that follows `word` and starts before `stop`, if one does: right after it, or
    after a colon, a dash or a lead word, at most `_GAP` characters on."""
    kind, word_end, loose = meaning.kind, word.end(), None
    at = word_end
    while (m := _VALUE.search(text, at, stop)) is not None:
        if m.group("token") is not None:
            if m.end() == stop:  # the whole token, wherever the window ends (a SealedSecret's
                m = _VALUE.match(text, m.start())  # ciphertext is judged whole)
            start, end = m.span("token")
            while end > start and text[end - 1] in ".,;:)]":
                end -= 1
            while start < end and text[start] in "([=:":
                start += 1
            if text[start : start + 1] == "-" and text[start - 1 : start].isalpha():
                start += 1  # Hebrew `ל-X`: to X
            value = text[start:end]
            if value.isalpha() and (value.islower() or value[1:].islower()):
                # a plain word is no value (and most words after a password's name are plain):
                # it only takes the value's place after a colon ("Passwort: siehe Tresor"),
                # where a passphrase's words may start, unquoted
                at = m.end()
                if _marked(text[max(word_end, start - 4) : start]):
                    return _unquoted(text, start, stop) if kind == "phrase" else None
                continue
            gap = text[word_end:start]
            if kind in ("either", *_NUMBERS) and any(c.isdigit() for c in value):
                number = _number(text, start, end, value, gap, word, meaning)
                if number is not False:
                    return number
                if kind == "either":
                    kind = "password"  # `비밀번호 정책: 12자`: a password may still follow
            if kind in _NUMBERS:
                # a lock's word takes no password; a code's, after a colon or an arrow, one
                # that was chosen ("kode til NAS -> Fjord*Willow88", Thai `รหัส NAS -> X`)
                ok = kind == "code" and _coded(text, word, meaning, gap, value, password)
            elif value.isdigit() and 4 <= len(value) < 8 and kind == "password":
                # a device's password may be digits, said after a colon or a copula ("La
                # contraseña de la tablet es 2713"), but not a year or a count
                ok = _digits(text, end, value, gap, meaning)
            elif value.isdigit():
                ok = len(value) >= 8  # digits alone: a FRITZ!Box's 20-digit key, not a year
            else:  # (a plain word is no password: not worth the judge's time)
                ok = (
                    _SHAPED.search(value) is not None
                    and _ASSIGNED.match(value) is None
                    and not (kind == "wifi" and (_BAND.search(value) or _MAKER.fullmatch(value)))
                    and password(value)
                )
        elif _closing(text, m):
            at = m.start() + 1  # a quote that closes (`"password": "…"`), not one that opens
            continue
        else:
            start, end = m.span("quoted")
            while start < end and text[start] in " \u00a0\u202f":  # « French spacing »
                start += 1
            while end > start and text[end - 1] in " \u00a0\u202f":
                end -= 1
            value, gap = text[start:end], text[word_end : m.start()]
            if kind in _NUMBERS:
                ok = False
            else:
                spaced = " " in value or not value.isascii()
                ok = _phrase(value, kind == "phrase") if spaced else password(value)
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
        paren = gap.rstrip().endswith("(") and not said.strip()  # "wifi (X)"
        if (meaning.bare and not said.strip()) or paren or meaning.lead.search(said):
            return _kind(kind, value), start, end
        if loose is None and meaning.bare and kind != "phrase" and _loose(text, gap, value, end):
            loose = (_kind(kind, value), start, end)
        if (
            loose is None
            and meaning.after is not None
            and meaning.after.match(text, m.end())
            and (not gap.strip() or _PLAIN_GAP.fullmatch(" " + gap.lstrip()))
            and _WITH.search(gap) is None
        ):
            loose = (_kind(kind, value), start, end)  # "رمز وای‌فای خونه X هست"
    return loose


_REMARK = re.compile(r"(?:\s+\(.*|\s+[—–-]\s.*|,\s.*)$")
_WORDS_TO_END = re.compile(r"[^\W\d_][^\W\d_ '’-]*(?: [^\W\d_][^\W\d_'’-]*){2,11}")


def _unquoted(text: str, start: int, stop: int) -> tuple[str, int, int] | None:
    """A passphrase's words after its name and a colon, without quotes, to the end of the
    line: "Şifreleme parola öbeği: kırmızı kedi çatıda uyuyor"."""
    m = _WORDS_TO_END.match(text, start, stop)
    if m is None or _ENDS.match(text, m.end()) is None or not _phrase(m.group(), True):
        return None
    if m.group().isascii() or m.group().split()[0].lower() in _SEE:
        return (
            None  # (plain English words: the rule for passphrases reads them, stop words and all)
        )
    return "passphrase", m.start(), m.end()


def _below(
    text: str, word: re.Match, meaning: _Meaning, newline: int, password: Callable[[str], bool]
) -> tuple[str, int, int] | None:
    """A value alone on a line below a label that names it ("contraseña del router⏎merluza1987",
    "The password,⏎in case you lost it again:⏎Zephyr_Kettle_62"): the label is no sentence and
    holds no digit, and a line between them ends with a colon."""
    rest = text[word.end() : newline]
    if len(rest) > 80 or any(c.isdigit() for c in rest):
        return None
    if rest.rstrip().endswith((".", "?", "!", "。", "？", "！")) or ":" in rest.rstrip()[:-1]:
        return None
    at = newline + 1
    for _ in range(3):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end]
        value = line.strip()
        if not value and end < len(text):  # (a blank line between: "Passwort\n\nX")
            at = end + 1
            continue
        # the value alone, or before a remark: "Winterreifen!2025 (das alte geht nicht mehr)"
        value = _REMARK.sub("", value)
        if value and " " not in value:
            start = at + line.index(value)
            stop = start + len(value)
            if meaning.kind in ("either", *_NUMBERS) and _PIN.fullmatch(value):
                number = _number(text, start, stop, value, ":", word, meaning)
                return number or None
            ok = (
                meaning.kind not in _NUMBERS
                and (not value.isdigit() or len(value) >= 8)
                and _SHAPED.search(value) is not None
                and _ASSIGNED.match(value) is None
                and password(value)
            )
            return (_kind(meaning.kind, value), start, stop) if ok else None
        if len(line) > 80 or not line.rstrip().endswith((":", "：")) or end == len(text):
            return None
        at = end + 1
    return None


def _closing(text: str, m: re.Match) -> bool:
    """Whether a quoted match's quotes close a value rather than open one: a letter or a digit
    of code just before it (`"password": "…"`) or just after it (but Korean `"X"로`)."""
    before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
    return (before.isascii() and before.isalnum()) or (after.isascii() and after.isalnum())


def trivial_pin(value: str) -> bool:
    """A PIN of one digit over and over or counting (`0000`, `1234`): a default or an example
    ("the default PIN is 0000, change it"), not someone's secret."""
    digits = value.strip("#*")
    if not digits.isdigit():
        return False
    digits = "".join(str(int(c)) for c in digits)  # (Persian, Bengali… digits too)
    return len(set(digits)) == 1 or digits in "0123456789" or digits in "9876543210"


def _marked(gap: str) -> bool:
    """Whether `gap` ends with one of `_MARKS` (a test of its last characters: this runs for
    every word after a password's name)."""
    tail = gap.rstrip()
    return (
        tail.endswith((":", "：", "=", "—", "–", "→", "|"))
        or tail[-2:] in (" -", "->", "=>")
        or tail == "-"
    )


def _phrase(value: str, named: bool = False) -> bool:
    """Words in quotes that make a passphrase: four to twelve (three of some length after a
    passphrase's name, as Finnish and Bengali say it), or a run of CJK or kana (not a rule for
    one, "at least five random words", nor a place, "on the fridge")."""
    if _RULE_TALK.search(value) or any(
        _meaning(w.group()).kind in ("password", "pin", "either", "phrase", "wifi")
        for w in _words().finditer(value.lower())
    ):
        return False  # (talk about a password; a lock or a door may be in a passphrase)
    if any(p in value.lower() for p in ("<", "...", "…", "your")):
        return False
    words = value.split()
    if len(words) > 1:
        least = 3 if named and len(value) >= (16 if value.isascii() else 10) else 4
        return least <= len(words) <= 12 and words[0].lower() not in _WHERE
    # (Thai and Devanagari vowels are marks, not letters: "ช้างเดินข้ามสะพาน")
    return len(value) >= 6 and all(
        (c.isalpha() or unicodedata.category(c).startswith("M")) and not c.isascii() for c in value
    )


_WHERE = frozenset("on in at under behind inside next auf im unter hinter sur dans sous".split())
_SEE = frozenset("see siehe voir ver vedi zie se katso lásd vezi см див patrz viz".split())


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


def _scrambled(value: str) -> bool:
    """A symbol in it, or letters and digits that change case and kind often, as a generated
    password does (`FrmJ2n86rA4cnA`; not a product, `Windows11`, `GalaxyS23Ultra`)."""
    changes = sum(
        a.isupper() != b.isupper() or a.isdigit() != b.isdigit()
        for a, b in zip(value, value[1:], strict=False)
    )
    return _SPECIAL.search(value) is not None or (len(value) >= 12 and changes >= 6)


def _nominal(text: str, word: re.Match, meaning: _Meaning) -> bool:
    """Whether `word` ends a clause with no verb, or with its language's copula at its end:
    "X okul portalının yeni şifresi.", "X رمز جدید پرتال مدرسه است" (a language whose verb comes
    last; in English "Python3 hashes the password." has its verb before)."""
    if meaning.after is None:
        return False
    clause = _CLAUSE.match(text, word.end()).group()
    if not clause.strip():
        return True
    return len(clause) <= 40 and re.search(rf"(?:{meaning.after.pattern})\s*$", clause) is not None


_CLAUSE = re.compile(r"[^.!?。！？\n,،，、]*")


def _before(
    text: str, word: re.Match, meaning: _Meaning, password: Callable[[str], bool]
) -> tuple[str, int, int] | None:
    """A value that opens the line, then a dash, a particle or a copula and a few words, then
    `word`: "Tapuach!Zahav22 — זו הסיסמה", "Hanabi_2016 がパスワード", "Midsommar&Sill7 är nya
    lösenordet", "Gulab#Jamun42 — यह स्कूल पोर्टल का नया पासवर्ड है"."""
    at = word.start()
    earliest = max(0, at - 120)  # the value, a dash and a few words: no further
    line = text.rfind("\n", earliest, at) + 1
    if meaning.after is not None and (m := _ADJACENT.search(text, earliest, at)):
        # a language whose verb comes last says the value just before the word, anywhere in
        # the line: "root ve FrmJ2n86rA4cnA şifresiyle giriyorsun"
        value = m.group("v")
        if _STRONG.search(value) and _scrambled(value) and password(value):
            return "password", m.start("v"), m.end("v")
    if line == 0 and earliest > 0:
        return None
    m = _LEADING.match(text, line, at)
    if m is None:
        return None
    gap = m.group("gap")
    particle = _PARTICLE.match(gap)
    # "Harbor2024! (new router password)"
    paren = gap.lstrip().startswith("(") and ")" in text[word.end() : word.end() + 40]
    if (
        particle is None
        and not paren
        and meaning.first.match(gap) is None
        and not _nominal(text, word, meaning)
    ):
        return None
    if len(gap) > (14 if particle else 70) or len(gap.split()) > 8:
        return None
    if any(c.isdigit() for c in gap) or _WITH.search(gap):
        return None
    value = m.group("v")
    if _SHAPED.search(value) and password(value):
        return "password", m.start("v"), m.end("v")
    return None
