"""Questions that name a time, as a tester asked them (issue 20): the notes stored then
come first, and a time when nothing was stored says so."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from app.core.storage.store import Filters

NOW = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
NOTES = [
    (
        "lease",
        "Signed the lease for the flat on Calle Olivo",
        NOW.replace(year=2023, month=6, day=16),
    ),
    ("rota", "The 24/7 support rota: pager handoff happens at 8am", NOW - timedelta(days=40)),
    (
        "login",
        "Fixed the flaky login test by waiting for the session cookie",
        NOW - timedelta(hours=27),
    ),
    (
        "dishwasher",
        "The dishwasher shows error E24: clean the drain filter",
        NOW - timedelta(hours=20),
    ),
    ("radiator", "Plumber fixed the radiator valve in the bedroom", NOW - timedelta(days=60)),
    ("today", "Booked the dentist for the kids", NOW),
]


@pytest.fixture
def noted(engine, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": key, "text": text, "created_at": when.isoformat()}) + "\n"
            for key, text, when in NOTES
        ),
        encoding="utf-8",
    )
    engine.import_paths([path])
    engine.backfill()
    return engine


def _ids(engine, query: str, **kw) -> list[str]:
    return [r.memory.id for r in engine.recall(query, track=False, **kw).results]


@pytest.mark.slow
def test_a_question_asking_what_was_stored_then_lists_that_time(noted):
    # "what did I note yesterday" gave nothing; "what happened on 16 June 2023" gave the
    # 24/7 rota note (it "happens"), not the lease signed that day
    assert sorted(_ids(noted, "what did I note yesterday")) == ["dishwasher", "login"]
    assert _ids(noted, "what happened on 16 June 2023") == ["lease"]
    assert _ids(noted, "show me what I stored in 2023") == ["lease"]


@pytest.mark.slow
def test_that_times_matches_come_first_and_the_rest_by_score(noted):
    # "what did I fix yesterday": yesterday's fix first, the older fix next, and yesterday's
    # dishwasher note (it fixes nothing) not above a real match
    ids = _ids(noted, "what did I fix yesterday")
    assert ids[0] == "login" and "radiator" in ids
    assert "dishwasher" not in ids[: ids.index("radiator")]
    result = noted.recall("what did I fix yesterday", track=False)
    assert [r.band for r in result.results] and result.results[0].in_window


@pytest.mark.slow
def test_a_time_when_nothing_was_stored_says_so(noted):
    # "yesterday" with only today's notes near it listed them as if from yesterday
    empty = noted.recall("on 1 February 2020", track=False)
    assert empty.results == [] and empty.notice == "nothing was stored on 1 February 2020"
    other = noted.recall("the dentist on 1 February 2020", track=False)
    assert "nothing was stored on 1 February 2020" in other.notice
    assert [r.memory.id for r in other.results][:1] == ["today"]


@pytest.mark.slow
def test_filters_that_leave_nothing_are_said_to(noted):
    result = noted.recall("dentist", filters=Filters(since="next week"))
    assert result.results == [] and "no memory passes the filters" in result.notice
