"""Recall: keyword (FTS5/BM25), semantic (cosine) and hybrid search over memories.

A search answers in three steps. The candidates (the best by meaning and the best by
keywords, and when the query names a time, the best made then) are scored on calibrated
signals (`ranking`). Then one decision about the query: is it about anything stored at all
(`ranking.about_something`)? A keyboard mash gets nothing. Otherwise its best matches are
returned up to the limit asked, each with its band (strong, partial, weak), never cut
one by one: a weak match, marked weak, beats an empty screen. Memories made in the time
the query names come first (`dates`), and turns of one thread lend each other context.
"""

from __future__ import annotations

import contextlib
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from app.core import dates
from app.core.errors import InputError
from app.core.memory import public_dict
from app.core.search.meaning import Meaning
from app.core.search.ranking import (
    PARTIAL,
    STRONG_NEAR_BEST,
    WORDS_SAY_SO,
    Band,
    Evidence,
    Scored,
    Weights,
    about_something,
    agreed,
    agreement_of,
    band_among,
    band_of,
    combine,
    crowd_raised,
    holds_question,
    in_effect,
    keyword_relevance,
    personal,
    prominence_of,
    rare_name,
    rare_word,
    searchable,
    standout_of,
    unsupported,
    vector_relevance,
    weights_from,
)
from app.core.settings import Settings
from app.core.storage import fts
from app.core.storage.store import Filters, Store

MODES = ("hybrid", "semantic", "keyword")
# With a core to spare, the query is embedded here while the calling thread runs the keyword
# search: llama.cpp and SQLite both release the GIL, so a hybrid recall costs the longer of
# the two, not their sum (at 100k memories each takes about 4 ms: 10.1 -> 7.3 ms). With one
# core busy elsewhere the two threads would share the last one: no gain, so no thread.
# The embedder's lock keeps it one at a time.
_EMBEDDING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemo-query-embedding")
THREAD_CONTEXT = 0.3  # a turn's neighbours lend it this share of their mean relevance
NEAR = timedelta(days=2)  # a memory this close to the time a query names counts as in it
# In a collection of many subjects, a relevance under this is no match at all: the cosine
# noise of a misspelt word's embedding ("kuberntes" listed the Porto trip and the dentist)
NEGLIGIBLE = 0.05
HELD_WHOLE = PARTIAL + 0.02  # keyword relevance of a memory holding every word asked
HELD_PHRASES = 4  # ... for queries of at most this many phrases


@dataclass
class RecallResult:
    """What a search found, in which mode, and anything the user should know about it."""

    query: str
    mode: str
    results: list[Scored] = field(default_factory=list)
    notice: str | None = None
    # In effect: vector and keyword scaled so the larger is 1, prominence as its share of a
    # score (weight_prominence / 3): `ranking.in_effect`.
    weights: Weights | None = None
    corrections: dict[str, str] = field(default_factory=dict)  # typed word → stem matched
    crowd: tuple[float, float] | None = None  # the query's cosines: centre, σ (meaning)
    ideal: float = 0.0  # the BM25 a memory holding the whole query would approach
    window: dates.Window | None = None  # the time the query named, when memories were made in it

    def to_dict(self, explain: bool = False) -> dict:
        """The JSON shape of `mnemo recall --json`: each result is a memory's public shape
        with its `score` and `band`."""
        out = {"query": self.query, "mode": self.mode, "results": []}
        for r in self.results:
            signals = None
            if explain:
                signals = {
                    "vector": r.vector,
                    "vector_norm": r.vector_norm,
                    "keyword": r.keyword,
                    "keyword_norm": r.keyword_norm,
                    "prominence": r.prominence,
                    "prominence_norm": r.prominence_norm,
                    "relevance": r.relevance,
                    "in_window": r.in_window,
                }
            item = public_dict(r.memory, score=r.score, signals=signals)
            item["band"] = str(r.band or band_of(r.score))
            out["results"].append(item)
        if self.window is not None:
            out["window"] = {
                "words": self.window.text,
                "since": self.window.since,
                "until": self.window.until,
            }
        if self.notice:
            out["notice"] = self.notice
        return out


