"""Remembering: exact duplicates, near-duplicates, merge, related memories, huge texts."""

from __future__ import annotations

import json

import pytest

from app.core.errors import InputError, NotFoundError


def test_same_text_counts_an_observation_instead_of_a_new_row(engine):
    first = engine.remember("Always pin dependency versions in the lock file", tags="deps")
    again = engine.remember("always  pin dependency versions in the LOCK file", tags="ci")
    assert first.status == "stored" and again.status == "observed"
    assert again.memory.id == first.memory.id
    assert again.memory.observation_count == 2
    assert again.memory.tags == ["deps", "ci"]
    assert engine.stats()["memories"] == 1


def test_remembering_a_trashed_text_brings_it_back(engine):
    memory = engine.remember("Check the fuse box first").memory
    engine.forget([memory.id])
    result = engine.remember("Check the fuse box first")
    assert result.status == "restored" and result.memory.deleted_at is None


def test_near_duplicate_is_reported_not_stored(engine):
    engine.remember("Use exponential backoff when retrying HTTP requests", tags="http")
    # Punctuation changes the content hash, so this is a near-duplicate, not the same text.
    punctuated = engine.remember("Use exponential backoff when retrying HTTP requests!")
    assert punctuated.status == "similar" and punctuated.similarity > 0.95
    near = engine.remember("Retry HTTP requests using exponential backoff")
    assert near.status == "similar" and near.similarity >= 0.85
    assert engine.stats()["memories"] == 1


def test_merge_keeps_every_statement_unions_tags_and_adds_observations(engine):
    base = engine.remember(
        "Use exponential backoff when retrying HTTP requests", tags="http", references="net.py"
    ).memory
    merged = engine.remember(
        "Retry HTTP requests using exponential backoff, and add jitter",
        tags="retry",
        references="client.py",
        merge=True,
    )
    assert merged.status == "merged"
    m = engine.get(merged.memory.id)
    assert "Use exponential backoff when retrying HTTP requests" in m.text
    assert "Retry HTTP requests using exponential backoff, and add jitter" in m.text
    assert m.tags == ["http", "retry"] and m.references == ["net.py", "client.py"]
    assert m.observation_count == 2
    assert engine.count() == 1
    # The source is in the trash as it was, linked to the result.
    source = engine.get(base.id)
    assert source.deleted_at and source.merged_into == m.id and source.text == base.text
    # The merged memory was embedded: it is found by its new words.
    assert engine.recall("jitter", mode="keyword", track=False).results[0].memory.id == m.id


def test_unmerging_a_merge_made_as_a_text_arrived_brings_back_both(engine):
    # A sibling of issue 46 item 7 (Undo merge in the app): `remember --merge` kept the new
    # text only inside the merged memory, so `mnemo unmerge` brought back the memory stored
    # before and left the new text in the trash alone
    before = engine.remember("Use exponential backoff when retrying HTTP requests").memory
    new = "Retry HTTP requests using exponential backoff, and add jitter"
    merged = engine.remember(new, tags="retry", merge=True).memory
    assert engine.count() == 1 and engine.get(merged.id).observation_count == 2
    back = engine.unmerge(merged.id)
    live = {m.id: m for m in engine.listing()}
    assert set(back) == set(live) and before.id in live and len(live) == 2
    (arrived,) = [m for i, m in live.items() if i != before.id]
    assert arrived.text == new and arrived.tags == ["retry"] and arrived.observation_count == 1
    assert engine.get(merged.id).deleted_at


