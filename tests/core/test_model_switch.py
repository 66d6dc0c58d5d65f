"""Model switch and model failure: never mix vector spaces, never lose a memory."""

from __future__ import annotations

import shutil

from app.core import paths
from app.core.engine import Engine
from app.core.settings import Settings


def _seed(engine: Engine) -> list[str]:
    texts = [
        "k8s pod restart debugging",
        "I prefer local-first architecture",
        "Parse dates with an explicit format string",
    ]
    return [engine.remember(t).memory.id for t in texts]


def test_switching_model_makes_every_vector_stale_and_backfill_reembeds(mnemo_home, q8_model):
    first = Engine()
    _seed(first)
    f16_id = first.embedder.info.model_id
    first.close()

    settings = Settings()
    settings.set("model_path", str(q8_model))
    settings.save()
    switched = Engine()
    q8_id = switched.embedder.info.model_id
    assert q8_id != f16_id
    assert switched.vector_status() == {"embedded": 0, "stale": 3, "missing": 0}
    # Recall never compares a Q8 query with F16 vectors: it falls back to keywords and says so.
    result = switched.recall("kubernetes troubleshooting", track=False)
    assert result.mode == "keyword" and "backfill" in result.notice
    assert switched.backfill() == 3
    assert switched.vector_status() == {"embedded": 3, "stale": 0, "missing": 0}
    assert switched.vector_index().model_id == q8_id
    hit = switched.recall("kubernetes troubleshooting", track=False)
    assert hit.mode == "hybrid" and hit.results[0].memory.text == "k8s pod restart debugging"
    assert switched.overview()["model_name"] and switched.stats()["model"]["id"] == q8_id
    switched.close()


def test_missing_model_still_stores_and_recall_falls_back_with_notice(
    mnemo_home, monkeypatch, tmp_path
):
    monkeypatch.setenv("MNEMO_MODEL", str(tmp_path / "gone.gguf"))
    broken = Engine()
    stored = broken.remember("k8s pod restart debugging")
    assert stored.status == "stored" and "without embedding" in stored.notice
    result = broken.recall("pod restart", track=False)
    assert result.mode == "keyword" and "unavailable" in result.notice
    assert result.results[0].memory.id == stored.memory.id
    broken.close()

    monkeypatch.delenv("MNEMO_MODEL")
    healed = Engine()
    assert healed.backfill() == 1
    assert healed.recall("kubernetes troubleshooting", track=False).mode == "hybrid"
    healed.close()


def test_corrupt_model_file_behaves_like_a_missing_one(mnemo_home, monkeypatch, tmp_path):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(paths.DEFAULT_MODEL.read_bytes()[:1_000_000])
    monkeypatch.setenv("MNEMO_MODEL", str(corrupt))
    engine = Engine()
    assert engine.remember("still stored").status == "stored"
    assert engine.embedder is None and "corrupt.gguf" in engine.model_error
    assert engine.recall("stored", track=False).mode == "keyword"
    engine.close()
    shutil.copy(paths.DEFAULT_MODEL, corrupt)  # the file is repaired
    assert Engine().backfill() == 1


def test_a_truncated_model_is_refused_before_it_is_saved(mnemo_home, tmp_path):
    # Found by review: a GGUF cut off after its header (a broken download) passed the
    # metadata check; `mnemo settings model_path` saved it and the next start had no model.
    import pytest

    from app.core.errors import InputError

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(paths.DEFAULT_MODEL.read_bytes()[:1_000_000])
    engine = Engine()
    try:
        with pytest.raises(InputError, match="model not switched"):
            engine.apply_settings({"model_path": str(cut)})
        assert Settings()["model_path"] == ""  # nothing saved
        assert engine.embedder is not None  # the model in use stays
    finally:
        engine.close()
