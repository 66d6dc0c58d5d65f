"""The memories a space shares, on this device's side (issue 45, ADR 0026): which memory is
in which space (table `space_memories`), this device's changes to them written as sealed
lines (`publish`), and every member's lines folded into memories here (`apply`).

- **Sharing** marks a memory as in a space; its state goes out at the next pass (a
  command runs one at once). **Unsharing** withdraws it: a line saying so (no state), and
  every member drops it from their view (into the trash: what they had stays theirs).
  Only its **author** (the person whose device signed its first line) withdraws or trashes
  a memory for everyone: the same person's other devices only unshare it, and a member
  who forgets, purges or withdraws another's memory sends nothing (it leaves their view).
- **Removals en masse wait for a person**: when one member's lines would withdraw or
  trash more of the memories here at once than device sync lets one device remove
  (`sync.holding.massive`, ADR 0015), none of them is applied; they are held (`_metadata`
  `space_held:SPACE`, by person) until a person applies them (`let_through`, for one
  pass) or keeps them (`keep`: the copies stay here, in no space); that member's edits and
  new memories still come.
- **A secret** never goes out: a memory holding one is held back (`held`), said once.
- **A change here** is what differs from what the space last said of the memory (its
  shared fields' digest): each pass writes one line per changed memory, made from the
  versions the space had (`base`: its heads), numbered after this device's last line.
- **The fold** is sync's (`sync.fold`, ADR 0015): the lines of one memory form a graph
  by their `base`; edits made apart by two members are merged the way Mnemo merges
  (every statement kept, the versions kept in the trash), whatever order they arrived in.
- **Who wrote it** comes from the signatures, never from what a line says: a memory from
  the space carries a `space` origin per member device whose words it holds (the person's
  name in the membership record), so recall says its author.
- A line naming a memory of this device that is not in that space (a private one, or
  one of another space) is refused: a member cannot write over what was not shared (one
  this device holds word for word as a line says it is taken: a member's second device
  whose own sync brought the memory first).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from app.core import origin
from app.core.errors import InputError, MnemoError, NotFoundError, SecretError
from app.core.memory import Memory, guard_secrets
from app.core.space import compaction, keys, lines
from app.core.space.folder import read_capped
from app.core.space.ledger import Ledger
from app.core.storage.db import Database
from app.core.storage.store import Store
from app.core.sync import fold
from app.core.sync.holding import massive

HELD = "not sent to the space: it holds a secret; edit it out"  # (a memory `publish` held)
OVER = (  # (a memory `publish` held: the file would pass what a member reads)
    f"not sent to the space: this device's lines there would pass {lines.MAX_FILE_BYTES >> 20} "
    "MB, the most a member reads; unshare some memories or make this one shorter"
)


def holds_secret(record: dict) -> bool:
    """Whether a memory's shared fields hold a secret (`guard_secrets`, as sync checks)."""
    try:
        guard_secrets(record, "refuse")
    except SecretError:
        return True
    return False


DISPUTED = "\0disputed"  # (`Sharing.owners`: first written as new by two persons)
DISPUTED_SAID = (
    "who shared it first is disputed (two members wrote it as new): nobody withdraws or "
    "trashes it for everyone; a withdrawal of it only unshares it here"
)
UNREAD = (  # (this device's own file of lines, too big or unreadable: not adopted)
    f"this device's own file of lines is over {lines.MAX_FILE_BYTES >> 20} MB or cannot be "
    "read: not read (its lines are kept in its database and the file written again from them)"
)
SHARED, BY_ME, BY_SPACE = 0, 1, 2  # `space_memories.withdrawn`: shared, withdrawn here,
# withdrawn by another member (taken again when it is shared again)


