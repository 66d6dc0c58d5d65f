"""Capture measured on prompts written by someone who had not seen the rules (issue 42: at
least 90 % of what is proposed is meant to last, at least 85 % of what is meant to last is
proposed). The corpus, its halves and how it was made: data/capture/README.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.agents import meaning
from app.agents.events import own_words
from app.agents.rules import statements

DATA = Path(__file__).parent / "data" / "capture"
HALVES = {
    half: [json.loads(line) for line in (DATA / f"{half}.jsonl").open(encoding="utf-8")]
    for half in (
        "tune",
        "check",
        "more",
        "more2",
        "more3",
        "more4",
        "more5",
        "more6",
        "check2",
        "check3",
        "check4",
        "check5",
        "check6",
        "check7",
    )
}
# Plain statements without trigger phrases and negatives like them (README): odd ids were
# fitted on (bench/capture.py), even ids are the check of their own
_PLAIN = [json.loads(line) for line in (DATA / "plain.jsonl").open(encoding="utf-8")]
HALVES["plain-tune"] = [r for r in _PLAIN if int(r["id"][1:]) % 2 == 1]
HALVES["plain-check"] = [r for r in _PLAIN if int(r["id"][1:]) % 2 == 0]
# Words a rule adds or takes away when it tidies a statement ("Use X instead of Y" for
# "we use X not Y", "The CI runs …" for "remember that the CI runs …"): not the person's
_RULE_WORDS = {"remember", "that", "note", "from", "now", "on", "keep", "in", "mind", "please",
               "always", "never", "instead", "of", "it", "is"}  # fmt: skip


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _same(found: str, said: str) -> bool:
    """A proposal is the labelled statement when most of its own words are in it."""
    own = _words(found) - _RULE_WORDS
    return bool(own) and len(own & _words(said)) / len(own) >= 0.7


def _measure(half: str, model=None) -> tuple[int, int, int, int]:
    """(proposals that are meant to last, proposals, statements proposed, statements), by
    the rules alone or, with a `model`, the rules and meaning."""
    right = proposed = kept = labelled = 0
    for row in HALVES[half]:
        found = [s.text for s in meaning.statements(own_words(row["prompt"]), model)]
        proposed += len(found)
        labelled += len(row["lasting"])
        right += sum(any(_same(f, said) for said in row["lasting"]) for f in found)
        kept += sum(any(_same(f, said) for f in found) for said in row["lasting"])
    return right, proposed, kept, labelled


def test_the_corpus_is_as_big_as_the_issue_asks():
    rows = HALVES["tune"] + HALVES["check"]
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    assert all(said in r["prompt"] for r in rows for said in r["lasting"])
    assert sum(bool(r["lasting"]) for r in rows) >= 100  # and as many with nothing lasting


@pytest.mark.parametrize(
    "corpus,size,lasting",
    [
        ("more", 220, 110),
        ("check2", 200, 100),
        ("more2", 240, 120),
        ("more3", 240, 108),
        ("check3", 240, 109),
        ("more4", 240, 107),
        ("more5", 240, 108),
        ("more6", 240, 107),
        ("check4", 240, 108),
        ("check5", 240, 108),
        ("check6", 240, 108),
        ("check7", 240, 108),
    ],
)
def test_the_later_writers_corpora_are_whole(corpus, size, lasting):
    rows = HALVES[corpus]
    assert len(rows) == size and len({r["id"] for r in rows}) == size
    assert all(said in r["prompt"] for r in rows for said in r["lasting"])
    assert sum(bool(r["lasting"]) for r in rows) == lasting


def test_the_plain_corpus_has_200_prompts_half_of_them_lasting():
    assert len(_PLAIN) >= 200 and len({r["id"] for r in _PLAIN}) == len(_PLAIN)
    assert all(said in r["prompt"] for r in _PLAIN for said in r["lasting"])
    assert 0.4 <= sum(bool(r["lasting"]) for r in _PLAIN) / len(_PLAIN) <= 0.6


# The check half (a second helper's 130 prompts, data/capture/README.md), measured with the
# rules of the commit that added it: 80.8 % precise (21/26), 30.4 % kept (21/69); again after
# helper-9's review took out what made everyday tasks into facts (the prompts below): 82.6 %
# (19/23) and 27.5 % (19/69). The rules before: 76.5 % (13/17) and 18.8 % (13/69). Its
# prompts were not read. strict: the day it passes, this mark goes.
_SHORT = pytest.mark.xfail(strict=True, reason="check half: 82.6 % precise, 27.5 % kept")


@pytest.mark.parametrize("half", ["tune", pytest.param("check", marks=_SHORT)])
def test_capture_is_90_percent_precise_and_keeps_85_percent(half):
    right, proposed, kept, labelled = _measure(half)
    assert right >= 0.90 * proposed, f"{right} of {proposed} proposals meant to last"
    assert kept >= 0.85 * labelled, f"{kept} of {labelled} lasting statements proposed"


def test_the_check_half_does_not_fall_below_its_last_measure():
    right, proposed, kept, labelled = _measure("check")
    assert kept >= 19 and proposed - right <= 4, (right, proposed, kept, labelled)


# Capture by meaning (app/agents/meaning.py): plain sentences the rules leave, judged by a
# classifier over the bundled model's vectors, fitted by bench/capture.py on tune.jsonl,
# plain.jsonl's odd ids, more*.jsonl and check.jsonl to check5.jsonl (thirteen writers;
# data/capture/README.md holds every measure). Never fitted on, never read: plain.jsonl's
# even ids, check6.jsonl and check7.jsonl (two writers of 2026-11-30, written later).
def _short(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


@pytest.mark.parametrize(
    "half",
    [
        "tune",
        "plain-tune",
        "more",
        "more2",
        pytest.param("more3", marks=_short("more3.jsonl: 90.8 % precise, 82.9 % kept")),
        pytest.param("more4", marks=_short("more4.jsonl: 86.0 % precise, 68.9 % kept")),
        pytest.param("more5", marks=_short("more5.jsonl: 84.6 % precise, 78.6 % kept")),
        pytest.param("more6", marks=_short("more6.jsonl: 67.2 % precise, 63.4 % kept")),
        pytest.param("check", marks=_short("check.jsonl: 87.9 % precise, 81.2 % kept")),
        pytest.param("check2", marks=_short("check2.jsonl: 91.2 % precise, 82.7 % kept")),
        "check3",
        pytest.param("check4", marks=_short("check4.jsonl: 83.6 % precise, 77.0 % kept")),
        pytest.param("check5", marks=_short("check5.jsonl: 82.1 % precise, 75.2 % kept")),
        "plain-check",
        pytest.param("check6", marks=_short("check6.jsonl: 81.6 % precise, 66.1 % kept")),
        pytest.param("check7", marks=_short("check7.jsonl: 76.0 % precise, 69.7 % kept")),
    ],
)
def test_capture_by_meaning_is_90_percent_precise_and_keeps_85_percent(half, embedder):
    right, proposed, kept, labelled = _measure(half, embedder)
    assert right >= 0.90 * proposed, f"{right} of {proposed} proposals meant to last"
    assert kept >= 0.85 * labelled, f"{kept} of {labelled} lasting statements proposed"


@pytest.mark.parametrize(
    "half,least_kept,most_wrong",
    [
        ("plain-check", 48, 1),
        ("check6", 80, 19),
        ("check7", 83, 29),
        ("more6", 78, 40),
    ],
)
def test_capture_by_meaning_does_not_fall_below_its_last_measure(
    half, least_kept, most_wrong, embedder
):
    right, proposed, kept, labelled = _measure(half, embedder)
    assert kept >= least_kept and proposed - right <= most_wrong, (right, proposed, kept)


# Everyday tasks said like facts of the setup (helper-9 found 31 of 34 such prompts captured
# by rules that took "the X is/has/needs …" for a fact; these were written after that): none
# is proposed
TASKS = [
    "The server is down again.",
    "The app needs a dark mode toggle.",
    "The repo has two copies of utils.py, merge them.",
    "The problem is in parse(), not in tokenize().",
    "I store the session token in localStorage but it disappears after a reload, why?",
    "Can you tell me what happens in future versions?",
    "From now until Friday I'm mostly in meetings, so keep the PR small.",
    "The new helper goes in app/core/util.py.",
    "The API returns 500 when the body is empty.",
    "The build takes forever on my laptop.",
    "The backend uses too much memory after the last change, can you profile it?",
    "The frontend is blank after login.",
    "The database has a duplicate row for user 42, delete it.",
    "The tests are in the wrong folder, move them to tests/unit.",
    "Our staging server is unreachable since this morning.",
    "The project uses a lot of deprecated calls, list them.",
    "We deploy tomorrow, so finish the migration today.",
    "We store too many logs, trim the retention in the config.",
    "The cache is stale after deploys, add a purge step.",
    "The ci pipeline runs twice for every push, find out why.",
    "The docs are out of date for the login endpoint.",
    "The env file is missing the STRIPE key, add a placeholder.",
    "The dev server runs but the page is empty.",
    "This repo has no README, write one.",
    "The production build is 4 MB, can we make it smaller?",
    "The queue is full of dead letters, drain it.",
    "The function should return None, not raise.",
    "Move the config into settings.py, not in main.py.",
    "The machine has 8 GB of RAM, is that enough for this model?",
    "We use the old API in two places, replace them.",
    "Our tests run on every push but they take 20 minutes.",
    "The migration lives in the wrong folder.",
    "From now on the button should be blue.",
    "Write it so it never blocks the UI thread.",
    "The cluster is on version 1.27, upgrade the manifests accordingly.",
]


@pytest.mark.parametrize("prompt", TASKS)
def test_a_task_said_like_a_fact_is_not_proposed(prompt, embedder):
    assert statements(own_words(prompt)) == []
    assert meaning.statements(own_words(prompt), embedder) == []  # nor by its meaning
