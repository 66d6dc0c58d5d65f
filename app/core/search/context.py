"""The memory block an AI agent injects at session start (design 004, D2, D3, D10).

Context signals (repository name, recently changed files, a feature description) form a
query; every live memory is scored (vector, keyword, prominence). When there are signals and
the query is about nothing stored (`ranking.about_something`, the same decision as recall's)
the block holds only the pinned ones; otherwise the memories at least partly about the query (weak
ones only when nearly as close as the best; and the pinned ones), best first, every category
among them getting a few entries, never padded with weak matches up to the limit; the
diagnostic line names how many shown are strong, partial and weak matches. The memories
shown count as recalled.
The block is fitted to a character budget (`ContextBlock.fit`): Claude Code cuts hook output
at about 10,000 characters, so long memories are shortened with a pointer to `mnemo show`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from app.core import paths
from app.core.display import written_by
from app.core.errors import InputError
from app.core.memory import Memory, public_dict
from app.core.origin import AGENT, Trust, marked
from app.core.search.meaning import Meaning
from app.core.search.ranking import (
    PARTIAL,
    STRONG,
    STRONG_NEAR_BEST,
    WORDS_SAY_SO,
    Band,
    Evidence,
    Weights,
    about_something,
    agreed,
    agreement_of,
    band_among,
    band_of,
    combine_arrays,
    cosine_crowd,
    holds_question,
    keyword_relevance,
    personal,
    prominence_array,
    rare_name,
    rare_word,
    searchable,
    standout_of,
    unsupported,
    vector_relevance,
    weights_from,
)
from app.core.search.recall import asked
from app.core.settings import Settings
from app.core.storage.store import Filters, Store

MIN_PER_CATEGORY = 3
MAX_FILES = 20
MAX_FEATURE_WORDS = 100
DEFAULT_MAX_CHARS = 9_000  # under Claude Code's ~10,000-character cap on injected hook output
MIN_MAX_CHARS = 500  # the header, the diagnostic line and one short entry
MAX_TEXT_CHARS = 1_200  # a longer text is shortened to this, at a sentence or word boundary
MAX_ENTRY_CHARS = 1_600  # a longer section (long "Why:" or references) is shortened too
MIN_TEXT_CHARS = 200  # never shortened below this to fit the budget: left out instead
HEADER = "## Memories from earlier sessions"
POINTER = "… (shortened; full text: mnemo show {id})"


def _git(cwd: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() if run.returncode == 0 else None


def feature_paragraph(path: Path) -> str:
    """The first paragraph of a feature description (text before the first `##`)."""
    try:
        text = paths.read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    head = text.split("\n## ", 1)[0]
    paragraphs = [p for p in head.split("\n\n") if p.strip() and not p.lstrip().startswith("#")]
    words = " ".join(paragraphs[0].split()).split() if paragraphs else []
    return " ".join(words[:MAX_FEATURE_WORDS])


def signals(cwd: Path, feature: Path | None = None, project: str | None = None) -> str | None:
    """The context query from git and a feature file, or None when there are no signals."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    name = project or (Path(top).name if top else None)
    files: list[str] = []
    if top:
        for base in ("HEAD~3", "HEAD~1"):
            changed = _git(cwd, "diff", "--name-only", f"{base}..HEAD")
            if changed is not None:
                files = [f for f in changed.splitlines() if f][:MAX_FILES]
                break
    description = feature_paragraph(feature) if feature else ""
    parts = []
    if name or description:
        parts.append(f"{name or ''}{': ' if name and description else ''}{description}".strip())
    if files:
        parts.append("Files: " + " ".join(files))
    query = ". ".join(p.rstrip(". ") for p in parts if p)
    return query or None


@dataclass
class Fitted:
    """What of a block fits in `max_chars`: the sections shown, best first, and the counts."""

    entries: list[tuple[Memory, float, str]]  # memory, score, its markdown section
    left_out: int
    shortened: int
    max_chars: int


