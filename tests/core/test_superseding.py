"""Issue 44: a newer memory that says an older one's fact with another value is proposed, in
the inbox, as superseding it; a person decides."""

from __future__ import annotations

import pytest

from app.core import origin as origins
from app.core.superseding import restates, was
from app.core.writer import Remembered

OLD = "The staging database listens on port 5432."
NEW = "The staging database now listens on port 6543."


# ---- the rule, on its own (arithmetic on words) -------------------------------------------
@pytest.mark.parametrize(
    "old, new",
    [
        (OLD, NEW),
        ("We deploy on Tuesdays.", "We deploy on Thursdays."),
        ("We use tabs for indentation here.", "We don't use tabs for indentation here."),
        ("We don't use tabs for indentation here.", "We use tabs for indentation here."),
        ("The rate limit is 100 calls a minute.", "The rate limit is 250 calls a minute."),
        ("Node version for the frontend is 18.", "Node version for the frontend is 20.12."),
        ("The billing service is owned by Alice.", "The billing service is owned by Bob."),
        ("The standup starts at 9:30 in room Kepler.", "The standup starts at 9:30 in room Tycho."),
        ("Our CI runs on GitHub Actions.", "Our CI runs on Buildkite."),
        ("Dark mode is enabled in the dashboard.", "Dark mode is disabled in the dashboard."),
    ],
)  # fmt: skip
def test_another_value_of_the_same_statement_restates_it(old, new):
    assert restates(new, old)


@pytest.mark.parametrize(
    "old, new",
    [
        (OLD, "The production database listens on port 5432."),  # another database
        (OLD, "The staging cache listens on port 6379."),  # another thing, another port
        (OLD, "The staging database listens on port 5432 and 5433."),  # a value added
        ("Use pytest for tests.", "Use pytest -x for quick test runs."),
        ("Use pytest for tests.", "Prefer pytest for tests."),  # a sentence's first word
        ("The build takes 5 minutes on CI.", "The build takes 5 minutes on a laptop."),
        ("Prefer tabs over spaces.", "Prefer spaces over tabs."),  # (the same words)
        (OLD, OLD),
        ("Port 5432.", "Port 6543."),  # too little in common to be one statement
        # two values: another server, not a new address
        ("Server web-01 has the address 10.0.0.11.", "Server web-02 has the address 10.0.0.12."),
    ],
)  # fmt: skip
def test_another_fact_or_more_words_is_not_a_restatement(old, new):
    assert not restates(new, old)


def test_what_it_was_names_the_old_values():
    assert was(OLD, NEW) == "5432"
    assert was("The service is owned by Alice.", "The service is owned by Bob.") == "Alice"
    assert was("We use tabs here.", "We don't use tabs here.") == ""


# ---- on every path that remembers (the real model) ----------------------------------------
def test_a_new_value_is_stored_and_proposed_as_superseding_the_old(engine):
    older = engine.remember(OLD).memory
    # WHEN the new value is remembered (a near-duplicate by meaning: it was held back before)
    result = engine.remember(NEW, origin=origins.agent("claude-code", "s1"))
    # THEN it is stored, and the inbox proposes that it supersedes the older memory
    assert result.status is Remembered.STORED
    assert result.supersedes.id == older.id and result.proposal
    assert "5432" in result.notice and "superseding" in result.notice
    assert result.to_dict()["supersedes"] == {
        "id": older.id,
        "title": older.display_title,
        "was": "5432",
        "proposal": result.proposal,
    }
    (proposal,) = engine.inbox()
    assert (proposal.id, proposal.rule, proposal.similar) == (
        result.proposal,
        "supersedes",
        older.id,
    )
    assert (proposal.text, proposal.said, proposal.agent) == (NEW, OLD, "claude-code")
    # AND nothing is decided yet: both are live
    assert not engine.get(older.id).deleted_at and not engine.get(result.memory.id).deleted_at


def test_another_fact_is_held_back_as_a_near_duplicate_as_before(engine):
    engine.remember(OLD)
    result = engine.remember("The production database listens on port 5432.")
    assert result.status is Remembered.SIMILAR and result.supersedes is None
    assert engine.inbox() == []


