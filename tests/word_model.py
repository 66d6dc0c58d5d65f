"""A small deterministic embedding model for tests of ranking and storage.

Each word is a token (a stable hash of it) with a fixed random vector; a text's vector is the
mean of its tokens', so texts that share words are close and texts that share none are about
orthogonal. It loads in no time and gives the same vectors on every machine. Tests where
meaning is what is tested (paraphrases, labels a person would pick) use the real model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.core.model.embedder import EmbeddingModel, ModelInfo

START, END = 1, 2


class WordModel(EmbeddingModel):
    """Bag-of-words vectors: `decode` is the one method an embedding model implements."""

    def __init__(self, dimension: int = 64, window: int = 64, name: str = "word-model"):
        self.info = ModelInfo(
            path=Path(f"/nonexistent/{name}.gguf"),
            name=name,
            architecture="test",
            dimension=dimension,
            trained_context=window,
            window=window,
            sha256=f"{name}-{dimension}".encode().hex().ljust(64, "0")[:64],
            query_prefix="",
            document_prefix="",
        )
        self._rows: dict[int, np.ndarray] = {}
        self.decoded = 0  # sequences decoded, for tests that count the model's work
        self._windows([START], [END])

    def _row(self, token: int) -> np.ndarray:
        row = self._rows.get(token)
        if row is None:
            rng = np.random.default_rng(token)
            row = self._rows[token] = rng.standard_normal(self.info.dimension).astype(np.float32)
        return row

    def decode(
        self, sequences: list[list[int]], interactive: bool = False, keep: int | set[int] = 0
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        out = np.zeros((len(sequences), self.info.dimension), dtype=np.float32)
        kept: dict[int, np.ndarray] = {}
        wanted = keep if isinstance(keep, set) else range(keep)
        for i, seq in enumerate(sequences):
            words = [t for t in seq if t not in (START, END)] or seq
            rows = np.stack([self._row(t) for t in seq])
            out[i] = np.stack([self._row(t) for t in words]).mean(axis=0)
            if i in wanted:
                kept[i] = rows
        self.decoded += len(sequences)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12), kept