class Sharing:
    """Which memories are in which space, and the pass that sends and takes them."""

    def __init__(self, db: Database, store: Store):
        self._db = db
        self._store = store
        self.held: list[str] = []  # the memories the last `publish` did not send: a secret
        self.owners: dict[str, str] = {}  # memory id: the person whose line first said it
        self.me = ""  # the person this device is in the space
        self.let_through: set[str] = set()  # persons whose held removals a person applied
        self.names: dict[str, str] = {}  # device: its person's name (for the origins shown)
        self.over: set[str] = set()  # those of `held` held because the file would be too big
        self.disputed: list[str] = []  # memories first written as new by two persons (`know`)
        self.notes: list[str] = []  # what the last `adopt` could not read (said by `apply`)
        self.ledger = Ledger(db)  # what this device took of the others' lines

    def know(self, taken: list[lines.Line], persons: dict[str, str], me: str) -> None:
        """Who first wrote each memory the lines speak of (the person signing its first
        line), and who this device is: a memory's author alone withdraws or trashes it for
        every member; anyone else's only leaves it here (ADR 0026 addendum). Honest devices
        never write a memory another person shared as new, so when first lines of one
        memory come from two persons its authorship is disputed (`disputed`): nobody
        withdraws it for everyone, but a device never gives up a memory it wrote first."""
        firsts: dict[str, set[str]] = {}
        for line in taken:
            if not line.base:
                firsts.setdefault(line.memory, set()).add(persons.get(line.author, line.author))
        self.me = persons.get(me, me)
        self.owners, self.disputed = {}, []
        for memory_id, who in firsts.items():
            if len(who) == 1:
                self.owners[memory_id] = next(iter(who))
                continue
            self.disputed.append(memory_id)
            mine = self.me in who and self._wrote_first(memory_id, taken, me)
            self.owners[memory_id] = self.me if mine else DISPUTED

    @staticmethod
    def _wrote_first(memory_id: str, taken: list[lines.Line], me: str) -> bool:
        return any(n.memory == memory_id and not n.base and n.author == me for n in taken)

    def mine(self, memory_id: str) -> bool:
        """Whether this person wrote the memory first (or nobody sent it yet)."""
        return self.owners.get(memory_id, self.me) == self.me

    # ---- marking ---------------------------------------------------------------------
    def space_of(self, memory_id: str) -> str | None:
        """The space (its id) a memory is shared in now; None when it is in none."""
        rows = self._db.query(
            "SELECT space FROM space_memories WHERE memory_id = ? AND withdrawn = 0", (memory_id,)
        )
        return rows[0][0] if rows else None

    def spaces_of(self, ids: list[str]) -> dict[str, str]:
        """{memory id: space id} of these memories that are shared now."""
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        return dict(
            self._db.query(
                f"SELECT memory_id, space FROM space_memories WHERE withdrawn = 0 AND "
                f"memory_id IN ({marks})",
                tuple(ids),
            )
        )

    def share(self, memory: Memory, space: str) -> bool:
        """Mark a memory as in `space`; whether it changed (False: it is there already).
        InputError when it is in another space, or holds a secret (a space's members read
        what it says: the same refusal as sync gives a plain folder)."""
        now = self.space_of(memory.id)
        if now == space:
            return False
        if now is not None:
            raise InputError(
                f"memory {memory.id} is shared in another space; unshare it first "
                f"(mnemo edit {memory.id} --space '')"
            )
        if holds_secret(lines.shared_of(memory)):
            raise InputError(
                f"memory {memory.id} is not shared: it holds a secret (its members would "
                "read it); edit it out first"
            )
        self.fits(space, lines.shared_of(memory), f"memory {memory.id} is not shared")
        with self._db.write() as conn:
            rows = conn.execute(
                "SELECT space, heads FROM space_memories WHERE memory_id = ?", (memory.id,)
            ).fetchall()
            heads = rows[0][1] if rows and rows[0][0] == space else "[]"
            conn.execute(
                "INSERT OR REPLACE INTO space_memories(memory_id, space, heads, digest, "
                "withdrawn) VALUES (?, ?, ?, '', 0)",
                (memory.id, space, heads),
            )
        return True

    def share_many(self, ids: list[str], space: str) -> tuple[list[str], list[tuple[str, str]]]:
        """`share` each memory (every check, each on its own): those shared, and (id, why)
        of each refused."""
        done, refused = [], []
        for memory_id in ids:
            try:
                self.share(self._store.get(memory_id), space)
                done.append(memory_id)
            except MnemoError as exc:
                refused.append((memory_id, str(exc)))
        return done, refused

    def may_edit(self, memory: Memory, changes: dict, secrets: str, name: str | None) -> None:
        """InputError (nothing changed) when an edit of a memory shared in the space `name`
        would bring this device's file of lines past what a member reads (`fits`), or,
        letting secrets through (`secrets` 'allow'), put one in it (its members read it)."""
        if not name:
            return
        given = {k: changes[k] for k in lines.SHARED if changes.get(k)}
        what = f"not changed: memory {memory.id} is shared in the space {name!r}"
        self.fits(self.space_of(memory.id), {**lines.shared_of(memory), **given}, what)
        if secrets == "allow" and holds_secret({k: v for k, v in changes.items() if v is not None}):
            raise InputError(
                f"{what} and this puts a secret in it (its members would read it); leave the "
                "secret out"
            )

    def unshare(self, memory_id: str) -> str | None:
        """Withdraw a memory from its space (its line goes at the next pass); the space's
        id, or None when it was in none."""
        space = self.space_of(memory_id)
        if space is not None:
            with self._db.write() as conn:
                conn.execute(
                    "UPDATE space_memories SET withdrawn = ? WHERE memory_id = ?",
                    (BY_ME, memory_id),
                )
        return space

    def left(self, space: str) -> None:
        """This device left `space`: none of its memories here is marked as in it any more
        (each stays where it is, this person's: what they had stays theirs)."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM space_memories WHERE space = ?", (space,))
            conn.execute("DELETE FROM space_taken WHERE space = ?", (space,))  # (`ledger`)
            conn.execute("DELETE FROM _metadata WHERE key = ?", (_HELD + space,))

    def fits(self, space: str, record: dict, what: str) -> None:
        """InputError ("`what`: ...", nothing changed) when one more line saying `record`
        would bring this device's file in `space` past what a member reads."""
        size = self.file_bytes(space) + line_bytes(record)
        if size > lines.MAX_FILE_BYTES:
            raise InputError(
                f"{what}: this device's lines in the space would pass "
                f"{lines.MAX_FILE_BYTES >> 20} MB, the most a member reads (they hold "
                f"{self.file_bytes(space) / 2**20:.1f} MB); unshare some memories or make "
                "this one shorter"
            )

    def file_bytes(self, space: str) -> int:
        """The size of this device's file of lines in `space` (its lines, a newline each)."""
        rows = self._db.query(
            "SELECT COALESCE(SUM(LENGTH(line) + 1), 0) FROM space_lines WHERE space = ?",
            (space,),
        )
        return int(rows[0][0])

    def last_seq(self, space: str) -> int:
        """This device's last line number in the space."""
        rows = self._db.query(
            "SELECT COALESCE(MAX(seq), 0) FROM space_lines WHERE space = ?", (space,)
        )
        return int(rows[0][0])

    # ---- sending ---------------------------------------------------------------------
    def publish(
        self,
        space: dict,
        device: keys.DeviceKey,
        epoch: str,
        key: bytes,
        lamport: int,
        taken: list[lines.Line] = (),
    ) -> list[lines.Line]:
        """A line for each memory of the space changed here since the space last said it
        (sealed under `epoch`'s `key`), this device's file written again whole; the lines.
        `taken`: the space's lines as read, for a memory shared again after it was
        withdrawn here (its line builds on the removals its person saw, `_over_removals`)."""
        by_memory: dict[str, list[lines.Line]] = {}
        for line in taken:
            by_memory.setdefault(line.memory, []).append(line)
        ids = [
            r[0]
            for r in self._db.query(
                "SELECT memory_id FROM space_memories WHERE space = ? ORDER BY memory_id",
                (space["id"],),
            )
        ]
        written: list[lines.Line] = []
        self.held, self.over = [], set()
        size = self.file_bytes(space["id"])
        for memory_id in ids:
            with self._db.write() as conn:  # (read, numbered and kept at once: two passes
                # at a time, the CLI's and the app's, never number two lines alike)
                rows = conn.execute(
                    "SELECT heads, digest, withdrawn FROM space_memories WHERE memory_id = ? "
                    "AND space = ?",
                    (memory_id, space["id"]),
                ).fetchall()
                if not rows:
                    continue
                heads, said, withdrawn = rows[0]
                want = None if withdrawn else self._shared(memory_id)
                if (want is None or want.get("deleted_at")) and not self.mine(memory_id):
                    if withdrawn == SHARED and lines.digest(want) != said:  # (another's
                        # memory forgotten, purged or withdrawn here: gone from this view
                        # only, never sent; not one the space's own lines put in the trash)
                        conn.execute(
                            "UPDATE space_memories SET withdrawn = ? WHERE memory_id = ?",
                            (BY_ME, memory_id),
                        )
                    continue
                if want is not None and holds_secret(want):
                    self.held.append(memory_id)  # (not sent: its members would read it; the
                    continue  # same check as `share`, on every path a secret came in by)
                base = tuple(json.loads(heads))
                if not said and base and want is not None:  # (shared again: see `taken`)
                    base = tuple(_over_removals(list(base), _nodes(by_memory.get(memory_id, []))))
                if lines.digest(want) == said or (want is None and not base):
                    continue  # (unchanged; or withdrawn before it was ever sent)
                seq = self.last_seq(space["id"]) + 1
                lamport = max(lamport, *(w.lamport for w in written), 0) + 1
                rev = lines.rev_of(space["id"], device.public, seq)
                body = {"memory": memory_id, "rev": rev, "base": list(base), "lamport": lamport}
                body["rec"] = want
                text = lines.seal(key, space["id"], epoch, device, seq, body)
                if size + len(text) + 1 > lines.MAX_FILE_BYTES:
                    self.held.append(memory_id)  # (nobody would read the file: not sent,
                    self.over.add(memory_id)  # said; the space's state not folded over it)
                    continue
                size += len(text) + 1
                conn.execute(
                    "INSERT INTO space_lines(space, seq, line) VALUES (?, ?, ?)",
                    (space["id"], seq, text),
                )
                conn.execute(
                    "UPDATE space_memories SET heads = ?, digest = ? WHERE memory_id = ?",
                    (json.dumps([rev]), lines.digest(want), memory_id),
                )
            written.append(lines.Line(device.public, seq, memory_id, rev, base, lamport, want))
        if self.last_seq(space["id"]):  # (written again when it differs: a file lost,
            self.write_file(space, device)  # cut short or left behind by a failed write)
        return written

    def adopt(self, space: dict, device: keys.DeviceKey) -> int:
        """The lines this device's file holds that its database does not (a snapshot from
        before them restored, a database copied back): kept again, so its numbers go on
        after them and its file is never written without them; how many."""
        path = Path(space["folder"]) / lines.LINES / lines.file_name(device.public)
        data = read_capped(path, lines.MAX_FILE_BYTES)
        self.notes = [] if data is not None else [f"{lines.LINES}/{path.name[:12]}…: {UNREAD}"]
        if not data:
            return 0
        found = 0
        for text in data.split(b"\n"):
            try:
                outer = json.loads(text)
                seq = outer["seq"]
                ours = outer["author"] == device.public and outer["space"] == space["id"]
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
            if not ours or not isinstance(seq, int) or not keys.line_signed(outer):
                continue
            with self._db.write() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO space_lines(space, seq, line) VALUES (?, ?, ?)",
                    (space["id"], seq, text.decode("utf-8")),
                )
                found += conn.changes()
        return found

    def write_file(self, space: dict, device: keys.DeviceKey) -> None:
        """This device's file of lines in the space's folder, written whole."""
        rows = self._db.query(
            "SELECT line FROM space_lines WHERE space = ? ORDER BY seq", (space["id"],)
        )
        lines.write_own(space["folder"], device.public, [r[0] for r in rows])

    def compact(self, space: dict, device: keys.DeviceKey, taken: list[lines.Line]) -> int:
        """This device's lines the space no longer needs (`compaction.droppable`: the space
        folds the same without them) dropped from its database and file, when their weight
        is worth a rewrite (`compaction.worth_it`); how many. Numbers are never reused."""
        sizes = dict(
            self._db.query(
                "SELECT seq, LENGTH(line) + 1 FROM space_lines WHERE space = ?", (space["id"],)
            )
        )
        dead = (compaction.droppable(device.public, taken) & set(sizes)) - {max(sizes, default=0)}
        weight = sum(sizes[seq] for seq in dead)
        if not compaction.worth_it(weight, sum(sizes.values()), lines.MAX_FILE_BYTES):
            return 0
        with self._db.write() as conn:
            conn.executemany(
                "DELETE FROM space_lines WHERE space = ? AND seq = ?",
                [(space["id"], seq) for seq in sorted(dead)],
            )
        self.write_file(space, device)
        return len(dead)

    def _shared(self, memory_id: str) -> dict | None:
        try:
            return lines.shared_of(self._store.get(memory_id))
        except NotFoundError:
            return None  # purged here: withdrawn from the space

    # ---- taking ----------------------------------------------------------------------
    def apply(
        self,
        space: str,
        taken: list[lines.Line],
        persons: dict[str, str],
        me: str,
        names: dict[str, str] | None = None,
    ) -> dict:
        """Every memory the lines speak of, folded and written here; what changed
        (`applied`, `withdrawn`) and the lines refused for the memory they name. `persons`:
        each device's person (who may withdraw what: an id, never a name); `names`: each
        device's person's name, as the memories' origins show it (`persons` when not given)."""
        self.names = persons if names is None else names
        by_memory: dict[str, list[lines.Line]] = {}
        for line in taken:
            by_memory.setdefault(line.memory, []).append(line)
        out = {"applied": 0, "withdrawn": 0, "waiting": 0, "problems": [], "held_removals": {}}
        waiting = self._hold(space, by_memory, persons, out)
        out["problems"] += [f"memory {m}: {DISPUTED_SAID}" for m in sorted(self.disputed)]
        out["problems"] += self.notes
        for memory_id, group in sorted(by_memory.items()):
            if memory_id in self.held or memory_id in waiting:
                continue  # (its words here are not sent yet: not written over by the space's;
                # or a removal en masse that waits for a person)
            try:
                why = self._apply_one(space, memory_id, group, persons, me, out)
            except MnemoError as exc:  # (what lines merged to failed a check: said, not fatal)
                why = str(exc)
            if why:
                out["problems"].append(f"memory {memory_id}: {why}, skipped")
        return out

    def _apply_one(
        self,
        space: str,
        memory_id: str,
        group: list[lines.Line],
        persons: dict[str, str],
        me: str,
        out: dict,
    ) -> str:
        rows = self._db.query(
            "SELECT space, heads, withdrawn FROM space_memories WHERE memory_id = ?", (memory_id,)
        )
        here = bool(self._store.texts_of_ids([memory_id]))
        if rows and rows[0][0] != space:
            return "a line naming a memory of another space"
        if (
            not rows
            and here
            and lines.shared_of(self._store.get(memory_id)) not in [n.record for n in group]
        ):  # (one this device holds as the space wrote it is the space's: a second device
            # of a member, which its own sync brought it to first)
            return "a line naming a memory of this device that is not in the space"
        nodes = _nodes(group)
        folded = fold.fold(memory_id, nodes)
        out["waiting"] += folded.waiting
        if not folded.heads:
            return ""
        heads = json.dumps(sorted(folded.heads))
        if rows and rows[0][1] == heads:
            return ""  # nothing new since the last pass
        if rows and rows[0][2] == BY_ME:  # (what it says now is not this device's to take
            # until shared again; nor to build on, but for removals of what it had)
            seen = json.dumps(_over_removals(json.loads(rows[0][1]), nodes))
            self._mark(memory_id, space, seen, "withdrawn", BY_ME)
            return ""
        gone = folded.record is None or bool(folded.record.get("deleted_at"))
        if (  # (this person's own, or one its author did not drop: it stays, in no space)
            gone
            and here
            and not self._store.get(memory_id).deleted_at
            and not self._theirs_to_drop(memory_id, nodes, folded.heads, persons)
        ):
            self._mark(memory_id, space, heads, "withdrawn", BY_SPACE)
            return ""
        if folded.record is None:
            if here and not (rows and rows[0][2]):
                self._store.set_deleted([memory_id], True)  # (dropped from view: theirs)
                out["withdrawn"] += 1
            self._mark(memory_id, space, heads, "withdrawn", BY_SPACE)
            return ""
        authors = list(dict.fromkeys(n.order[1] for n in sorted(nodes, key=lambda n: n.order)))
        said = [
            origin.member(self.names.get(a, a[:8]), a, folded.record.get("updated_at") or "")
            for a in authors
            if a != me
        ]
        checked = Memory.from_dict({**folded.record, "id": memory_id})
        shared = {name: getattr(checked, name) for name in lines.SHARED}
        if here:
            local = self._store.get(memory_id)
            memory = replace(local, **shared)
            for one in said:
                memory.origins = origin.added(memory.origins, one)
        else:
            memory = replace(checked, source="space", origins=said or [origin.member("", me)])
        changed = not here or lines.shared_of(self._store.get(memory_id)) != shared
        if changed:
            apart = frozenset(
                (r.get("title"), r.get("text"), r.get("reasoning"))
                for r in folded.originals.values()
            )
            self._store.put_synced(memory, said[-1] if said else None, (), apart)
            out["applied"] += 1
        writers = {fold.original_id(memory_id, n.rev): n.order[1] for n in nodes}
        for original, record in folded.originals.items():
            if not self._store.texts_of_ids([original]):
                kept = Memory.from_dict({**record, "id": original})
                writer = writers.get(original, "")
                wrote = (  # (each version kept is credited to the member who wrote it)
                    [origin.member(self.names.get(writer, writer[:8]), writer, kept.updated_at)]
                    if writer and writer != me
                    else memory.origins[:1]
                )
                self._store.put_synced(replace(kept, source="space", origins=wrote))
        self._mark(memory_id, space, heads, lines.digest(shared), SHARED)
        return ""

    def _theirs_to_drop(self, memory_id: str, nodes: list, heads, persons: dict) -> bool:
        """Whether the space's withdrawal or trash of a memory here drops it here too: only
        a copy of another person's memory, withdrawn by that person."""
        owner = self.owners.get(memory_id)
        by = {persons.get(n.order[1], n.order[1]) for n in nodes if n.rev in heads}
        return owner is not None and owner != self.me and owner in by

    # ---- removals en masse, held for a person ------------------------------------------
    def _hold(self, space: str, by_memory: dict, persons: dict, out: dict) -> set[str]:
        """The memories whose removal here (withdrawn or trashed by their author) waits for
        a person: all of one member's when they are many at once (device sync's rule) or
        that member has some waiting already. Those newly held said in `out`, by person."""
        removing: dict[str, list[str]] = {}
        for memory_id, group in by_memory.items():
            if self._would_drop(space, memory_id, group, persons):
                removing.setdefault(self.owners[memory_id], []).append(memory_id)
        before = self.held_removals(space)
        live = self._db.query("SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")[0][0]
        now = {
            person: sorted(ids)
            for person, ids in removing.items()
            if person not in self.let_through and (person in before or massive(len(ids), live))
        }
        if now != before:
            self._db.set_meta(_HELD + space, json.dumps(now, sort_keys=True))
        for person, ids in now.items():
            if set(ids) - set(before.get(person, [])):
                out["held_removals"][person] = len(ids)
        return {memory_id for ids in now.values() for memory_id in ids}

    def _would_drop(self, space: str, memory_id: str, group: list, persons: dict) -> bool:
        """Whether the lines take this device's live copy of a shared memory from its view
        (its author withdrew or trashed it since the last pass)."""
        rows = self._db.query(
            "SELECT space, heads, withdrawn FROM space_memories WHERE memory_id = ?", (memory_id,)
        )
        if not rows or rows[0][0] != space or rows[0][2] != SHARED:
            return False
        nodes = _nodes(group)
        folded = fold.fold(memory_id, nodes)
        if not folded.heads or json.dumps(sorted(folded.heads)) == rows[0][1]:
            return False
        if folded.record is not None and not folded.record.get("deleted_at"):
            return False
        try:
            local = self._store.get(memory_id)
        except NotFoundError:
            return False
        return not local.deleted_at and self._theirs_to_drop(
            memory_id, nodes, folded.heads, persons
        )

    def held_removals(self, space: str) -> dict[str, list[str]]:
        """{person: memory ids} whose removal here waits for a person."""
        try:
            held = json.loads(self._db.get_meta(_HELD + space, "{}"))
        except ValueError:
            return {}
        return held if isinstance(held, dict) else {}

    def all_held(self) -> list[dict]:
        """Every removal held on this device, by space id and person: {"space", "member",
        "memories", "hold"}; `hold` names it by what it holds (another once it grows, or
        for a new hold after a decision). One query."""
        out = []
        rows = self._db.query("SELECT key, value FROM _metadata WHERE key GLOB ?", (_HELD + "*",))
        for key, value in rows:
            try:
                held = json.loads(value)
            except ValueError:
                continue
            for person, ids in sorted(held.items() if isinstance(held, dict) else ()):
                if isinstance(ids, list) and ids:
                    named = "\n".join([key, person, *sorted(map(str, ids))]).encode()
                    hold = hashlib.sha256(named).hexdigest()[:32]
                    out.append(
                        {
                            "space": key[len(_HELD) :],
                            "member": person,
                            "memories": len(ids),
                            "hold": hold,
                        }
                    )
        return out

    def keep(self, space: str, person: str) -> int:
        """The removals held of `person`'s memories, refused: the copies stay here and are
        no longer shared (this person's now: nothing the space says of them comes here);
        how many."""
        held = self.held_removals(space)
        ids = held.pop(person, [])
        with self._db.write() as conn:
            conn.executemany(
                "UPDATE space_memories SET withdrawn = ? WHERE memory_id = ? AND space = ?",
                [(BY_ME, memory_id, space) for memory_id in ids],
            )
            self._db.set_meta(_HELD + space, json.dumps(held, sort_keys=True))
        return len(ids)

    def held_problems(self) -> list[str]:
        """What the last `publish` held back, one line per memory."""
        return [f"memory {m}: {OVER if m in self.over else HELD}" for m in self.held]

    def _mark(self, memory_id: str, space: str, heads: str, said: str, withdrawn: int) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO space_memories(memory_id, space, heads, digest, "
                "withdrawn) VALUES (?, ?, ?, ?, ?)",
                (memory_id, space, heads, said, withdrawn),
            )


