"""Keyword search: any user string as a safe FTS5 expression, planned against the index.

User text never reaches MATCH as typed. Each whitespace-separated chunk becomes one quoted
phrase made only of its word characters, so `E_CONN_RESET` or `config.yaml` match as the
identifiers they are, and `AND`, `NEAR`, `*`, `^`, `:` or quotes are plain words or nothing.

FTS5 indexes porter stems (`kubernetes` → `kubernet`); a `fts5vocab` table over that index
says how many memories hold each stem. `Lexicon.plan` uses it for:

- **Typo tolerance.** A word of 5+ letters that no memory holds, and that is not an
  identifier (digits, `_`), is corrected to a word of the collection one edit away (a
  missing, wrong, swapped or extra letter; stemmed as the index stems), the most common
  one first; words of 9+ letters may be two edits away. Words that exist are never
  corrected (`kuberntes` → `kubernetes`, `postgress` → `postgres`, `recieve` → `receive`),
  nor short forms of English words (`creds`, `params`, `config`: `short_form`) into a
  word that is not one (`creds` is no typo for the name `Credi`; `addres` is for `address`).
- **Long queries count every word**, within a bound: when a query has more than
  `MAX_PHRASES` phrases that occur in the collection, the rarest ones are kept, not the first.
- **What a full match is worth.** Each phrase's inverse document frequency (FTS5's formula)
  adds up to the query's *ideal*, the BM25 a memory holding every phrase would approach. A
  memory's BM25 over that ideal is how much of the query it holds, weighted by rarity:
  comparable across queries, unlike BM25 itself (`ranking.keyword_relevance`).
"""

from __future__ import annotations

import bisect
import logging
import math
import re
import struct
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

import apsw
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import extract

from app.core import paths
from app.core.errors import ModelError
from app.core.model.gguf_meta import read_strings
from app.core.storage import symbols

log = logging.getLogger(__name__)

MAX_PHRASES = 32
MAX_WORDS_PER_PHRASE = 16
# A word as the index's tokenizer reads one: letters, numbers, emoji and other symbols
# (`symbols`); punctuation and spaces separate words.
WORD_CHAR = rf"[\w{symbols.WORD_SYMBOLS}]"
_WORD = re.compile(WORD_CHAR + "+")

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
    # what apostrophes leave behind: didn't → didn t, we'll → we ll
    + "t s d ll m re ve didn doesn don isn aren wasn weren won wouldn shouldn couldn hasn "
    "haven hadn cannot".split()
)


def words(text: str) -> list[str]:
    """The runs of word characters of `text`: letters, numbers, emoji and other symbols
    (what FTS5's unicode61 tokenizer splits on, `symbols`)."""
    return _WORD.findall(text)


def terms(text: str, max_phrases: int = MAX_PHRASES) -> list[list[str]]:
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
        if len(phrases) >= max_phrases:
            break
    return phrases


LONG_QUERY = 8  # phrases; a longer query's ideal counts its 8 rarest known words
SMALL_COLLECTION = 20  # memories; see `plan` (words no memory holds)
MAX_CORRECTIONS = 4  # misspelt words corrected per query (each costs a few lookups)
MAX_QUERY_WORDS = 1_000  # a pasted page is searched by its rarest words among the first 1,000
TOKENIZER = (  # as memories_fts (m016)
    "porter",
    [
        "unicode61",
        "remove_diacritics",
        "2",
        "categories",
        symbols.CATEGORIES,
        "separators",
        symbols.SEPARATORS,
    ],
)
BM25_K1 = 1.2  # FTS5's constants
BM25_B = 0.75
IDF_FLOOR = 1e-6
SCORE_ALL = 20_000  # postings a query may match before it is narrowed (`narrowing`)
PAIRED = 4  # the rarest common phrases of a narrowed query whose pairs are ranked
KEPT_COUNTS = 10_000  # stems whose memory counts `Lexicon.docs` keeps between writes
SAMPLED_ABOVE = 50_000  # memories; past them a very common word's count is estimated …
ESTIMATED_SHARE = 0.25  # … when it is in this share of memories or more …
SAMPLE_SPANS, SAMPLE_WIDTH = 6, 1_500  # … in each of this many spans of this many
_VOCAB = "temp.mnemo_vocab"