def test_an_agents_forced_store_and_a_merge_asked_for(engine):
    older = engine.remember(OLD).memory
    # an MCP store is forced (never merged on an agent's behalf): proposed all the same
    forced = engine.remember(NEW, force=True, link_similar=True, source="mcp")
    assert forced.status is Remembered.STORED and forced.supersedes.id == older.id
    # a person who asks to merge gets the merge, not a proposal
    other = engine.remember("We deploy on Tuesdays.").memory
    merged = engine.remember("We deploy on Thursdays.", merge=True)
    assert merged.status is Remembered.MERGED and merged.supersedes is None
    assert {c.similar for c in engine.inbox()} == {older.id} and other.id


def test_a_refused_proposal_keeps_both_and_is_never_proposed_again(engine):
    older = engine.remember(OLD).memory
    newer = engine.remember(NEW)
    assert engine.reject([newer.proposal]) == 1
    assert not engine.get(older.id).deleted_at and not engine.get(newer.memory.id).deleted_at
    # WHEN the same words are stored again after the newer one was deleted for good
    engine.purge([newer.memory.id])
    again = engine.remember(NEW, force=True)
    # THEN they are stored, and not proposed again
    assert again.status is Remembered.STORED and again.supersedes is None
    assert engine.inbox() == []


def test_a_capture_accepted_from_the_inbox_is_proposed_too(engine):
    from app.core.storage.inbox import Candidate

    older = engine.remember(OLD).memory
    what, candidate_id = engine.capture(Candidate(NEW, "remember", agent="codex", session="t1"))
    assert what == "proposed"
    (accepted,) = engine.accept([candidate_id])
    assert accepted.status is Remembered.STORED and accepted.supersedes.id == older.id
    (proposal,) = engine.inbox()
    assert proposal.rule == "supersedes" and proposal.agent == "codex"


def test_accepted_the_older_becomes_a_version_and_recall_says_when_it_changed(engine):
    older = engine.remember(OLD, origin=origins.person("cli")).memory
    engine.edit(older.id, pinned=True)
    newer = engine.remember(NEW, origin=origins.agent("codex"))
    # WHEN a person accepts the proposal
    (done,) = engine.accept([newer.proposal])
    # THEN the newer memory is current, the older one's words are its version (with their
    # origin, replaced now by the person), and the older memory is in the trash
    assert done.status is Remembered.SUPERSEDED and done.memory.id == newer.memory.id
    assert done.supersedes.id == older.id and engine.inbox() == []
    assert engine.get(older.id).deleted_at and engine.get(newer.memory.id).pinned
    (version,) = engine.history(newer.memory.id).versions
    assert (version.text, version.why) == (OLD, "superseded")
    assert version.origins[0].kind == "person" and version.replaced_by.kind == "person"
    # (the words now are still the agent's: accepting changed none of them)
    history = engine.history(newer.memory.id)
    assert history.now_by() == "agent codex" and history.written_by(version) == "you (cli)"
    # AND recall answers with the current value, saying what it was and until when
    result = engine.recall("which port does the staging database listen on")
    top = result.results[0].memory
    assert top.id == newer.memory.id and "6543" in top.text
    assert top.changed["was"] == "5432" and top.changed["until"] == version.replaced_at
    item = result.to_dict()["results"][0]
    assert item["changed"] == top.changed
    assert engine.get(newer.memory.id).changed == top.changed  # show, MCP get_memory
    assert "changed" not in engine.get(newer.memory.id).to_dict()  # (never stored)


def test_a_stale_proposal_changes_nothing_and_says_why(engine):
    from app.core.errors import InputError

    older = engine.remember(OLD).memory
    newer = engine.remember(NEW)
    engine.forget([newer.memory.id])
    with pytest.raises(InputError, match="moved to the trash"):
        engine.accept([newer.proposal])
    assert not engine.get(older.id).deleted_at and engine.history(older.id).versions == []
    assert [c.id for c in engine.inbox()] == [newer.proposal]
    with pytest.raises(InputError, match="as it is"):
        engine.accept([newer.proposal], text="edited")