@dataclass
class ContextBlock:
    """The selected memories and what the diagnostic line reports."""

    memories: list[tuple[Memory, float]]
    total: int
    query: str | None
    vector_matches: int = 0
    keyword_matches: int = 0
    model: str = ""
    semantic_problem: str | None = None
    weights: tuple[float, float, float] = field(default=(0.0, 0.0, 1.0))
    max_chars: int = DEFAULT_MAX_CHARS  # the budget `fit`, `markdown` and `to_dict` keep to
    bands: dict[str, Band] = field(default_factory=dict)  # memory id → band (with signals)
    held_back: int = 0  # live memories whose origins `inject_origins` does not trust

    def diagnostic(self, fitted: Fitted | None = None) -> str:
        """`*Memory: N entries from TOTAL | semantic: … | context: "…" | model: NAME*`

        With `fitted`, N counts the entries shown, and what was left out or shortened to fit
        the budget is said after TOTAL: `(5 left out, 3 shortened to fit 9,000 chars)`.
        """
        if fitted is None:
            return self._diagnostic(len(self.memories), 0, 0, 0, [m for m, _ in self.memories])
        return self._diagnostic(
            len(fitted.entries),
            fitted.left_out,
            fitted.shortened,
            fitted.max_chars,
            [m for m, _, _ in fitted.entries],
        )

    def _matches(self, shown: list[Memory]) -> str:
        """` | matches: 12 strong, 5 partial, 3 weak` (` | matches: none` when the query is
        about nothing stored); '' without signals, where prominence alone chose."""
        if not self.query or (self.semantic_problem and not self.bands and not shown):
            return "" if not self.query else " | matches: none"
        counts = {band: 0 for band in Band}
        for memory in shown:
            if memory.id in self.bands:
                counts[self.bands[memory.id]] += 1
        said = [f"{n} {band}" for band, n in counts.items() if n]
        return f" | matches: {', '.join(said) or 'none'}"

    def _diagnostic(
        self,
        shown: int,
        left_out: int,
        shortened: int,
        max_chars: int,
        memories: list[Memory] | None = None,
    ) -> str:
        if self.semantic_problem:
            semantic = f"semantic: unavailable ({_clip(self.semantic_problem, 120)})"
        else:
            semantic = (
                f"semantic: active (vector={self.vector_matches}, fts5={self.keyword_matches})"
            )
        notes = []
        if left_out:
            notes.append(f"{left_out} left out")
        if shortened:
            notes.append(f"{shortened} shortened")
        budget = f" ({', '.join(notes)} to fit {max_chars:,} chars)" if notes else ""
        matches = self._matches(memories or [])
        held = f" | {self.held_back} held back by inject_origins" if self.held_back else ""
        return (
            f"*Memory: {shown} entr{'y' if shown == 1 else 'ies'} from {self.total}{budget}"
            f"{matches}{held} | {semantic} | "
            f'context: "{_clip(self.query or "none", 80)}" | '
            f"model: {_clip(self.model, 60) or 'none'}*"
        )

    def fit(self, max_chars: int | None = None) -> Fitted:
        """The entries that fit in `max_chars` characters with the header and diagnostic line.

        Memories are taken best first. One whose text is longer than MAX_TEXT_CHARS, or whose
        section is longer than MAX_ENTRY_CHARS, is shortened: the text is cut at a sentence
        end (or else a word boundary) and followed by `… (shortened; full text: mnemo show
        ID)`; its "Why:" and "References:" lines stay whole when they fit beside it and are
        dropped otherwise. Near the end of the budget an entry is shortened to what is left,
        but never below MIN_TEXT_CHARS of text: an entry that cannot fit is left out and the
        next, less relevant ones are still tried (a short one may fit), so the order of
        relevance is kept among the entries shown. A heading, "Why:" or "References:" line is
        never cut, and a text never mid-word.
        """
        max_chars = check_max_chars(self.max_chars if max_chars is None else max_chars)
        n = len(self.memories)
        # The diagnostic line's longest form (every count at its largest) is set aside first.
        every = [m for m, _ in self.memories]
        longest = self._diagnostic(n, n, n, max_chars, every)
        remaining = max_chars - len(HEADER) - 2 - len(longest)
        entries: list[tuple[Memory, float, str]] = []
        shortened = 0
        for memory, score in self.memories:
            section = _section(memory, remaining - 2)  # each section ends with a blank line
            if section is None:
                continue
            text, cut = section
            entries.append((memory, score, text))
            shortened += cut
            remaining -= len(text) + 2
        return Fitted(entries, n - len(entries), shortened, max_chars)

    def markdown(self, max_chars: int | None = None) -> str:
        """The block to inject, at most `max_chars` long: one section per memory that fits
        (see `fit`), then the diagnostic line."""
        fitted = self.fit(max_chars)
        sections = "".join(f"{text}\n\n" for _, _, text in fitted.entries)
        return f"{HEADER}\n\n{sections}{self.diagnostic(fitted)}"

    def to_dict(self, max_chars: int | None = None) -> dict:
        """JSON form for `mnemo context --json`: the entries the markdown block shows (with
        their full text), and how many were left out or shortened there."""
        fitted = self.fit(max_chars)
        return {
            "query": self.query,
            "total": self.total,
            "diagnostic": self.diagnostic(fitted),
            "entries": [  # a band only where a query scored them (not prominence alone)
                {
                    **public_dict(m, score=s),
                    **({"band": str(self.bands[m.id])} if m.id in self.bands else {}),
                }
                for m, s, _ in fitted.entries
            ],
            "held_back": self.held_back,
            "left_out": fitted.left_out,
            "shortened": fitted.shortened,
            "max_chars": fitted.max_chars,
        }


