"""A member, a removed member or anyone who can write the folder cannot take over, roll back
or rewrite what the space keeps (issue 45, ADR 0026 addendum "what a device took, it
keeps"): three real Mnemo databases share one folder, with real keys and real sealed lines;
the forged lines are signed by a member's real key, as a member's own Mnemo could not stop."""

from __future__ import annotations

import json
from pathlib import Path

from app.core.engine import Engine
from app.core.space import compaction, lines


def trio(homes, tmp_path) -> tuple[Engine, Engine, Engine, Path]:
    """Alice made the space `team`; Bob and Mal joined it."""
    alice, bob, mal = homes("alice"), homes("bob"), homes("mal")
    folder = tmp_path / "shared" / "team"
    alice.spaces.create("team", folder, "alice")
    for who, name in ((bob, "bob"), (mal, "mal")):
        invitation, _ = alice.spaces.invite("team", who.spaces.id(), name)
        who.spaces.join(invitation, folder)
    return alice, bob, mal, folder


def _mal_removed(homes, tmp_path):
    """Bob and Mal each shared a note, every member took both, then Alice removed Mal:
    (alice, bob, mal, folder, Bob's memory id, Mal's)."""
    alice, bob, mal, folder = trio(homes, tmp_path)
    bobs = shared(bob, "Wombat builds run every test")
    mals = shared(mal, "Mal's note: the printer is on floor two")
    for member in (alice, bob, alice):
        member.spaces.sync("team")
    alice.spaces.remove("team", "mal")
    return alice, bob, mal, folder, bobs, mals


def shared(engine: Engine, text: str) -> str:
    memory = engine.remember(text, force=True).memory
    engine.spaces.share(memory.id, "team")
    engine.spaces.sync("team")
    return memory.id


def own_file(engine: Engine, folder: Path) -> Path:
    return folder / "lines" / lines.file_name(engine.spaces.id())


def forge(engine: Engine, folder: Path, seq: int, body: dict, epoch: str | None = None) -> str:
    """A line signed by `engine`'s device, numbered `seq`, sealed under `epoch` (the current
    one when not given), put at the end of its file (or in place of its line `seq`)."""
    space = engine.spaces.list()[0]
    epoch = epoch or engine.spaces.record("team").fold().epoch
    key = engine.spaces.epoch_key("team", epoch)
    rev = lines.rev_of(space["id"], engine.spaces.id(), seq)
    text = lines.seal(key, space["id"], epoch, engine.spaces.device, seq, {**body, "rev": rev})
    path = own_file(engine, folder)
    have = path.read_text().splitlines() if path.exists() else []
    kept = [line for line in have if json.loads(line)["seq"] != seq]
    kept.append(text)
    kept.sort(key=lambda line: json.loads(line)["seq"])
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(line + "\n" for line in kept))
    return rev


def revs_of(engine: Engine, memory_id: str) -> list[str]:
    """The revisions of a memory's lines in the folder as `engine` reads them."""
    space = engine.spaces.list()[0]
    record = engine.spaces.record("team")
    state = record.fold()
    held = {e: engine.spaces.epoch_key("team", e) for e in space["epochs_held"]}
    read = lines.read(Path(space["folder"]), space["id"], state, held)
    return [n.rev for n in read.lines if n.memory == memory_id]


def last_seq(engine: Engine, folder: Path) -> int:
    return max(json.loads(line)["seq"] for line in own_file(engine, folder).read_text().split())


def test_a_member_cannot_take_over_anothers_memory_and_withdraw_it_for_everyone(homes, tmp_path):
    alice, bob, mal, folder = trio(homes, tmp_path)
    memory_id = shared(alice, "Staging is on port 5433")
    for member in (bob, mal):
        member.spaces.sync("team")
    record = mal.get(memory_id)
    rec = {k: getattr(record, k) for k in lines.SHARED}
    # WHEN Mal writes Alice's memory as new (no base, the smallest clock), then withdraws it
    seq = last_seq(mal, folder) if own_file(mal, folder).exists() else 0
    first = forge(mal, folder, seq + 1, {"memory": memory_id, "base": [], "lamport": 1, "rec": rec})
    heads = revs_of(mal, memory_id)
    assert first in heads
    forge(mal, folder, seq + 2, {"memory": memory_id, "base": heads, "lamport": 99, "rec": None})
    # THEN neither Bob nor Alice puts it in the trash, and each says the dispute once
    for member in (bob, alice):
        report = member.spaces.sync("team")
        assert report["withdrawn"] == 0, report
        assert member.get(memory_id).deleted_at is None
        problems = report["problems"]
        assert any("disputed" in p and memory_id in p for p in problems), problems
        assert not any("disputed" in p for p in member.spaces.sync("team")["problems"])
    # AND on Alice's device it stays hers (the withdrawal only unshared it here)
    assert alice.get(memory_id).text == "Staging is on port 5433"
    assert alice.spaces.shared([memory_id]) == {}