@dataclass
class _Gathered:
    """A query's candidates with their raw signals, and what the search learnt on the way."""

    candidates: list[Scored]
    plan: fts.KeywordPlan
    lookup: object | None  # vectors.ScoreLookup: every memory's cosine, and the crowd
    best_cosine: float | None


def _embedding(meaning: Meaning, text: str, wanted: str) -> Future | None:
    if wanted not in ("hybrid", "semantic"):
        return None
    if wanted == "hybrid" and meaning.embedder.spare_core():
        return _EMBEDDING.submit(meaning.embedder.embed_query, text)
    embedding = Future()  # embedded here, on the calling thread
    embedding.set_result(meaning.embedder.embed_query(text))
    return embedding


def _gather(
    store: Store,
    meaning: Meaning,
    settings: Settings,
    text: str,
    wanted: str,
    pool: int,
    filters: Filters,
    prefix: bool,
    window: dates.Window | None,
    exact: dates.Window | None = None,
) -> _Gathered:
    """The best `pool` memories by meaning and by keywords (and, with a window, the best
    made in it, and every memory made in the `exact` time named when they are few), each
    with its cosine and BM25."""
    embedding = _embedding(meaning, text, wanted)
    keyword_hits: dict[int, float] = {}
    plan = fts.KeywordPlan(expression=None)
    scopes = [filters] if window is None else [filters, replace(filters, within=_within(window))]
    try:
        if wanted in ("hybrid", "keyword"):
            plan = store.keywords.plan(text, prefix=prefix)
            if plan.expression:
                for scope in scopes:
                    hits = store.keywords.search(
                        plan.expression,
                        scope,
                        pool,
                        common_only=plan.common_only,
                        parts=plan.parts,
                    )
                    keyword_hits.update(hits)
            if plan.exact_expression:  # the word being typed, as itself: the better score
                for scope in scopes:
                    exact = store.keywords.search(
                        plan.exact_expression, scope, pool, parts=plan.exact_parts
                    )
                    for seq, bm25 in exact:
                        keyword_hits[seq] = max(bm25, keyword_hits.get(seq, 0.0))
    except BaseException:
        if embedding is not None:  # never left running behind an error
            with contextlib.suppress(Exception):
                embedding.result()
        raise
    qvec = embedding.result() if embedding is not None else None
    vector_hits: dict[int, float] = {}
    lookup, best_cosine = None, None
    if qvec is not None:
        for scope in scopes:
            allowed = store.seqs_matching(scope) if scope.active else None
            hits, found = meaning.index.top(qvec, pool, allowed, settings["min_similarity"])
            if lookup is None:  # the whole collection's: the crowd, any memory's cosine
                lookup, best_cosine = found, hits[0][1] if hits else None
            vector_hits.update(hits)
    if plan.exact_identifier and keyword_hits:
        vector_hits = {}  # `E_CONN_RESET`: the memories that hold it, not look-alikes
    made_then = _made_then(store, filters, window, exact, pool) if wanted != "keyword" else []
    if lookup is not None:
        lookup.fill([*keyword_hits, *made_then])  # their cosines, read in one pass
    seqs = dict.fromkeys([*vector_hits, *keyword_hits, *made_then])
    memories = store.by_seqs(seqs, filters)
    candidates = []
    for seq in seqs:
        memory = memories.get(seq)
        if memory is None:
            continue  # trashed or filtered out since the index was read
        vector = vector_hits.get(seq)
        if vector is None and lookup is not None:
            vector = lookup.get(seq)
        found = seq in vector_hits or seq in keyword_hits  # not only made on the day named
        candidates.append(
            Scored(
                memory=memory, seq=seq, vector=vector, keyword=keyword_hits.get(seq), found=found
            )
        )
    return _Gathered(candidates, plan, lookup, best_cosine)