@dataclass
class Phrase:
    """One quoted phrase of the query, its stems and how many memories hold it."""

    words: list[str]
    stems: list[str]
    docs: int
    prefix: bool = False
    corrected: str | None = None  # the collection's word used instead of a misspelt one

    def match(self, exact: bool = False) -> str:
        """This phrase as FTS5 syntax (a corrected word is searched by its stem); `exact`:
        a word being typed as itself, not as a prefix."""
        if self.corrected is not None:
            return f'"{self.corrected}"' + (" *" if self.prefix else "")
        return '"' + " ".join(self.words) + '"' + (" *" if self.prefix and not exact else "")


@dataclass
class KeywordPlan:
    """What a query looks for in the keyword index, and what a full match would score."""

    expression: str | None
    phrases: list[Phrase] = field(default_factory=list)
    # The expression with the word being typed as itself: a memory holding exactly what was
    # typed scores as a finished query would score it, above the longer words it begins
    # (`OPS-216` above `OPS-2165`, which the prefix alone scores alike). None: no such word.
    exact_expression: str | None = None
    ideal: float = 0.0  # BM25 of a memory holding every phrase, before saturation
    corrections: dict[str, str] = field(default_factory=dict)  # typed → collection word
    left_out: int = 0  # common phrases left out of a long query
    common_only: bool = False  # every phrase is in half the memories or more (see `plan`)
    total: int = 0  # memories in the index (BM25's N)
    # (FTS5 phrase, memories holding it) of `expression` and of `exact_expression`:
    # what `narrowing` needs to leave out the rows that cannot rank
    parts: list[tuple[str, int]] = field(default_factory=list)
    exact_parts: list[tuple[str, int]] = field(default_factory=list)

    @property
    def exact_identifier(self) -> bool:
        """Whether the query is one identifier-like token (`E_CONN_RESET`, `a.yaml`)."""
        return len(self.phrases) == 1 and _identifier(self.phrases[0].words)


_DICTIONARY: frozenset[str] | None = None  # stems of `dictionary_words`, made once
_SORTED_WORDS: list[str] | None = None  # `dictionary_words`, sorted (`short_form`), made once
# A short form begins a word at least this many letters longer (`cred` → `credentials`): a
# word missing its last letter (`tomatoe`, `managemen`) is a typo, not a short form
SHORT_FORM_GAP = 3
SHORT_FORM_LETTERS = (4, 6)  # how long a short form is, a plural `s` aside (`cred`, `config`)
_WARNED = False  # that the bundled model's word list is missing


def dictionary_words() -> list[str]:
    """English words and names: the whole-word tokens of the bundled model's vocabulary
    (BERT's uncased WordPiece, about 21,700 of them), read from its GGUF file in about
    10 ms; [] when the bundled model is missing. A word here is never taken for a typo."""
    try:
        tokens = read_strings(paths.DEFAULT_MODEL, "tokenizer.ggml.tokens")
    except ModelError as exc:
        global _WARNED
        if not _WARNED:  # once: it is asked again at every plan until the model is back
            log.warning("%s: typos are corrected without an English word list", exc)
            _WARNED = True
        return []
    # Word-start tokens carry the phantom space '▁' (`converter.py`); pieces do not.
    return [t[1:] for t in tokens if t.startswith("▁") and t[1:].isascii() and t[1:].isalpha()]


