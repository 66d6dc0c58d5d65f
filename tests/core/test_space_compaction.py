"""A device's file of lines in a space does not grow without end (issue 45, ADR 0026
addendum "a device's file does not grow without end"): a device drops its own lines the
space no longer needs, and every member folds the same memories from what is left as from
the whole file, edits made apart and withdrawals included. Real homes, keys and files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.core.engine import Engine
from app.core.errors import InputError
from app.core.space import lines
from app.core.sync import fold


def team(homes, tmp_path, *names: str) -> tuple[list[Engine], Path]:
    """Alice made the space `team`; each other name was invited and joined."""
    alice = homes("alice")
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    out = [alice]
    for name in names:
        out.append(join(alice, homes(name), name, folder))
    return out, folder


def join(alice: Engine, other: Engine, name: str, folder: Path) -> Engine:
    invitation, _ = alice.spaces.invite("team", other.spaces.id(), name)
    other.spaces.join(invitation, folder)
    return other


def big(n: int, words: int = 6000) -> str:
    """About 50 KB of plain words (no secret), different for each `n`."""
    return f"Version {n} of the runbook. " + " ".join(
        f"step{i} checks the staging host before the deploy" for i in range(words // 8)
    )


def own_file(engine: Engine, folder: Path) -> Path:
    return folder / lines.LINES / lines.file_name(engine.spaces.id())


def numbers(path: Path) -> list[int]:
    return [json.loads(t)["seq"] for t in path.read_text().splitlines()]


def folded(engine: Engine, folder: Path) -> dict[str, fold.Folded]:
    """Every memory of the folder's lines, folded as the pass folds them (sync's fold)."""
    entry = next(s for s in engine.spaces.list() if s["name"] == "team")
    state = engine.spaces.record("team").fold()
    held = {}
    for epoch in state.recipients:
        try:
            held[epoch] = engine.spaces.epoch_key("team", epoch)
        except InputError:
            continue
    read = lines.read(folder, entry["id"], state, held)
    assert read.problems == [] and read.waiting == 0
    groups: dict[str, list[fold.Node]] = {}
    for n in read.lines:
        node = fold.Node(n.rev, (n.lamport, n.author, n.seq), n.base, n.record)
        groups.setdefault(n.memory, []).append(node)
    return {m: fold.fold(m, nodes) for m, nodes in groups.items()}


def whole(folder: Path, into: Path, kept: dict[int, str], path: Path) -> Path:
    """A copy of the space folder whose file `path` holds every line `kept` saw."""
    shutil.copytree(folder, into)
    copy = into / lines.LINES / path.name
    copy.write_text("".join(kept[s] + "\n" for s in sorted(kept)))
    return into


def live(engine: Engine, memory_id: str) -> bool:
    return engine.get(memory_id).deleted_at is None


def remember_lines(path: Path, kept: dict[int, str]) -> None:
    for text in path.read_text().splitlines():
        kept[json.loads(text)["seq"]] = text


def test_edits_of_one_memory_are_dropped_and_every_member_folds_the_same(homes, tmp_path):
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = alice.remember(big(0), force=True).memory.id
    alice.spaces.share(memory, "team")
    bob.spaces.sync("team")
    path, kept = own_file(alice, folder), {}
    remember_lines(path, kept)
    # WHEN Alice edits her 50 KB memory twelve times, a pass after each
    for n in range(1, 13):
        alice.edit(memory, text=big(n))
        assert alice.spaces.sync("team")["problems"] == []
        remember_lines(path, kept)
    # THEN her file holds a few lines, not thirteen whole copies, numbered as written
    assert len(kept) == 13
    assert len(numbers(path)) < 9 and numbers(path)[0] == 1 and numbers(path)[-1] == 13
    assert path.stat().st_size < sum(len(t) + 1 for t in kept.values()) * 0.6
    # AND the space folds the same from it as from the whole file
    full = whole(folder, tmp_path / "full", kept, path)
    assert _same(folded(alice, folder), folded(alice, full))
    # AND Bob, and Carol who joins after, hold her latest words
    carol = join(alice, homes("carol"), "carol", folder)
    for other in (bob, carol):
        other.spaces.sync("team")
        assert other.get(memory).text == big(12)
    # AND her next line goes on after the numbers dropped, never reusing one
    alice.edit(memory, text=big(13))
    alice.spaces.sync("team")
    assert numbers(path)[-1] == 14
    assert bob.spaces.sync("team")["applied"] == 1 and bob.get(memory).text == big(13)


def _same(a: dict[str, fold.Folded], b: dict[str, fold.Folded]) -> bool:
    assert a.keys() == b.keys()
    for memory in a:
        assert a[memory].record == b[memory].record, memory
        assert sorted(a[memory].heads) == sorted(b[memory].heads), memory
    return True


def test_an_edit_made_apart_on_a_dropped_line_keeps_both_sides_on_every_member(homes, tmp_path):
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = alice.remember(big(0), force=True).memory.id
    alice.spaces.share(memory, "team")
    alice.edit(memory, text=big(1))
    alice.spaces.sync("team")
    bob.spaces.sync("team")  # (Bob holds Alice's line 2)
    path, kept = own_file(alice, folder), {}
    remember_lines(path, kept)
    # GIVEN Bob edits it apart (his pass comes later) while Alice edits on and her passes
    # drop the line Bob's edit is made from
    bob.edit(memory, text="Bob's runbook: call the on-call engineer before any deploy.")
    for n in range(2, 10):
        alice.edit(memory, text=big(n))
        alice.spaces.sync("team")
        remember_lines(path, kept)
    assert 2 not in numbers(path)
    # WHEN Bob's pass sends his edit and both read everything
    bob.spaces.sync("team")
    alice.spaces.sync("team")
    bob.spaces.sync("team")
    # THEN both sides are kept, merged, the same on both, and the same as from the whole
    # file; the versions edited apart (Alice's latest and Bob's) are in the trash
    text = alice.get(memory).text
    assert "Version 9 of the runbook" in text and "call the on-call engineer" in text
    assert bob.get(memory).text == text
    full = whole(folder, tmp_path / "full", kept, path)
    now, before = folded(alice, folder), folded(alice, full)
    assert _same(now, before)
    assert now[memory].conflict and len(now[memory].originals) >= 2
    assert set(now[memory].originals) <= set(before[memory].originals)
    # AND Carol, who joins after, holds the same
    carol = join(alice, homes("carol"), "carol", folder)
    carol.spaces.sync("team")
    assert carol.get(memory).text == text


def test_a_withdrawal_after_many_edits_is_not_lost(homes, tmp_path):
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = alice.remember(big(0), force=True).memory.id
    alice.spaces.share(memory, "team")
    bob.spaces.sync("team")
    for n in range(1, 8):
        alice.edit(memory, text=big(n))
        alice.spaces.sync("team")
    # WHEN she withdraws it and her passes drop what the space no longer needs
    alice.spaces.unshare(memory)
    alice.spaces.sync("team")
    assert len(numbers(own_file(alice, folder))) < 5
    # THEN Bob drops it from his view, and Carol, who joins after, never gets it
    bob.spaces.sync("team")
    assert bob.get(memory).deleted_at
    carol = join(alice, homes("carol"), "carol", folder)
    carol.spaces.sync("team")
    assert carol.recent(limit=50) == [] or memory not in [m.id for m in carol.recent(limit=50)]
    assert bob.spaces.shared([memory]) == {}


def test_a_lost_file_is_written_again_as_compacted(homes, tmp_path):
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = alice.remember(big(0), force=True).memory.id
    alice.spaces.share(memory, "team")
    for n in range(1, 8):
        alice.edit(memory, text=big(n))
        alice.spaces.sync("team")
    path = own_file(alice, folder)
    before = path.read_bytes()
    # WHEN her file is lost THEN her next pass writes the same lines again, gaps and all
    path.unlink()
    alice.spaces.sync("team")
    assert path.read_bytes() == before
    bob.spaces.sync("team")
    assert bob.get(memory).text == big(7)


def test_a_removal_after_compaction_keeps_every_line_up_to_its_upto(homes, tmp_path):
    (alice, bob, carol), folder = team(homes, tmp_path, "bob", "carol")
    memory = bob.remember(big(0), force=True).memory.id
    bob.spaces.share(memory, "team")
    for n in range(1, 8):
        bob.edit(memory, text=big(n))
        bob.spaces.sync("team")
    other = bob.remember("Bob's last note: the pager rota changes on Monday", force=True)
    bob.spaces.share(other.memory.id, "team")
    path = own_file(bob, folder)
    assert numbers(path)[-1] == 9 and len(numbers(path)) < 9  # (gaps below his last)
    # WHEN Alice removes Bob, having read his compacted file
    alice.spaces.sync("team")
    alice.spaces.remove("team", "bob")
    # THEN his lines up to the last one she had stay the space's on every member
    for member in (alice, carol, alice, carol):
        report = member.spaces.sync("team")
        assert report["problems"] == [] and report["waiting"] == 0
    for member in (alice, carol):
        assert member.get(memory).text == big(7)
        assert member.get(other.memory.id).text.startswith("Bob's last note")


def test_a_file_stays_under_the_read_cap_and_bob_gets_every_edit(homes, tmp_path, monkeypatch):
    # GIVEN members read files up to 1 MB (the cap, 64 MB, made small to test it)
    monkeypatch.setattr(lines, "MAX_FILE_BYTES", 1024 * 1024)
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = alice.remember(big(0, 12000), force=True).memory.id
    alice.spaces.share(memory, "team")
    # WHEN Alice edits her 100 KB memory twenty times (two megabytes of copies)
    for n in range(1, 21):
        alice.edit(memory, text=big(n, 12000))
        assert alice.spaces.sync("team")["problems"] == []
        # THEN her file never reaches the cap, and Bob reads every edit
        assert own_file(alice, folder).stat().st_size < 1024 * 1024
        report = bob.spaces.sync("team")
        assert report["problems"] == [] and bob.get(memory).text == big(n, 12000)


def test_a_share_or_edit_that_would_pass_the_cap_is_refused_and_changes_nothing(
    homes, tmp_path, monkeypatch
):
    monkeypatch.setattr(lines, "MAX_FILE_BYTES", 512 * 1024)
    (alice, bob), _ = team(homes, tmp_path, "bob")
    first = alice.remember(big(0, 24000), force=True).memory.id  # (about 200 KB)
    alice.spaces.share(first, "team")
    second = alice.remember(big(1, 24000), force=True).memory.id
    alice.spaces.share(second, "team")
    third = alice.remember(big(2, 24000), force=True).memory.id
    # WHEN a third would bring her file past what members read
    with pytest.raises(InputError, match="is not shared: .* would pass"):
        alice.spaces.share(third, "team")
    # THEN it is not shared, and nothing else changed
    assert alice.spaces.shared([first, second, third]) == {first: "team", second: "team"}
    # AND an edit making a shared one that much bigger is refused, the memory as it was
    with pytest.raises(InputError, match="not changed: .* the most a member reads"):
        alice.edit(second, text=big(1, 48000))
    assert alice.get(second).text == big(1, 24000)


def test_a_members_file_over_the_cap_is_said_once_naming_the_member(homes, tmp_path, monkeypatch):
    (alice, bob), folder = team(homes, tmp_path, "bob")
    memory = bob.remember("Deploys happen on Thursdays", force=True).memory.id
    bob.spaces.share(memory, "team")
    # WHEN Bob's file is past what a member reads (an older Mnemo's, say)
    monkeypatch.setattr(lines, "MAX_FILE_BYTES", own_file(bob, folder).stat().st_size - 1)
    said = alice.spaces.sync("team")["problems"]
    # THEN Alice's pass says so once, naming Bob, and what he shares does not reach her
    assert len(said) == 1 and "bob's device wrote more than" in said[0], said
    assert alice.spaces.sync("team")["problems"] == []


def test_sharing_many_memories_is_one_pass_and_names_each_refused(homes, tmp_path):
    (alice, bob), _ = team(homes, tmp_path, "bob")
    ids = [alice.remember(f"Service {n} runs on port {5400 + n}", force=True).memory.id
           for n in range(5)]  # fmt: skip
    secret = alice.remember(
        "The deploy token is ghp_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a", force=True,
        secrets="allow",
    ).memory.id  # fmt: skip
    # WHEN Alice shares the six at once
    report = alice.spaces.share_many([*ids, secret], "team")
    # THEN one pass sent the five, and the one holding a secret is named, not shared
    assert report["sent"] == 5 and report["shared"] == ids
    assert [m for m, _ in report["not_shared"]] == [secret]
    assert "secret" in report["not_shared"][0][1]
    assert alice.spaces.shared([*ids, secret]) == {m: "team" for m in ids}
    assert bob.spaces.sync("team")["applied"] == 5


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_three_members_compacting_at_every_pass_fold_as_the_whole_files(
    homes, tmp_path, monkeypatch, seed
):
    """Members edit shared memories apart and run passes in a random order, each pass
    dropping every line it may (no threshold); the folder as it is folds every memory to
    the same state and heads as the folder holding every line ever written, and the
    members end alike."""
    import random

    from app.core.space import compaction

    monkeypatch.setattr(compaction, "COMPACT_MIN_BYTES", 0)
    monkeypatch.setattr(compaction, "COMPACT_SHARE", 0.0)
    rng = random.Random(seed)
    people, folder = team(homes, tmp_path, "bob", "carol")
    ids = []
    for n in range(3):
        ids.append(people[0].remember(f"Shared fact {n} about the build.", force=True).memory.id)
        people[0].spaces.share(ids[-1], "team")
    kept: dict[str, dict[int, str]] = {m.spaces.id(): {} for m in people}

    def note() -> None:
        for member in people:
            path = own_file(member, folder)
            if path.exists():
                remember_lines(path, kept[member.spaces.id()])

    for member in people:
        member.spaces.sync("team")
    note()
    for step in range(40):
        member = rng.choice(people)
        memory_id = rng.choice(ids)
        roll = rng.random()
        if member is people[0] and roll < 0.2:  # (the author withdraws it, or shares again)
            if member.spaces.shared([memory_id]):
                member.spaces.unshare(memory_id)
            else:
                member.spaces.share(memory_id, "team")
        elif roll < 0.7 and member.spaces.shared([memory_id]) and live(member, memory_id):
            now = member.get(memory_id).text
            member.edit(memory_id, text=f"{now} Note {step} by member {people.index(member)}.")
        member.spaces.sync("team")
        note()
    written = sum(len(k) for k in kept.values())
    now_lines = sum(
        len(numbers(own_file(m, folder))) for m in people if own_file(m, folder).exists()
    )
    assert now_lines < written  # (something was dropped)
    full = tmp_path / "full"
    shutil.copytree(folder, full)
    for member in people:
        device = member.spaces.id()
        if kept[device]:
            copy = full / lines.LINES / lines.file_name(device)
            copy.write_text("".join(kept[device][s] + "\n" for s in sorted(kept[device])))
    now, before = folded(people[0], folder), folded(people[0], full)
    assert _same(now, before)
    for memory in now:
        assert set(now[memory].originals) <= set(before[memory].originals)
    for memory_id in ids:  # (every one shared at the end, so every member holds it)
        if not people[0].spaces.shared([memory_id]):
            people[0].spaces.share(memory_id, "team")
    for _ in range(2):
        for member in people:
            member.spaces.sync("team")
    for memory_id in ids:
        states = {(m.get(memory_id).text, bool(m.get(memory_id).deleted_at)) for m in people}
        assert len(states) == 1, states
