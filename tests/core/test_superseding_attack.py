"""Attacks on superseding (issue 44): a stale proposal changes nothing, what recall says
stays true, and two different facts are not proposed as one superseding the other."""

from __future__ import annotations

import pytest

from app.core.errors import InputError
from app.core.superseding import restates, was

OLD = "The staging database listens on port 5432."
NEW = "The staging database now listens on port 6543."


def test_a_proposal_whose_older_memory_was_edited_since_changes_nothing(engine):
    older = engine.remember(OLD).memory
    newer = engine.remember(NEW)
    # the older memory now says another fact altogether
    engine.edit(older.id, text="The staging cache listens on port 11211.")
    with pytest.raises(InputError, match="edited since"):
        engine.accept([newer.proposal])
    assert not engine.get(older.id).deleted_at
    assert engine.history(newer.memory.id).versions == []
    assert [c.id for c in engine.inbox()] == [newer.proposal]


def test_a_proposal_whose_older_memory_was_deleted_for_good_says_so(engine):
    older = engine.remember(OLD).memory
    newer = engine.remember(NEW)
    engine.purge([older.id])
    with pytest.raises(InputError, match="deleted for good.*reject"):
        engine.accept([newer.proposal])
    assert engine.history(newer.memory.id).versions == []


def test_a_long_older_memory_is_still_accepted(engine):
    tail = " ".join(f"note{i}" for i in range(120))  # beyond what the inbox keeps of it
    older = engine.remember(f"The staging database listens on port 5432. {tail}").memory
    newer = engine.remember(f"The staging database now listens on port 6543. {tail}")
    assert newer.proposal
    (done,) = engine.accept([newer.proposal])
    assert done.supersedes.id == older.id and engine.get(older.id).deleted_at


def test_the_superseded_version_restored_says_no_change(engine):
    engine.remember(OLD)
    newer = engine.remember(NEW)
    engine.accept([newer.proposal])
    engine.restore_version(newer.memory.id, 1)
    memory = engine.get(newer.memory.id)
    assert memory.text == OLD
    # it says what it said before: "(was “…5432.” until …)" would be false
    assert memory.changed is None


@pytest.mark.parametrize(
    "old, new",
    [
        ("Production uses Postgres 15.", "Staging uses Postgres 15."),  # the ADR's own example
        ("Sarah works in Berlin.", "Tom works in Berlin."),
        ("Mom's birthday is on 12 June.", "Dad's birthday is on 12 June."),
        ("Server web-01 runs Ubuntu 22.04.", "Server web-02 runs Ubuntu 22.04."),
        ("Room 101 has a projector.", "Room 102 has a projector."),
        ("Q3 revenue was 1.2M.", "Q4 revenue was 1.2M."),
        ("The Paris office is on floor 3.", "The London office is on floor 3."),
        # the price of the rule: a new owner is a new subject too (an edit says it)
        ("Alice owns the billing service.", "Bob owns the billing service."),
        (
            "JIRA-123 is assigned to the platform team.",
            "JIRA-124 is assigned to the platform team.",
        ),
    ],
)
def test_another_subject_with_the_same_value_is_another_fact(old, new):
    assert not restates(new, old)


def test_a_proposal_whose_older_memory_was_merged_since_says_so(engine):
    older = engine.remember(OLD).memory
    newer = engine.remember(NEW)
    merged = engine.remember(
        "The staging database listens on port 5432 (PostgreSQL 15).", merge=True
    ).memory
    assert engine.get(older.id).merged_into == merged.id
    with pytest.raises(InputError, match=f"merged into {merged.id}.*reject"):
        engine.accept([newer.proposal])
    assert engine.history(newer.memory.id).versions == []


@pytest.mark.parametrize(
    "new",
    [
        "From now on we deploy on Thursdays.",  # the capture rule's own words
        "As of today we deploy on Thursdays.",
        "Going forward, we deploy on Thursdays.",
        "We deploy on Thursdays from now on.",
    ],
)
def test_a_phrase_that_only_says_now_is_still_a_restatement(new):
    assert restates(new, "We deploy on Tuesdays.")
    assert was("We deploy on Tuesdays.", new) == "Tuesdays"


def test_a_pair_refused_does_not_keep_another_older_memory_from_being_proposed(engine):
    from tests.core.test_superseding import NEW, OLD

    first = engine.remember(OLD).memory
    proposed = engine.remember(NEW)
    engine.reject([proposed.proposal])
    engine.purge([proposed.memory.id])
    # a second older memory saying the same with yet another value (less close by meaning)
    second = engine.remember("The staging database listens on port 5433 today.", force=True)
    again = engine.remember(NEW, force=True)
    # THEN the refused pair is not proposed again, the other one is
    assert again.supersedes is not None
    assert again.supersedes.id == second.memory.id != first.id


def test_a_chain_of_supersedes_keeps_every_older_value_after_the_trash_is_emptied(engine):
    from tests.core.test_superseding import NEW, OLD

    first = engine.remember(OLD).memory
    second = engine.remember(NEW)
    engine.accept([second.proposal])
    third = engine.remember("The staging database now listens on port 7777.")
    assert third.supersedes.id == second.memory.id
    engine.accept([third.proposal])
    # WHEN the trash is emptied (the first two memories are in it)
    assert engine.empty_trash() == 2 and first.id
    # THEN the last one's history still holds both older values, newest first
    history = engine.history(third.memory.id)
    assert [v.text for v in history.versions] == [NEW, OLD]
    assert {v.why for v in history.versions} == {"superseded"}
    assert engine.get(third.memory.id).changed["was"] == "6543"


def test_the_older_memory_restored_from_the_trash_takes_back_the_was(engine):
    from tests.core.test_superseding import NEW, OLD

    first = engine.remember(OLD).memory
    second = engine.remember(NEW)
    engine.accept([second.proposal])
    assert engine.get(second.memory.id).changed["was"] == "5432"
    # WHEN the person brings the older memory back: both stand again
    engine.restore([first.id])
    # THEN the newer one no longer says it replaced it (its history still lists it)
    assert engine.get(second.memory.id).changed is None
    assert [v.why for v in engine.history(second.memory.id).versions] == ["superseded"]


def test_long_texts_are_not_aligned_word_by_word():
    from app.core.superseding import MOST_COMPARED, restates

    long = " ".join(f"word{i} value {i}" for i in range(MOST_COMPARED))
    assert not restates(long.replace("value 5 ", "value 6 ", 1), long)
