"""Questions about a conversation stored turn by turn (issue 20): dates, threads, nothing.

The dialogue (tests/core/data/conversation/dialogue.json) was written by a helper who never
saw the search code: eight dated sessions between two friends and 30 questions whose answer
turns are known. Turns are imported as a user's agent would store them: one memory a turn,
dated when its session began.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DIALOGUE = json.loads(
    (Path(__file__).parent / "data" / "conversation" / "dialogue.json").read_text("utf-8")
)


def _import(engine, tmp_path: Path, threads: bool) -> dict[str, str]:
    """Every turn as a memory (JSONL import, the session's date as created_at)."""
    lines = []
    for session in DIALOGUE["sessions"]:
        for turn in session["turns"]:
            record = {
                "id": turn["id"].replace(":", "-"),
                "text": f"{turn['speaker']}: {turn['text']}",
                "created_at": session["date_time"],
                "source": "chat",
            }
            if threads:
                record["thread"] = f"rosa-tomas {session['id']}"
            lines.append(json.dumps(record, ensure_ascii=False))
    path = tmp_path / "dialogue.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    engine.import_paths([path])
    engine.backfill()
    return {t["id"]: t["id"].replace(":", "-") for s in DIALOGUE["sessions"] for t in s["turns"]}


def _found(engine, kind: str, k: int = 5) -> tuple[int, int]:
    """(questions of `kind` whose answer turn is in the top k, questions of that kind)."""
    questions = [q for q in DIALOGUE["questions"] if q["kind"] == kind]
    found = 0
    for q in questions:
        ids = [r.memory.id for r in engine.recall(q["question"], limit=k, track=False).results]
        found += any(e.replace(":", "-") in ids for e in q["evidence"])
    return found, len(questions)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [True, False], ids=["thread ids", "turns imported together"])
def test_questions_about_a_conversation_find_their_turn(engine, tmp_path, threads):
    # GIVEN the dialogue stored turn by turn (with thread ids, or turns of a session
    # imported together, which makes them a thread)
    _import(engine, tmp_path, threads)
    # THEN a question sharing words with its answer finds it in the top 5
    assert _found(engine, "plain") == (10, 10)
    # AND a question naming a date finds what was said then: the session's turns come first
    # (the code before issue 20 found 0 of 8: the date was searched as words, no memory
    # holds them, and 4 of 8 got nothing at all)
    assert _found(engine, "date")[0] >= 4
    # AND an answer that needs the turn before it ("250, secondhand…" after "how much did
    # the bike cost you?") is lifted by its neighbour: 1 of 8 before
    assert _found(engine, "context")[0] >= 3


@pytest.mark.slow
def test_a_date_question_ranks_that_days_turns_first_and_says_nothing_of_other_days(
    engine, tmp_path
):
    _import(engine, tmp_path, threads=True)
    result = engine.recall("What did Tomás sign on 6 April 2025?", limit=10, track=False)
    # The date's words are not searched; the turns of that session (6 April) come first
    assert result.window is not None and result.window.text == "on 6 April 2025"
    assert result.results[0].memory.id in ("S4-8", "S4-4")
    assert all(r.memory.id.startswith("S4-") for r in result.results if r.in_window)
    assert [r.in_window for r in result.results] == sorted(
        (r.in_window for r in result.results), reverse=True
    )
    # A date when nothing was said: the notice says so, and matches from any time follow
    other = engine.recall("What did Tomás sign on 6 April 2024?", limit=5, track=False)
    assert "nothing was stored on 6 April 2024" in (other.notice or "")
    assert other.results and other.window is None


@pytest.mark.slow
def test_a_question_that_is_only_a_time_lists_what_was_said_then(engine, tmp_path):
    _import(engine, tmp_path, threads=True)
    result = engine.recall("15 March 2025", limit=50, track=False)
    assert {r.memory.id.split("-")[0] for r in result.results} == {"S2"}
    assert len(result.results) == 19 and all(r.band == "strong" for r in result.results)


