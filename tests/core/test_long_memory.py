"""A long memory is embedded slice by slice, so the one engine thread can answer searches
between two slices (issue 12, defect 5: a 1.9 M character clipboard blocked every search).

The slicing is mechanics, not meaning: the small deterministic model (tests/word_model.py)
counts the sequences it decodes, so a slice kept for the next call is seen from outside."""

from __future__ import annotations

import numpy as np
import pytest

from app.core import indexer

PARAGRAPH = (
    "The harbour queue moves slowly while the ferries load cars, bikes and foot passengers; "
    "the timetable changes in winter and the last boat leaves at nine. "
)


def test_a_long_memory_is_embedded_in_slices_that_resume_where_they_stopped(
    word_engine, store, word_model
):
    engine, embedder = word_engine, word_model
    text = "Zanzibar ferry notes. " + PARAGRAPH * 200  # about 30,000 characters
    assert len(text) > indexer.LONG_TEXT_CHARS
    stored = engine.remember(text, force=True, embed=False).memory
    sequences = embedder.document_sequences(stored.embed_text)
    assert len(sequences) > 2 * indexer.SLICE_CHUNKS
    embedder.decoded = 0
    # WHEN the backfill is asked to stop (a search is waiting) after its first slice
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 1  # before the batch: go on; between slices: stop

    assert engine.backfill(should_stop=stop) == 0
    # THEN nothing half-done is stored, and the one slice made is kept for the next call
    assert engine.vector_status()["missing"] == 1
    assert embedder.decoded == indexer.SLICE_CHUNKS
    # WHEN the backfill runs again THEN it goes on from there and stores every chunk
    assert engine.backfill() == 1
    assert embedder.decoded == len(sequences)  # each chunk once, labels from the same pass
    assert engine.vector_status() == {"embedded": 1, "stale": 0, "missing": 0}
    whole = embedder.embed_documents([stored.embed_text])[0]
    kept = store.vectors.of(stored.id, embedder.info.model_id)
    assert kept.shape == whole.shape and np.allclose(kept, whole, atol=5e-4)  # float16
    hits = engine.recall("zanzibar ferry timetable").results
    assert hits and hits[0].memory.id == stored.id


def test_a_changed_text_starts_its_slices_again(word_engine, store, word_model):
    engine, embedder = word_engine, word_model
    first = engine.remember("Old notes. " + PARAGRAPH * 120, force=True, embed=False).memory
    calls = iter([False, True])
    engine.backfill(should_stop=lambda: next(calls, True))
    assert engine.vector_status()["missing"] == 1  # a slice of the old text kept
    edited = engine.edit(first.id, text="New notes. " + PARAGRAPH * 121, embed=False)
    new_sequences = len(embedder.document_sequences(edited.embed_text))
    embedder.decoded = 0
    assert engine.backfill() == 1 and engine.vector_status()["missing"] == 0
    assert embedder.decoded == new_sequences  # the old text's slice was not used
    kept = store.vectors.of(edited.id, embedder.info.model_id)
    assert np.allclose(kept, embedder.embed_documents([edited.embed_text])[0], atol=5e-4)


def test_the_backfill_yields_between_two_memories_labels(engine, embedder):
    # Labels cost about twice the vectors of a short note: a batch of 8 made a search
    # typed during an import's backfill wait ~80 ms for all 8 labels.
    notes = [f"Meeting note {i}: the budget review moves to day {i} of the month" for i in range(8)]
    ids = [engine.remember(n, force=True, embed=False).memory.id for n in notes]
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2  # before the batch and after one memory's labels: go on

    engine.backfill(batch_size=8, should_stop=stop)
    labelled = [i for i in ids if engine.get(i).keywords is not None]
    # THEN the batch's vectors are stored, its labels only as far as it went
    assert engine.vector_status() == {"embedded": 8, "stale": 0, "missing": 0}
    assert 1 <= len(labelled) < 8
    # AND the next run labels the rest
    engine.backfill()
    assert all(engine.get(i).keywords is not None for i in ids)
    assert not engine.needs_backfill()


def test_the_backfill_slices_a_note_of_a_few_thousand_characters_too(engine, embedder, monkeypatch):
    # Under LONG_TEXT_CHARS, a 6,000-character note was embedded in one step of six chunks
    # (240 ms, twice that with a core busy), and a search typed meanwhile waited for all.
    # The real model: how many chunks a note of this length makes is its tokenizer's.
    decoded, real = [], embedder.decode

    def counted(sequences, interactive=False, keep=0):
        decoded.append(len(sequences))
        return real(sequences, interactive, keep)

    monkeypatch.setattr(embedder, "decode", counted)
    note = engine.remember("Notes. " + PARAGRAPH * 40, force=True, embed=False).memory
    assert 1_500 < len(note.embed_text) < 8_000
    assert len(embedder.document_sequences(note.embed_text)) > 2
    calls = iter([False, True])
    assert engine.backfill(should_stop=lambda: next(calls, True)) == 0
    assert decoded == [1]  # one chunk, then yield
    assert engine.backfill() == 1 and engine.vector_status()["missing"] == 0