def _within(window: dates.Window) -> tuple[str | None, str | None]:
    return window.since, window.until


def _made_then(
    store: Store, filters: Filters, near: dates.Window | None, exact: dates.Window | None, pool: int
) -> list[int]:
    """The memories made in the very time a query names, when they are few enough to all be
    candidates (a day of a conversation): whatever their cosine, the day's own memories are
    ranked, not only those close enough to the rest of the question to be found by it (the
    turns of April 27th lost to those of the 28th that were)."""
    if near is None or exact is None:
        return []
    scope = replace(filters, within=_within(exact))
    if store.count(scope) > pool:
        return []
    return list(store.seqs_matching(scope))


def _held_whole(
    candidates: list[Scored], k: np.ndarray, plan: fts.KeywordPlan, store: Store
) -> np.ndarray:
    """A memory holding every word the query asks is at least partly about it (HELD_WHOLE),
    however long: BM25 divides a word's weight by the memory's length, so a word at the end
    of a 300,000-character memory, held by no other, scored as a weak match and was not
    shown (issue 22). Only for queries of a few phrases, each held by under half the
    memories (a word most memories hold says nothing), none missing from the collection."""
    phrases = plan.phrases
    low = [i for i, c in enumerate(candidates) if c.keyword and k[i] < HELD_WHOLE]
    if (
        not low
        or not phrases
        or len(phrases) > HELD_PHRASES
        or plan.common_only
        or any(p.docs == 0 or p.docs * 2 > plan.total for p in phrases)
    ):
        return k
    seqs = {candidates[i].seq for i in low}
    for p in phrases:
        seqs &= store.keywords.holding(p.match(exact=True), list(seqs))
        if not seqs:
            return k
    out = k.copy()
    for i in low:
        if candidates[i].seq in seqs:
            out[i] = HELD_WHOLE
    return out


def _calibrate(
    candidates: list[Scored], gathered: _Gathered, store: Store, settings: Settings, wanted: str
) -> list[Scored]:
    """Each candidate's relevance by meaning and by keywords, and its prominence; in hybrid
    mode, keyword matches far from the query's meaning with little of its words are not
    candidates (`ranking.unsupported`)."""
    if not candidates:
        return []
    values = prominence_of(
        [c.memory for c in candidates], store.max_observations(), datetime.now(UTC)
    )
    lookup, plan = gathered.lookup, gathered.plan
    mean, std = lookup.crowd if lookup is not None else (0.0, 1.0)
    cosines = np.array([c.vector if c.vector is not None else -1.0 for c in candidates])
    bm25 = np.array([c.keyword or 0.0 for c in candidates])
    v = vector_relevance(cosines, mean, std)
    k = _held_whole(candidates, keyword_relevance(bm25, plan.ideal), plan, store)
    for i, c in enumerate(candidates):
        c.prominence = float(values[i])
        c.vector_norm, c.keyword_norm = float(v[i]), float(k[i])
    if wanted == "hybrid" and not plan.exact_identifier:
        cosines = np.array([np.nan if c.vector is None else c.vector for c in candidates])
        weak = unsupported(cosines, k, settings["min_similarity"])
        candidates = [c for c, w in zip(candidates, weak, strict=True) if not w]
    return candidates


