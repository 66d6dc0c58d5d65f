"""The keyword index of the memories: FTS5 over their title, text, reasoning, tags and labels
(ADR 0016). What a query looks for (`plan`, through `fts.Lexicon`: stems, corrections,
prefixes, how many memories hold each) and the best matches ranked by BM25, re-ranked so a
memory's own labels never outweigh its text (`search`). The last few answers are kept until
the database changes; the trash is read once after each write.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

from app.core.storage import fts
from app.core.storage.db import Database, in_slices

if TYPE_CHECKING:
    from app.core.storage.store import Filters

KEPT_KEYWORD_ANSWERS = 8  # a keystroke asks up to four (main and exact, two scopes)
# BM25 weights of the keyword index's columns: title, text, reasoning, tags, labels.
KEYWORD_COLUMN_WEIGHTS = (2.0, 1.0, 1.0, 1.0, 1.0)
# of the labels' BM25, the share a memory whose text matches too gets (`KeywordIndex.search`)
LABEL_SHARE = 0.25
RERANK_POOL = 4  # `search` re-ranks the best 4 × limit by FTS5's BM25 …
RERANK_EXTRA = 1_000  # … but at most limit + 1,000 (`mnemo context` asks for 10,000)
COMMON_POOL = 1_000  # the newest matches ranked when a query holds only common words
OWN_SCORER_ABOVE = 50_000  # memories; see `_search` (common words)
KEPT_TRASH = 20_000  # trashed memories whose seqs `_trashed` keeps between writes


def _bm25_weights(weights: tuple[float, ...]) -> tuple[str, str]:
    """bm25()'s column weights as SQL: all of them, and the same without the labels."""
    full = ", ".join(str(float(x)) for x in weights)
    return full, ", ".join(str(float(x)) for x in (*weights[:-1], 0.0))


def _own_scorer(parts: list[tuple[str, int]], total: int) -> bool:
    """Whether a common-only query is scored by `fts.SCORER`, which gives every phrase
    FTS5's idf floor: past OWN_SCORER_ABOVE memories, for single words (not a prefix nor a
    phrase of several, whose planned counts are upper bounds) that clearly hold that
    floor (in 60% of memories or more: an estimated count may be a little off)."""
    return total > OWN_SCORER_ABOVE and all(
        " " not in phrase and not phrase.endswith("*") and docs >= 0.6 * total
        for phrase, docs in parts
    )


def _labels_once(rows, limit: int, labels_only: set[int] | None) -> list[tuple[int, float]]:
    """(seq, score) of the best `limit` of (seq, full BM25, BM25 without the labels) rows:
    a memory whose text holds what its labels match keeps LABEL_SHARE of their part, one
    whose labels alone hold a query word (`labels_only`, or no text match) all of it
    (`KeywordIndex.search`; None: no row's text and labels both match). Ties by seq."""
    if labels_only is None:
        return [(seq, full) for seq, full, _ in rows[:limit]]  # in that order already (SQL)
    scored = [
        (seq, text + LABEL_SHARE * (full - text) if text > 0 and seq not in labels_only else full)
        for seq, full, text in rows
    ]
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:limit]


