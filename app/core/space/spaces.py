"""The team spaces this device is in (issue 45, ADR 0026): making one, inviting a device,
joining, the members, removing one and leaving, sharing a memory and withdrawing it, and
the pass that sends and takes the space's memories (`sync`: `sharing.Sharing` over
`lines`); what `engine.spaces` does for the CLI (and, next, the app and the runner).

- **This device's key** is the Ed25519 key sync signs with (ADR 0018, `Identity.seed`),
  made once per database the way sync makes it when sync was never set up: `mnemo space
  id` and `mnemo sync` name one device by one key.
- **What this device keeps** of each space (its id, name, root and folder, the epoch keys
  it holds, the events it wrote) is in its database (`_metadata`, as the sync key is:
  encrypted with the database when the database is).
- **What the members share** is the space's folder (`folder.SpaceFolder`): each device's
  events in a file of its own, read whole at each command and folded (`Record.fold`).
"""

from __future__ import annotations

import getpass
import json
import logging
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path

from app.core.errors import InputError
from app.core.space import keys, lines, persons, place, standing
from app.core.space.folder import Reading, SpaceFolder, stamps
from app.core.space.lock import one_at_a_time
from app.core.space.membership import Members, Record, event_hash
from app.core.space.sharing import Sharing, holds_secret
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.sync.state import Identity
from app.core.writer import Remembered

log = logging.getLogger(__name__)

META = "spaces"  # this device's spaces, by id (JSON)
MAX_NAME = 100
MAX_SAID = 1000  # problems remembered as said, per space


def _name(text: str, what: str) -> str:
    """A space's or a person's name, checked: one line of at most 100 characters."""
    name = " ".join(str(text).split())
    if not name:
        raise InputError(f"the {what} is empty")
    if len(name) > MAX_NAME or not name.isprintable():
        raise InputError(f"the {what} must be one line of at most {MAX_NAME} printable characters")
    return name


def device_id(text: str) -> str:
    """A device id as pasted (whitespace dropped); InputError when it is not one."""
    public = "".join(str(text).split())
    try:
        if len(keys.unb64(public)) == 32:
            keys.seal_to(public, b"")  # (a point libsodium cannot convert is not an id)
            return public
    except InputError:
        pass
    raise InputError(
        f"not a device id: {public[:60]!r} (`mnemo space id` prints one: 44 letters, digits, "
        "+ and /, ending in =)"
    )


