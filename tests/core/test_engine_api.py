"""The Engine as the one door: settings it owns, nested writes, one ranking, one JSON shape."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app.core.errors import InputError, StoreError
from app.core.memory import Memory, public_dict
from app.core.search.ranking import (
    Scored,
    Weights,
    combine,
    combine_arrays,
    prominence,
    prominence_array,
)
from app.core.settings import Settings
from app.core.storage.db import now
from tests.conftest import run_cli


@pytest.fixture
def engine(word_engine):
    """Mechanics, not meaning: the small deterministic model (tests/word_model.py)."""
    return word_engine


def test_nested_write_failure_rolls_back_only_its_own_part(engine):
    # GIVEN an outer transaction that stores one memory
    db = engine._db
    with db.write():
        kept = engine.remember("The outer part of the transaction is kept", force=True).memory
        # WHEN an inner write fails half-way and the caller carries on
        with pytest.raises(RuntimeError), db.write():
            engine._store.insert(Memory(id="", text="The inner part must vanish"))
            raise RuntimeError("inner failure")
        engine._store.insert(Memory(id="", text="Written after the inner failure"))
    # THEN the outer work and what followed landed, the inner part did not
    texts = {m.text for m in engine.listing(limit=10)}
    assert texts == {kept.text, "Written after the inner failure"}


def test_a_failure_outside_any_savepoint_rolls_back_everything(engine):
    with pytest.raises(StoreError), engine._db.write() as conn:
        engine._store.insert(Memory(id="", text="never stored"))
        conn.execute("INSERT INTO no_such_table VALUES (1)")
    assert engine.count() == 0


def test_apply_settings_is_all_or_nothing_and_saved(engine, mnemo_home):
    with pytest.raises(InputError):
        engine.apply_settings({"weight_vector": 0.9, "popup_results": 0})
    assert engine.settings["weight_vector"] == 0.5
    change = engine.apply_settings({"weight_vector": 0.9, "default_limit": 3})
    assert sorted(change.changed) == ["default_limit", "weight_vector"]
    assert not change.model_reloaded
    assert Settings()["weight_vector"] == 0.9  # on disk
    for i in range(5):
        engine.remember(f"Deploy note number {i} about the billing service", force=True)
    assert len(engine.recall("billing service deploy", track=False).results) == 3


def test_a_model_that_does_not_load_is_refused_and_nothing_changes(engine, mnemo_home):
    engine.remember("Keep meaning working when a bad model is chosen", force=True)
    bad = mnemo_home / "broken.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(InputError, match="not switched"):
        engine.apply_settings({"model_path": str(bad)})
    assert engine.settings["model_path"] == ""
    assert engine.embedder is not None and engine.meaning().problem is None


def test_switching_the_model_reloads_it_at_once(engine, q8_model):
    engine.remember("Rotate the signing keys every ninety days", force=True)
    before = engine.model_id
    change = engine.apply_settings({"model_path": str(q8_model)})
    assert change.model_reloaded and change.model_error is None
    assert engine.model_id != before
    assert engine.vector_status() == {"embedded": 0, "stale": 1, "missing": 0}
    assert engine.backfill() == 1
    assert engine.vector_status()["embedded"] == 1


def test_settings_changed_by_another_process_are_picked_up(engine):
    other = Settings()
    other.apply({"default_limit": 2})
    # Some file systems keep whole-second mtimes: make sure the stamp moves.
    stamp = time.time() + 2
    os.utime(other.path, (stamp, stamp))
    change = engine.refresh_settings()
    assert change.changed == ["default_limit"]
    assert engine.settings["default_limit"] == 2
    assert engine.refresh_settings().changed == []  # nothing new: no re-read


def test_prominence_of_many_equals_prominence_of_each():
    now_ = datetime.now(UTC)
    stamps = [
        now(),
        (now_ - timedelta(days=45)).isoformat(timespec="microseconds"),
        "2024-02-29",  # imported, no time
        "2025-01-01T10:00:00+02:00",  # another offset
        "not a date",
    ]
    memories = [
        Memory(
            id=str(i),
            text="x",
            updated_at=stamp,
            observation_count=i + 1,
            recall_count=3 * i,
            confidence=("low", "medium", "high")[i % 3],
            pinned=i == 2,
        )
        for i, stamp in enumerate(stamps)
    ]
    many = prominence_array(
        [m.observation_count for m in memories],
        [m.confidence for m in memories],
        [m.updated_at for m in memories],
        [m.pinned for m in memories],
        [m.recall_count for m in memories],
        5,
        now_,
    )
    each = [prominence(m, 5, now_) for m in memories]
    assert np.allclose(many, each)
    assert many.min() > 0 and many.max() <= 1


def test_combine_and_combine_arrays_are_one_formula():
    scored = [
        Scored(memory=Memory(id="a", text="a"), seq=1, vector_norm=0.8, prominence=0.2),
        Scored(memory=Memory(id="b", text="b"), seq=2, keyword_norm=0.5, prominence=0.9),
    ]
    weights = Weights(0.5, 0.2, 0.3)
    arrays = combine_arrays(
        np.array([0.8, 0.0]), np.array([0.0, 0.5]), np.array([0.2, 0.9]), weights
    )
    ranked = {c.memory.id: c.score for c in combine(scored, weights)}
    assert ranked["a"] == pytest.approx(arrays.score[0])
    assert ranked["b"] == pytest.approx(arrays.score[1])


def test_context_ranks_with_the_settings_weights(engine):
    for text in (
        "Parser error recovery: resynchronize at the next statement",
        "Garden: water the tomatoes before nine",
    ):
        engine.remember(text, force=True)
    engine.apply_settings({"weight_vector": 0.2, "weight_keyword": 0.4, "weight_prominence": 0.6})
    block = engine.context(query="parser errors", limit=2, track=False)
    # In effect: vector and keyword scaled so the larger is 1, prominence's share = w_p / 3.
    assert block.weights == pytest.approx((0.5, 1.0, 0.2))
    assert [m.text[:6] for m, _ in block.memories] == ["Parser"]  # the garden is not relevant


def test_one_json_shape_for_a_memory_everywhere(engine, mnemo_home):
    # GIVEN one memory reached through every path that prints memories as JSON
    cli_remember = json.loads(
        run_cli(
            "remember",
            "Pin the base image digest in the Dockerfile",
            "--tags",
            "docker",
            "--json",
        ).stdout
    )
    cli_recall = json.loads(run_cli("recall", "docker base image", "--json").stdout)["results"][0]
    cli_context = json.loads(run_cli("context", "--query", "docker image", "--json").stdout)[
        "entries"
    ][0]
    memory = engine.get(cli_remember["id"])
    # THEN they share the key names of `public_dict` (plus what each adds on top)
    shape = set(public_dict(memory))
    assert shape <= set(cli_remember) and set(cli_remember) - shape <= {
        "status",
        "similarity",
        "related",
        "notice",
    }
    # (recall also says each result's team space and its author there: null when none)
    assert set(cli_recall) == shape | {"score", "band", "space", "author"}
    assert cli_recall["space"] is None and cli_recall["author"] is None
    assert set(cli_context) == shape | {"score", "band"}
    assert cli_recall["id"] == cli_context["id"] == cli_remember["id"]


def test_front_end_reads_go_through_the_engine(engine):
    a = engine.remember("First memory about backups", tags="ops", force=True).memory
    b = engine.remember("Second memory about gardens", tags="home", force=True).memory
    engine.edit(b.id, pinned=True)
    assert [m.id for m in engine.recent(2)] == [b.id, a.id]
    assert engine.count() == 2
    assert engine.filter_values()["tag"] == ["home", "ops"]
    page = engine.page(order="title ASC", limit=1)
    assert [m.id for m, _ in page] == [a.id] and page[0][1] is True  # embedded
    assert engine.embedded([a.id, "nope"]) == {a.id}
    overview = engine.overview()
    assert overview["memories"] == 2 and overview["embedded"] == 2
    assert engine.purge([a.id]) == 1 and engine.count() == 1
    with pytest.raises(InputError):
        engine.page(order="text; DROP TABLE memories")