def _with_threads(
    ranked: list[Scored],
    store: Store,
    filters: Filters,
    weights: Weights,
    lookup,
    crowd: tuple[float, float],
) -> list[Scored]:
    """Turns of one conversation lend each other context: each candidate's relevance gains
    THREAD_CONTEXT of its neighbours' mean, and a neighbour that was no candidate joins with
    what its neighbours lend it ("The official opening night is tomorrow" answers when the
    turn before it asked about the dance studio)."""
    by_seq = {c.seq: c for c in ranked}
    around = store.neighbours(list(by_seq))
    if not around:
        return ranked
    new = {n for pair in around.values() for n in pair if n is not None and n not in by_seq}
    if new:
        memories = store.by_seqs(new, filters)
        if lookup is not None:
            lookup.fill(list(memories))
        joined = []
        for seq, memory in memories.items():
            cosine = lookup.get(seq) if lookup is not None else None
            c = Scored(memory=memory, seq=seq, vector=cosine)
            if cosine is not None:
                c.vector_norm = float(vector_relevance(np.array([cosine]), *crowd)[0])
            joined.append(c)
        if joined:
            values = prominence_of(
                [c.memory for c in joined], store.max_observations(), datetime.now(UTC)
            )
            for c, p in zip(joined, values, strict=True):
                c.prominence = float(p)
            combine(joined, weights)
            by_seq.update({c.seq: c for c in joined})
        around.update(store.neighbours(list(memories)))
    own = {seq: c.relevance for seq, c in by_seq.items()}
    for seq, c in by_seq.items():
        pair = around.get(seq, (None, None))
        lent = THREAD_CONTEXT * sum(own.get(n, 0.0) for n in pair if n is not None) / 2
        if lent > 0:
            share = in_effect(weights).prominence
            c.relevance = 1.0 - (1.0 - c.relevance) * (1.0 - lent)
            c.score = c.relevance * (1 - share + share * c.prominence_norm)
    return sorted(
        by_seq.values(),
        key=lambda c: (-c.score, -(c.vector if c.vector is not None else -1), c.seq),
    )


# What a question about a time asks besides the time: "what did I note yesterday", "show me
# last week", "what happened in 2023", "what topic did we talk about on April 27th" ask for
# what was stored then, nothing more.
_ASKING = frozenset(
    """note notes noted memory memories remember remembered happen happens happened happening
    show list tell thing things anything everything something stuff write wrote written
    store stored save saved say said log logged record recorded jot jotted do did done
    get got add added entry entries talk talked talking discuss discussed discussing
    discussion discussions conversation conversations chat chats chatted chatting topic
    topics subject subjects speak spoke spoken mention mentioned told""".split()
)


# Words that say how a query asks, not what about: one's memory ("what did I note about the
# boiler", "remind me how billing gets deployed" ask about the boiler, billing's deploys)
# and light verbs. "What happened at ..." asks about what happened.
_RECALLING = frozenset(
    """note notes noted memory memories remember remembered remind reminds recall recalled
    forget forgot forgotten show list tell told say said thing things anything everything
    something stuff write wrote written store stored save saved jot jotted log logged
    record recorded mention mentioned do does did done get gets got getting""".split()
)


_SENTENCE = re.compile(r"(?<=[.?!;:])\s+|\n+")


def asked(text: str, phrases: list[fts.Phrase]) -> list[list[int]]:
    """What a query asks, sentence by sentence: for each sentence, the indices of its
    phrases that say what it asks about, not that it asks one's memory (`_RECALLING`).
    A prompt may ask several things ("From now on, write scripts in TypeScript. How many
    layers of béchamel does grandma's lasagne need?"): a memory holds what was asked when
    it holds one sentence's words."""
    index = {tuple(p.words): i for i, p in enumerate(phrases)}
    groups = []
    for sentence in _SENTENCE.split(text):
        words = [tuple(w) for w in fts.terms(sentence)]
        group = sorted({index[w] for w in words if w in index})
        group = [i for i in group if not all(w in _RECALLING for w in phrases[i].words)]
        if group:
            groups.append(group)
    return groups


def only_time(rest: str) -> bool:
    """Whether a query, its time words taken out, asks for nothing but what was stored
    then (`what did I note`, `show me`, nothing at all)."""
    return all(w in _ASKING for phrase in fts.terms(rest) for w in phrase)


