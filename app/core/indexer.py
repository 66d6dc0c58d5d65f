"""The indexing pipeline: a memory's text to its vectors and keyword labels, now or later.

`remember` and `edit` embed a memory at once through `embed` and `save`; `backfill` embeds
every memory whose vectors are missing or stale, batch by batch, a long one slice by slice so
the one engine thread (`runner.Runner`) can answer a search between two slices. What a
stopped backfill had done of a long memory is kept here (`sliced`) for the next call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.core.errors import ModelError
from app.core.labels import make_labels
from app.core.memory import Memory, content_hash
from app.core.model.embedder import (
    LABEL_CHUNKS,
    Embedded,
    EmbeddingModel,
    Interrupted,
    TokenChunk,
)
from app.core.storage.db import Database
from app.core.storage.store import Store

log = logging.getLogger(__name__)

# A memory whose text is longer is embedded in slices of SLICE_CHUNKS chunks (one llama.cpp
# batch), so the engine thread can answer a search between two slices: a 1.9 M
# character clipboard is 1,024 chunks, a minute or more of work.
LONG_TEXT_CHARS = 8_000
SLICE_CHUNKS = 1
# The backfill slices every memory longer than about one chunk: a search typed meanwhile
# waits for one chunk's decode at most (40 ms, 80 with a core busy), not a whole 8,000-
# character note's eight.
SLICE_ABOVE_CHARS = 1_500


@dataclass
class Sliced:
    """A long memory embedded part way: what it is, its chunk sequences, the slices'
    vectors so far and the token vectors of its first chunks (for its labels)."""

    key: tuple[str, str, str]  # memory id, text hash, model id
    sequences: list[list[int]]
    parts: list[np.ndarray] = field(default_factory=list)
    chunks: list[TokenChunk] = field(default_factory=list)


class Indexer:
    """Vectors and keyword labels of memories, from the model in use (`model()`, None when
    it cannot be loaded; `problem()` then says why)."""

    def __init__(
        self,
        db: Database,
        store: Store,
        model: Callable[[], EmbeddingModel | None],
        problem: Callable[[], str | None],
    ):
        self._db = db
        self._store = store
        self._model = model
        self._problem = problem
        self.sliced: Sliced | None = None  # a long memory a stopped backfill was embedding

    def embed(self, memory: Memory) -> Embedded | None:
        """A memory's chunk vectors and its first chunks' token vectors (for labels)."""
        model = self._model()
        if model is None:
            return None
        embedded = model.embed_documents_with_tokens([memory.embed_text])[0]
        if not np.isfinite(embedded[0]).all():  # never stored: it would poison every search
            log.warning("the model gave vectors that are not numbers; not stored")
            return None
        return embedded

    def save(self, memory: Memory, embedded: Embedded | None) -> None:
        """Store a memory's vectors and, if it has none yet, its keyword labels."""
        model = self._model()
        if embedded is None or model is None:
            return
        vectors, chunks = embedded
        self._store.vectors.save(
            memory.id, model.info.model_id, content_hash(memory.embed_text), vectors
        )
        if memory.keywords is None:
            memory.keywords = self.labels(memory, vectors, chunks)
            self._store.set_keywords(memory.id, memory.keywords)

    def lacks_vectors(self, memory: Memory) -> bool:
        """Whether a memory has no vectors from the model in use (none when it is missing)."""
        model = self._model()
        return model is not None and self._store.vectors.of(memory.id, model.info.model_id) is None

    def labels(
        self, memory: Memory, vectors: np.ndarray, chunks: list[TokenChunk] | None = None
    ) -> list[str]:
        """Keyword labels for a memory, judged against the mean of its chunk vectors; the
        token vectors come from the pass that made the vectors, or from a pass of its own."""
        model = self._model()
        if model is None:
            return []
        doc = vectors.mean(axis=0)
        doc /= max(float(np.linalg.norm(doc)), 1e-12)
        if chunks is None:
            chunks = model.token_chunks(memory.embed_text)
        return make_labels(model, memory.embed_text, chunks, doc)

    def needs_backfill(self) -> bool:
        """Whether any live memory still lacks current vectors or keyword labels."""
        model = self._model()
        return model is not None and bool(self._store.needing_vectors(model.info.model_id, 1))

    def backfill(
        self,
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        count_total: bool = True,
        give_way: Callable[[], bool] | None = None,
    ) -> int:
        """Embed every live memory whose vectors are missing or stale; returns how many.

        `should_stop` is asked before each batch; `give_way` also while the model decodes
        one (a model that can stop half way gives the pass up, and it is done again in the
        next call: what someone waits for never waits for a memory's pass); `count_total` =
        False skips counting the work first (the caller knows it) and passes 0 as the total
        to `progress`.
        """
        model = self._model()
        if model is None:
            raise ModelError(f"cannot backfill: {self._problem()}")
        with model.giving_way(give_way):
            return self._backfill(model, batch_size, progress, should_stop, count_total)

    def _backfill(
        self,
        model: EmbeddingModel,
        batch_size: int,
        progress: Callable[[int, int], None] | None,
        should_stop: Callable[[], bool] | None,
        count_total: bool,
    ) -> int:
        model_id = model.info.model_id
        total = 0
        if count_total:
            counts = self._store.vectors.counts(model_id)
            total = counts["missing"] + counts["stale"]
        done, after = 0, 0
        while not (should_stop and should_stop()):
            batch = self._store.needing_vectors(model_id, batch_size, after)
            if not batch:
                break
            fresh, new_vectors, tokens, stopped = self._embed_batch(model, batch, should_stop)
            if stopped:  # save what is whole; the long memory comes back in the next call
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
                        vecs = self._store.vectors.of(memory.id, model_id, model.info.dimension)
                    try:
                        labels[memory.id] = self.labels(memory, vecs, tokens.get(memory.id))
                    except Interrupted:  # (its own pass for labels): the rest next time
                        stopped = True
                        break
            with self._db.write():
                for memory in fresh:
                    self._store.vectors.save(
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

    def _embed_batch(
        self,
        model: EmbeddingModel,
        batch: list[tuple[int, Memory, bool]],
        should_stop: Callable[[], bool] | None,
    ) -> tuple[list[Memory], dict[str, np.ndarray], dict[str, list[TokenChunk]], bool]:
        """The vectors of a batch's memories that have none: the short ones in one pass, a
        long one slice by slice. Returns the memories embedded whole, their vectors and
        token vectors, and whether `should_stop` cut the batch short."""
        fresh = [m for _, m, has in batch if not has]
        short = [m for m in fresh if len(m.embed_text) <= SLICE_ABOVE_CHARS]
        try:
            embedded = model.embed_documents_with_tokens([m.embed_text for m in short])
        except Interrupted:  # nothing of the batch is whole
            return [], {}, {}, True
        new_vectors = {m.id: vectors for m, (vectors, _) in zip(short, embedded, strict=True)}
        tokens = {m.id: chunks for m, (_, chunks) in zip(short, embedded, strict=True)}
        for memory in fresh:  # a long one slice by slice: a search waits one slice at most
            if memory.id not in new_vectors:
                sliced = self._embed_in_slices(model, memory, should_stop)
                if sliced is None:  # asked to stop: its slices are kept for the next call
                    return [m for m in fresh if m.id in new_vectors], new_vectors, tokens, True
                new_vectors[memory.id], tokens[memory.id] = sliced
        return fresh, new_vectors, tokens, False

    def _embed_in_slices(
        self, model: EmbeddingModel, memory: Memory, should_stop: Callable[[], bool] | None
    ) -> Embedded | None:
        """A long memory's chunk vectors, SLICE_CHUNKS at a time, and its first chunks' token
        vectors; None when `should_stop` says so between two slices (the next call goes on
        where this one stopped)."""
        key = (memory.id, content_hash(memory.embed_text), model.info.model_id)
        if self.sliced is None or self.sliced.key != key:
            self.sliced = Sliced(key, model.document_sequences(memory.embed_text))
        sliced = self.sliced
        while len(sliced.parts) * SLICE_CHUNKS < len(sliced.sequences):
            if sliced.parts and should_stop and should_stop():
                return None
            start = len(sliced.parts) * SLICE_CHUNKS
            try:
                vectors, kept = model.embed_sequences(
                    sliced.sequences[start : start + SLICE_CHUNKS],
                    keep_tokens=max(0, LABEL_CHUNKS - start),
                )
            except Interrupted:  # the slices done are kept for the next call
                return None
            sliced.parts.append(vectors)
            sliced.chunks.extend(kept)
        self.sliced = None
        return np.vstack(sliced.parts), sliced.chunks