def short_form(word: str) -> bool:
    """Whether `word` reads as a short form of English words: 4 to 6 letters, a plural `s`
    aside, that begin a dictionary word (`dictionary_words`) at least SHORT_FORM_GAP letters
    longer (`creds` of credentials, `params`, `config`, `envs`, `certs`). Such a word is
    never corrected into a collection word that is no dictionary word: `creds` was
    "corrected" to a painter's name, Credi, one letter away (`addres` still becomes
    `address`). False when the bundled model is missing."""
    global _SORTED_WORDS
    if _SORTED_WORDS is None:
        words = dictionary_words()
        if not words:  # asked again next time, not cached (as `Lexicon.is_word`)
            return False
        _SORTED_WORDS = sorted({w.lower() for w in words})
    base = word.lower()
    if base.endswith("s") and not base.endswith("ss"):
        base = base[:-1]
    if not SHORT_FORM_LETTERS[0] <= len(base) <= SHORT_FORM_LETTERS[1]:
        return False
    i = bisect.bisect_left(_SORTED_WORDS, base)
    while i < len(_SORTED_WORDS) and _SORTED_WORDS[i].startswith(base):
        if len(_SORTED_WORDS[i]) >= len(base) + SHORT_FORM_GAP:
            return True
        i += 1
    return False


def _cased_identifier(word: str) -> bool:
    """`userId`, `EACCES`, `getUserName`: a capital after the first letter marks a name
    someone typed exactly, not an English word to correct."""
    return any(ch.isupper() for ch in word[1:])


def _identifier(words: list[str]) -> bool:
    joined = "".join(words)
    return len(words) > 1 or any(ch.isdigit() for ch in joined) or "_" in joined


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


SCORER = "mnemo_common_bm25"


def register_scorer(conn: apsw.Connection) -> None:
    """`mnemo_common_bm25(memories_fts, weight, …)`: FTS5's bm25() of a query whose every
    phrase is in half the memories or more (each weighs FTS5's idf floor, 1e-6), with the
    column weights given and then with the last (labels) at 0, packed as two doubles.

    FTS5's own bm25() first counts the memories holding each phrase, a pass over each
    phrase's whole list: 70 ms for the three most common words of a million memories, for
    a weight it then floors anyway. This one reads only the rows it ranks (about 10 µs a
    row in Python; `Store` ranks at most COMMON_POOL of them)."""

    def score(api: apsw.FTS5ExtensionApi, *weights: float) -> bytes:
        average = api.column_total_size(-1) / max(api.row_count, 1)  # tokens in a row
        norm = BM25_K1 * (1 - BM25_B + BM25_B * api.column_size(-1) / average)
        full = text = 0.0
        for phrase in range(api.phrase_count):
            where = api.phrase_locations(phrase)
            counts = [len(offsets) for offsets in where]
            f = sum(w * c for w, c in zip(weights, counts, strict=False))
            t = f - weights[-1] * counts[-1] if len(counts) == len(weights) else f
            full += f * (BM25_K1 + 1) / (f + norm) if f else 0.0
            text += t * (BM25_K1 + 1) / (t + norm) if t else 0.0
        return struct.pack("<dd", full * IDF_FLOOR, text * IDF_FLOOR)

    conn.register_fts5_function(SCORER, score)


def shortest_prefix(total: int) -> int:
    """How many characters the word being typed needs before it is searched as the start
    of longer words, in a collection of `total` memories. FTS5 gathers every word starting
    with a prefix into one list before it reads a row: the first letter typed took 0.5 s at
    100k memories and 4.7 s at a million. `Lexicon.plan` measures the word's stem (FTS5
    takes the stem's start); shorter, the word is searched as itself (the meaning search
    still runs)."""
    return 1 if total <= 10_000 else 2 if total <= 100_000 else 3