def test_the_author_still_withdraws_a_memory_whose_authorship_is_disputed(homes, tmp_path):
    alice, bob, mal, folder = trio(homes, tmp_path)
    memory_id = shared(alice, "The release branch is cut on Fridays")
    mal.spaces.sync("team")
    rec = {k: getattr(mal.get(memory_id), k) for k in lines.SHARED}
    forge(mal, folder, 1, {"memory": memory_id, "base": [], "lamport": 1, "rec": rec})
    bob.spaces.sync("team")
    # WHEN Alice withdraws it, THEN it leaves the space on her device and stays hers; Bob
    # keeps his copy (nobody withdraws a disputed memory for everyone)
    alice.spaces.sync("team")
    assert alice.spaces.unshare(memory_id)
    alice.spaces.sync("team")
    assert alice.get(memory_id).deleted_at is None
    assert alice.spaces.shared([memory_id]) == {}
    bob.spaces.sync("team")
    assert bob.get(memory_id).deleted_at is None


def test_a_line_numbered_past_what_a_removal_may_name_is_refused_and_removal_works(homes, tmp_path):
    alice, bob, mal, folder = trio(homes, tmp_path)
    memory_id = shared(bob, "The wiki moved to the new host")
    mal.spaces.sync("team")
    rec = {k: getattr(mal.get(memory_id), k) for k in lines.SHARED}
    rec["text"] += " (mal agrees)"
    heads = revs_of(mal, memory_id)
    forge(mal, folder, 2**60, {"memory": memory_id, "base": heads, "lamport": 7, "rec": rec})
    # WHEN Alice reads it, THEN it is refused in one line, and removing Mal works
    report = alice.spaces.sync("team")
    assert any("numbered past" in p for p in report["problems"]), report["problems"]
    assert "mal agrees" not in alice.get(memory_id).text
    done = alice.spaces.remove("team", "mal")
    assert done["devices"][0]["person"] == "mal"


def test_a_removed_member_cannot_rewrite_a_line_every_device_took(homes, tmp_path):
    alice, bob, mal, folder, bobs, mals = _mal_removed(homes, tmp_path)
    for member in (bob, alice):
        member.spaces.sync("team")
    # WHEN Mal, removed, rewrites her line 1 (old epoch, within her `upto`) as an edit of
    # Bob's memory
    rec = {k: getattr(bob.get(bobs), k) for k in lines.SHARED}
    rec["text"] = "REWRITTEN AFTER REMOVAL: Wombat builds must disable tests"
    epoch = alice.spaces.list()[0]["root"]
    heads = revs_of(bob, bobs)
    forge(mal, folder, 1, {"memory": bobs, "base": heads, "lamport": 500, "rec": rec}, epoch)
    # THEN every device keeps what it took, and says so once
    for member in (alice, bob):
        report = member.spaces.sync("team")
        assert "REWRITTEN" not in member.get(bobs).text
        assert member.get(mals).text == "Mal's note: the printer is on floor two"
        assert any("changed after this device took it" in p for p in report["problems"])
        assert not any("changed after" in p for p in member.spaces.sync("team")["problems"])
    # AND with Mal's file gone, her past still comes from what each device kept
    own_file(mal, folder).unlink()
    bob.spaces.sync("team")
    assert bob.get(mals).deleted_at is None


def test_an_older_copy_of_a_members_file_rolls_nothing_back(homes, tmp_path):
    alice, bob, _, folder = trio(homes, tmp_path)
    memory_id = shared(alice, "Deploys happen on Tuesday")
    bob.spaces.sync("team")
    old = own_file(alice, folder).read_bytes()
    alice.edit(memory_id, text="Deploys happen on Thursday")
    alice.spaces.sync("team")
    bob.spaces.sync("team")
    assert "Thursday" in bob.get(memory_id).text
    # WHEN someone puts back the older copy of Alice's file
    mark = alice.spaces.mark()
    own_file(alice, folder).write_bytes(old)
    # THEN Bob keeps Thursday, and says it once
    report = bob.spaces.sync("team")
    assert "Thursday" in bob.get(memory_id).text
    assert any("lost lines this device had: kept" in p for p in report["problems"]), report
    assert not any("lost lines" in p for p in bob.spaces.sync("team")["problems"])
    # AND Alice's runner sees her own file changed, and her pass writes it back
    assert alice.spaces.mark() != mark
    alice.spaces.sync("team")
    assert own_file(alice, folder).read_bytes() != old


