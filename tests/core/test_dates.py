"""Time in questions (app/core/dates.py): which words name a time, and what window."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app.core import dates

DATA = json.loads(
    (Path(__file__).parent / "data" / "dates" / "expressions.json").read_text(encoding="utf-8")
)
NOW = datetime.fromisoformat(DATA["now"])


def _days(window: dates.Window) -> list[str | None]:
    return [
        window.since[:10] if window.since else None,
        window.until[:10] if window.until else None,
    ]


@pytest.mark.parametrize("case", DATA["queries"], ids=lambda c: c["q"])
def test_the_window_a_person_means(case):
    # GIVEN a query asked on Wednesday 2026-11-25 WHEN its time words are read
    timed = dates.read_query(case["q"], NOW)
    if not case["windows"]:
        # THEN a query that names no time is searched as typed
        assert timed.window is None, f"read {timed.window.text!r} as a time"
        assert timed.rest == case["q"]
        return
    # THEN the window is one a person would mean, and its words are not searched
    assert timed.window is not None, f"missed {case['span']!r}"
    assert _days(timed.window) in [list(w) for w in case["windows"]]
    assert case["span"].lower() not in timed.rest.lower()


@pytest.mark.parametrize("case", DATA["standalone"], ids=lambda c: c["value"])
def test_since_values_in_words(case):
    since = dates.read_bound(case["value"], NOW)
    assert since is not None and since[:10] in [w[0] for w in case["windows"]]


def test_until_is_the_exclusive_end_and_other_values_are_not_times():
    assert dates.read_bound("2024", NOW, end=True).startswith("2025-01-01")
    assert dates.read_bound("last week", NOW, end=True).startswith("2026-11-23")
    assert dates.read_bound("garbage", NOW) is None
    assert dates.read_bound("PR 2023", NOW) is None


def test_the_window_is_the_users_local_day_in_utc():
    # GIVEN a user in UTC+2 at 00:30 on the 25th (still the 24th in UTC)
    east = timezone(timedelta(hours=2))
    now = datetime(2026, 11, 25, 0, 30, tzinfo=east)
    window = dates.read_query("what did I do yesterday", now).window
    # THEN yesterday is their 24th, from 22:00 UTC on the 23rd
    assert window.since == "2026-11-23T22:00:00.000000+00:00"
    assert window.until == "2026-11-24T22:00:00.000000+00:00"
    assert window.contains("2026-11-24T21:59:00.000000+00:00")
    assert not window.contains("2026-11-24T22:00:00.000000+00:00")


def test_a_query_that_is_only_a_time_leaves_nothing_to_search():
    timed = dates.read_query("yesterday", NOW)
    assert timed.rest == "" and timed.window is not None


def test_dateparser_is_imported_only_when_a_time_is_named():
    # The CLI must start fast: a query without time words never loads dateparser.
    code = (
        "import sys; from app.core import dates; "
        "dates.read_query('kubernetes rollback OPS-216'); "
        "a = 'dateparser' in sys.modules; dates.read_query('notes from 16 June 2023'); "
        "print(a, 'dateparser' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_each_day_is_midnight_in_the_zone_of_that_day_and_words_are_english(monkeypatch):
    # Found in review: a fixed offset read in January put July's days an hour off in
    # Berlin, and `describe` used %-d (no such thing on Windows) and the locale's months
    import time as clock

    monkeypatch.setenv("TZ", "Europe/Berlin")
    clock.tzset()
    try:
        july = dates.read_query("notes from July 2024").window
        assert july.since == "2024-06-30T22:00:00.000000+00:00"  # summer time: UTC+2
        assert july.until == "2024-07-31T22:00:00.000000+00:00"
        march = dates.read_bound("March 2024", end=True)
        assert march == "2024-03-31T22:00:00.000000+00:00"  # summer time began 31 March
        assert dates.read_query("in January 2024").window.describe() == (
            "1 January 2024 – 31 January 2024"
        )
        assert july.describe() == "1 July 2024 – 31 July 2024"
    finally:
        monkeypatch.delenv("TZ")
        clock.tzset()
