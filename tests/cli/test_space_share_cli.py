"""Sharing memories in a team space from the command line (issue 45): `mnemo remember
--space`, `mnemo edit --space`, `mnemo space sync` and `mnemo recall` saying each
result's space and author, on two Mnemo homes sharing one folder directly."""

from __future__ import annotations

import json

from tests.cli.test_space_cli import mnemo as run
from tests.cli.test_space_cli import ok, one_line_error, snapshot, team
from tests.core.test_space_sharing import readable


def test_what_alice_shares_bob_recalls_with_its_space_and_author(tmp_path):
    alice, bob, folder = team(tmp_path)
    out = ok(alice, "remember", "--space", "team", "The staging database lives on port 5433")
    assert "Shared in the space 'team'" in out
    ok(alice, "remember", "My dentist appointment is on Tuesday")
    assert "took 1" in ok(bob, "space", "sync", "team")
    shown = ok(bob, "recall", "staging database", "--mode", "keyword")
    assert "The staging database lives on port 5433" in shown
    assert "(space team, by alice (device " in shown
    got = json.loads(ok(bob, "recall", "staging database", "--mode", "keyword", "--json"))
    first = got["results"][0]
    assert first["space"] == "team" and first["author"]["person"] == "alice"
    # Alice's own copy says the space, written by her
    mine = json.loads(ok(alice, "recall", "staging database", "--mode", "keyword", "--json"))
    assert mine["results"][0]["space"] == "team" and mine["results"][0]["author"] is None
    # the private one is not Bob's, and no text of either reaches the folder
    assert "No relevant" in ok(bob, "recall", "dentist appointment", "--mode", "keyword")
    data = readable(b"".join(snapshot(folder).values()))
    for words in (b"staging", b"5433", b"dentist", b"Tuesday"):
        assert words not in data


def test_edit_shares_and_withdraws(tmp_path):
    alice, bob, _ = team(tmp_path)
    memory_id = json.loads(ok(alice, "remember", "Deploys happen on Thursdays", "--json"))["id"]
    assert "Shared in the space 'team'" in ok(alice, "edit", memory_id, "--space", "team")
    ok(bob, "space", "sync", "team")
    assert "Deploys happen" in ok(bob, "recall", "deploys thursdays", "--mode", "keyword")
    # an edit of a shared memory goes out at once
    ok(alice, "edit", memory_id, "--text", "Deploys happen on Thursdays at ten")
    ok(bob, "space", "sync", "team")
    assert "at ten" in ok(bob, "recall", "deploys thursdays", "--mode", "keyword")
    out = ok(alice, "edit", memory_id, "--space", "")
    assert "Withdrawn from its space" in out
    assert "withdrawn 1" in ok(bob, "space", "sync", "team")
    assert "Deploys happen" not in ok(bob, "recall", "deploys thursdays", "--mode", "keyword")
    assert "Deploys happen" in ok(alice, "recall", "deploys thursdays", "--mode", "keyword")