def _only_time(
    store: Store,
    query: str,
    mode: str,
    window: dates.Window,
    filters: Filters,
    limit: int,
) -> RecallResult:
    """A query that is only a time (`yesterday`, `what did I note last week`): what was
    stored then, newest first, each a strong match for what was asked; nothing, said so,
    when nothing was stored then."""
    scope = replace(filters, within=_within(window))
    newest = store.listing(scope, order="created_at DESC", limit=limit)
    if not newest:
        notice = f"nothing was stored {window.text}"
        return RecallResult(query=query, mode=mode, notice=notice, window=window)
    results = [
        Scored(memory=m, seq=i, relevance=1.0, score=1.0, band=Band.STRONG, in_window=True)
        for i, m in enumerate(newest)
    ]
    said = window.describe()
    notice = f"memories {said}" if said.startswith(("since", "before")) else f"memories from {said}"
    return RecallResult(query=query, mode=mode, results=results, notice=notice, window=window)


def _timed(store: Store, filters: Filters, query: str, now: datetime | None) -> dates.TimedQuery:
    """The time a query names and the rest of it: a time in words (`dates.read_query`), or,
    for a question asking only what was said then, the day of the first or the last
    conversation, as what is stored says."""
    timed = dates.read_query(query, now)
    ends = dates.read_ends(query) if timed.window is None else None
    if ends is None:
        return timed
    end, words, rest = ends
    if not only_time(rest):  # "the last time we talked about the dentist": the dentist
        return timed
    order = "created_at ASC" if end == "first" else "created_at DESC"
    edge = store.listing(filters, order=order, limit=1)
    window = dates.day_of(edge[0].created_at, words, now) if edge else None
    return dates.TimedQuery(rest=rest, window=window) if window else timed


def _usable_mode(wanted: str, meaning: Meaning, notices: list[str]) -> str:
    """The mode asked for, or keywords (with a notice saying why) when meaning is
    unavailable."""
    if wanted == "keyword" or meaning.available:
        return wanted
    if meaning.embedder is None:
        notices.append(f"semantic search unavailable ({meaning.problem}); showing keyword results")
    else:
        notices.append(f"{meaning.problem}; showing keyword results")
    return "keyword"


def _weights(wanted: str, settings: Settings) -> Weights:
    """The weights of a mode: one signal alone (with prominence), or the hybrid settings."""
    if wanted == "semantic":
        return Weights(vector=1.0, keyword=0.0, prominence=settings["weight_prominence"])
    if wanted == "keyword":
        return Weights(vector=0.0, keyword=1.0, prominence=settings["weight_prominence"])
    return weights_from(settings)