def narrowing(parts: list[tuple[str, int]], total: int, wanted: int) -> list[str] | None:
    """FTS5 expressions to rank instead of the whole query made of `parts` (FTS5 phrase,
    memories holding it), or None to rank every row the query matches.

    FTS5 scores every row a query matches before it sorts them: about 0.6 µs a row, 40 ms
    for three words held by 65,000 of a million memories, where a search engine's
    block-max WAND skips the rows that cannot reach the top. The same idea in FTS5's terms:
    past SCORE_ALL postings, a memory holding a single common phrase of the query ranks
    below those holding a rare phrase or two phrases (BM25 adds up the phrases' weights,
    and a common phrase weighs least), so only those are ranked. With the phrases from the
    rarest, `p AND (q OR r …)` (every phrase rarer than p left out) matches the memories
    whose rarest phrase is p and that hold another, and scores them exactly as the whole
    query does (a phrase is counted once, and a missing one adds nothing); a memory holding
    a phrase left out scores less there, and exactly in the expression of its rarest
    phrase. One such expression for each rare phrase (memories adding up to SCORE_ALL / 2)
    and for the PAIRED - 1 rarest common ones, and each rare phrase alone: a memory that
    repeats one common word in a short text can lose its place (none of the best 50 in
    bench/keywords.py at a million); a hybrid search can still find it by meaning, keyword
    mode cannot. None when the
    ranked rows would be fewer than twice `wanted` (as if the phrases were independent)."""
    if sum(docs for _, docs in parts) <= SCORE_ALL or total <= 0 or len(parts) < 2:
        return None
    ordered = sorted(parts, key=lambda part: part[1])
    rare, budget = 0, SCORE_ALL // 2
    while rare < len(ordered) and ordered[rare][1] <= budget:
        budget -= ordered[rare][1]
        rare += 1
    while 0 < rare < len(ordered) and 2 * ordered[rare - 1][1] >= ordered[rare][1]:
        rare -= 1  # about as common as the first common phrase: treated alike
        budget += ordered[rare][1]
    paired = ordered[rare : rare + PAIRED]
    expected = (
        SCORE_ALL // 2
        - budget
        + sum(a * b / total for i, (_, a) in enumerate(paired) for _, b in paired[i + 1 :])
    )
    if expected < 2 * wanted:
        return None
    phrases = [phrase for phrase, _ in ordered]
    out = phrases[:rare]
    for i in range(rare + max(len(paired) - 1, 0)):
        rest = phrases[i + 1 :]
        if rest:
            others = " OR ".join(rest)
            out.append(
                f"{phrases[i]} AND ({others})" if len(rest) > 1 else f"{phrases[i]} AND {others}"
            )
    return out


def idf(docs: int, total: int) -> float:
    """FTS5's BM25 inverse document frequency (never below its floor of 1e-6)."""
    docs = min(docs, total)  # an index a little out of step with the table (doctor says)
    value = math.log((total - docs + 0.5) / (docs + 0.5))
    return value if value > 0 else 1e-6