class Spaces:
    """This device's team spaces: the part `engine.spaces` is."""

    def __init__(self, db: Database, store: Store | None = None):
        self._db = db
        self._key: keys.DeviceKey | None = None
        self._memories = store or Store(db)
        self._sharing = Sharing(db, self._memories)

    # ---- this device -------------------------------------------------------------------
    @property
    def device(self) -> keys.DeviceKey:
        """This device's key (sync's signing key: one device, one key)."""
        if self._key is None:
            self._key = keys.DeviceKey(Identity(self._db, "").seed)
        return self._key

    def id(self) -> str:
        """This device's public id, to give to whoever invites it."""
        return self.device.public

    # ---- the spaces --------------------------------------------------------------------
    def list(self) -> list[dict]:
        """The spaces this device is in, by name: each one's id, folder and the epochs
        whose keys it holds (read here, without the folder)."""
        return [
            {
                "name": entry["name"],
                "id": entry["id"],
                "folder": entry["folder"],
                "root": entry["root"],
                "epochs_held": sorted(entry["keys"]),
                "since": entry["since"],
                "inject": bool(entry.get("inject")),
                "member": bool(entry.get("member", True)),  # (as its last pass found)
            }
            for entry in sorted(self._load().values(), key=lambda e: e["name"])
        ]

    @one_at_a_time
    def create(self, name: str, folder: Path, person: str | None = None) -> dict:
        """A new space in `folder` (made if missing) with this device as its first member,
        for `person` (the user's login name unless given); its members."""
        name = _name(name, "space's name")
        person = _name(person or _login(), "person's name")
        self._free(name)
        root = SpaceFolder.check(Path(folder), None, self._load())
        record, key = Record.create(self.device, name, person)
        place = SpaceFolder(root)
        place.prepare({"mnemo_space": 1, "id": record.space, "root": record.root})  # (no name:
        # the folder shows none; each device keeps its own, from its create or invitation)
        entry = {
            "id": record.space,
            "name": name,
            "folder": str(root.resolve()),
            "root": record.root,
            "keys": {record.root: key.hex()},
            "events": [],
            "since": _now(),
        }
        self._wrote(entry, record, record.root)
        return self.members(name)

    @one_at_a_time
    def invite(self, name: str, to: str, person: str | None = None) -> tuple[str, str]:
        """Admit the device `to` (the record's `admit`, in the folder) and the invitation
        sealed to it, to pass on; and the person's name used: this device's own person, or
        a new person named `person` (`persons.invited`)."""
        to = device_id(to)
        person = _name(person, "person's name") if person and person.strip() else None
        entry = self._space(name)
        record, _ = self._read(entry)
        state = self._member(entry, record)
        named = self._names(entry, record, state)
        mine = state.members[self.device.public]
        person = persons.invited(named, set(state.members.values()), mine, person)
        if to == self.device.public:
            raise InputError(
                "this is this device's own id (it is in the space already); invite another "
                "device with the id its `mnemo space id` prints"
            )
        if to in state.members:
            raise InputError(
                f"that device is already a member of the space {entry['name']!r} (its "
                f"invitation lost or expired? `mnemo space remove {entry['name']} ID`, then "
                "invite it again)"
            )
        if state.rotation_due(self.device.public):
            self._wrote(entry, record, record.rotate(self.device))  # (ADR 0026: first)
            state = record.fold()
        held = self._held(entry, record, state)
        if state.epoch not in held:
            raise InputError(
                f"this device does not hold the space {entry['name']!r}'s current key; wait "
                "for the folder to bring the members' latest events, then try again"
            )
        admit = record.admit(self.device, to, person)
        invitation = keys.make_invitation(
            self.device,
            to,
            {"id": entry["id"], "name": entry["name"], "root": entry["root"]},
            state.epoch,
            held[state.epoch],
            record.heads(),
        )
        self._wrote(entry, record, admit)
        return invitation, named[mine] if person is None else person

    @one_at_a_time
    def join(self, text: str, folder: Path, name: str | None = None, wait: bool = False) -> dict:
        """Join the space an invitation sealed to this device names, through `folder` (this
        device's copy of the members' shared folder), under the name the invitation gives
        or `name` (this device's own); its members, as far as they arrived. A folder that
        holds nothing of the space yet (missing, or empty: a mistyped path, or one the
        folder sync has not filled) is refused unless `wait` (then made if missing).
        Nothing is written (here or there) when the invitation is not for this device."""
        try:
            opened = keys.open_invitation(self.device, text)
        except InputError as exc:
            raise InputError(_unopened(str(exc))) from None
        spaces = self._load()
        if opened["space"] in spaces:
            had = spaces[opened["space"]]
            raise InputError(
                f"this device is already in the space {had['name']!r}, through "
                f"{had['folder']} (to use another folder: mnemo space set "
                f"{shlex.quote(had['name'])} folder PATH)"
            )
        name = _name(name if name and name.strip() else opened["name"], "space's name")
        self._free(name, "mnemo space join INVITATION FOLDER --as ANOTHER")
        root = place.checked(Path(folder), opened["space"], self._load(), wait)
        SpaceFolder(root).prepare()
        entry = {
            "id": opened["space"],
            "name": name,
            "folder": str(root.resolve()),
            "root": opened["root"],
            "keys": {opened["epoch"]: opened["key"].hex()},
            "events": [],
            "since": _now(),
            "invited_by": opened["from"],
            "head": opened["head"],
        }
        self._save(entry)
        try:
            SpaceFolder(root).write_own(self.device.public, [])  # (it joined: the members see)
            return self.members(name)
        except Exception:  # kept only once everything succeeded (review of issue 45)
            _forget(self, entry["id"])
            raise

    @one_at_a_time
    def rename(self, name: str, new: str) -> str:
        """Call the space `name` `new` on this device (the name is its own: the members
        each keep theirs); the name now."""
        entry, new = self._space(name), _name(new, "space's name")
        if new != entry["name"]:
            self._free(new)
            self._update(entry["id"], {"name": new})
        return new

    @one_at_a_time
    def move(self, name: str, folder: Path) -> dict:
        """Read and write the space `name` through `folder` from now on (its folder moved):
        one holding this space's mark, or empty (`place.moved`); its members there."""
        entry = self._space(name)
        root = place.moved(Path(folder), entry["id"], self._load())
        SpaceFolder(root).write_own(self.device.public, entry["events"])
        self._update(entry["id"], {"folder": str(root.resolve())})
        return self.members(entry["name"])

    def record(self, name: str) -> Record:
        """The space's membership record as this device holds it now (its own events, those
        it kept, and the folder's)."""
        return self._read(self._space(name))[0]

    @one_at_a_time
    def members(self, name: str) -> dict:
        """Who is in the space as its folder says now: each person's devices (which is this
        one), who was removed or left, the epoch, and what the fold said: a rotation due,
        events waiting for their parents, events and lines refused."""
        entry = self._space(name)
        record, reading = self._read(entry)
        state = record.fold()
        self._held(entry, record, state)
        named = self._names(entry, record, state)
        return standing.view(entry, record, reading, state, named, self.device.public)

    @one_at_a_time
    def remove(self, name: str, member: str) -> dict:
        """Remove a member (a person: their name, when no other member carries it, or their
        id: all their devices; or a device id) and start a new epoch whose key only the
        members who stay receive; the devices removed."""
        entry = self._space(name)
        record, _ = self._read(entry)
        state = self._member(entry, record)
        named = self._names(entry, record, state)
        devices = persons.meant(state.members, named, member, entry["name"])
        if not devices:
            raise InputError(
                f"no member {member.strip()[:100]!r} in the space {entry['name']!r} (`mnemo "
                f"space members {entry['name']}` lists them)"
            )
        if self.device.public in devices:
            raise InputError(
                f"that is this device; to go, `mnemo space leave {entry['name']}` (or remove "
                "another device by its id)"
            )
        # `upto`: each removed device's last line in the folder this device may take now
        # (signed, at an epoch it was in): what it wrote up to here stays the space's
        read = lines.last_written(Path(entry["folder"]), entry["id"], state)
        upto = {d: read.get(d, 0) for d in devices}
        past = lines.past(Path(entry["folder"]), entry["id"], upto)  # (as read now)
        self._wrote(entry, record, record.remove(self.device, devices, upto, past))
        return {"devices": [{"id": d, "person": named[state.members[d]]} for d in devices]}

    @one_at_a_time
    def leave(self, name: str) -> bool | None:
        """This device leaves the space (a `leave` event, when it is still a member) and
        forgets it; the folder is left as it is. Whether it was a member still (None: the
        folder is gone or unreadable, so it could not be told; forgotten here all the
        same)."""
        entry = self._space(name)
        try:
            record, _ = self._read(entry)
        except InputError:
            _forget(self, entry["id"])
            self._sharing.left(entry["id"])
            return None
        member = self.device.public in record.fold().members
        if member:
            last = self._sharing.last_seq(entry["id"])  # (its lines so far stay the space's)
            self._wrote(entry, record, record.leave(self.device, last))
        with self._db.write():
            spaces = self._load()
            spaces.pop(entry["id"], None)
            self._store(spaces)
            self._sharing.left(entry["id"])  # (its memories here: kept, in no space now)
        return member

    # ---- the memories a space shares (`sharing.Sharing`, `lines`) -----------------------
    @one_at_a_time
    def ready(self, name: str) -> dict:
        """The space named, checked before anything is written in it: this device is in it
        and a member. InputError otherwise (nothing changed)."""
        entry = self._space(name)
        record, _ = self._read(entry)
        self._member(entry, record, key=True)
        return {"name": entry["name"], "id": entry["id"]}

    @one_at_a_time
    def share(self, memory_id: str, name: str) -> dict:
        """Share a memory of this device in the space `name` and run a pass (its line goes
        out now); the pass's report (`sync`)."""
        entry = self.ready(name)
        self._sharing.share(self._memories.get(memory_id), entry["id"])
        return self.sync(entry["name"])

    @one_at_a_time
    def share_many(self, memory_ids: list[str], name: str) -> dict:
        """Share several memories in the space `name` with one pass, each checked as by
        `share`: `shared`, `not_shared` ([(id, why)]) and the pass's report."""
        entry = self.ready(name)
        done, refused = self._sharing.share_many(memory_ids, entry["id"])
        return {**self.sync(entry["name"]), "shared": done, "not_shared": refused}

    @one_at_a_time
    def unshare(self, memory_id: str) -> dict | None:
        """Withdraw a memory from its space (the members drop it from their view; what they
        had stays theirs) and run that space's pass; None when it was in no space."""
        memory = self._memories.get(memory_id)
        space = self._sharing.unshare(memory.id)
        if space is None:
            return None
        entry = self._load().get(space)
        if not entry:
            return None
        report = self.sync(entry["name"])
        return {**report, "author": self._sharing.mine(memory.id)}  # (False: another's, left
        # in the space for its other members: only its author withdraws it for them)

    def unsent(self, memory_id: str) -> str:
        """Why a change to this memory reaches none of its space's members (removed, left,
        no key yet: `ready`'s refusal); "" when it is in no space or goes out."""
        space = self.shared([memory_id]).get(memory_id)
        try:
            if space:
                self.ready(space)
        except InputError as exc:
            return str(exc)
        return ""

    def known_apart(self, memory_id: str, name: str, status, whose: str = "yours") -> str:
        """When `remember` with a space found its words already known in a memory that is
        not in that space (seen again or brought back from the trash): what to say instead
        of sharing it (its reasoning and tags are private); '' otherwise (share it)."""
        if status not in (Remembered.OBSERVED, Remembered.RESTORED):
            return ""
        entry = self._space(name)
        now = self.shared([memory_id]).get(memory_id)
        if now == entry["name"]:
            return ""
        where = f"in the space {now!r}" if now else f"{whose} alone"
        return (
            f"already known as {memory_id}, which is {where}: not shared; share it with "
            f"mnemo edit {memory_id} --space {entry['name']} if you mean to (its reasoning "
            "and tags go with it)"
        )

    def may_edit(self, memory_id: str, changes: dict, secrets: str) -> None:
        """InputError (nothing changed) when an edit would put a secret in a shared memory
        or bring this device's file of lines past the cap (`Sharing.may_edit`)."""
        memory = self._memories.get(memory_id)
        self._sharing.may_edit(memory, changes, secrets, self.shared([memory.id]).get(memory.id))

    def may_restore(self, memory_id: str, seq: int) -> None:
        """InputError (nothing changed) when restoring a shared memory's version `seq` would
        put a secret in it (its members would read it; a pass would hold it back)."""
        memory = self._memories.get(memory_id)
        space = self.shared([memory.id]).get(memory.id)
        for version in self._memories.versions.of(memory.id) if space else ():
            words = {"title": version.title, "text": version.text, "reasoning": version.reasoning}
            if version.seq == seq and holds_secret(words):
                raise InputError(
                    f"not changed: memory {memory.id} is shared in the space {space!r} and "
                    f"version {version.number} holds a secret (its members would read it)"
                )

    def shared(self, ids: list[str]) -> dict[str, str]:
        """{memory id: space name} of these memories that are shared in a space."""
        names = {e["id"]: e["name"] for e in self._load().values()}
        return {m: names.get(s, s) for m, s in self._sharing.spaces_of(ids).items()}

    def sync_all(self) -> list[dict]:
        """A pass over every space this device is in (what the runner calls, as it runs
        sync's): each one's report, or `{"name", "error"}` when its folder cannot be read."""
        out = []
        for entry in sorted(self._load().values(), key=lambda e: e["name"]):
            try:
                out.append(self.sync(entry["name"]))
            except InputError as exc:
                out.append({"name": entry["name"], "error": str(exc)})
        return out

    @one_at_a_time
    def inject(self, name: str, on: bool) -> None:
        """Whether the space's memories reach agents' sessions and prompts unasked
        (`mnemo space set NAME inject on`; off when a space is made or joined): its
        members' memories then count as trusted (`origin.Trust.spaces`)."""
        self._update(self._space(name)["id"], {"inject": bool(on)})

    def injected(self) -> list[str]:
        """The ids of the spaces whose memories agents get unasked."""
        return [i for i, entry in self._load().items() if entry.get("inject")]

    def mark(self) -> tuple:
        """Changes when a pass over the spaces is due (`sync_all`, by the process doing the
        background work): a shared memory changed here, or another device's file in a
        space's folder moved (its own are written by its passes); cheap: one query and a
        stat per file. () when this device is in no space."""
        spaces = self._load()
        if not spaces:
            return ()
        shared = tuple(
            self._db.query(
                "SELECT m.id, m.updated_at, m.deleted_at, s.withdrawn FROM space_memories s "
                "JOIN memories m ON m.id = s.memory_id ORDER BY m.id"
            )
        )
        folders = {e["id"]: Path(e["folder"]) for e in spaces.values()}
        return (shared, *stamps(folders, ("members", lines.LINES), self.device.public))

    def epoch_key(self, name: str, epoch: str) -> bytes:
        """The key of one of the space's epochs, when this device holds it (to check what
        a line holds by hand); InputError otherwise."""
        entry = self._space(name)
        if epoch not in entry["keys"]:
            raise InputError(f"this device does not hold the key of the epoch {epoch[:12]}")
        return bytes.fromhex(entry["keys"][epoch])

    @one_at_a_time
    def sync(self, name: str) -> dict:
        """A pass over the space (`mnemo space sync NAME`; the runner calls it later): this
        device's changes to its shared memories sealed and written (when it is a member and
        holds the current key; a rotation first when one is due), then every member's
        lines read and folded into memories here. What it sent, applied, withdrew, what
        waits for a key, and each line refused, said once."""
        entry = self._space(name)
        record, reading = self._read(entry)
        state = record.fold()
        me = self.device.public
        SpaceFolder(Path(entry["folder"])).restore_own(me, entry["events"])  # (it differs?)
        if state.rotation_due(me):
            self._wrote(entry, record, record.rotate(self.device))
            state = record.fold()
        held = self._held(entry, record, state)
        if me in state.members:
            place.present(Path(entry["folder"]), me, entry["events"])
        self._sharing.adopt(entry, self.device)  # (its own lines a restore lost: kept)
        read = self._sharing.ledger.read(entry, state, held, me)
        sent: list[lines.Line] = []
        self._sharing.held = []
        who = dict(state.person_of)  # (a memory's author is a person: by id, not by name)
        named = persons.names(record.events, set(who.values()), held, who)
        names = {d: named[p] for d, p in who.items()}
        self._sharing.know(read.lines, who, me)
        if me in state.members and state.epoch in held:
            lamport = max((n.lamport for n in read.lines), default=0)
            key = held[state.epoch]
            sent = self._sharing.publish(entry, self.device, state.epoch, key, lamport, read.lines)
            read = self._sharing.ledger.read(entry, state, held, me)  # (with them)
            self._sharing.know(read.lines, who, me)
            self._sharing.compact(entry, self.device, read.lines)  # (folds the same)
        applied = self._sharing.apply(entry["id"], read.lines, who, me, names)
        why = standing.outside(entry["name"], state, record.events, me, named, held, False)
        problems = reading.problems + lines.named(read.problems, names) + applied["problems"]
        held = self._sharing.held_problems()  # (not refused lines: memories kept back here)
        return {
            "name": entry["name"],
            "member": me in state.members,
            "joined": self._news(entry, record, state, names),
            "sending": not why,  # (what changes here reaches the members)
            "outside": why,  # (why not: removed, left, no key yet; "" when it does)
            "sent": len(sent),
            "applied": applied["applied"],
            "withdrawn": applied["withdrawn"],
            "waiting": read.waiting + applied["waiting"],
            "problems": self._new_problems(entry, problems + held),  # (each said once)
            "refused": len(problems),  # (said now or at an earlier pass)
            "held": len(held),  # (memories not sent: a secret; said now or earlier)
            "held_removals": {  # ({person: count} newly held, by name)
                named.get(p, p): n for p, n in applied["held_removals"].items()
            },
        }

    # ---- removals en masse, held for a person (`Sharing._hold`) -------------------------
    @one_at_a_time
    def removals(self, name: str) -> list[dict]:
        """The removals held in the space, by member: how many memories and their first
        titles (`mnemo space removals NAME`)."""
        entry = self._space(name)
        named = self._names(entry)
        out = []
        for person, ids in sorted(self._sharing.held_removals(entry["id"]).items()):
            found = self._memories.texts_of_ids(ids[:5])
            titles = [self._memories.get(i).title for i in ids[:5] if i in found]
            out.append(
                {"member": named.get(person, person), "memories": len(ids), "titles": titles}
            )
        return out

    @one_at_a_time
    def apply_removals(self, name: str, member: str) -> dict:
        """Apply the removals held of `member`'s memories (into the trash here) in a pass
        over the space; the pass's report."""
        person = self._held_member(name, member)
        self._sharing.let_through = {person}
        try:
            return self.sync(name)
        finally:
            self._sharing.let_through = set()

    @one_at_a_time
    def keep_removals(self, name: str, member: str) -> int:
        """Refuse the removals held of `member`'s memories: the copies stay here, no longer
        shared (this person's now); how many."""
        person = self._held_member(name, member)
        return self._sharing.keep(self._space(name)["id"], person)

    def held_now(self) -> list[dict]:
        """Every member's removals held in this device's spaces ({"space": its name,
        "member", "memories", "hold": names one hold, another once it grows or after a
        decision}), for the app to say each once (`Runner`); one query when none waits."""
        held = self._sharing.all_held()  # (by person id: shown by name)
        entries = self._load() if held else {}
        named = {i: self._names(entries[i]) for i in {h["space"] for h in held} if i in entries}
        return [
            {**h, "space": entries[s]["name"], "member": named[s].get(h["member"], h["member"])}
            for h in held
            if (s := h["space"]) in entries
        ]

    def _held_member(self, name: str, member: str) -> str:
        """The person (their id) whose removals wait, named by a person (by name or id)."""
        entry = self._space(name)
        held = self._sharing.held_removals(entry["id"])
        return persons.held_of(held, lambda: self._names(entry), member, entry["name"])

    def _names(self, entry: dict, record: Record | None = None, state=None) -> dict[str, str]:
        """{person id: name} of every person admitted, as this device opens the names
        (`persons.names`); the folder read when no record is given ({}: unreadable)."""
        if record is None:
            try:
                record = self._read(entry)[0]
            except InputError:
                return {}
        state = state or record.fold()
        held = self._held(entry, record, state)
        return persons.names(record.events, set(state.person_of.values()), held, state.person_of)

    def joined_since(self, at: float) -> list[dict]:
        """Who joined a space after `at` (a time), as this device's passes saw them,
        whichever process made them ({"space": its name, "device", "person", "at"}): for
        the app to tell each once (`Runner`)."""
        return standing.since(self._load(), at)

    def _news(self, entry: dict, record: Record, state: Members, names: dict) -> list[dict]:
        """Who joined since the last pass (`standing.news`), kept so each is told once."""
        me = self.device.public
        told, changes = standing.news(entry, state, record.events, names, me, time.time())
        if entry.get("member", True) != (me in state.members):
            changes["member"] = me in state.members  # (what `list` shows, read here)
        if changes:
            self._update(entry["id"], changes)
        return told

    def _update(self, space: str, changes: dict) -> None:
        """Fields of a space's entry changed (read again under the write)."""
        with self._db.write():
            spaces = self._load()
            if space in spaces:
                spaces[space].update(changes)
                self._store(spaces)

    def _new_problems(self, entry: dict, problems: list[str]) -> list[str]:
        """The problems an earlier pass did not say: every pass reads the whole folder, so
        a bad line is found again each time; it is said once (what it holds now is kept)."""
        said = set(self._load().get(entry["id"], entry).get("said", []))
        if set(problems) != said:
            self._update(entry["id"], {"said": sorted(set(problems))[:MAX_SAID]})
        for problem in problems:
            if problem not in said:
                log.warning("space %s: %s", entry["name"], problem.split(":")[0])
        return [p for p in problems if p not in said]

    # ---- what this device keeps ---------------------------------------------------------
    def _load(self) -> dict[str, dict]:
        try:
            spaces = json.loads(self._db.get_meta(META, "{}"))
        except ValueError:
            spaces = {}
        return spaces if isinstance(spaces, dict) else {}

    def _store(self, spaces: dict[str, dict]) -> None:
        self._db.set_meta(META, json.dumps(spaces, sort_keys=True))

    def _save(self, entry: dict) -> None:
        with self._db.write():
            spaces = self._load()
            spaces[entry["id"]] = entry
            self._store(spaces)

    def _space(self, name: str) -> dict:
        for entry in self._load().values():
            if entry["name"] == " ".join(str(name).split()):
                return entry
        raise InputError(f"no space named {name[:100]!r} here (`mnemo space list` shows them)")

    def _free(self, name: str, way: str = "") -> None:
        if any(entry["name"] == name for entry in self._load().values()):
            raise InputError(
                f"a space named {name!r} is already here; give another name"
                + (
                    f" ({way}, or rename yours: mnemo space set {shlex.quote(name)} name NEW)"
                    if way
                    else ""
                )
            )

    def _read(self, entry: dict) -> tuple[Record, Reading]:
        """The record: this device's own events, every device's from the folder, and the
        others' it saw before (kept: `_remember`)."""
        record = Record(entry["id"], entry["root"])
        for event in entry["events"]:
            record.add(event)
        reading = SpaceFolder(Path(entry["folder"])).read(record, entry.get("seen", []))
        _remember(self, entry, record)
        return record, reading

    def _member(self, entry: dict, record: Record, key: bool = False) -> Members:
        """The record folded; InputError when this device is not a member (with `key`: or
        does not hold the current key), saying why (`standing.outside`)."""
        state = record.fold()
        me = self.device.public
        held = self._held(entry, record, state) if key else None
        if me not in state.members or key:
            waiting = any(h not in record.events for h in entry.get("head", []))
            named = self._names(entry, record, state) if me not in state.members else {}
            why = standing.outside(entry["name"], state, record.events, me, named, held, waiting)
            if why:
                raise InputError(why)
        return state

    def _held(self, entry: dict, record: Record, state: Members) -> dict[str, bytes]:
        """The epoch keys this device holds: kept here, and opened from the record (kept
        from now on: a key is never forgotten, so the past stays readable)."""
        held = {e: bytes.fromhex(k) for e, k in entry["keys"].items()}
        new = {e: k for e, k in record.keys_for(self.device, state).items() if e not in held}
        if new:
            entry["keys"] = {**entry["keys"], **{e: k.hex() for e, k in new.items()}}
            self._save(entry)
        return {**held, **new}

    def _wrote(self, entry: dict, record: Record, event: str) -> None:
        """An event this device made: its file in the folder written again whole (what it
        wrote there before included), then kept here with the keys it now holds."""
        me = self.device.public
        mine = {event_hash(e) for e in entry["events"]}
        earlier = [e for h, e in record.events.items() if e["author"] == me and h not in mine]
        events = [e for e in earlier if event_hash(e) != event] + entry["events"]
        events.append(record.events[event])
        SpaceFolder(Path(entry["folder"])).write_own(me, events)
        entry["events"] = events
        entry["keys"] = {
            **entry["keys"],
            **{e: k.hex() for e, k in record.keys_for(self.device).items()},
        }
        self._save(entry)