PROMPT_HEADER = "## Memories that may bear on this prompt (Mnemo)"
PROMPT_MAX_CHARS = 2_500  # a few memories: every prompt pays for them in the agent's context
PROMPT_LIMIT = 3
PROMPT_QUERY_CHARS = 1_000  # a pasted file is not a query: its start says what it is about


def prompt_block(memories: list[Memory], max_chars: int = PROMPT_MAX_CHARS) -> tuple[str, list]:
    """The block injected before an agent answers a prompt: the memories given (strong
    matches, best first) that fit in `max_chars`, each shortened like the session block's;
    '' when none. Returns the block and the ids shown."""
    remaining = max_chars - len(PROMPT_HEADER) - 2
    sections, shown = [], []
    for memory in memories:
        section = _section(memory, remaining - 2)
        if section is None:
            continue
        sections.append(section[0])
        shown.append(memory.id)
        remaining -= len(section[0]) + 2
    if not sections:
        return "", []
    return PROMPT_HEADER + "\n\n" + "\n\n".join(sections) + "\n", shown


def check_max_chars(max_chars: int) -> int:
    """`max_chars` when it is a usable budget, else InputError."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int):
        raise InputError("--max-chars must be a whole number")
    if max_chars < MIN_MAX_CHARS:
        raise InputError(f"--max-chars must be at least {MIN_MAX_CHARS}")
    return max_chars


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 3] + "..."


def _heading(memory: Memory) -> str:
    facts = [memory.category, f"confidence {memory.confidence}"]
    if memory.observation_count > 1:
        facts.append(f"seen {memory.observation_count}×")
    if memory.source_project:
        facts.append(f"from {memory.source_project}")
    return f"### {memory.display_title} ({', '.join(facts)})"


def _section(memory: Memory, room: int) -> tuple[str, bool] | None:
    """A memory's markdown section in at most `room` characters, and whether it was
    shortened; None when it does not fit even shortened to MIN_TEXT_CHARS. One whose words
    a person did not write or accept says who did under its heading, never cut."""
    heading = _heading(memory)
    mark = written_by(memory.origins)
    if mark:  # an agent's words are not the user's: the reader is told, whatever fits
        agent = marked(memory.origins).kind == AGENT
        heading += f"\n*({mark[0].upper()}{mark[1:]}{': an agent, not the user' * agent}.)*"
    extras = [f"Why: {memory.reasoning}"] if memory.reasoning else []
    if memory.references:
        extras.append(f"References: {', '.join(memory.references)}")
    limit = min(room, MAX_ENTRY_CHARS)
    whole = "\n".join([heading, memory.text, *extras])
    if len(memory.text) <= MAX_TEXT_CHARS and len(whole) <= limit:
        return whole, False
    pointer = POINTER.format(id=memory.id)
    choices = [extras, extras[:1], []] if len(extras) == 2 else [extras, []] if extras else [[]]
    for kept in choices:
        # heading and newline, the text, a closing code fence ("\n```"), a separator, the
        # pointer, then each kept line with its newline
        fixed = len(heading) + 1 + 4 + 1 + len(pointer) + sum(len(x) + 1 for x in kept)
        size = min(limit - fixed, MAX_TEXT_CHARS)
        if size < min(MIN_TEXT_CHARS, len(memory.text)):
            continue
        text = _shorten(memory.text, size)
        if text.count("```") % 2:  # never leave a code block open over the next entries
            text += "\n```"
        separator = "\n" if text.endswith("```") else " "
        body = f"{text}{separator}{pointer}" if text else pointer
        return "\n".join([heading, body, *kept]), True
    return None


def _shorten(text: str, size: int) -> str:
    """The longest start of `text` of at most `size` characters that ends a sentence (when
    that keeps at least half) or else a word; "" when the first word is already too long."""
    if len(text) <= size:
        return text
    window = text[: size + 1]
    breaks = [m.start() for m in re.finditer(r"\s", window) if m.start() > 0]
    ends = [k for k in breaks if window[k] == "\n" or window[k - 1] in ".!?"]
    cuts = [k for k in ends if k >= size // 2] or breaks
    return window[: cuts[-1]].rstrip() if cuts else ""


def balanced(order: list[int], categories: list[str], limit: int) -> list[int]:
    """Indices (best first) with at least 3 per non-empty category when limit ≥ 9."""
    chosen: list[int] = []
    if limit >= 9:
        seen: dict[str, int] = {}
        for i in order:
            if seen.get(categories[i], 0) < MIN_PER_CATEGORY:
                seen[categories[i]] = seen.get(categories[i], 0) + 1
                chosen.append(i)
        chosen = chosen[:limit]
    taken = set(chosen)
    rest = [i for i in order if i not in taken]
    chosen += rest[: limit - len(chosen)]
    rank = {i: n for n, i in enumerate(order)}
    return sorted(chosen, key=rank.__getitem__)


# A weak match stays in the block when its score is at least this share of the best one's
# (the parser notes of a parser session scored 0.29-0.33 beside a best of 0.64, the nearest
# other note 0.27; unrelated abstracts in a billing-api session 0.02 beside 0.74)
NEAR_BEST = 0.45


def build_context(
    store: Store,
    meaning: Meaning,
    settings: Settings,
    query: str | None = None,
    limit: int = 20,
    cwd: Path | None = None,
    feature: Path | None = None,
    project: str | None = None,
    trust: Trust | None = None,
) -> ContextBlock:
    """Score every live memory against the session's context and pick the block.

    `meaning` is `NO_MEANING` when the model should not be used; the ranking is
    `ranking.combine_arrays`, the same formula as recall's. With `trust`, only the memories
    it admits are scored, as if the others were not stored (issue 44: what agents get
    unasked follows trust; the diagnostic line counts the others).
    """
    if query is None:
        query = signals(cwd or Path.cwd(), feature, project)
    if query:
        query, _ = searchable(query)  # the diagnostic line shows the query searched
    rows = store.rank_rows()
    block = ContextBlock(memories=[], total=len(rows), query=query)
    scope = Filters(trust=trust if trust is not None and not trust.everything else None)
    if scope.trust is not None:
        admitted = set(store.seqs_matching(scope).tolist())
        rows = [r for r in rows if r[0] in admitted]
        block.held_back = block.total - len(rows)
    use_meaning = bool(query) and meaning.available
    if use_meaning:
        block.model = meaning.model_name
    elif not query:
        block.semantic_problem = "no context signals"
    else:
        block.semantic_problem = meaning.problem or "model not used"
    if not rows:
        return block
    seqs = np.array([r[0] for r in rows], dtype=np.int64)
    max_obs = max((r[1] for r in rows), default=1)
    prominence = prominence_array(
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
        [bool(r[4]) for r in rows],
        [r[5] for r in rows],
        max_obs,
        datetime.now(UTC),
    )
    pinned = np.array([bool(r[4]) for r in rows])
    vector = np.zeros(len(rows))  # relevance by meaning, calibrated (ranking.py)
    keyword = np.zeros(len(rows))  # relevance by keywords, calibrated
    cosine, crowd, found = None, None, None
    if use_meaning:
        mem_seqs, best = meaning.index.scores(meaning.embedder.embed_query(query))
        pos = np.searchsorted(mem_seqs, seqs)
        found = (pos < len(mem_seqs)) & (mem_seqs[np.minimum(pos, len(mem_seqs) - 1)] == seqs)
        cosine = np.full(len(rows), np.nan)
        cosine[found] = best[pos[found]]
        crowd = cosine_crowd(best)
        vector = vector_relevance(np.nan_to_num(cosine, nan=-1.0), *crowd)
        block.vector_matches = int((vector > 0).sum())
    plan = None
    if query:
        plan = store.keywords.plan(query)
        if plan.expression:
            hits = dict(
                store.keywords.search(
                    plan.expression,
                    scope,
                    10_000,
                    common_only=plan.common_only,
                    parts=plan.parts,
                )
            )
            bm25 = np.array([hits.get(int(s), 0.0) for s in seqs])
            keyword = keyword_relevance(bm25, plan.ideal)
            if cosine is not None and not plan.exact_identifier:
                # As in recall: far from the query's meaning, a keyword match counts only
                # when its words say so clearly (`ranking.unsupported`).
                keyword[unsupported(cosine, keyword, settings["min_similarity"])] = 0.0
            block.keyword_matches = int((keyword > 0).sum())
    if query:
        weights = weights_from(settings)
        if not use_meaning:  # keywords alone: they count in full, as in keyword mode
            weights = Weights(0.0, 1.0, weights.prominence)
        combined = combine_arrays(vector, keyword, prominence, weights)
        block.weights = (
            combined.weights.vector,
            combined.weights.keyword,
            combined.weights.prominence,
        )
        score = combined.score
        evidence = Evidence(
            best=float(combined.relevance.max()),
            best_cosine=float(np.nanmax(cosine)) if cosine is not None and found.any() else None,
            crowd_centre=crowd[0] if crowd is not None else None,
            collection=int(found.sum()) if cosine is not None else 0,
            personal=personal(query),
            rare_word=plan is not None and rare_word([p.docs for p in plan.phrases], plan.total),
            standout=standout_of(cosine) if cosine is not None else 0.0,
            agreement=agreement_of(vector, keyword),
            keyword_best=float(keyword.max()) if len(keyword) else 0.0,
            rare_name=plan is not None and rare_name(query, plan.phrases, plan.total),
            words_held=_words_held(store, plan, seqs, keyword),
        )
        answered = about_something(evidence)
        # Only memories at least partly about the query, those nearly as close as the best
        # (a weak parser note beside partial ones), and those the person pinned, every
        # category among them getting a few entries: the block ends where relevance ends, and
        # `limit` is a most, never a target (weak matches padded 18 of 20 entries, issue 41)
        near_best = combined.score >= NEAR_BEST * float(combined.score.max())
        partly = (combined.score >= PARTIAL) | (near_best & (combined.score > 0)) | pinned
    else:  # no signals: prominence alone chooses, as designed
        score = prominence
        answered, partly = True, np.ones(len(rows), dtype=bool)
    # Best first; a memory that shares nothing with the query (score 0) is no match at all,
    # unless pinned: the pinned ones come after the relevant ones
    ranked = [int(i) for i in np.lexsort((seqs, -score))]
    order = [i for i in ranked if score[i] > 0] if answered else []
    order += [i for i in ranked if pinned[i] and not (answered and score[i] > 0)]
    picked = balanced([i for i in order if partly[i]], [r[6] for r in rows], limit)
    picked.sort(key={i: n for n, i in enumerate(order)}.__getitem__)
    memories = store.by_seqs(int(seqs[i]) for i in picked)
    block.memories = [
        (memories[int(seqs[i])], float(score[i])) for i in picked if int(seqs[i]) in memories
    ]
    if query:
        agrees = agreed(vector, keyword)
        best = float(score[agrees].max()) if agrees.any() else 0.0
        hybrid = use_meaning and combined.weights.vector > 0 and combined.weights.keyword > 0
        maybe = [
            int(seqs[i])
            for i in picked
            if agrees[i] and score[i] >= max(STRONG, best - STRONG_NEAR_BEST)
        ]
        held = {}
        if hybrid and plan is not None:
            held = store.keywords.held(plan.phrases, maybe, asked(query, plan.phrases))
        block.bands = {
            memories[int(seqs[i])].id: (
                band_among(
                    float(score[i]),
                    float(vector[i]),
                    float(keyword[i]),
                    best,
                    holds_question(held.get(int(seqs[i])), float(cosine[i])),
                )
                if hybrid and found[i]
                else band_of(float(score[i]))
            )
            for i in picked
            if int(seqs[i]) in memories
        }
        if plan is not None and combined.weights.keyword > 0:  # a guess (`recall._decide`)
            strong = [seq for seq, m in memories.items() if block.bands.get(m.id) is Band.STRONG]
            for seq in store.keywords.through_guesses(plan, strong):
                block.bands[memories[seq].id] = Band.PARTIAL
    return block


def _words_held(store: Store, plan, seqs: np.ndarray, keyword: np.ndarray) -> bool:
    """Whether the best memory by keywords, when they say so (`ranking.WORDS_SAY_SO`),
    holds every phrase of the query."""
    if plan is None or not plan.phrases or not len(keyword):
        return False
    top = int(np.argmax(keyword))
    if keyword[top] < WORDS_SAY_SO:
        return False
    return store.keywords.held(plan.phrases, [int(seqs[top])])[int(seqs[top])] == 1.0