def test_an_unknown_space_is_one_line_and_changes_nothing(tmp_path):
    alice, _, folder = team(tmp_path)
    memory_id = json.loads(ok(alice, "remember", "Lunch is at one", "--json"))["id"]
    before = snapshot(alice, folder)
    err = one_line_error(run(alice, "remember", "--space", "nope", "Dinner is at eight"))
    assert "no space named 'nope'" in err
    err = one_line_error(run(alice, "edit", memory_id, "--space", "nope", "--text", "changed"))
    assert "no space named 'nope'" in err
    assert snapshot(alice, folder) == before
    assert "changed" not in ok(alice, "show", memory_id)


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_secret_cannot_be_edited_or_restored_into_a_shared_memory(tmp_path):
    alice, _, folder = team(tmp_path)
    memory_id = json.loads(
        ok(alice, "remember", "--space", "team", "Staging uses a bot", "--json")
    )["id"]
    before = snapshot(alice, folder)
    err = one_line_error(
        run(alice, "edit", memory_id, "--allow-secrets", "--text", f"Staging uses a bot {TOKEN}")
    )
    assert "shared in the space 'team'" in err and "secret" in err
    assert snapshot(alice, folder) == before and TOKEN not in ok(alice, "show", memory_id)
    # a private memory stored with the token, edited clean, shared: its old version holds it
    other = json.loads(ok(alice, "remember", "--allow-secrets", f"Prod uses {TOKEN}", "--json"))[
        "id"
    ]
    ok(alice, "edit", other, "--text", "Prod uses the vault")
    ok(alice, "edit", other, "--space", "team")
    before = snapshot(alice, folder)
    err = one_line_error(run(alice, "history", other, "--restore", "1"))
    assert "shared in the space 'team'" in err and "secret" in err
    assert snapshot(alice, folder) == before and TOKEN not in ok(alice, "show", other)
    assert TOKEN.encode() not in b"".join(snapshot(folder).values())
    # sharing and putting a secret in at once: refused before either is done
    private = json.loads(ok(alice, "remember", "Lint runs in CI", "--json"))["id"]
    err = one_line_error(
        run(alice, "edit", private, "--space", "team", "--allow-secrets", "--text", TOKEN)
    )
    assert "secret" in err and TOKEN not in ok(alice, "show", private)
    got = json.loads(ok(alice, "recall", "lint runs", "--mode", "keyword", "--json"))
    assert got["results"][0]["id"] == private and got["results"][0]["space"] is None


def test_space_with_allow_secrets_is_refused_before_anything_is_stored(tmp_path):
    alice, _, folder = team(tmp_path)
    before = snapshot(alice, folder)
    err = one_line_error(
        run(alice, "remember", "--space", "team", "--allow-secrets", f"Prod uses {TOKEN}")
    )
    assert "--allow-secrets" in err and "--space" in err
    assert snapshot(alice, folder) == before
    # sharing a memory that holds one: one clean line, not "not shared: not stored:"
    memory_id = json.loads(
        ok(alice, "remember", "--allow-secrets", f"Prod uses {TOKEN}", "--json")
    )["id"]
    err = one_line_error(run(alice, "edit", memory_id, "--space", "team"))
    assert "holds a secret" in err and "not stored" not in err


def test_bob_withdrawing_alices_memory_leaves_it_in_the_space(tmp_path):
    alice, bob, _ = team(tmp_path)
    memory_id = json.loads(
        ok(alice, "remember", "--space", "team", "Backups run at two", "--json")
    )["id"]
    ok(bob, "space", "sync", "team")
    out = ok(bob, "edit", memory_id, "--space", "")
    assert "stays in the space for its other members" in out
    ok(alice, "space", "sync", "team")
    assert "(space team" in ok(alice, "recall", "backups", "--mode", "keyword")


def test_space_never_shares_a_private_memory_that_holds_the_same_words(tmp_path):
    alice, bob, folder = team(tmp_path)
    private = json.loads(
        ok(
            alice,
            "remember",
            "The staging DB is on 5433",
            "--reasoning",
            "Secret project Zephyr",
            "--json",
        )
    )["id"]
    before = snapshot(folder)
    done = run(alice, "remember", "--space", "team", "The staging DB is on 5433")
    assert done.returncode == 0, done
    out = (done.stdout.decode() + done.stderr.decode()).lower()
    assert f"already known as {private}, which is yours alone" in out
    assert f"mnemo edit {private} --space team" in out and "Shared in" not in out
    assert snapshot(folder) == before
    got = json.loads(
        ok(alice, "remember", "--space", "team", "The staging DB is on 5433", "--json")
    )
    assert got["id"] == private and "space" not in got and "yours alone" in got["notice"]
    ok(bob, "space", "sync", "team")
    assert "Zephyr" not in ok(bob, "recall", "staging", "--mode", "keyword")
    err = one_line_error(run(alice, "remember", "--space", "team", "--merge", "Staging DB: 5433"))
    assert "--merge" in err and "--space" in err