def _unopened(why: str) -> str:
    """What a person is told of an invitation this device cannot use."""
    if why in ("not sealed to this device", "an invitation addressed to another device"):
        return (
            "this invitation is not for this device: it was sealed to another device's id, "
            "or damaged on the way (ask for one made for the id `mnemo space id` prints "
            "here); nothing was written"
        )
    return f"cannot use this invitation: {why}; nothing was written"


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _remember(spaces: Spaces, entry: dict, record: Record) -> None:
    """Keep every other device's event the record holds that this device had not kept
    yet (`entry["seen"]`, beside its own events): a device's record only grows, so
    whoever can write the folder cannot undo a removal by truncating or deleting a
    member's file (review of issue 45)."""
    me = spaces.device.public
    seen = entry.get("seen", [])
    known = {event_hash(e) for e in seen} | {event_hash(e) for e in entry["events"]}
    worth = record.worth_keeping()
    new = [
        event
        for name, event in record.events.items()
        if name not in known and event["author"] != me and name in worth
    ]
    if new:
        entry["seen"] = seen + new
        spaces._save(entry)


def _forget(spaces: Spaces, space: str) -> None:
    """This device's entry for a space, dropped (a join that did not go through)."""
    kept = spaces._load()
    kept.pop(space, None)
    spaces._store(kept)