class KeywordIndex:
    """The keyword index of one database connection (`Store.keywords`)."""

    def __init__(self, db: Database):
        self.db = db
        self.lexicon = fts.Lexicon(db.conn, db.moved)  # reads nothing until a query is planned
        fts.register_scorer(db.conn)
        # The last keyword answers, kept while the database is as it was when they came
        self._keyword_answers: dict[tuple, list[tuple[int, float]]] = {}
        self._keyword_version: tuple[int, int, int] | None = None  # see `_changes`
        self._held: dict[str, dict[int, bool]] = {}  # `holding`'s answers, by expression
        self._held_version: tuple[int, int, int] | None = None
        self._trash: tuple[tuple[int, int, int], int, frozenset[int] | None] | None = None

    def plan(self, query: str, prefix: bool = False) -> fts.KeywordPlan:
        """What `query` looks for in the keyword index (`fts.Lexicon.plan`)."""
        return self.lexicon.plan(query, prefix)

    def holding(self, expression: str, seqs: list[int]) -> set[int]:
        """Which of `seqs` hold a match of one FTS5 `expression` (a phrase of a plan). What
        was asked is kept until the database changes (as the keyword answers: a keystroke's
        keyword pass and its hybrid pass ask the same)."""
        if not seqs:
            return set()
        changes = self._changes()
        if changes != self._held_version or len(self._held) > KEPT_KEYWORD_ANSWERS * 8:
            self._held_version, self._held = changes, {}
        known = self._held.setdefault(expression, {})
        missing = [seq for seq in dict.fromkeys(seqs) if seq not in known]
        if missing:
            marks = ", ".join("?" * len(missing))
            rows = self.db.query(
                f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks})",
                (expression, *missing),
            )
            found = {r[0] for r in rows}
            known.update((seq, seq in found) for seq in missing)
        return {seq for seq in seqs if known[seq]}

    def held(
        self, phrases: list[fts.Phrase], seqs: list[int], groups: list[list[int]] | None = None
    ) -> dict[int, float | None]:
        """The share of a query's `phrases` each of `seqs` holds, each phrase as itself (not
        as a prefix); with `groups` (lists of phrase indices: a query's sentences), the share
        of the group it holds most of. None for every one when there is nothing to hold."""
        groups = [g for g in (groups if groups is not None else [range(len(phrases))]) if g]
        if not groups:
            return dict.fromkeys(seqs)
        wanted = sorted({i for g in groups for i in g})
        holding = {i: self.holding(phrases[i].match(exact=True), list(seqs)) for i in wanted}
        return {
            seq: max(sum(seq in holding[i] for i in g) / len(g) for g in groups) for seq in seqs
        }

    def through_guesses(self, plan: fts.KeywordPlan, seqs: list[int]) -> set[int]:
        """Which of `seqs` hold no word of a query with corrections as it was typed: they
        match through the corrections alone, a guess at what was meant (`creds` read as
        `credi`), never a strong match. None of them when nothing was corrected."""
        if not plan.corrections or not seqs:
            return set()
        typed = [
            p
            for p in plan.phrases
            if p.docs and not (len(p.words) == 1 and p.words[0] in plan.corrections)
        ]
        holding: set[int] = set()
        for phrase in typed:
            holding |= self.holding(phrase.match(), list(seqs))  # (`deplo` of `deploy`)
        return set(seqs) - holding

    def spelled(self, stem: str, texts: list[str]) -> str | None:
        """How an index stem is written in these texts (`fts.Lexicon.spelled`)."""
        return self.lexicon.spelled(stem, texts)

    def search(
        self,
        expression: str,
        filters: Filters,
        limit: int,
        weights: tuple[float, ...] = KEYWORD_COLUMN_WEIGHTS,
        common_only: bool = False,
        parts: list[tuple[str, int]] | None = None,
    ) -> list[tuple[int, float]]:
        """(seq, bm25) for the best FTS5 matches of a safe expression; higher is better.
        `parts`: the expression's phrases and how many memories hold each (`KeywordPlan`),
        so a query matching a large share of a large collection ranks only the rows that
        can reach the top (`fts.narrowing`).

        The last few answers are kept until the database changes (a write here, or a commit
        by another process): the popup's keyword pass and the hybrid pass that follows for
        the same keystroke run the FTS5 query once (issue 23)."""
        where, args = filters.sql()
        changes = self._changes()
        key = (expression, where, tuple(args), limit, weights, common_only, tuple(parts or ()))
        if changes != self._keyword_version:  # written since: every answer kept is stale
            self._keyword_version, self._keyword_answers = changes, {}
        if key not in self._keyword_answers:
            if len(self._keyword_answers) >= KEPT_KEYWORD_ANSWERS:
                del self._keyword_answers[next(iter(self._keyword_answers))]  # the oldest
            pool = min(limit * RERANK_POOL, limit + RERANK_EXTRA)
            narrow, own = None, False
            if parts and not common_only:
                narrow = fts.narrowing(parts, self.lexicon.total(), pool + limit)
            elif parts:
                own = _own_scorer(parts, self.lexicon.total())
            self._keyword_answers[key] = self._search(
                expression, filters, limit, weights, common_only, narrow, own
            )
        return list(self._keyword_answers[key])

    def _changes(self) -> tuple[int, int, int]:
        """Changes after any write to the database (`fts.Lexicon.state`)."""
        return self.db.moved()

    def _search(
        self,
        expression: str,
        filters: Filters,
        limit: int,
        weights: tuple[float, ...],
        common_only: bool,
        narrow: list[str] | None = None,
        own: bool = False,
    ) -> list[tuple[int, float]]:
        """`search`, asked of SQLite.

        A memory's labels repeat its text's salient words: counted in full beside the text
        they made a query sharing one of them look relevant ("beef wellington recipe"
        answered with the sourdough note). So the labels column counts LABEL_SHARE of its
        BM25 for a memory whose text holds every query word its labels match, and in full
        when some query word is in its labels only (a keyword or codename an agent or the
        user gave it). The best `limit` plus up to RERANK_EXTRA rows by the full BM25 carry
        both scores from one pass (two bm25() calls a row) and are re-ranked here (ADR 0006).

        `common_only` (every phrase in half the memories or more, `KeywordPlan`): such words
        tell memories apart by nothing but their frequency, and ranking all of them cost
        66 ms at 100k; the newest COMMON_POOL matches are ranked instead (8 ms). With
        `own` (`_own_scorer`) they are scored by `fts.SCORER` (FTS5's bm25() reads every
        memory holding them first: 70 ms at a million).

        `narrow` (`fts.narrowing`): the expressions whose matches are ranked instead, each
        memory keeping its best score of them (its true one); when fewer than the pool come
        back, every match is ranked."""
        full, text = _bm25_weights(weights)
        pool = min(limit * RERANK_POOL, limit + RERANK_EXTRA)
        if common_only and not own:
            where, args = filters.sql()
            rows = self.db.query(
                f"SELECT m.seq, f.full, f.text FROM (SELECT rowid, -bm25(memories_fts, {full}) "
                f"AS full, -bm25(memories_fts, {text}) AS text FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?) f "
                f"JOIN memories m ON m.seq = f.rowid WHERE 1{where} "
                "ORDER BY f.full DESC, m.seq LIMIT ?",
                (expression, max(COMMON_POOL, pool), *args, pool),
            )
            return _labels_once(rows, limit, self._labels_only(expression, rows))
        if common_only:  # FTS5's bm25() would first count each phrase's (many) memories
            where, args = filters.sql()
            newest = self.db.query(
                f"SELECT m.seq, f.scores FROM (SELECT rowid, {fts.SCORER}(memories_fts, {full}) "
                "AS scores FROM memories_fts WHERE memories_fts MATCH ? "
                f"ORDER BY rowid DESC LIMIT ?) f JOIN memories m ON m.seq = f.rowid WHERE 1{where}",
                (expression, max(COMMON_POOL, pool), *args),
            )
            scored = [(seq, *struct.unpack("<dd", scores)) for seq, scores in newest]
            rows = sorted(scored, key=lambda row: (-row[1], row[0]))[:pool]
            return _labels_once(rows, limit, self._labels_only(expression, rows))
        unfiltered = not (filters.active or filters.include_deleted or filters.only_deleted)
        # Without filters, as many more as the trash could take from them (none when empty)
        wanted = pool + (min(limit, self._trash_now()[0]) if unfiltered else 0)
        if narrow is None:
            rows = self._ranked(expression, filters, weights, wanted)
        else:
            best: dict[int, tuple[int, float, float]] = {}
            for part in narrow:
                for row in self._ranked(part, filters, weights, wanted):
                    if row[1] > best.get(row[0], (0, -math.inf))[1]:
                        best[row[0]] = row
            rows = sorted(best.values(), key=lambda row: (-row[1], row[0]))[:wanted]
        if unfiltered and wanted > pool:  # something is in the trash
            trashed = self._trashed([row[0] for row in rows])
            rows = [row for row in rows if row[0] not in trashed][:pool]
        if narrow is not None and len(rows) < pool:  # too few: rank every match
            return self._search(expression, filters, limit, weights, common_only)
        return _labels_once(rows, limit, self._labels_only(expression, rows))

    def _ranked(
        self, expression: str, filters: Filters, weights: tuple[float, ...], count: int
    ) -> list[tuple[int, float, float]]:
        """(seq, full BM25, BM25 without the labels) of the best `count` matches of one
        FTS5 expression, trashed memories included when there are no filters."""
        full, text = _bm25_weights(weights)
        # Ordered by the selected column: `ORDER BY bm25(…)` would be evaluated once more.
        scores = f"-bm25(memories_fts, {full}) AS full, -bm25(memories_fts, {text})"
        if not (filters.active or filters.include_deleted or filters.only_deleted):
            # Without filters the join with memories costs a lookup per match (a third of
            # the time when a common word matches everything): rank in FTS5 alone; the
            # caller drops trashed memories from the few best.
            return self.db.query(
                f"SELECT rowid, {scores} FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY full DESC, rowid LIMIT ?",
                (expression, count),
            )
        where, args = filters.sql()
        return self.db.query(
            f"SELECT m.seq, {scores} FROM memories_fts "
            f"JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ?{where} ORDER BY full DESC, m.seq LIMIT ?",
            (expression, *args, count),
        )

    def _trash_now(self) -> tuple[int, frozenset[int] | None]:
        """(how many memories are in the trash, their seqs while at most KEPT_TRASH), read
        from the trash's index once after each write."""
        changes = self._changes()
        if self._trash is None or self._trash[0] != changes:
            count = self.db.query("SELECT count(*) FROM memories WHERE deleted_at IS NOT NULL")
            trash = None
            if count[0][0] <= KEPT_TRASH:
                rows = self.db.query("SELECT seq FROM memories WHERE deleted_at IS NOT NULL")
                trash = frozenset(r[0] for r in rows)
            self._trash = (changes, count[0][0], trash)
        return self._trash[1], self._trash[2]

    def _trashed(self, seqs: list[int]) -> set[int]:
        """Which of these memories are in the trash: from the trash's seqs while it holds
        at most KEPT_TRASH (a lookup a memory in the table cost 0.4 ms for a recall's 250
        at 10k); else asked in slices (SQLite takes at most 32,766 variables, and
        `mnemo context` ranks up to 10,000)."""
        trash = self._trash_now()[1]
        if trash is not None:
            return {seq for seq in seqs if seq in trash}
        out: set[int] = set()
        for part, marks in in_slices(seqs):
            rows = self.db.query(
                f"SELECT seq FROM memories WHERE deleted_at IS NOT NULL AND seq IN ({marks})",
                tuple(part),
            )
            out.update(r[0] for r in rows)
        return out

    def _labels_only(
        self, expression: str, rows: list[tuple[int, float, float]]
    ) -> set[int] | None:
        """The rows whose labels hold a query word their text lacks (a keyword or codename
        someone gave), among those whose text and labels both match (None when there are
        none); for the others the two scores already say it. Made labels are the text's own
        words and never count."""
        both = [seq for seq, full, text in rows if text > 0 and full != text]
        if not both:
            return None
        asked = set(self.lexicon.stems(expression))  # the query's words, as indexed
        out: set[int] = set()
        for part, marks in in_slices(both):
            # Labels the text does not spell (one lower-cased copy of each memory's text)
            novel = self.db.query(
                "WITH m AS MATERIALIZED (SELECT seq, keywords, lower(title || ' ' || text || "
                f"' ' || reasoning || ' ' || tags) AS body FROM memories WHERE seq IN ({marks})) "
                "SELECT m.seq, j.value FROM m, json_each(m.keywords) j "
                "WHERE instr(m.body, lower(j.value)) = 0",
                tuple(part),
            )
            for seq, label in novel:
                if seq not in out and asked.intersection(self.lexicon.stems(str(label))):
                    out.add(seq)
        return out