def _decide(
    ranked: list[Scored],
    evidence: Evidence,
    near: dates.Window | None,
    store: Store,
    filters: Filters,
    weights: Weights,
    lookup: object | None,  # vectors.ScoreLookup, as in Gathered
    plan: fts.KeywordPlan | None = None,
    singles_out: bool = True,
    asks: list[list[int]] | None = None,
) -> list[Scored]:
    """The answer (ADR 0009): nothing for a query about nothing stored; else every
    candidate with its thread's turns and its band, those matching in nothing but a low
    cosine left out in a collection of many subjects, those of the time named (or within
    two days of it) first: people tell of a day in the days after it (REALTALK: putting the
    named day's own memories before its neighbours' lost a third of the evidence of
    questions naming a day, R@5 per turn 0.77 -> 0.54)."""
    crowd = lookup.crowd if lookup is not None else None
    raised = crowd_raised(evidence)
    for r in ranked:
        r.in_window = near is not None and (
            near.contains(r.memory.created_at) or near.contains(r.memory.updated_at)
        )
    # A time named that singles out some memories, and a memory of then that matches the
    # rest of the question (or a collection all about its subject, as a chat): answered,
    # whatever else says.
    dated = (
        near is not None
        and singles_out
        and (raised or any(r.in_window and r.relevance > 0 and r.found for r in ranked))
    )
    if not ranked or not (dated or about_something(evidence)):
        ranked = []  # a query about nothing stored: nothing, rather than the least bad
    elif ranked:
        ranked = _with_threads(ranked, store, filters, weights, lookup, crowd or (0.0, 1.0))
    # Strong in hybrid: the signals agree, on the best agreed match or nearly, and the
    # memory holds the question's words (`ranking.holds_question`); a memory with no vectors
    # yet (or an exact identifier's match) is banded by its score, as in keyword mode
    exact_identifier = plan is not None and plan.exact_identifier
    hybrid = weights.vector > 0 and weights.keyword > 0 and not exact_identifier
    best = max((r.score for r in ranked if agreed(r.vector_norm, r.keyword_norm)), default=0.0)
    held = _held(store, plan, asks, ranked, best) if hybrid else {}
    for r in ranked:
        r.band = (
            band_among(
                r.score,
                r.vector_norm,
                r.keyword_norm,
                best,
                holds_question(held.get(r.seq), r.vector),
            )
            if hybrid and r.vector is not None
            else band_of(r.score)
        )
        r.in_window = near is not None and (
            near.contains(r.memory.created_at) or near.contains(r.memory.updated_at)
        )
    if plan is not None and weights.keyword > 0:  # a match through a correction: a guess
        guessed = store.keywords.through_guesses(
            plan, [r.seq for r in ranked if r.band is Band.STRONG]
        )
        for r in ranked:
            if r.seq in guessed:
                r.band = Band.PARTIAL
    if not raised:
        # A memory that matches in nothing but a cosine under its query's crowd is no match
        # in a collection of many subjects, made then or not ("what did I fix yesterday":
        # not yesterday's dishwasher note); in one all about the query's subject (one chat,
        # one project) closeness still ranks it (REALTALK per session: R@5 0.74 -> 0.76)
        ranked = [r for r in ranked if r.relevance >= NEGLIGIBLE]
    if near is not None:  # made in (or near) the time the query named: first
        ranked = sorted(ranked, key=lambda r: not r.in_window)
    return ranked


def _held(
    store: Store,
    plan: fts.KeywordPlan | None,
    asks: list[list[int]],
    ranked: list[Scored],
    best: float,
) -> dict[int, float | None]:
    """For each match that may be strong (a strong score, the signals agreeing, near the
    best), the share of what the query asks (`asked`) it holds (None: nothing to hold)."""
    maybe = [
        r.seq
        for r in ranked
        if r.score >= best - STRONG_NEAR_BEST
        and band_of(r.score) is Band.STRONG
        and agreed(r.vector_norm, r.keyword_norm)
    ]
    if not maybe:
        return {}
    if plan is None:
        return dict.fromkeys(maybe)
    return store.keywords.held(plan.phrases, maybe, asks)


def _words_held(store: Store, plan: fts.KeywordPlan, ranked: list[Scored]) -> bool:
    """Whether the best match by keywords, when they say so (`ranking.WORDS_SAY_SO`),
    holds every phrase of the query."""
    top = max(ranked, key=lambda c: c.keyword_norm, default=None)
    if top is None or top.keyword_norm < WORDS_SAY_SO or not plan.phrases:
        return False
    return store.keywords.held(plan.phrases, [top.seq])[top.seq] == 1.0


def _spellings(store: Store, corrections: dict[str, str], ranked: list[Scored]) -> list[str]:
    """The notice of typo corrections, as a shown memory spells them (a trashed memory's
    word is in the index too); none when nothing is shown."""
    if not corrections or not ranked:
        return []
    texts = [
        " ".join([r.memory.title, r.memory.text, *r.memory.tags, *(r.memory.keywords or [])])
        for r in ranked[:5]
    ]
    spelled = {typed: store.keywords.spelled(stem, texts) for typed, stem in corrections.items()}
    said = [f"“{t}” as “{w}”" for t, w in spelled.items() if w]
    return ["matched " + ", ".join(said)] if said else []