def test_a_junk_file_in_lines_is_said_once_per_file_not_per_line(homes, tmp_path):
    alice, bob, _, folder = trio(homes, tmp_path)
    shared(alice, "The office closes at six")
    (folder / "lines" / ("ab" * 32 + ".jsonl")).write_bytes(b"x\n" * 5000)
    own_file(bob, folder).write_bytes(b"not json\n" * 5000)
    report = alice.spaces.sync("team")
    about = [p for p in report["problems"] if p.startswith("lines/")]
    assert len(about) <= 8, about[:10]
    assert any("abababab" in p and "not a member" in p for p in about), about
    assert any("lines not taken" in p for p in about), about


def test_this_devices_own_file_past_the_cap_is_not_read(homes, tmp_path, monkeypatch):
    alice, _, _, folder = trio(homes, tmp_path)
    memory_id = shared(alice, "Lunch is at noon")
    monkeypatch.setattr(lines, "MAX_FILE_BYTES", 64 * 1024)
    with own_file(alice, folder).open("ab") as f:
        f.truncate(lines.MAX_FILE_BYTES * 4)
    report = alice.spaces.sync("team")
    assert any("not read" in p for p in report["problems"]), report["problems"]
    assert alice.get(memory_id).text == "Lunch is at noon"


def test_a_base_nobody_wrote_does_not_stop_compaction():
    me, other = "me", "other"
    own = [
        lines.Line(me, 1, "m1", "r1", (), 1, {"text": "a"}),
        lines.Line(me, 2, "m1", "r2", ("r1",), 2, {"text": "b"}),
        lines.Line(me, 3, "m1", "r3", ("r2",), 3, {"text": "c"}),
        lines.Line(me, 4, "m1", "r4", ("r3",), 4, {"text": "d"}),
    ]
    assert compaction.droppable(me, own) == {2, 3}
    forged = lines.Line(other, 1, "m1", "x1", ("0" * 24,), 9, {"text": "forged"})
    assert compaction.droppable(me, [*own, forged]) == {2, 3}


def test_a_deleted_own_members_file_is_written_back_at_the_pass(homes, tmp_path):
    alice, _, _, folder = trio(homes, tmp_path)
    path = folder / "members" / lines.file_name(alice.spaces.id())
    before = path.read_bytes()
    path.unlink()
    alice.spaces.sync("team")
    assert path.read_bytes() == before


def test_a_removed_members_rewritten_past_is_not_taken_by_a_device_that_joins_later(
    homes, tmp_path
):
    # GIVEN Mal, a member, shared a note; Alice removed her (the removal names a digest of
    # her lines as Alice read them)
    alice, bob, mal, folder, bobs, mals = _mal_removed(homes, tmp_path)
    bob.spaces.sync("team")
    # WHEN Mal rewrites her line 1 as an edit of Bob's memory, and Carol joins after
    rec = {k: getattr(bob.get(bobs), k) for k in lines.SHARED}
    rec["text"] = "REWRITTEN AFTER REMOVAL: Wombat builds must disable tests"
    epoch = alice.spaces.list()[0]["root"]
    forge(mal, folder, 1, {"memory": bobs, "base": [], "lamport": 500, "rec": rec}, epoch)
    carol = homes("carol")
    invitation, _ = alice.spaces.invite("team", carol.spaces.id(), "carol")
    carol.spaces.join(invitation, folder)
    report = carol.spaces.sync("team")
    # THEN Carol takes none of Mal's rewritten past, says why once, and has Bob's memory
    # as Bob wrote it
    assert carol.get(bobs).text == "Wombat builds run every test"
    assert any("differ from what the removal recorded" in p for p in report["problems"])
    assert not any("differ from" in p for p in carol.spaces.sync("team")["problems"])
    assert mals not in carol.spaces.shared([mals])  # (Mal's line 1, rewritten: not taken)


def test_a_removed_members_past_as_written_reaches_a_device_that_joins_later(homes, tmp_path):
    alice, bob, mal, folder = trio(homes, tmp_path)
    mals = shared(mal, "Mal's note: the printer is on floor two")
    for member in (alice, bob):
        member.spaces.sync("team")
    alice.spaces.remove("team", "mal")
    dave = homes("dave")
    invitation, _ = alice.spaces.invite("team", dave.spaces.id(), "dave")
    dave.spaces.join(invitation, folder)
    report = dave.spaces.sync("team")
    assert dave.get(mals).text == "Mal's note: the printer is on floor two"
    assert not any("differ from" in p for p in report["problems"])