class Lexicon:
    """Document frequencies and spelling corrections from one connection's FTS5 index."""

    def __init__(self, conn: apsw.Connection, moved: Callable[[], tuple[int, int, int]]):
        self._conn = conn
        self.state = moved  # what moved since: `Database.moved`, the one check
        self._tokenize = None
        self._ready = False
        self._corrected: dict[str, tuple[str, int] | None] = {}  # word → correction
        self._corrected_at: tuple[int, int, int] | None = None  # the index state they were made in
        self._docs: dict[str, int] = {}  # stem → memories holding it (`docs`)
        self._docs_at: tuple[int, int, int] | None = None  # the index state they were counted in
        self._spans: tuple[tuple[int, int, int], list[tuple[int, int, int]]] | None = None
        self._total: tuple[tuple[int, int, int], int] | None = None  # (index state, row count)

    def _prepare(self) -> None:
        if self._tokenize is None:
            self._tokenize = self._conn.fts5_tokenizer(TOKENIZER[0], TOKENIZER[1])
        if not self._ready:
            # A temp table: nothing is written to the database (read-only files work). A
            # rolled-back transaction can take it away, so each plan makes sure it exists.
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} "
                "USING fts5vocab(main, memories_fts, row)"
            )
            self._ready = True

    def is_word(self, stem: str) -> bool:
        """Whether `stem` is the stem of a dictionary word (`dictionary_words`)."""
        global _DICTIONARY
        if _DICTIONARY is None:
            words = dictionary_words()
            if not words:  # the bundled model is missing: asked again next time, not cached
                return False
            _DICTIONARY = frozenset(self.stems(" ".join(words)))
        return stem in _DICTIONARY

    def stems(self, text: str) -> list[str]:
        """The index's tokens for `text` (porter stems of its words)."""
        self._prepare()
        tokens = self._tokenize(
            text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False
        )
        return [t[0] for t in tokens]

    def total(self) -> int:
        """How many rows the index holds (BM25's N), read again only after a write: from
        FTS5's own count (its averages record, what `bm25()` reads) outside a transaction,
        else (or if that record cannot be read) by counting the memories, which read a
        whole index: 78 ms at 100k memories with a cold page cache."""
        state = self.state()
        if self._total is None or self._total[0] != state:
            count = None if self._conn.in_transaction else self._fts_rows()
            if count is None:
                count = self._conn.execute("SELECT count(*) FROM memories").fetchall()[0][0]
            self._total = (state, int(count))
        return self._total[1]

    def _fts_rows(self) -> int | None:
        """The row count at the head of FTS5's averages record (a varint; rowid 1 of its
        data table), None when it is not there."""
        rows = self._conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchall()
        if not rows or not isinstance(rows[0][0], bytes):
            return None
        value = 0
        for i, byte in enumerate(rows[0][0][:9]):
            if i == 8:  # a ninth byte gives all its 8 bits
                return (value << 8) | byte
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                return value
        return None

    def docs(self, stems: list[str], estimate: bool = False) -> dict[str, int]:
        """How many memories hold each stem (stems no memory holds are absent).

        fts5vocab counts them by reading each stem's whole list of memories (0.4 ms for a
        word in 2% of a million), so the counts are kept until the index changes: typing
        asks again for the words before the one being typed at every keystroke. With
        `estimate`, past SAMPLED_ABOVE memories a word common in every sampled span is
        counted from the sample (`_common_share`)."""
        self._prepare()
        state = self.state()
        if state != self._docs_at or len(self._docs) > KEPT_COUNTS:
            self._docs, self._docs_at = {}, state
        unique = [s for s in dict.fromkeys(stems) if s not in self._docs]
        total = self.total() if unique and estimate else 0
        if total > SAMPLED_ABOVE:  # a word in a quarter of the memories or more: estimated
            for stem in list(unique):
                share = self._common_share(stem)
                if share is not None:
                    self._docs[stem] = round(share * total)
                    unique.remove(stem)
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            found = dict(
                self._conn.execute(
                    f"SELECT term, doc FROM {_VOCAB} WHERE term IN ({marks})", part
                ).fetchall()
            )
            self._docs.update({stem: found.get(stem, 0) for stem in part})
        return {s: self._docs[s] for s in dict.fromkeys(stems) if self._docs.get(s)}

    def _common_share(self, stem: str) -> float | None:
        """The share of memories holding `stem` in SAMPLE_SPANS spans of SAMPLE_WIDTH
        memories spread over the collection (FTS5 seeks to each span) when it is at least
        ESTIMATED_SHARE in every one of them; else (or when the stem cannot be asked for as
        itself) None, and it is counted exactly. A word common in one period only (memories
        are in the order they were stored) is not taken for a common word. About 0.1 ms a
        word at a million memories, where counting a word most of them hold took 20 ms."""
        if self.searchable(stem) is None:
            return None
        state = self.state()
        if self._spans is None or self._spans[0] != state:
            low, high = self._conn.execute(  # two subqueries: each reads one end of the
                # tree; min() and max() in one SELECT read every row (62 ms at 100k, cold)
                "SELECT (SELECT min(seq) FROM memories), (SELECT max(seq) FROM memories)"
            ).fetchall()[0]
            step = max((high - low + 1) // SAMPLE_SPANS, SAMPLE_WIDTH)
            spans = []
            for start in range(low, high + 1, step):
                held = self._conn.execute(  # FTS5's table of sizes: a few pages a span
                    "SELECT count(*) FROM memories_fts_docsize WHERE id >= ? AND id < ?",
                    (start, start + SAMPLE_WIDTH),
                ).fetchall()[0][0]
                spans.append((start, start + SAMPLE_WIDTH, held))
            self._spans = (state, spans)
        found = rows = 0
        for start, end, held in self._spans[1]:
            here = self._conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ? "
                "AND rowid >= ? AND rowid < ?",
                (f'"{stem}"', start, end),
            ).fetchall()[0][0]
            if held and here < held * ESTIMATED_SHARE:
                return None  # not common here: counted exactly
            found, rows = found + here, rows + held
        return found / rows if rows else None

    def prefix_docs(self, prefix: str, total: int) -> int:
        """About how many memories hold a word starting with `prefix` (at most `total`)."""
        self._prepare()
        row = self._conn.execute(
            f"SELECT sum(doc) FROM {_VOCAB} WHERE term >= ? AND term < ?",
            (prefix, prefix + "\U0010ffff"),
        ).fetchall()
        return min(int(row[0][0] or 0), total)

    def correct(self, word: str, stem: str) -> tuple[str, int] | None:
        """(stem, docs) of the collection word closest to a misspelt one, or None.

        First every word one edit away (a missing, wrong, extra letter or two swapped),
        stemmed as the index stems and looked up exactly: the most common one wins.
        Words of 9+ letters may then be two edits away, stem to stem (same first letter).
        """
        self._prepare()
        letters = sorted(set("abcdefghijklmnopqrstuvwxyz") | set(word))
        splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
        kinds = (
            [a + c + b for a, b in splits for c in letters],  # a missing letter
            [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]],  # wrong
            [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1],  # swapped
            [a + b[1:] for a, b in splits if b],  # an extra letter
        )
        found: dict[str, int] = {}
        for variants in kinds:
            # Porter may stem a variant far from it (`rates` → `oat`): keep stems that still
            # look like the word (same first letter, not much shorter).
            shortest = max(4, len(word) - 7)
            plausible = [
                s
                for s in self.stems(" ".join(variants))
                if s != stem and s[:1] == word[:1] and len(s) >= shortest
            ]
            for term, docs in self.docs(plausible).items():
                found.setdefault(term, docs)
        if found:  # the one sharing most of the word's beginning, then the most common
            best = max(found, key=lambda t: (_common_prefix(t, word), found[t], t))
            return best, found[best]
        if len(word) < 9 or len(stem) < 8:
            return None  # two edits only for long words: `uncultured` is not `unruptured`
        rows = self._conn.execute(
            f"SELECT term, doc FROM {_VOCAB} WHERE term >= ? AND term < ?",
            (stem[0], chr(ord(stem[0]) + 1)),
        ).fetchall()
        near = {t: d for t, d in rows if abs(len(t) - len(stem)) <= 2 and len(t) >= 6}
        hits = extract(stem, list(near), scorer=Levenshtein.distance, score_cutoff=2, limit=None)
        if not hits:
            return None
        best = min(hits, key=lambda hit: (hit[1], -near[hit[0]], hit[0]))[0]
        return best, near[best]

    def spelled(self, stem: str, texts: list[str]) -> str | None:
        """How `stem` is written in `texts` (the first word that stems to it), else None."""
        for text in texts:
            for word in _WORD.findall(text[:20_000]):
                if (
                    len(word) >= len(stem)
                    and word[:2].lower() == stem[:2]
                    and self.stems(word) == [stem]
                ):
                    return word.lower()
        return None

    def searchable(self, stem: str) -> str | None:
        """`stem` if FTS5 finds it as typed (it stems to itself), else None."""
        return stem if self.stems(stem) == [stem] else None

    def _corrected_word(self, word: str, stem: str) -> tuple[str, int] | None:
        state = self.state()
        if state != self._corrected_at:  # typing asks again at every keystroke
            self._corrected, self._corrected_at = {}, state
        if word not in self._corrected:
            self._corrected[word] = self.correct(word, stem)
        return self._corrected[word]

    def _typed_prefix(self, word: str, total: int, shorten: bool = True) -> tuple[str, int]:
        """(prefix, docs) for a word being typed. Past its stem (`runn` of `running`,
        stored as `run`) nothing starts with it: then, with `shorten`, the longest stem it
        starts with."""
        typed = self.stems(word)
        head = typed[-1] if typed else word
        docs = self.prefix_docs(head, total)
        if docs or not shorten or len(head) <= 3 or len(head) > 30:
            return head, docs
        shorter = [head[:n] for n in range(len(head) - 1, 2, -1)]
        found = self.docs(shorter)
        for candidate in shorter:
            if candidate in found:
                return candidate, self.prefix_docs(candidate, total)
        return head, 0

    def plan(self, text: str, prefix: bool = False) -> KeywordPlan:
        """The keyword plan of a query: phrases to match, corrections, and the ideal BM25."""
        text = unicodedata.normalize("NFC", text)  # as memories are stored
        self._ready = False
        self._prepare()
        chunks = terms(text, max_phrases=MAX_QUERY_WORDS)
        typing = prefix and bool(text.strip()) and not text[-1].isspace()
        last_words = (
            [w.lower() for w in words(text.split()[-1])][:MAX_WORDS_PER_PHRASE] if typing else []
        )
        if last_words and (not chunks or chunks[-1] != last_words):
            chunks.append(last_words)  # a stop word being typed may be the start of `shell`
        if not chunks:
            return KeywordPlan(expression=None)
        phrases = []
        for chunk in chunks:
            stems = self.stems(" ".join(chunk))
            if stems:
                phrases.append(Phrase(words=chunk, stems=stems, docs=0))
        if not phrases:
            return KeywordPlan(expression=None)
        total = max(self.total(), 1)
        if last_words and last_words == phrases[-1].words:
            stem = self.stems(last_words[-1])  # FTS5 takes the stem's start (`was` → `wa*`)
            if len(stem[-1] if stem else last_words[-1]) >= shortest_prefix(total):
                phrases[-1].prefix = True
            elif all(w in STOP_WORDS for w in last_words):
                phrases.pop()  # `a` on its way to `apple`, too short to be a prefix here
                if not phrases:
                    return KeywordPlan(expression=None)
        known = self.docs([s for p in phrases for s in p.stems], estimate=True)
        long_query = len(phrases) > LONG_QUERY
        cased = {w.lower() for w in words(text) if _cased_identifier(w)}
        corrections: dict[str, str] = {}
        for p in phrases:
            if p.prefix:
                # An identifier being typed is not shortened to a stem (`userId` is not
                # `user`); a word is: `runn`, `genera`, `polli` are on their way to running,
                # generalization, polling, whose stems (run, gener, poll) they pass.
                last = p.words[-1]
                head, tail = self._typed_prefix(last, total, shorten=last not in cased)
                if len(p.words) == 1 and head != p.stems[-1]:
                    p.corrected = head  # searched as a prefix; not a correction to announce
                p.docs = min([known.get(s, 0) for s in p.stems[:-1]] + [tail])
            else:
                p.docs = min(known.get(s, 0) for s in p.stems)
            word = p.words[0]
            if (
                p.docs == 0
                and not long_query  # a paragraph is not proofread (bounded cost)
                and len(corrections) < MAX_CORRECTIONS
                and len(p.words) == 1
                and 5 <= len(word) <= 30
                and word.isalpha()
                and word not in cased
                and not self.is_word(p.stems[0])  # `floor` is not a typo for `flour`
            ):
                # A word being typed is first a prefix; only when nothing starts with it is
                # it taken as a misspelt word.
                p.prefix, p.corrected = False, None
                fix = self._corrected_word(word, p.stems[0])
                if fix is not None and short_form(word) and not self.is_word(fix[0]):
                    fix = None  # `creds` is no typo for the name `Credi`; `addres` is one
                    # for `address`, `doctr` for `doctor` (short forms of longer words too)
                if fix is not None:
                    p.corrected = self.searchable(fix[0])
                    if p.corrected is None:
                        p.corrected = fix[0]
                        p.prefix = True  # a stem that stems further: match it as a prefix
                    p.docs = fix[1]
                    corrections[word] = fix[0]
        # A phrase no memory holds says the collection lacks part of the question. In a
        # small collection every word is common (FTS5's idf floor) and a missing one would
        # outweigh them all: there it counts as a word held by one memory.
        lacking = 1 if total < SMALL_COLLECTION else 0
        weight = {id(p): idf(max(p.docs, lacking), total) for p in phrases}
        if long_query:
            # A paragraph is not asked word for word: it is measured against its 8 rarest
            # words that the collection holds (words it lacks are the prose around them).
            rarity = sorted((weight[id(p)] for p in phrases if p.docs > 0), reverse=True)
            ideal = sum(rarity[:LONG_QUERY])
        else:
            ideal = sum(weight.values())
        matchable = [p for p in phrases if p.docs > 0]
        left_out = 0
        if len(matchable) > MAX_PHRASES:
            keep = sorted(matchable, key=lambda p: (not p.prefix, p.docs))[:MAX_PHRASES]
            kept = {id(p) for p in keep}
            left_out = len(matchable) - MAX_PHRASES
            matchable = [p for p in matchable if id(p) in kept]
        # A phrase in half the memories or more scores FTS5's idf floor (1e-6): next to a
        # rarer phrase it changes no order, yet matching it makes FTS5 rank nearly every
        # memory (149 ms at 100k). It is searched only when nothing rarer is asked.
        rare = [p for p in matchable if idf(p.docs, total) > 1e-6]
        common_only = bool(matchable) and not rare
        if rare:
            matchable = rare
        searched = {p.words[0] for p in matchable}
        # Rarest first, as `narrowing` asks them: FTS5 adds up the phrases' scores in this
        # order, so a narrowed memory's score is the whole query's to the last bit.
        matchable = sorted(matchable, key=lambda p: p.docs)
        expression = " OR ".join(p.match() for p in matchable) or None
        typed = any(p.prefix and p.corrected is None for p in matchable)

        def exact_docs(p: Phrase) -> int:
            """A typed word as itself is held by fewer memories than as a prefix."""
            if not p.prefix or p.corrected is not None:
                return p.docs
            return min(known.get(s, 0) for s in p.stems)

        # A phrase no memory holds as itself (`lo` on its way to `login`) matches nothing and
        # adds nothing to a score: left out, the expression is the same at every keystroke
        # until the word is one, and its answer is kept (18 ms at a million for `deploy lo`,
        # `deploy log`, … each: every memory holding `deploy` ranked again)
        exact = [p for p in matchable if exact_docs(p) > 0] if typed else []
        return KeywordPlan(
            expression=expression,
            exact_expression=" OR ".join(p.match(exact=True) for p in exact) or None,
            parts=[(p.match(), p.docs) for p in matchable],
            exact_parts=[(p.match(exact=True), exact_docs(p)) for p in exact],
            phrases=phrases,
            ideal=ideal * (BM25_K1 + 1),
            corrections={w: c for w, c in corrections.items() if w in searched},
            left_out=left_out,
            common_only=common_only,
            total=total,
        )