def test_merging_contradicting_statements_keeps_both_and_undo_restores_originals(engine):
    # A cosine of 0.88 between opposite rules used to replace one with the other.
    always = engine.remember(
        "Always deploy the billing service on Fridays before 3pm. Tell the on-call first.",
        tags="deploy",
    ).memory
    never = engine.remember(
        "Never deploy the billing service on Fridays after 3pm. Tell the on-call first.",
        force=True,
        tags="billing",
    ).memory
    engine.edit(never.id, pinned=True)
    merged = engine.merge([always.id, never.id])
    assert "Always deploy the billing service on Fridays before 3pm." in merged.text
    assert "Never deploy the billing service on Fridays after 3pm." in merged.text
    assert merged.text.count("Tell the on-call first") == 1  # said once, kept once
    assert merged.pinned and merged.tags == ["deploy", "billing"]
    assert {m.id for m in engine.listing()} == {merged.id}
    # WHEN the merge is undone THEN both originals are back exactly, the merge is trashed
    restored = engine.unmerge(merged.id)
    assert sorted(restored) == sorted([always.id, never.id])
    back = {m.id: m for m in engine.listing()}
    assert set(back) == {always.id, never.id}
    assert back[always.id].text == always.text and back[never.id].text == never.text
    assert back[never.id].pinned and back[always.id].merged_into is None
    assert engine.get(merged.id).deleted_at is not None


def test_a_merge_of_a_trashed_memory_is_refused(engine):
    a = engine.remember("Water the tomatoes in the morning", force=True).memory
    b = engine.remember("The tomatoes want water before nine", force=True).memory
    engine.forget([b.id])
    with pytest.raises(NotFoundError):
        engine.merge([a.id, b.id])


def test_force_stores_a_near_duplicate_and_related_are_listed(engine):
    engine.remember("Use exponential backoff when retrying HTTP requests")
    forced = engine.remember("Retry HTTP requests using exponential backoff", force=True)
    assert forced.status == "stored"
    assert engine.stats()["memories"] == 2
    related = engine.remember("HTTP clients need timeouts on every request")
    assert related.status == "stored"
    assert related.related and all(0.5 <= s < 0.85 for _, s in related.related)


def test_merge_selected_memories_trashes_the_others(engine):
    a = engine.remember("Deploys happen on Tuesdays", tags="ops").memory
    b = engine.remember(
        "We never deploy on Fridays because nobody is around", tags="team", force=True
    ).memory
    merged = engine.merge([a.id, b.id])
    assert merged.text == (
        "Deploys happen on Tuesdays\n\nWe never deploy on Fridays because nobody is around"
    )
    assert merged.tags == ["ops", "team"]
    assert engine.get(a.id).deleted_at and engine.get(b.id).deleted_at
    engine.restore([b.id])  # one source can come back on its own, unlinked
    assert engine.get(b.id).merged_into is None
    assert engine.stats()["memories"] == 2


def test_empty_binary_and_bad_confidence_are_refused(engine):
    for text, message in (("   ", "empty"), ("a\x00b", "binary"), ("x" * 2_000_001, "limit")):
        with pytest.raises(InputError, match=message):
            engine.remember(text)
    with pytest.raises(InputError, match="confidence"):
        engine.remember("fine text", confidence="certain")
    assert engine.stats()["memories"] == 0


def test_edit_reembeds_changed_content(engine):
    memory = engine.remember("The office wifi password is on the fridge").memory
    edited = engine.edit(memory.id, text="Team lunch is every Thursday at the noodle bar")
    assert edited.title == "Team lunch is every Thursday at the noodle bar"  # derived title follows
    hit = engine.recall("when is the team lunch", mode="semantic", track=False).results
    assert hit and hit[0].memory.id == memory.id
    assert engine.recall("wifi password", mode="keyword", track=False).results == []