_HELD = "space_held:"  # (`_metadata`: a space's removals held for a person)


def line_bytes(record: dict | None) -> int:
    """About how many bytes a line saying `record` takes in a file (sealed, in base64,
    signed, a newline): what a share or an edit is checked against before it is made."""
    body = json.dumps(record, sort_keys=True, ensure_ascii=False).encode()
    return (len(body) + 128) * 4 // 3 + 400  # (a base, the clock, nonce and tag; the fields)


def _over_removals(heads: list[str], nodes: list[fold.Node]) -> list[str]:
    """The revisions a device that takes no lines of a memory (withdrawn here) may say it
    built on when it shares the memory again: those it had, and every withdrawal or trash
    made on them that changes no word (its person decided against it, or it says nothing
    new); never another member's edit, whose words this device has not taken, so that
    edit and this device's words fold together instead of one hiding the other."""
    by = {n.rev: n for n in nodes}
    seen: set[str] = set()
    todo = list(heads)
    while todo:
        rev = todo.pop()
        if rev not in seen:
            seen.add(rev)
            todo.extend(by[rev].base if rev in by else ())
    grew = True
    while grew:
        grew = False
        for node in sorted(nodes, key=lambda n: n.order):
            fresh = node.rev not in seen and node.base and set(node.base) <= seen
            if fresh and _removes_only(node, by):
                seen.add(node.rev)
                grew = True
    inner = {b for rev in seen if rev in by for b in by[rev].base}
    return sorted(rev for rev in seen if rev not in inner)


def _removes_only(node: fold.Node, by: dict[str, fold.Node]) -> bool:
    """A withdrawal, or a trash of the one state it was made on with no word changed."""
    if node.record is None:
        return True
    if not node.record.get("deleted_at") or len(node.base) != 1 or node.base[0] not in by:
        return False
    before = by[node.base[0]].record
    words = [k for k in lines.SHARED if k not in ("deleted_at", "updated_at")]
    return before is not None and all(before.get(k) == node.record.get(k) for k in words)


def _nodes(group: list[lines.Line]) -> list[fold.Node]:
    return [fold.Node(n.rev, (n.lamport, n.author, n.seq), n.base, n.record) for n in group]
