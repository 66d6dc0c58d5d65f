"""The one core API that the CLI, the GUI and the MCP server all use."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from app.core import health, paths, transfer
from app.core.context import DEFAULT_MAX_CHARS, ContextBlock, build_context, check_max_chars
from app.core.db import Database, now
from app.core.embedder import LABEL_CHUNKS, Embedded, Embedder, ModelInfo, TokenChunk, inspect_model
from app.core.errors import InputError, MnemoError, ModelError, StoreError
from app.core.knowledge import append_to_mirror
from app.core.labels import make_labels
from app.core.meaning import NO_MEANING, Meaning, assess
from app.core.memory import (
    CONFIDENCES,
    Memory,
    clean_text,
    content_hash,
    guard_memory,
    guard_secrets,
    join_statements,
    public_dict,
    split_list,
    title_from,
)
from app.core.ranking import Weights, weights_from
from app.core.recall import RecallResult, recall
from app.core.settings import MODEL_KEYS, Settings
from app.core.store import Filters, Store
from app.core.vectors import VectorIndex

log = logging.getLogger(__name__)


class Remembered(StrEnum):
    """What `remember` did (its value is the `status` of `remember --json` and MCP)."""

    STORED = "stored"  # a new memory
    OBSERVED = "observed"  # the same text again: counted once more
    RESTORED = "restored"  # the same text was in the trash: back, counted once more
    MERGED = "merged"  # merged with its near-duplicate into a new memory (`merge=True`)
    SIMILAR = "similar"  # held back: a near-duplicate exists (neither `force` nor `merge`)


@dataclass
class RememberResult:
    """What `remember` did: stored, observed again, merged, or held back as a near-duplicate."""

    status: Remembered
    memory: Memory
    similarity: float | None = None  # to the near-duplicate, for similar / merged
    related: list[tuple[Memory, float]] = field(default_factory=list)
    notice: str | None = None
    similar: Memory | None = None  # the near-duplicate a forced store was linked to

    def to_dict(self) -> dict:
        """The JSON shape of `remember --json` and MCP `store_memory` (README: "JSON
        output"): the memory's public shape with what remembering it found around it."""
        out = {
            "status": self.status.value,
            **public_dict(self.memory),
            "similarity": self.similarity,
            "related": [
                {"id": m.id, "title": m.display_title, "similarity": round(s, 4)}
                for m, s in self.related
            ],
        }
        if self.similar is not None:
            out["similar"] = {
                "id": self.similar.id,
                "title": self.similar.display_title,
                "similarity": round(self.similarity or 0.0, 4),
            }
        if self.notice:
            out["notice"] = self.notice
        return out


@dataclass(frozen=True)
class NearPair:
    """Two memories whose meaning is nearly the same (`Engine.duplicate_pairs`)."""

    a: Memory
    b: Memory
    similarity: float  # the cosine of their closest chunks
    share: float  # how much of both the match covers: 1.0 whole, 0.01 a start of a long one

    @property
    def partial(self) -> bool:
        """One holds the other (or a part of it), rather than both saying the same."""
        return self.share < 0.5


@dataclass
class SettingsChange:
    """What `apply_settings` did: the keys that changed and the model's state after it."""

    changed: list[str]
    model_reloaded: bool = False
    model_error: str | None = None
    model_name: str = ""


# A memory whose text is longer is embedded in slices of SLICE_CHUNKS chunks (one llama.cpp
# batch), so the engine thread can answer a search between two slices: a 1.9 M
# character clipboard is 1,024 chunks, a minute or more of work.
LONG_TEXT_CHARS = 8_000
SLICE_CHUNKS = 1
# The backfill slices every memory longer than about one chunk: a search typed meanwhile
# waits for one chunk's decode at most (40 ms, 80 with a core busy), not a whole 8,000-
# character note's eight.
SLICE_ABOVE_CHARS = 1_500


def check_limit(limit) -> int:
    """How many results a caller asked for, or InputError: 0 used to mean the default, and a
    negative number one result (recall) or no limit at all (SQL's LIMIT -3, listing)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit {limit!r}: give a whole number, at least 1")
    return limit


class Engine:
    """The one door into the core for the CLI, the GUI and the MCP server.

    It opens the database, owns the settings, the model (loaded on first use) and the
    vector index. Front ends call its methods only; `_db` and `_store` are private.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        database: Path | None = None,
        embedder: Embedder | None = None,
    ):
        self._settings = settings or Settings()
        self._db = Database(database or paths.database_path())
        self._store = Store(self._db)
        self._embedder: Embedder | None = embedder
        self._model_error: str | None = None
        self._model_tried = embedder is not None
        self._owns_embedder = embedder is None
        if embedder is not None:
            self._record_model(embedder.info)
        self._index: VectorIndex | None = None
        self._live_count: tuple[tuple, int] | None = None
        # (memory id, text hash, model id), its chunk sequences, the slices embedded so far,
        # the token vectors of its first chunks (for its labels)
        self._slices: (
            tuple[tuple[str, str, str], list[list[int]], list[np.ndarray], list[TokenChunk]] | None
        ) = None

    # ---- settings (this engine is their one owner in the process) --------------------
    @property
    def settings(self) -> Settings:
        """The settings, to read; change them with `apply_settings`."""
        return self._settings

    def apply_settings(self, values: dict[str, Any]) -> SettingsChange:
        """Validate, save and take new settings; reload the model when a model key changed.

        All or nothing: a bad value, or a model that cannot be used, raises InputError and
        changes nothing (the settings file included).
        """
        # Take what another process saved first: a save here never undoes it.
        before = self.refresh_settings()
        checked = self._settings.validate(values)
        current = self._settings.as_dict()
        model_keys_changed = any(k in checked and checked[k] != current[k] for k in MODEL_KEYS)
        if model_keys_changed:
            trial = {**current, **checked}
            try:
                path = _model_path(trial["model_path"])
                info = inspect_model(path, trial["query_prefix"], trial["document_prefix"])
                if path != self.model_path():
                    # Its weights too, not only the header: a file cut off mid-download
                    # has good metadata and fails only here; and what it gives
                    trial_model = Embedder(info, threads=1)
                    problem = trial_model.check()
                    trial_model.close()
                    if problem is not None:
                        raise ModelError(f"{path} is not usable: {problem}")
            except ModelError as exc:
                raise InputError(f"model not switched: {exc}") from None
        change = self._settings_changed(self._settings.apply(checked))
        change.changed = list(dict.fromkeys(before.changed + change.changed))
        if before.model_reloaded and not change.model_reloaded:
            change.model_reloaded = True
            change.model_error, change.model_name = before.model_error, before.model_name
        return change

    def refresh_settings(self) -> SettingsChange:
        """Re-read the settings file if another process changed it (before each MCP call)."""
        return self._settings_changed(self._settings.reload_if_changed())

    def _settings_changed(self, changed: list[str]) -> SettingsChange:
        result = SettingsChange(changed)
        if set(changed) & set(MODEL_KEYS):
            log.info("model settings changed (%s): reloading the model", ", ".join(changed))
            embedder = self.reload_model()
            result.model_reloaded = True
            result.model_error = self._model_error
            result.model_name = embedder.info.name if embedder else ""
        return result

    # ---- the model -----------------------------------------------------------------
    def model_path(self) -> Path:
        """The GGUF file in use: MNEMO_MODEL, the setting, or the bundled default."""
        return _model_path(self._settings["model_path"])

    def model_info(self) -> ModelInfo:
        """The model's metadata, without loading it (ModelError if unusable)."""
        return inspect_model(
            self.model_path(), self._settings["query_prefix"], self._settings["document_prefix"]
        )

    @property
    def embedder(self) -> Embedder | None:
        """The loaded model, or None (see `model_error`) if it cannot be loaded."""
        if not self._model_tried:
            self._model_tried = True
            try:
                embedder = Embedder(
                    self.model_info(),
                    self._settings["model_threads"],
                    self._settings["model_gpu_layers"],
                )
                problem = embedder.check()
                if problem is not None:
                    embedder.close()
                    raise ModelError(f"the model {embedder.info.path} is not usable: {problem}")
                self._embedder = embedder
                self._record_model(self._embedder.info)
            except ModelError as exc:
                self._model_error = str(exc)
                log.warning("%s", exc)
        return self._embedder

    @property
    def model_error(self) -> str | None:
        """Why the model is unavailable, if it is."""
        return self._model_error

    def reload_model(self) -> Embedder | None:
        """Forget the loaded model (after a settings change) and load it again."""
        if self._embedder is not None and self._owns_embedder:
            self._embedder.close()
        self._owns_embedder = True
        self._embedder, self._model_error, self._model_tried, self._index = None, None, False, None
        return self.embedder

    def _record_model(self, info: ModelInfo) -> None:
        previous = self._db.get_meta("model_id")
        if previous == info.model_id or self._db.read_only:
            return
        if previous:
            log.info(
                "model changed from %s to %s: vectors will be re-embedded", previous, info.model_id
            )
        with self._db.write():
            self._db.set_meta("model_id", info.model_id)
            self._db.set_meta("model_name", info.name)
            self._db.set_meta("model_dimension", str(info.dimension))
            self._db.set_meta("model_sha256", info.sha256)
            self._db.set_meta("model_path", str(info.path))

    @property
    def model_id(self) -> str:
        """The current model's id ('' when the model is unavailable)."""
        embedder = self.embedder
        return embedder.info.model_id if embedder else ""

    def vector_index(self) -> VectorIndex | None:
        """The in-memory vectors of the current model, refreshed from the database."""
        embedder = self.embedder
        if embedder is None:
            return None
        if self._index is None:
            db_path = self._db.path
            # The memory-mapped copy of the vectors lives beside the database (not for a
            # read-only one, nor one in memory).
            cache = None if self.read_only else db_path.with_name(db_path.name + ".vectors")
            self._index = VectorIndex(embedder.info.model_id, embedder.info.dimension, cache)
        self._index.refresh(self._store)
        return self._index

    def prepare_search(self) -> None:
        """Load the vectors and make what a search needs before the first one (the app does
        this in the background once the model is loaded)."""
        index = self.vector_index()
        if index is not None:
            index.prepare()

    def changed_elsewhere(self) -> int:
        """A number that changes when another connection (the CLI, an agent's MCP server)
        commits to the database: `PRAGMA data_version`. Cheap enough to poll."""
        return int(self._db.query("PRAGMA data_version")[0][0])

    def _live(self) -> int:
        """How many live memories there are (cached until the database changes)."""
        version = (self._db.query("PRAGMA data_version")[0][0], self._db.conn.total_changes())
        if self._live_count is None or self._live_count[0] != version:
            self._live_count = (version, self._store.counts()["memories"])
        return self._live_count[1]

    def meaning(self) -> Meaning:
        """Whether search by meaning is available now and, if not, why (one answer for
        recall, context and health)."""
        embedder = self.embedder
        index = self.vector_index() if embedder is not None else None
        return assess(embedder, self._model_error, index, self._live())

    def vector_status(self) -> dict[str, int]:
        """How many live memories have current, stale or no vectors ({} without a model)."""
        model_id = self.model_id
        return self._store.vector_counts(model_id) if model_id else {}

    def weights(self) -> Weights:
        """The hybrid weights from the settings."""
        return weights_from(self._settings)

    # ---- reading -------------------------------------------------------------------
    def recall(
        self,
        query: str,
        mode: str | None = None,
        limit: int | None = None,
        filters: Filters | None = None,
        track: bool = True,
        prefix: bool = False,
    ) -> RecallResult:
        """Search; with `track`, every returned memory counts as recalled."""
        meaning = self.meaning() if mode != "keyword" else NO_MEANING
        result = recall(
            self._store,
            meaning,
            self._settings,
            query,
            mode,
            self._settings["default_limit"] if limit is None else check_limit(limit),
            filters,
            prefix,
        )
        if track and result.results and not self._db.read_only:
            self.mark_used([r.memory.id for r in result.results])
        return result

    def context(
        self,
        query: str | None = None,
        limit: int = 20,
        cwd: Path | None = None,
        feature: Path | None = None,
        project: str | None = None,
        track: bool = True,
        use_model: bool = True,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> ContextBlock:
        """The session-start memory block, fitted to `max_chars`; with `track`, the memories
        it shows (not those left out for the budget) count as used."""
        max_chars = check_max_chars(max_chars)  # before any work
        meaning = self.meaning() if use_model else NO_MEANING
        block = build_context(
            self._store, meaning, self._settings, query, check_limit(limit), cwd, feature, project
        )
        block.max_chars = max_chars
        shown = [m.id for m, _, _ in block.fit().entries]
        if track and shown and not self._db.read_only:
            self.mark_used(shown)
        return block

    def mark_used(self, ids: list[str]) -> None:
        """Count memories as recalled (printed, copied, injected)."""
        self._store.record_recall(ids)

    def get(self, memory_id: str, include_deleted: bool = True) -> Memory:
        """One memory by id or unique id prefix."""
        return self._store.get(memory_id, include_deleted)

    def listing(
        self,
        filters: Filters | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "updated_at DESC",
    ) -> list[Memory]:
        """A page of memories in a fixed order (newest change first by default)."""
        return self._store.listing(filters, order=order, limit=check_limit(limit), offset=offset)

    def recent(self, limit: int = 10) -> list[Memory]:
        """Pinned memories first, then the most recently changed (the popup's empty query)."""
        pinned = self._store.listing(Filters(pinned=True), limit=limit)
        seen = {m.id for m in pinned}
        rest = [m for m in self._store.listing(limit=limit) if m.id not in seen]
        return (pinned + rest)[:limit]

    def count(self, filters: Filters | None = None) -> int:
        """How many memories pass `filters` (live ones when none)."""
        return self._store.count(filters or Filters())

    def page(
        self,
        filters: Filters | None = None,
        order: str = "updated_at DESC",
        offset: int = 0,
        limit: int = 200,
    ) -> list[tuple[Memory, bool]]:
        """(memory, has current vectors) for one page of the manager's table."""
        return self._store.page(filters or Filters(), order, offset, limit, self._known_model_id())

    def embedded(self, ids: Iterable[str]) -> set[str]:
        """Which of these memories have vectors from the current model."""
        return self._store.embedded_ids(list(ids), self._known_model_id())

    def filter_values(self, limit: int = 500) -> dict[str, list[str]]:
        """The categories, tags, projects and sources in use (for filter lists)."""
        return self._store.distinct_values(limit)

    def overview(self) -> dict:
        """Counts and the model's name for a status bar, without loading the model."""
        counts = self._store.counts()
        model_id = self._known_model_id()
        return {
            **counts,
            "model_name": self._db.get_meta("model_name", "no model"),
            "model_dimension": self._db.get_meta("model_dimension", "?"),
            "embedded": self._store.embedded_count(model_id) if model_id else 0,
        }

    def _known_model_id(self) -> str:
        """The model id the database last recorded (no model load needed)."""
        if self._embedder is not None:
            return self._embedder.info.model_id
        return self._db.get_meta("model_id", "") or ""

    # ---- writing -------------------------------------------------------------------
    def _embed(self, memory: Memory) -> Embedded | None:
        """A memory's chunk vectors and its first chunks' token vectors (for labels)."""
        embedder = self.embedder
        if embedder is None:
            return None
        embedded = embedder.embed_documents_with_tokens([memory.embed_text])[0]
        if not np.isfinite(embedded[0]).all():  # never stored: it would poison every search
            log.warning("the model gave vectors that are not numbers; not stored")
            return None
        return embedded

    def _save_vectors(self, memory: Memory, embedded: Embedded | None) -> None:
        """Store a memory's vectors and, if it has none yet, its keyword labels."""
        if embedded is None or self._embedder is None:
            return
        vectors, chunks = embedded
        self._store.save_vectors(
            memory.id, self._embedder.info.model_id, content_hash(memory.embed_text), vectors
        )
        if memory.keywords is None:
            memory.keywords = self._labels(memory, vectors, chunks)
            self._store.set_keywords(memory.id, memory.keywords)

    def _labels(
        self, memory: Memory, vectors: np.ndarray, chunks: list[TokenChunk] | None = None
    ) -> list[str]:
        """Keyword labels for a memory, judged against the mean of its chunk vectors; the
        token vectors come from the pass that made the vectors, or from a pass of its own."""
        doc = vectors.mean(axis=0)
        doc /= max(float(np.linalg.norm(doc)), 1e-12)
        if chunks is None:
            chunks = self._embedder.token_chunks(memory.embed_text)
        return make_labels(self._embedder, memory.embed_text, chunks, doc)

    def similar(
        self,
        vectors: np.ndarray,
        exclude: str | None = None,
        minimum: float | None = None,
        k: int = 6,
    ) -> list[tuple[Memory, float]]:
        """Live memories whose best chunk is close to any of these vectors, closest first."""
        index = self.vector_index()
        if index is None or vectors is None or not len(vectors):
            return []
        floor = self._settings["related_threshold"] if minimum is None else minimum
        best: dict[int, float] = {}
        for vec in vectors[:8]:
            hits, _ = index.top(vec, k + 1, None, floor)
            for seq, score in hits:
                best[seq] = max(best.get(seq, -1.0), score)
        found = self._store.by_seqs(best)
        pairs = [(found[s], best[s]) for s in best if s in found and found[s].id != exclude]
        return sorted(pairs, key=lambda p: -p[1])[:k]

    def remember(
        self,
        text: str,
        title: str | None = None,
        category: str | None = None,
        tags: str | list[str] | None = None,
        project: str | None = None,
        reasoning: str | None = None,
        source: str = "manual",
        references: str | list[str] | None = None,
        confidence: str = "medium",
        merge: bool = False,
        force: bool = False,
        embed: bool = True,
        secrets: str = "refuse",
        link_similar: bool = False,
        thread: str | None = None,
    ) -> RememberResult:
        """Store a memory, or count it again if known, or hold it back as a near-duplicate.

        `force` stores it anyway (with `link_similar`, its references gain `mnemo:ID` of
        the near-duplicate); `merge` merges it with the near-duplicate into a new memory
        that keeps every statement of both.

        `secrets`: what to do when the text holds a key, token or password: "refuse"
        (SecretError), "redact" (store it with `[REDACTED:kind]` in their place) or "allow".
        """
        text = clean_text(text)
        if not text:
            raise InputError("nothing to remember: the text is empty")
        if confidence not in CONFIDENCES:
            raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
        # The same checks as an import line: types, lengths, cleaning.
        fields = Memory.from_dict(
            {
                "text": text,
                "title": title or "",
                "reasoning": reasoning or "",
                "category": (category or "note").strip() or "note",
                "tags": split_list(tags),
                "references": split_list(references),
                "source": source or "manual",
                "source_project": (project or "").strip() or None,
                "confidence": confidence,
                "thread": (thread or "").strip() or None,
            }
        )
        memory = Memory(
            id="",
            text=fields.text,
            title=fields.title or title_from(fields.text),
            reasoning=fields.reasoning,
            category=fields.category,
            tags=fields.tags,
            references=fields.references,
            source=fields.source,
            source_project=fields.source_project,
            confidence=confidence,
            thread=fields.thread,
        )
        notice = guard_memory(memory, secrets)  # every field, on every path
        if not title:  # derived from the (possibly redacted) text
            memory.title = title_from(memory.text)
        # Known already? Read without a write lock; counted (one write) only if it is
        known_now = self._store.find_by_hash(content_hash(memory.text), memory.thread)
        if known_now is not None and (known := self._observe_if_known(memory)) is not None:
            return known

        embedded = self._embed(memory) if embed else None
        vectors = embedded[0] if embedded is not None else None
        if vectors is None and embed:
            notice = "; ".join(
                filter(
                    None,
                    (
                        notice,
                        f"stored without embedding ({self.model_error}); "
                        "`mnemo backfill` adds it later",
                    ),
                )
            )
        neighbours = self.similar(vectors) if vectors is not None else []
        if memory.thread is not None:  # a turn of a conversation duplicates none elsewhere
            neighbours = [(m, sim) for m, sim in neighbours if m.thread == memory.thread]
        duplicate = next(
            ((m, s) for m, s in neighbours if s >= self._settings["duplicate_threshold"]), None
        )
        related = [(m, s) for m, s in neighbours if s < self._settings["duplicate_threshold"]]
        if duplicate is not None and not force:
            target, score = duplicate
            if not merge:
                return RememberResult(Remembered.SIMILAR, target, score, related)
            merged = self._merge([target], memory)
            return RememberResult(Remembered.MERGED, merged, score, related)
        similar = duplicate[0] if duplicate is not None else None
        if similar is not None and link_similar:
            memory.references = split_list([*memory.references, f"mnemo:{similar.id}"])
        if embedded is not None and self._embedder is not None:  # labels: before the lock
            memory.keywords = self._labels(memory, *embedded)
        # One write transaction: the check again (another process may have stored it
        # meanwhile), the memory, its labels and its vectors, all or nothing.
        with self._db.write():
            if (known := self._observe_if_known(memory)) is not None:
                return known
            stored = self._store.insert(memory)
            self._save_vectors(stored, embedded)
        self._mirror([stored])
        score = duplicate[1] if duplicate is not None else None
        return RememberResult(Remembered.STORED, stored, score, related, notice, similar)

    def _observe_if_known(self, memory: Memory) -> RememberResult | None:
        """Count one more observation of a memory with the same text, if there is one."""
        with self._db.write():
            existing = self._store.find_by_hash(content_hash(memory.text), memory.thread)
            if existing is None:
                return None
            observed = self._store.observe(existing.id)
            new_tags = split_list(observed.tags + memory.tags)
            if new_tags != observed.tags:
                observed = self._store.update(observed.id, tags=new_tags)
        self._mirror([observed])
        how = Remembered.RESTORED if existing.deleted_at else Remembered.OBSERVED
        return RememberResult(how, observed)

    def _merge(self, sources: list[Memory], incoming: Memory | None = None) -> Memory:
        """A new memory holding every distinct statement of `sources` (and of `incoming`,
        a text not stored yet); the sources go to the trash with `merged_into` set, as
        they were, so `unmerge` brings back the exact originals."""
        with self._db.write():
            # Re-read under the write lock so concurrent merges never lose a count.
            current = [self._store.get(m.id) for m in sources]
            if incoming is not None:  # a near-duplicate merged away meanwhile: its result
                current = [self._merge_result(m) for m in current]
            if any(m.deleted_at for m in current):
                raise InputError("a memory to merge is in the trash; restore it first")
            group = current + ([incoming] if incoming is not None else [])
            first = group[0]
            text = join_statements([m.text for m in group])
            merged = Memory(
                id="",
                text=text,
                title=first.title if first.title != title_from(first.text) else title_from(text),
                reasoning=join_statements([m.reasoning for m in group if m.reasoning]),
                category=first.category,
                tags=split_list([t for m in group for t in m.tags]),
                references=split_list([r for m in group for r in m.references]),
                source=first.source,
                source_project=next((m.source_project for m in group if m.source_project), None),
                confidence=CONFIDENCES[max(CONFIDENCES.index(m.confidence) for m in group)],
                observation_count=sum(m.observation_count for m in group),
                recall_count=sum(m.recall_count for m in current),
                last_recalled_at=max((m.last_recalled_at or "" for m in current), default="")
                or None,
                created_at=min(m.created_at for m in current),
                pinned=any(m.pinned for m in group),
                # one conversation's turns merged stay in it; turns of two are in neither
                thread=first.thread if len({m.thread for m in group}) == 1 else None,
            )
            merged.updated_at = now()
            stored = self._store.insert(merged)
            self._store.mark_merged([m.id for m in current], stored.id)
        self._save_vectors(stored, self._embed(stored))
        self._mirror([stored, *(self._store.get(m.id) for m in current)])
        return stored

    def _merge_result(self, memory: Memory) -> Memory:
        """The live memory a trashed merge source ended up in (itself when live)."""
        for _ in range(20):
            if not memory.deleted_at or not memory.merged_into:
                return memory
            memory = self._store.get(memory.merged_into)
        return memory

    def merge(self, ids: list[str]) -> Memory:
        """Merge memories into a new one that keeps every distinct statement; the sources
        go to the trash linked to it (`unmerge` undoes it)."""
        if len(set(ids)) < 2:
            raise InputError("merging needs at least two different memories")
        memories = [self._store.get(i, include_deleted=False) for i in dict.fromkeys(ids)]
        if len({m.id for m in memories}) < 2:
            raise InputError("merging needs at least two different memories")
        return self._merge(memories)

    def unmerge(self, merged_id: str) -> list[str]:
        """Undo a merge: its sources come back exactly as they were, the result goes to the
        trash. Returns the restored ids."""
        merged = self._store.get(merged_id)
        with self._db.write():
            sources = self._store.merged_sources(merged.id)
            if not sources:
                raise InputError(f"{merged.id} is not the result of a merge")
            self._store.unmark_merged(sources)
            self._store.set_deleted([merged.id], True)
        self._mirror([self._store.get(i) for i in (*sources, merged.id)])
        return sources

    def edit(
        self,
        memory_id: str,
        secrets: str = "refuse",
        embed: bool = True,
        expect: dict | None = None,
        **changes,
    ) -> Memory:
        """Change a memory's fields (only those given); a content change is re-embedded at
        once if possible (`embed` = False leaves it to the backfill, as the desktop app does
        for a long text). Every changed field is checked for secrets like `remember`.
        `expect` holds fields as the caller read them: if another process changed one since,
        ConflictError and nothing is written (an editor never overwrites a change unseen)."""
        changes = {k: v for k, v in changes.items() if v is not None}  # None: not given
        for key in ("title", "text", "reasoning"):
            if changes.get(key) is not None:
                changes[key] = clean_text(changes[key], key)
        if "text" in changes and not changes["text"]:
            raise InputError("a memory's text cannot be empty")
        if changes.get("confidence") is not None and changes["confidence"] not in CONFIDENCES:
            raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
        for key in ("tags", "references", "keywords"):
            if key in changes and changes[key] is not None:
                changes[key] = split_list(changes[key])
        changes = {k: v for k, v in changes.items() if v is not None}
        for key in ("category", "source_project"):
            if isinstance(changes.get(key), str):
                changes[key] = clean_text(changes[key], key)[:500]
        if "thread" in changes:  # "" takes a memory out of its thread
            thread = clean_text(str(changes["thread"]), "thread")
            if len(thread) > 500:
                raise InputError(f"thread has {len(thread):,} characters; the limit is 500")
            changes["thread"] = thread or None
        guard_secrets(changes, secrets)
        if "text" in changes and "title" not in changes:
            current = self._store.get(memory_id)
            if current.title == title_from(current.text):  # derived, so it follows the text
                changes["title"] = title_from(changes["text"])
        memory = self._store.update(memory_id, expect=expect, **changes)
        if embed and self._store.vectors_of(memory.id, self.model_id) is None:
            self._save_vectors(memory, self._embed(memory))
        self._mirror([memory])
        return memory

    def forget(self, ids: list[str]) -> list[str]:
        """Move memories to the trash."""
        changed = self._store.set_deleted(ids, True)
        self._mirror([self._store.get(i) for i in changed])
        return changed

    def restore(self, ids: list[str]) -> list[str]:
        """Bring memories back from the trash."""
        changed = self._store.set_deleted(ids, False)
        self._mirror([self._store.get(i) for i in changed])
        return changed

    def purge(self, ids: list[str]) -> int:
        """Delete memories for good, with their vectors (no undo)."""
        return self._store.purge(ids)

    def empty_trash(self) -> int:
        """Delete every memory in the trash for good (no undo); how many."""
        return self._store.purge(self._store.trashed_ids())

    # ---- files -----------------------------------------------------------------------
    def import_paths(
        self,
        paths_: Iterable[Path],
        progress: Callable[[int], None] | None = None,
        secrets: str = "refuse",
    ) -> transfer.ImportReport:
        """Import markdown files/folders and JSONL exports; what changed reaches the mirror.

        Embedding is left to `backfill` (the GUI's worker runs it next; the CLI right after).
        """
        report = transfer.ImportReport()
        try:
            transfer.import_paths(self._store, [Path(p) for p in paths_], progress, secrets, report)
        except StoreError as exc:
            if not report.added and not report.updated:
                raise
            # Earlier batches are committed: say exactly what is in, and what is not.
            raise StoreError(
                f"{str(exc).replace('; nothing was written', '')}: the import stopped; "
                f"{report.added} memories from earlier batches were imported, the rest was "
                "not (run the import again when this is fixed: it adds only the rest)"
            ) from exc
        if report.changed and self._settings["mirror_dir"]:
            for start in range(0, len(report.changed), 500):
                part = report.changed[start : start + 500]
                self._mirror([self._store.get(i) for i in part])
        return report

    def export(self, fmt: str = "jsonl", include_trash: bool = False) -> Iterator[str]:
        """The export, piece by piece (one line per memory for JSONL)."""
        return transfer.export(self._store, fmt, include_trash)

    def export_to(
        self,
        path: Path,
        fmt: str = "jsonl",
        include_trash: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Write an export to a file atomically; returns how many memories it holds."""
        total = self._store.count(Filters(include_deleted=include_trash))

        def counted(pieces: Iterator[str]) -> Iterator[str]:
            for n, piece in enumerate(pieces, 1):
                if progress and n % 200 == 0:
                    progress(n, total)
                yield piece

        written = transfer.write_atomically(Path(path), counted(self.export(fmt, include_trash)))
        return written - (fmt == "markdown")  # the markdown export starts with a heading

    @staticmethod
    def convert_model(src: Path, out: Path, kind: str = "f16", name: str | None = None) -> Path:
        """Convert a sentence-transformers BERT folder to a GGUF file (slow: seconds)."""
        from app.core.converter import convert

        return convert(Path(src), Path(out), kind, name)

    def _mirror(self, memories: list[Memory]) -> None:
        """Append changed memories to the markdown mirror, if one is set (never fails a write)."""
        append_to_mirror(self._settings["mirror_dir"], memories)

    def backfill(
        self,
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        count_total: bool = True,
    ) -> int:
        """Embed every live memory whose vectors are missing or stale; returns how many.

        `should_stop` is asked before each batch; `count_total` = False skips counting the
        work first (the caller knows it) and passes 0 as the total to `progress`.
        """
        embedder = self.embedder
        if embedder is None:
            raise ModelError(f"cannot backfill: {self.model_error}")
        model_id = embedder.info.model_id
        total = 0
        if count_total:
            counts = self._store.vector_counts(model_id)
            total = counts["missing"] + counts["stale"]
        done, after = 0, 0
        while not (should_stop and should_stop()):
            batch = self._store.needing_vectors(model_id, batch_size, after)
            if not batch:
                break
            fresh = [m for _, m, has in batch if not has]
            short = [m for m in fresh if len(m.embed_text) <= SLICE_ABOVE_CHARS]
            embedded = embedder.embed_documents_with_tokens([m.embed_text for m in short])
            new_vectors = {m.id: vectors for m, (vectors, _) in zip(short, embedded, strict=True)}
            tokens = {m.id: chunks for m, (_, chunks) in zip(short, embedded, strict=True)}
            stopped = False
            for memory in fresh:  # a long one slice by slice: a search waits one slice at most
                if memory.id not in new_vectors:
                    sliced = self._embed_in_slices(embedder, memory, should_stop)
                    if sliced is None:  # asked to stop: its slices are kept for the next call
                        stopped = True
                        break
                    new_vectors[memory.id], tokens[memory.id] = sliced
            if stopped:  # save what is whole; the long memory comes back in the next call
                fresh = [m for m in fresh if m.id in new_vectors]
                batch = [b for b in batch if b[2] or b[1].id in new_vectors]
            labels = {}
            for _, memory, _ in batch:
                if memory.keywords is None:
                    # Labels cost about twice a short note's vectors: yield between two
                    # memories' (once something was done), the rest come in the next call.
                    if (labels or fresh) and should_stop and should_stop():
                        stopped = True
                        break
                    vecs = new_vectors.get(memory.id)
                    if vecs is None:
                        vecs = self._store.vectors_of(memory.id, model_id)
                    labels[memory.id] = self._labels(memory, vecs, tokens.get(memory.id))
            with self._db.write():
                for memory in fresh:
                    self._store.save_vectors(
                        memory.id, model_id, content_hash(memory.embed_text), new_vectors[memory.id]
                    )
                for memory_id, words in labels.items():
                    self._store.set_keywords(memory_id, words)
            done += len(fresh)
            if progress:
                progress(done, max(total, done))
            if stopped or not batch:
                break
            after = batch[-1][0]
        return done

    def _embed_in_slices(
        self, embedder: Embedder, memory: Memory, should_stop: Callable[[], bool] | None
    ) -> Embedded | None:
        """A long memory's chunk vectors, SLICE_CHUNKS at a time, and its first chunks' token
        vectors; None when `should_stop` says so between two slices (the next call goes on
        where this one stopped)."""
        key = (memory.id, content_hash(memory.embed_text), embedder.info.model_id)
        if self._slices is None or self._slices[0] != key:
            self._slices = (key, embedder.document_sequences(memory.embed_text), [], [])
        _, sequences, parts, chunks = self._slices
        while len(parts) * SLICE_CHUNKS < len(sequences):
            if parts and should_stop and should_stop():
                return None
            start = len(parts) * SLICE_CHUNKS
            vectors, kept = embedder.embed_sequences(
                sequences[start : start + SLICE_CHUNKS],
                keep_tokens=max(0, LABEL_CHUNKS - start),
            )
            parts.append(vectors)
            chunks.extend(kept)
        self._slices = None
        return np.vstack(parts), chunks

    def needs_backfill(self) -> bool:
        """Whether any live memory still lacks current vectors or keyword labels."""
        model_id = self.model_id
        return bool(model_id) and bool(self._store.needing_vectors(model_id, 1))

    def duplicate_pairs(self, threshold: float | None = None, limit: int = 500) -> list[NearPair]:
        """Pairs of live memories whose meaning is nearly the same, closest first; pairs
        said not to be duplicates (`not_duplicates`) are left out."""
        index = self.vector_index()
        if index is None:
            raise ModelError(f"finding duplicates needs the model: {self.model_error}")
        floor = self._settings["duplicate_threshold"] if threshold is None else threshold
        pairs = index.near_pairs(floor, limit)
        found = self._store.by_seqs({s for a, b, _, _ in pairs for s in (a, b)})
        dismissed = self._store.not_duplicates()
        return [
            NearPair(found[a], found[b], score, share)
            for a, b, score, share in pairs
            if a in found
            and b in found
            and tuple(sorted((found[a].id, found[b].id))) not in dismissed
        ]

    def not_duplicates(self, a: str, b: str) -> None:
        """The user says these two are not duplicates: `duplicate_pairs` lists them no more."""
        for memory_id in (a, b):
            self._store.get(memory_id)  # NotFoundError for an unknown id
        if a == b:
            raise InputError("a memory is always a duplicate of itself")
        self._store.mark_not_duplicates(a, b)

    # ---- overview ------------------------------------------------------------------
    def stats(self) -> dict:
        """Counts, model and database facts for `mnemo stats` and the status bar."""
        counts = self._store.counts()
        out = {"database": str(self._db.path), **counts}
        out["categories"] = self._store.category_counts()
        try:
            info = self.model_info()
            out["model"] = {
                "name": info.name,
                "id": info.model_id,
                "path": str(info.path),
                "dimension": info.dimension,
                "window": info.window,
            }
            out.update(self._store.vector_counts(info.model_id))
        except MnemoError as exc:
            out["model"] = {"error": str(exc)}
        out["schema_version"] = int(self._db.get_meta("schema_version", "0"))
        return out

    def health(self) -> list[tuple[bool, str]]:
        """(passed, description) for each `mnemo doctor` check."""
        problem = self._settings.problem
        settings = [(problem is None, f"settings: {problem or 'readable'}")]
        return settings + health.checks(self._db, self._store, self.meaning())

    def repair(self) -> tuple[int, int]:
        """Fix rows of the wrong types (or set them aside), rebuild the keyword index and
        every index (REINDEX), and drop a damaged vector copy (rebuilt from the database);
        returns (fixed, quarantined)."""
        index = self.vector_index()
        if index is not None and index.verify(self._store) is not None:
            index.drop_copy()
        return health.repair(self._db)

    @property
    def database_path(self) -> Path:
        """The database file this engine uses."""
        return self._db.path

    @property
    def read_only(self) -> bool:
        """Whether the database can only be read."""
        return self._db.read_only

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        """Free the model (if this engine loaded it) and close the database; the vectors
        added since start go to the copy the next start maps. Closing twice is harmless."""
        if self._index is not None:
            with contextlib.suppress(Exception):  # a cache: never in the way of closing
                self._index.save(self._store)
        if self._embedder is not None and self._owns_embedder:
            self._embedder.close()
            self._embedder = None
        self._db.close()


def _model_path(configured: str) -> Path:
    """The GGUF file for a `model_path` value: MNEMO_MODEL, the value, or the default."""
    if os.environ.get("MNEMO_MODEL"):
        configured = os.environ["MNEMO_MODEL"]
    return Path(configured).expanduser() if configured else paths.DEFAULT_MODEL
