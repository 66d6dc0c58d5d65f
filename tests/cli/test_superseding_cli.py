"""Issue 44, done when: "The staging database now listens on port 6543" stored after "… port
5432" is proposed as superseding, and once accepted recall answers 6543 and shows 5432 as its
history. Real processes, the real model."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli, wait

OLD = "The staging database listens on port 5432."
NEW = "The staging database now listens on port 6543."


def _out(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_a_new_port_is_proposed_accepted_and_recall_answers_it_with_its_history(mnemo_home):
    older = json.loads(_out("remember", OLD, "--json"))["id"]
    # WHEN the new value is remembered: stored (exit 0, not "Not stored: very similar")
    done = run_cli("remember", NEW)
    said = done.stderr.decode()
    assert done.returncode == 0 and done.stdout.decode().startswith("Remembered ")
    assert "5432" in said and "superseding" in said and "mnemo inbox accept" in said
    # THEN the inbox shows the proposal, both texts side by side
    listed = _out("inbox")
    assert f"[supersedes {older}]" in listed and NEW in listed and f"which said: {OLD}" in listed
    (proposal,) = json.loads(_out("inbox", "--json"))
    # WHEN a person accepts it
    accepted = _out("inbox", "accept", proposal["id"])
    newer = accepted.split()[0]
    assert f"supersedes {older}" in accepted and f"mnemo history {newer}" in accepted
    # THEN recall answers 6543, saying what it was and until when
    found = _out("recall", "staging database port")
    first = found.split("\n2. ")[0]
    assert "6543" in first and "(was 5432 until " in first
    (top, *_) = json.loads(_out("recall", "staging database port", "--json"))["results"]
    assert top["id"] == newer and top["changed"]["was"] == "5432"
    assert json.loads(_out("show", newer, "--json"))["changed"] == top["changed"]
    # AND its history holds the older words, with who wrote them
    history = _out("history", newer)
    assert OLD in history and "superseded" in history
    # AND the older memory is in the trash, not deleted
    assert "in trash since" in _out("show", older)


def test_a_refused_proposal_keeps_both(mnemo_home):
    _out("remember", OLD)
    run_cli("remember", NEW)
    (proposal,) = json.loads(_out("inbox", "--json"))
    assert "Rejected 1" in _out("inbox", "reject", proposal["id"])
    listed = _out("list")
    assert "5432" in listed and "6543" in listed
    assert json.loads(_out("inbox", "--json")) == []


@pytest.fixture
def hooks(mnemo_home):
    """A prompt hook hands its capture to the hook helper (another process, answering when
    it is done): stopped after the test."""
    yield
    run_cli("hook", "stop")


def _inbox() -> list[dict]:
    return json.loads(_out("inbox", "--json"))


def test_accept_all_names_a_stale_proposal_and_still_says_what_it_accepted(hooks):
    older = json.loads(_out("remember", OLD, "--json"))["id"]
    newer = json.loads(_out("remember", NEW, "--json"))["id"]
    _out("forget", newer)  # the proposal is stale now
    stale = json.loads(_out("inbox", "--json"))[0]["id"]
    hook = json.dumps({"prompt": "remember that the coffee machine is on floor 2"})
    run_cli("hook", "prompt", "--agent", "claude", input=hook.encode())
    wait(lambda: len(_inbox()) == 2, 60, "the capture in the inbox")
    # WHEN every candidate is accepted
    done = run_cli("inbox", "accept", "--all")
    # THEN the capture is stored and said so; the stale proposal is named, and waits
    assert "Stored " in done.stdout.decode() and "coffee machine" in done.stdout.decode()
    assert done.returncode == 1 and f"{stale}: the memory that would supersede" in (
        done.stderr.decode()
    )
    assert [c["id"] for c in json.loads(_out("inbox", "--json"))] == [stale]
    assert older in _out("list")


def test_a_proposal_by_an_agent_in_a_project_lists_the_older_id_after_the_rule(hooks):
    older = json.loads(_out("remember", OLD, "--json"))["id"]
    hook = json.dumps({"prompt": f"remember that {NEW}", "cwd": "/tmp"})
    run_cli("hook", "prompt", "--agent", "claude", input=hook.encode())
    (capture,) = wait(_inbox, 60, "the capture in the inbox")
    accepted = run_cli("inbox", "accept", capture["id"])
    # the accepted capture says the proposal it made, as `remember` does
    assert "mnemo inbox accept " in accepted.stderr.decode()
    listed = _out("inbox")
    assert f"[supersedes {older}, tmp, by claude]" in listed
