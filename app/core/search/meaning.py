"""Whether search by meaning is available now, and if not, why (one answer for all)."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.model.embedder import Embedder
from app.core.search.vectors import VectorIndex


@dataclass
class Meaning:
    """The model and vectors a search can use, or the reason it cannot.

    `embedder` and `index` are both set when meaning is available; otherwise `problem` says
    why in words fit for the user. `missing` counts live memories without current vectors
    (they can only be found by keywords until the backfill reaches them).
    """

    embedder: Embedder | None = None
    index: VectorIndex | None = None
    problem: str | None = None
    missing: int = 0

    @property
    def available(self) -> bool:
        """Whether vectors can be searched."""
        return self.problem is None and self.embedder is not None and self.index is not None

    @property
    def model_name(self) -> str:
        """The model's name ('' without one)."""
        return self.embedder.info.name if self.embedder is not None else ""


def assess(
    embedder: Embedder | None,
    model_error: str | None,
    index: VectorIndex | None,
    live: int,
) -> Meaning:
    """Meaning's state from the loaded model (or its error), its index and the live count."""
    if embedder is None:
        return Meaning(problem=model_error or "the model is not loaded", missing=live)
    if index is None or len(index) == 0:
        problem = "no memory is embedded yet (run `mnemo backfill`)"
        return Meaning(embedder=embedder, index=index, problem=problem, missing=live)
    return Meaning(embedder=embedder, index=index, missing=max(live - len(index), 0))


NO_MEANING = Meaning(problem="model not used")