@pytest.mark.slow
def test_a_50000_word_memory_is_stored_chunked_embedded_and_found(engine, store):
    filler = (
        "The committee reviewed the annual budget and discussed the schedule for "
        "the next quarter in considerable detail. "
    )
    needle = (
        "The lighthouse keeper logged a migrating flock of arctic terns resting on "
        "the northern rocks during the storm. "
    )
    words_per_filler = len(filler.split())
    repeats = 50_000 // words_per_filler
    text = filler * (repeats // 2) + needle + filler * (repeats - repeats // 2)
    assert len(text.split()) >= 50_000
    memory = engine.remember(text, title="Minutes").memory
    vectors = store.vectors.of(memory.id, engine.embedder.info.model_id)
    windows = engine.embedder.document_sequences(memory.embed_text)
    assert vectors.shape[0] == len(windows) > 200  # chunked, every chunk embedded
    engine.remember("Buy oat milk and coffee beans", force=True)
    engine.remember("The quarterly tax filing is due at the end of the month", force=True)
    # One sentence in 50,000 words: keywords find it (its BM25 is weak, the memory is long)
    result = engine.recall("arctic terns", track=False)
    assert [r.memory.id for r in result.results] == [memory.id]
    # Its cosine is its best chunk's, the one holding the needle, well above a filler chunk's
    # (0.25 with MiniLM: too diluted in its 256-token window to count as relevant alone).
    query = "arctic terns sheltering from a storm"
    meaning = engine.meaning()
    seqs, best = meaning.index.scores(engine.embedder.embed_query(query))
    (seq,) = store.db.query("SELECT seq FROM memories WHERE id = ?", (memory.id,))[0]
    needle_chunk = float(best[list(seqs).index(seq)])
    filler_only = float(
        engine.embedder.embed_documents([filler * 20])[0][0] @ engine.embedder.embed_query(query)
    )
    assert needle_chunk > filler_only + 0.1


def test_a_merge_keeps_case_variants_questions_and_code_lines(engine):
    # The red team (issue 21): statements compared case-insensitively lost
    # `log_dir=/data/logs` for good (after unmerge it was in no memory), a question was
    # taken for the statement it asks about, and two shell snippets lost `fi` and
    # `echo done` and had their lines joined with spaces.
    first = engine.remember(
        "To move logs: export LOG_DIR=/Data/Logs. Restart the agent. Is the cache warm?"
    ).memory
    second = engine.remember(
        "To move logs: export log_dir=/data/logs. Restart the agent. Is the cache warm.",
        merge=True,
    ).memory
    for statement in ("LOG_DIR=/Data/Logs", "log_dir=/data/logs", "warm?", "warm."):
        assert statement in second.text, statement
    assert second.text.count("Restart the agent") == 1 and first.id != second.id
    a = "if [ -d build ]; then\n  rm -rf build\nfi\necho done"
    b = "if [ -d dist ]; then\n  rm -rf dist\nfi\necho done"
    x = engine.remember(a, tags="shell").memory
    y = engine.remember(b, tags="shell", force=True).memory
    merged = engine.merge([x.id, y.id])
    assert a in merged.text and b in merged.text  # both whole, lines and all


def test_remembering_a_new_memory_is_one_write_transaction(embedder, mnemo_home, monkeypatch):
    # Issue 23: `mnemo remember` took four write transactions (one only to read whether the
    # text was known, the insert, the vectors, the labels); now one holds them all, so a
    # crash between them cannot leave a memory without its vectors
    import apsw

    from app.core.engine import Engine

    begun: list[str] = []

    def trace(conn: apsw.Connection) -> None:
        def statement(_cursor, sql: str, _bindings) -> bool:
            if sql.lstrip().upper().startswith("BEGIN"):
                begun.append(sql)
            return True

        conn.exec_trace = statement

    monkeypatch.setattr(apsw, "connection_hooks", [*apsw.connection_hooks, trace])
    with Engine(embedder=embedder) as engine:
        begun.clear()  # opening may migrate
        result = engine.remember("The water meter is read on the first Monday of the month")
        assert result.status == "stored" and result.memory.keywords
        assert len(begun) == 1, begun
        begun.clear()
        again = engine.remember("The water meter is read on the first Monday of the month")
        assert again.status == "observed" and len(begun) == 1, begun
        assert engine.get(result.memory.id).keywords == result.memory.keywords
        assert not engine.needs_backfill()  # its vectors came in the same transaction


def test_what_remember_did_is_an_enum_and_its_json_a_plain_word(engine):
    from app.core.writer import Remembered

    result = engine.remember("The recycling goes out on Tuesday evenings")
    assert result.status is Remembered.STORED
    assert json.loads(json.dumps(result.to_dict()))["status"] == "stored"