def test_a_memory_held_for_a_secret_is_said_once_and_never_counted_as_refused(
    tmp_path, monkeypatch
):
    alice, _, folder = team(tmp_path)
    memory_id = json.loads(ok(alice, "remember", "--space", "team", "CI runs nightly", "--json"))[
        "id"
    ]
    # a secret come in by the one way no door of this device guards: an edit on another
    # device of Alice's (which has it as her own), brought by device sync (sealed folder)
    from app.core.engine import Engine
    from app.core.settings import Settings
    from tests.sync_devices import approve_waiting
    from tests.word_model import WordModel

    monkeypatch.setenv("MNEMO_HOME", str(alice))
    laptop = Engine(Settings(tmp_path / "laptop.json"), tmp_path / "laptop.db", WordModel())
    with Engine() as desk:
        desk.sync.init(str(tmp_path / "devices"), "desk", encrypt=True)
        laptop.sync.init(str(tmp_path / "devices"), "laptop", key=desk.sync.key())
        approve_waiting(desk)
        for engine in (desk, laptop, desk, laptop):
            engine.sync.now()
        laptop.edit(memory_id, text=f"CI runs nightly with {TOKEN}", secrets="allow")
        for engine in (laptop, desk, laptop, desk):
            engine.sync.now()
        assert TOKEN in desk.get(memory_id).text
    laptop.close()
    first = run(alice, "space", "sync", "team")
    assert first.returncode == 0 and b"holds a secret" in first.stderr
    later = run(alice, "space", "sync", "team")
    assert later.returncode == 0 and b"refused" not in later.stderr, later.stderr
    assert TOKEN.encode() not in b"".join(snapshot(folder).values())


def test_space_sync_says_who_joined_since_the_last_pass(tmp_path):
    # issue 45: a member another member invited is told of at the next pass, once
    alice, bob, carol = tmp_path / "alice", tmp_path / "bob", tmp_path / "carol"
    folder = tmp_path / "shared" / "team"

    ok(alice, "space", "create", "team", str(folder), "--person", "alice")
    to_bob = ok(alice, "space", "invite", "team", ok(bob, "space", "id").strip(), "--person", "bob")
    ok(bob, "space", "join", to_bob.strip(), str(folder))
    assert "is now in the space" not in ok(alice, "space", "sync", "team")  # (where it starts)
    to_carol = ok(
        bob, "space", "invite", "team", ok(carol, "space", "id").strip(), "--person", "carol"
    )
    ok(carol, "space", "join", to_carol.strip(), str(folder))
    said = ok(alice, "space", "sync", "team")
    assert "carol is now in the space" in said
    assert "is now in the space" not in ok(alice, "space", "sync", "team")  # (once)


def test_space_sync_without_a_name_passes_over_every_space(tmp_path):
    alice, bob, _ = team(tmp_path)
    ok(alice, "remember", "--space", "team", "The build cache lives on the NAS")
    out = ok(bob, "space", "sync")  # (no NAME: every space this device is in)
    assert "Space 'team': sent 0, took 1" in out
    assert "build cache" in ok(bob, "recall", "build cache", "--mode", "keyword")
    got = json.loads(ok(bob, "space", "sync", "--json"))
    assert isinstance(got, list) and [one["name"] for one in got] == ["team"]


def test_space_sync_without_a_name_and_no_space_says_so(tmp_path):
    home = tmp_path / "lonely"
    out = ok(home, "space", "sync")
    assert "not in any space" in out
    assert json.loads(ok(home, "space", "sync", "--json")) == []


def test_who_wrote_it_stays_its_author_after_another_member_edits_it(tmp_path):
    alice, bob, _ = team(tmp_path)
    stored = ok(alice, "remember", "--space", "team", "Staging is on 5433", "--json")
    memory_id = json.loads(stored)["id"]
    ok(bob, "space", "sync", "team")
    ok(bob, "edit", memory_id, "--tags", "ports")  # (Bob's edit reaches Alice)
    ok(alice, "space", "sync", "team")
    mine = json.loads(ok(alice, "recall", "staging", "--mode", "keyword", "--json"))
    assert mine["results"][0]["author"] is None  # (still hers: she wrote it)
    assert "(space team, by you" in ok(alice, "recall", "staging", "--mode", "keyword")
    theirs = json.loads(ok(bob, "recall", "staging", "--mode", "keyword", "--json"))
    assert theirs["results"][0]["author"]["person"] == "alice"