def recall(
    store: Store,
    meaning: Meaning,
    settings: Settings,
    query: str,
    mode: str | None = None,
    limit: int = 10,
    filters: Filters | None = None,
    prefix: bool = False,
    now: datetime | None = None,
) -> RecallResult:
    """Search memories: nothing for a query about nothing stored, else its best matches,
    best first, up to `limit`, each with a calibrated score and its band. Falls back to
    keywords (with a notice) when meaning is unavailable."""
    if mode is not None and mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if not query or not query.strip():
        raise InputError("nothing to search for: the query is empty")
    filters = filters or Filters()
    limit = max(1, min(int(limit), 1000))
    pool = max(limit * 5, 50)
    query, clipped = searchable(query)
    notices = [clipped] if clipped else []

    wanted = _usable_mode(mode or "hybrid", meaning, notices)

    if filters.active and store.count(filters) == 0:
        # Not "nothing relevant": nothing at all passes the filters (`--since next week`)
        return RecallResult(
            query=query, mode=wanted, notice="no memory passes the filters given (dates, tags…)"
        )
    timed = _timed(store, filters, query, now)
    window, near, text = timed.window, None, query
    singles_out = False
    if window is not None:
        # People tell of a day in the days after it ("yesterday I made pasta"), and a
        # conversation is dated when it began: the memories made within NEAR of the named
        # time count as made in it (REALTALK's tuning half: R@5 of questions naming a date
        # 0.87 -> 0.95 per session, 0.58 -> 0.69 per turn, against the exact window).
        near = window.widened(NEAR)
        if only_time(timed.rest):  # `yesterday`, `what did I note last week`
            return _only_time(store, query, wanted, window, filters, limit)
        then = store.count(replace(filters, within=_within(near)))
        if then == 0:
            notices.append(f"nothing was stored {window.text}; showing matches from any time")
            window = near = None
        else:
            text = timed.rest
            # A time every memory was made in singles none out ("what happened at the
            # climate summit this week" in a collection imported this week): no clue
            singles_out = then < store.count(filters)

    gathered = _gather(store, meaning, settings, text, wanted, pool, filters, prefix, near, window)
    candidates = _calibrate(gathered.candidates, gathered, store, settings, wanted)
    weights = _weights(wanted, settings)
    ranked = combine(candidates, weights)
    lookup = gathered.lookup
    crowd = lookup.crowd if lookup is not None else None
    evidence = Evidence(
        best=max((c.relevance for c in ranked), default=0.0),
        best_cosine=gathered.best_cosine if wanted != "keyword" else None,
        crowd_centre=crowd[0] if crowd is not None and wanted != "keyword" else None,
        collection=(
            store.count(filters)
            if filters.active
            else (len(meaning.index) if meaning.index is not None else 0)
        ),
        personal=personal(text),
        rare_word=rare_word([p.docs for p in gathered.plan.phrases], gathered.plan.total),
        standout=standout_of(np.array([np.nan if c.vector is None else c.vector for c in ranked])),
        agreement=agreement_of(
            np.array([c.vector_norm for c in ranked]), np.array([c.keyword_norm for c in ranked])
        ),
        keyword_best=max((c.keyword_norm for c in ranked), default=0.0),
        rare_name=rare_name(text, gathered.plan.phrases, gathered.plan.total),
        words_held=_words_held(store, gathered.plan, ranked),
    )
    ranked = _decide(
        ranked,
        evidence,
        near,
        store,
        filters,
        weights,
        lookup,
        gathered.plan,
        singles_out,
        asked(text, gathered.plan.phrases),
    )[:limit]

    notices += _spellings(store, gathered.plan.corrections, ranked)
    if wanted != "keyword" and meaning.available and meaning.missing:
        missing = meaning.missing
        notices.append(
            f"{missing} memor{'y is' if missing == 1 else 'ies are'} not embedded yet "
            "and can only be found by keywords"
        )
    return RecallResult(
        query=query,
        mode=wanted,
        results=ranked,
        notice="; ".join(notices) or None,
        weights=in_effect(weights),
        corrections=dict(gathered.plan.corrections),
        crowd=crowd,
        ideal=gathered.plan.ideal,
        window=window,
    )