@pytest.mark.slow
def test_questions_about_what_was_never_said_get_no_strong_answer(engine, tmp_path):
    # In a collection all about Rosa and Tomás, "the name of Rosa's cat" is about them,
    # so it is answered, but with weak matches only, marked so (never a strong one)
    _import(engine, tmp_path, threads=True)
    for q in (q for q in DIALOGUE["questions"] if q["kind"] == "none"):
        results = engine.recall(q["question"], limit=5, track=False).results
        assert all(r.band != "strong" for r in results), q["question"]


def test_the_same_words_in_two_threads_are_two_memories(engine):
    # "haha" in two conversations is two turns; a note stored twice is one memory
    a = engine.remember("haha, no way", thread="chat 1", force=True)
    b = engine.remember("haha, no way", thread="chat 2", force=True)
    c = engine.remember("haha, no way", thread="chat 2", force=True)
    assert a.status == b.status == "stored" and c.status == "observed"
    assert a.memory.id != b.memory.id == c.memory.id
    assert engine.get(b.memory.id).thread == "chat 2"


@pytest.mark.slow
def test_imports_keep_their_dates_so_a_date_question_finds_an_old_note(engine, tmp_path):
    # A knowledge bank's Created line and a JSONL created_at are when the note was made
    bank = tmp_path / "patterns.md"
    bank.write_text(
        "## Staging deploy checklist\n\nBump the image tag, then watch the rollout.\n"
        "- Created: 2023-06-16\n\n"
        "## Release checklist\n\nTag the release, then write the changelog.\n"
        "- Created: 2024-02-01\n",
        encoding="utf-8",
    )
    engine.import_paths([bank])
    engine.backfill()
    result = engine.recall("which checklist did I write on 16 June 2023", track=False)
    assert result.results[0].memory.title == "Staging deploy checklist"
    assert result.results[0].in_window and not result.results[1].in_window


def test_notes_imported_with_a_bare_date_are_not_a_conversation(engine, store, tmp_path):
    # Turns imported together at one time of day lend each other context; a day's notes
    # with only a date (a knowledge bank's `Created: 2024-03-05`) are no conversation
    path = tmp_path / "n.jsonl"
    rows = [("a", "2024-03-05"), ("b", "2024-03-05"), ("c", "2024-03-06T10:00:00")]
    rows += [("d", "2024-03-06T10:00:00")]
    path.write_text(
        "".join(json.dumps({"id": i, "text": f"note {i}", "created_at": d}) + "\n" for i, d in rows)
    )
    engine.import_paths([path])
    seqs = {m.id: s for s, m in store.by_seqs(range(1, 5)).items()}
    around = store.neighbours(seqs.values())
    assert seqs["a"] not in around and seqs["b"] not in around
    assert around[seqs["c"]] == (None, seqs["d"]) and around[seqs["d"]] == (seqs["c"], None)


def test_threads_survive_markdown_export_the_mirror_merges_and_edits(engine, tmp_path):
    # Found in review: markdown (export, mirror, knowledge bank) carried no thread, so a
    # re-import cleared every thread and dropped the second "haha" of another chat
    a = engine.remember("haha", thread="chat-1", force=True).memory
    b = engine.remember("haha", thread="chat-2", force=True).memory
    c = engine.remember("see you at the station at nine", thread="chat-2", force=True).memory
    out = tmp_path / "export.md"
    engine.export_to(out, fmt="markdown")
    assert "- Thread: chat-2" in out.read_text()
    engine.import_paths([out])  # into the same database: nothing changes
    assert [engine.get(m.id).thread for m in (a, b, c)] == ["chat-1", "chat-2", "chat-2"]
    fresh_home = tmp_path / "fresh"
    import os

    from app.core.engine import Engine

    old = os.environ["MNEMO_HOME"]
    os.environ["MNEMO_HOME"] = str(fresh_home)
    try:
        fresh = Engine(embedder=engine.embedder)
        fresh.import_paths([out])
        assert sorted(m.thread for m in fresh.listing()) == ["chat-1", "chat-2", "chat-2"]
        fresh.close()
    finally:
        os.environ["MNEMO_HOME"] = old
    # A merge within one thread stays in it; an edit moves a memory out with ""
    merged = engine.merge([b.id, c.id])
    assert merged.thread == "chat-2"
    assert engine.edit(merged.id, thread="").thread is None
