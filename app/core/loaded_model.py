"""The model in use and the vectors made with it, as one part of the Engine (`engine.model`):
the GGUF file the settings name, loaded on first use (checked once per file), loaded again
when a model setting changes, recorded in the database (so a view knows the model without
loading it), and its vector index beside the database (sealed when the database is).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from app.core import paths
from app.core.errors import ModelError
from app.core.model.embedder import (
    Embedder,
    ModelInfo,
    checked,
    inspect_model,
    model_identity,
    remember_checked,
)
from app.core.search.vectors import VectorIndex
from app.core.settings import Settings
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.vault import cipher

log = logging.getLogger("app.core.engine")  # (its lines read as the engine's, as before)


class LoadedModel:
    """The embedding model of one Engine and its vector index."""

    def __init__(
        self, db: Database, store: Store, settings: Settings, embedder: Embedder | None = None
    ):
        self._db = db
        self._store = store
        self._settings = settings
        self._embedder = embedder
        self._error: str | None = None
        self._tried = embedder is not None
        self._owns = embedder is None  # one handed in is closed by whoever made it
        self._index: VectorIndex | None = None
        if embedder is not None:
            self._record(embedder.info)

    def path(self) -> Path:
        """The GGUF file in use: MNEMO_MODEL, the setting, or the bundled default."""
        return model_path(self._settings["model_path"])

    def info(self) -> ModelInfo:
        """The model's metadata, without loading it (ModelError if unusable)."""
        return inspect_model(
            self.path(), self._settings["query_prefix"], self._settings["document_prefix"]
        )

    @property
    def embedder(self) -> Embedder | None:
        """The loaded model, or None (see `error`) if it cannot be loaded."""
        if not self._tried:
            self._tried = True
            try:
                info = self.info()
                identity = model_identity(info)  # the file as loaded, for remember_checked
                embedder = Embedder(
                    info, self._settings["model_threads"], self._settings["model_gpu_layers"]
                )
                # Once a file passed, it is not checked again until it changes (15 ms of
                # every cold start; `mnemo doctor` always checks)
                if not checked(embedder.info):
                    problem = embedder.check()
                    if problem is not None:
                        embedder.close()
                        raise ModelError(f"the model {embedder.info.path} is not usable: {problem}")
                    remember_checked(embedder.info, identity)
                self._embedder = embedder
                self._record(embedder.info)
            except ModelError as exc:
                self._error = str(exc)
                log.warning("%s", exc)
        return self._embedder

    @property
    def error(self) -> str | None:
        """Why the model is unavailable, if it is."""
        return self._error

    @property
    def id(self) -> str:
        """The current model's id ('' when the model is unavailable); loads it."""
        embedder = self.embedder
        return embedder.info.model_id if embedder else ""

    def known_id(self) -> str:
        """The model id the database last recorded (no model load needed)."""
        if self._embedder is not None:
            return self._embedder.info.model_id
        return self._db.get_meta("model_id", "") or ""

    def missing(self) -> int:
        """How many live memories lack vectors from the current model (two index counts:
        cheap enough to ask after every backfill step, unlike `VectorRows.counts`)."""
        model_id = self.known_id()
        live = self._store.live_count()
        return max(0, live - self._store.vectors.embedded_count(model_id)) if model_id else live

    def check(self, trial: dict) -> None:
        """Whether the model that settings `trial` name can be used: its header, and its
        weights when it is another file (one cut off mid-download has good metadata and
        fails only there). ModelError says why."""
        path = model_path(trial["model_path"])
        info = inspect_model(path, trial["query_prefix"], trial["document_prefix"])
        if path != self.path():
            trial_model = Embedder(info, threads=1)
            problem = trial_model.check()
            trial_model.close()
            if problem is not None:
                raise ModelError(f"{path} is not usable: {problem}")

    def reload(self, load: bool = True) -> Embedder | None:
        """Forget the loaded model (after a settings change) and load it again (now, or at
        its first use when not `load`)."""
        if self._embedder is not None and self._owns:
            self._embedder.close()
        self._owns = True
        self.forget_index()
        self._embedder, self._error, self._tried = None, None, False
        return self.embedder if load else None

    def _record(self, info: ModelInfo) -> None:
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

    # ---- the vectors -----------------------------------------------------------------
    def index(self) -> VectorIndex | None:
        """The in-memory vectors of the current model, refreshed from the database."""
        embedder = self.embedder
        if embedder is None:
            return None
        if self._index is None:
            # The memory-mapped copy of the vectors lives beside the database (not for a
            # read-only one). An encrypted database's copy is sealed under a key derived
            # from its own and read into memory whole (ADR 0014); a clear one a crash left
            # is wiped first.
            cache = None if self._db.read_only else cipher.vector_copy(self._db.path)
            if self._db.encrypted and cache is not None:
                for clear in ("*.q8.npy", "*.scale.npy", "*.f32.npy"):  # f32: before m013
                    cipher.wipe(cache, clear)
            self._index = VectorIndex(
                embedder.info.model_id, embedder.info.dimension, cache, self._db.vector_key
            )
        self._index.refresh(self._store)
        return self._index

    @property
    def index_read(self) -> VectorIndex | None:
        """The vector index as read so far (None before the first search: never reads)."""
        return self._index

    def prepare(self) -> None:
        """Load the vectors and make what a search needs before the first one (the app does
        this in the background once the model is loaded)."""
        index = self.index()
        if index is not None:
            index.prepare()

    def forget_index(self) -> None:
        """Drop the vectors read (the database is let go of, or the model changed)."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def close(self) -> None:
        """Free the model (if this engine loaded it); the vectors added since start go to the
        copy the next start maps."""
        if self._index is not None:
            with contextlib.suppress(Exception):  # a cache: never in the way of closing
                self._index.save(self._store)
            self._index.close()
        if self._embedder is not None and self._owns:
            self._embedder.close()
            self._embedder = None


def convert(src: Path, out: Path, kind: str = "f16", name: str | None = None) -> Path:
    """Convert a sentence-transformers BERT folder to a GGUF file (slow: seconds)."""
    from app.core.model.converter import convert as converted  # (numpy work: only here)

    return converted(Path(src), Path(out), kind, name)


def model_path(configured: str) -> Path:
    """The GGUF file for a `model_path` value: MNEMO_MODEL, the value, or the default."""
    if os.environ.get("MNEMO_MODEL"):
        configured = os.environ["MNEMO_MODEL"]
    return Path(configured).expanduser() if configured else paths.DEFAULT_MODEL
