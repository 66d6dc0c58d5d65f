"""'Nothing relevant' holds as a collection grows (issue 41, item 1): the personal notes among
1,500 notes about shell commands (tests/core/data/precision/notebook.json, from man pages),
asked questions about nothing stored (the tuning half of precision/offtopic.json: far,
the user's own things never stored, and ones sharing a word with a command) and the personal
set's real questions. bench/precision.py measures the same at 300 to 5,000 memories with
SciFact abstracts mixed in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def notebook(tmp_path_factory, embedder):
    import os

    from app.core.engine import Engine

    home = tmp_path_factory.mktemp("mnemo-home")
    before = os.environ.get("MNEMO_HOME")
    os.environ["MNEMO_HOME"] = str(home)
    engine = Engine(embedder=embedder)
    notes = json.loads((DATA / "precision" / "notebook.json").read_text(encoding="utf-8"))
    records = [{"title": n["title"], "text": n["text"]} for n in notes[:1500]]
    for line in (DATA / "recall_eval" / "memories.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            m = json.loads(line)
            records.append(
                {
                    "title": m["title"],
                    "text": m["text"],
                    "tags": m["tags"],
                    "category": m["category"],
                    "references": [m["id"]],
                }
            )
    path = home / "collection.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    engine.import_paths([path])
    engine.backfill(batch_size=64)
    yield engine
    engine.close()
    if before is None:
        os.environ.pop("MNEMO_HOME", None)
    else:
        os.environ["MNEMO_HOME"] = before


@pytest.mark.slow
def test_questions_about_nothing_stored_get_nothing_among_1500_notes(notebook):
    offtopic = json.loads((DATA / "precision" / "offtopic.json").read_text("utf-8"))["nothing"]
    asked = [q["query"] for q in offtopic if q["half"] == "tune"]
    answered = [q for q in asked if notebook.recall(q, track=False).results]
    # The code before answered 38 of the 60 ("who painted the Sistine Chapel ceiling" ->
    # a command sharing 'ceiling'); issue 41's first round 22; words saying so only of a
    # memory holding every word asked, and a margin beyond chance, 19 (measured 2026-11-29)
    assert len(answered) <= 20, answered


@pytest.mark.slow
def test_real_questions_still_find_their_answer_among_1500_notes(notebook):
    queries = json.loads((DATA / "recall_eval" / "queries.json").read_text("utf-8"))["real"]
    empty, missed = [], []
    for q in queries:
        results = notebook.recall(q["query"], track=False).results
        if not results:
            empty.append(q["query"])
        elif not {r.memory.references[0] for r in results[:5] if r.memory.references} & set(
            q["answers"]
        ):
            missed.append(q["query"])
    # The price of saying nothing more often: two weak questions of the user's own things
    # ("what did we agree for next quarter", "why didn't we go with poetry") get nothing
    # here (none did before); the rest find their answer in the top five
    assert len(empty) <= 2, empty
    assert len(missed) <= 3, missed


@pytest.mark.slow
def test_a_detail_never_stored_on_a_stored_topic_is_not_a_strong_match(notebook):
    # "what's the name of Maya's class teacher this year?" beside the school pick-up note:
    # the topic is stored, the detail is not. The note may be shown, but not as strong
    near = json.loads((DATA / "precision" / "neartopic.json").read_text("utf-8"))["near"]
    strong = []
    for q in near:
        if q["half"] != "tune":
            continue
        results = notebook.recall(q["query"], track=False).results
        if results and results[0].band == "strong":
            strong.append(q["query"])
    # The code before: 17 of the 20 first results strong; issue 41's first round 8; strong
    # holding the question's words, 1 (the wifi password beside the router note that names
    # the guest wifi; measured 2026-11-29)
    assert len(strong) <= 2, strong


@pytest.mark.slow
def test_a_time_every_memory_was_made_in_is_no_clue(notebook):
    # Every memory here was made today: "this week" singles none out. The code before
    # answered any question naming it with a memory of then ("what happened at the climate
    # summit this week" -> the boiler note, weak)
    for q in ("what happened at the climate summit this week", "stock market today"):
        assert notebook.recall(q, track=False).results == [], q
    # A question about something stored still finds it, strong: "note" is how it asks
    hits = notebook.recall("what did I note about the boiler this week", track=False).results
    assert hits and hits[0].memory.title.startswith("Boiler") and hits[0].band == "strong"