def test_a_word_held_only_deep_in_a_long_memory_is_found_in_every_mode(engine):
    # The desktop pass (issue 22, item 7): a word at the end of a 300,000-character memory,
    # held by no other, got "No relevant memories" by keywords and nothing in the popup:
    # BM25 divides its weight by the memory's length, and it fell under the floor
    engine.remember("A short note about the garden shed and the lawn mower", force=True)
    for i in range(60):  # a collection of short notes, as most are
        engine.remember(f"Short note {i}: buy milk, call the plumber, permit {i}", embed=False)
    line = "Item {}: the quarterly planning meeting covered budgets, hiring and the roadmap. "
    body = "".join(line.format(i) for i in range(3700))
    assert len(body) > 300_000
    engine.remember(body + "The final code word is zyxquartz.", force=True, embed=False)
    for mode, prefix in (("keyword", False), (None, False), (None, True)):
        found = engine.recall("zyxquartz", mode=mode, prefix=prefix, track=False).results
        assert [len(r.memory.text) for r in found] == [len(body) + 33], (mode, prefix)
        assert found[0].band.value in ("partial", "strong")
    # A word most memories hold is not lifted: holding it says little
    engine.remember("The roadmap for the garden: a new shed", force=True)
    common = engine.recall("roadmap garden shed", mode="keyword", track=False).results
    assert common and common[0].memory.text.startswith("The roadmap for the garden")


def test_the_model_gives_up_a_pass_half_way_when_someone_waits(engine, embedder, store):
    # Issue 42, item 3: while the hook helper embedded an import's backlog, a prompt
    # waited for the pass in progress (two abstracts: p95 129 ms of 230 ms). The real
    # model is asked between two steps of its graph whether to go on.
    notes = [
        "Sea kayak log: paddled from the harbour to the lighthouse, wind 4 Bft from the west, "
        f"crossing {i} took forty minutes and the swell built after noon near the reef"
        for i in range(3)
    ]
    ids = [engine.remember(n, force=True, embed=False).memory.id for n in notes]
    asked = []

    def give_way() -> bool:
        asked.append(1)
        return len(asked) > 20  # a someone arrives while the first pass runs

    before = embedder.given_way
    # WHEN someone waits during the pass THEN it is given up: nothing of it is stored
    assert engine.backfill(batch_size=2, give_way=give_way) == 0
    assert embedder.given_way == before + 1
    assert len(asked) == 21  # asked again and again inside one pass, not only between
    assert engine.vector_status()["missing"] == 3
    # AND a query is never given up, whoever waits
    with embedder.giving_way(lambda: True):
        assert embedder.embed_query("kayak").shape == (embedder.info.dimension,)
    # AND the next backfill embeds everything as a pass never interrupted would
    assert engine.backfill() == 3 and not engine.needs_backfill()
    for memory_id in ids:
        text = engine.get(memory_id).embed_text
        kept = store.vectors.of(memory_id, embedder.info.model_id)
        assert np.allclose(kept, embedder.embed_documents([text])[0], atol=5e-4)  # float16
        assert engine.get(memory_id).keywords


def test_a_long_memory_s_slices_survive_a_pass_given_up(engine, embedder, store):
    text = "Alpine moss field guide. " + PARAGRAPH * 200
    stored = engine.remember(text, force=True, embed=False).memory
    slices = []
    real = embedder.decode

    def counted(sequences, interactive=False, keep=0):
        out = real(sequences, interactive, keep)
        slices.append(len(sequences))
        return out

    embedder.decode = counted
    try:
        asked = []
        # WHEN the third slice's pass is given up
        engine.backfill(give_way=lambda: asked.append(1) or len(slices) >= 2)
        assert len(slices) == 2 and embedder.given_way >= 1
        # THEN the two slices made are kept: the next backfill goes on from the third
        assert engine.backfill() == 1
        whole = len(embedder.document_sequences(stored.embed_text))
        assert len(slices) == whole
    finally:
        del embedder.decode
    kept = store.vectors.of(stored.id, embedder.info.model_id)
    assert np.allclose(kept, embedder.embed_documents([stored.embed_text])[0], atol=5e-4)


def test_ctrl_c_during_a_pass_that_may_give_way_is_not_lost(engine, embedder):
    # helper-9's review: llama.cpp asks Python between two steps of its graph, and a
    # KeyboardInterrupt raised there was printed and dropped by ctypes: the pass went on
    engine.remember("Sea kayak log: wind from the west, crossing took forty minutes", embed=False)
    asked = []

    def interrupted() -> bool:
        asked.append(1)
        if len(asked) == 5:
            raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        engine.backfill(give_way=interrupted)
    assert len(asked) == 5  # raised at once, not after the pass
    # AND the model goes on working, the memory embedded by the next backfill
    assert engine.backfill() == 1 and not engine.needs_backfill()
