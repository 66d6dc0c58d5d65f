"""What agents get of a team space (issue 45): a space's memories reach an agent's session
and prompt blocks unasked only when the person turned that on for the space
(`mnemo space set NAME inject on`); off again, they stay out. Two real databases sharing one
space folder, real keys; the word model."""

from __future__ import annotations

import json

import pytest

from app.core.engine import Engine
from app.core.errors import InputError
from tests.conftest import run_cli


@pytest.fixture
def team(tmp_path, word_model):
    made: list[Engine] = []

    def engine(name: str) -> Engine:
        eng = Engine(database=tmp_path / f"{name}.db", embedder=word_model)
        made.append(eng)
        return eng

    alice, bob = engine("alice"), engine("bob")
    for space in ("team", "book-club"):
        folder = tmp_path / "shared" / space
        alice.spaces.create(space, folder, "alice")
        invitation, _ = alice.spaces.invite(space, bob.spaces.id(), "bob")
        bob.spaces.join(invitation, folder)
    yield alice, bob
    for eng in made:
        eng.close()


def _block(engine: Engine) -> list[str]:
    block = engine.context(query="deploy", use_model=False, track=False)
    return sorted(m.text for m, _ in block.memories)


def test_a_spaces_memories_reach_agents_unasked_only_when_the_space_allows_it(team):
    alice, bob = team
    for space, text in (
        ("team", "Deploys go out on Thursdays"),
        ("book-club", "The deploy of the new book list is on Monday"),
    ):
        memory = alice.remember(text, force=True).memory
        alice.spaces.share(memory.id, space)
    bob.remember("Bob keeps the deploy checklist in the wiki", force=True)
    for space in ("team", "book-club"):
        bob.spaces.sync(space)
    # GIVEN nothing turned on: only Bob's own
    assert _block(bob) == ["Bob keeps the deploy checklist in the wiki"]
    # WHEN Bob lets the team space's memories reach his agents
    bob.spaces.inject("team", True)
    # THEN they do, and the book club's do not
    assert _block(bob) == [
        "Bob keeps the deploy checklist in the wiki",
        "Deploys go out on Thursdays",
    ]
    assert [s["inject"] for s in bob.spaces.list()] == [False, True]  # (by name)
    # AND off again, out again
    bob.spaces.inject("team", False)
    assert _block(bob) == ["Bob keeps the deploy checklist in the wiki"]
    with pytest.raises(InputError):
        bob.spaces.inject("nope", True)


def test_the_cli_turns_it_on_and_off(tmp_path):
    env = {"MNEMO_HOME": str(tmp_path / "home")}
    assert run_cli("space", "create", "team", str(tmp_path / "team"), env=env).returncode == 0
    done = run_cli("space", "set", "team", "inject", "on", env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert "reach your agents" in done.stdout.decode()
    listed = json.loads(run_cli("space", "list", "--json", env=env).stdout)
    assert listed[0]["inject"] is True
    run_cli("space", "set", "team", "inject", "off", env=env)
    assert json.loads(run_cli("space", "list", "--json", env=env).stdout)[0]["inject"] is False
    bad = run_cli("space", "set", "team", "inject", "maybe", env=env)
    assert bad.returncode != 0 and b"Traceback" not in bad.stderr
