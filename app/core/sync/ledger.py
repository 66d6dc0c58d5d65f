"""The database side of a pass (ADR 0015): each memory folded from every operation about
it and written here, and this device's changes written as operations."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import replace

from app.core import origin as origins
from app.core.errors import InputError, SecretError
from app.core.memory import MAX_COUNT, Memory, guard_secrets
from app.core.storage.db import Database, now
from app.core.storage.store import Store
from app.core.sync import fold, history, oplog, trust
from app.core.sync.folder import Folder
from app.core.sync.holding import Holding
from app.core.sync.state import Identity, Pass, PassState, problem

BATCH_LINES = 5_000  # operations read and applied in one transaction
LAMPORT_LIMIT = 2**53  # a clock past this is refused (`intake`); a new one stops there


def record_of(memory: Memory, here: str = "") -> dict:
    """The synced fields of a memory, and its origins: each says the device it was written
    on (`here`, this device's name, when it does not say another)."""
    record = {name: getattr(memory, name) for name in fold.SYNCED}
    record["origins"] = [
        (o if o.device or not here else replace(o, device=here)).to_dict() for o in memory.origins
    ]
    return record


def with_origins(
    nodes: list[fold.Node],
    names: Callable[[str], str],
    here: Callable[[], list[origins.Origin]] = list,
) -> list[fold.Node]:
    """The puts with their origins. A put without any in its record (written by a Mnemo
    older than origins, or before this one was upgraded) has those of the version it was
    made from; else those the memory has here (`here()`: m017 gave them); else what its
    source word says (as m017 does), on the writing device (`names`: a device's name by its
    id)."""
    by_rev: dict[str, fold.Node] = {}
    out = []
    for node in sorted(nodes, key=lambda n: n.order):
        record = node.record
        if record is not None and not origins.decode(record.get("origins")):
            made_from = [by_rev[b].record for b in node.base if b in by_rev]
            inherited = [o for r in made_from if r for o in origins.decode(r.get("origins"))]
            if not inherited:
                inherited = list(here())
            if not inherited:
                device = node.order[1]
                name = "" if device in ("~", "=") else origins.label(names(device))
                source, at = str(record.get("source") or ""), str(record.get("created_at") or "")
                said = origins.from_source(source, at) if source else origins.device(name)
                inherited = [replace(said, device=name)]
            record = {**record, "origins": [o.to_dict() for o in origins.joined([inherited])]}
            node = replace(node, record=record)
        by_rev[node.rev] = node
        out.append(node)
    return out


def senders_own(
    nodes: list[fold.Node],
    names: Callable[[str], str],
    me: tuple[str, str],
    here: Callable[[], list[origins.Origin]],
) -> list[fold.Node]:
    """Another device's puts, with origins it can vouch for: one that names no device was
    written on the sender, and one that names this device stands only where this device
    wrote it (its own puts, or the memory here), else it is the sender's too (a planted
    line cannot make its words look written here). `me`: this device's id and name. The
    memory here and the sender's name are read only for a put that needs them."""
    me, here_name = me
    mine: set[origins.Origin] | None = None
    out = []
    for node in nodes:
        sender = node.order[1]
        claimed = origins.decode(node.record.get("origins")) if node.record else []
        if sender in (me, "~", "=") or all(o.device and o.device != here_name for o in claimed):
            out.append(node)  # (nothing it says needs vouching for)
            continue
        if mine is None:
            mine = {replace(o, device="") for o in here()} | {
                replace(o, device="")
                for n in nodes
                if n.order[1] == me and n.record
                for o in origins.decode(n.record.get("origins"))
            }
        name = origins.label(names(sender))
        kept = [
            o
            if o.device and (o.device != here_name or replace(o, device="") in mine)
            else replace(o, device=name)
            for o in claimed
        ]
        out.append(replace(node, record={**node.record, "origins": [o.to_dict() for o in kept]}))
    return out


class Ledger:
    """What a pass folds and writes (a part of `Syncer`)."""

    def __init__(
        self,
        db: Database,
        store: Store,
        sealer: trust.Sealer | None,
        state: PassState,
        identity: Identity,
        holding: Holding,
    ):
        self._db = db
        self._store = store
        self._sealer = sealer
        self._state = state
        self._identity = identity
        self._holding = holding

    def apply(self, affected: set[str], result: Pass, write_rows: bool) -> None:
        """Fold each affected memory and write it here (`write_rows`), or only record it as
        synced (this device's own operations: the row already says it, or says more). What
        another device removes here en masse is held for a person first."""
        if write_rows:  # (a rebuild too: a restore does not let a wipe through)
            self._holding.hold_removals(affected, result)
        pending = sorted(affected)
        while pending:
            memory_id = pending.pop()
            nodes, counts = oplog.operations(self._db, memory_id)
            mine = functools.cache(functools.partial(self._origins_here, memory_id))
            me = (self._identity.device, self._identity.name)
            nodes = senders_own(nodes, self._device_name, me, mine)
            nodes = with_origins(nodes, self._device_name, mine)
            folded = fold.fold(memory_id, nodes, self._state.covered)
            self._note_waiting(memory_id, folded.waiting)
            if not folded.heads:
                if write_rows and not nodes and self._store.texts_of_ids([memory_id]):
                    # its only operation lost to another with the same number: kept here,
                    # and written again as this device's (never deleted for that)
                    self._db.conn.execute("DELETE FROM sync_memories WHERE id = ?", (memory_id,))
                    self._again(memory_id)
                    problem(
                        self._db,
                        result,
                        "line",
                        f"memory {memory_id} lost its only operation to another with the same "
                        "number: kept here and written again",
                    )
                continue  # (else nothing of it has arrived in order yet)
            made_from = fold.origins(memory_id, nodes) if folded.originals else {}
            new = [
                original_id
                for original_id, record in folded.originals.items()
                if self._keep_original(memory_id, original_id, record, made_from.get(original_id))
            ]
            if new:
                result.conflicts += 1
                result.conflicted.append(memory_id)
                problem(
                    self._db,
                    result,
                    "conflict",
                    f"memory {memory_id} was edited on two devices apart: both kept, merged "
                    f"(the versions are in the trash; `mnemo unmerge {memory_id}` splits them)",
                )
                pending.extend(new)
            heads = set(folded.heads)  # (the device of the latest: who sent its words)
            last = max((n for n in nodes if n.rev in heads), key=lambda n: n.order, default=None)
            sender = last.order[1] if last is not None else None
            try:
                carried = self._carried(memory_id, nodes, result, mine) if write_rows else []
                self._settle(memory_id, folded, counts, result, write_rows, sender, carried)
            except InputError as exc:  # the same on every device: it stays as it was here
                problem(self._db, result, "fold", f"memory {memory_id} was not updated: {exc}")

    def _carried(
        self,
        memory_id: str,
        nodes: list[fold.Node],
        result: Pass,
        mine: Callable[[], list[origins.Origin]],
    ) -> list:
        """The versions the puts of a memory carry that may be kept here (`sync/history`):
        each checked, its origins vouched for as a put's are; a bad one is reported."""
        me, here_name = self._identity.device, self._identity.name
        own: tuple[set, set[origins.Origin]] | None = None

        def written_here() -> tuple[set, set[origins.Origin]]:
            """(words, origin) each origin of this device's wrote, and its origins of
            replacing words: a planted version naming this device stands only for words
            this device held with that origin (not a real origin lent to other words)."""
            nonlocal own
            if own is None:
                kept = self._store.versions.of(memory_id)
                rows = self._store.texts_of_ids([memory_id])
                now = self._store.get(memory_id) if rows else None
                said = [((now.title, now.text, now.reasoning), o) for o in mine()] if now else []
                said += [(v.words(), o) for v in kept for o in v.origins]
                said += [
                    ((n.record.get("title"), n.record.get("text"), n.record.get("reasoning")), o)
                    for n in nodes
                    if n.order[1] == me and n.record
                    for o in origins.decode(n.record.get("origins"))
                ]
                by = [o for _, o in said] + [v.replaced_by for v in kept if v.replaced_by]
                own = (
                    {(w, replace(o, device="")) for w, o in said if o.device in ("", here_name)},
                    {replace(o, device="") for o in by if o.device in ("", here_name)},
                )
            return own

        def vouch(sender: str, o: origins.Origin, words: tuple, replacing: bool) -> origins.Origin:
            if sender in (me, "~", "=") or (o.device and o.device != here_name):
                return replace(o, device="") if o.device == here_name else o
            wrote, replaced = written_here() if o.device else (set(), set())
            bare = replace(o, device="")
            if o.device and (
                (bare in replaced and any(w == words for w, _ in wrote))
                if replacing
                else (words, bare) in wrote
            ):
                return bare
            return replace(o, device=origins.label(self._device_name(sender)))

        records = [(n.order[1], n.record) for n in nodes if n.record and n.order[1] != "~"]
        found = history.incoming(memory_id, records, vouch, sealed=self._sealer is not None)
        for why in found.skipped:
            problem(self._db, result, "line", f"a version of memory {memory_id} was skipped: {why}")
        return found.versions

    def _again(self, memory_id: str) -> None:
        """Have the next pass look at a memory this pass wrote (its changes are not sent)."""
        again = set(json.loads(self._db.get_meta("sync_again", "[]")))
        self._db.set_meta("sync_again", json.dumps(sorted(again | {memory_id})))

    def _origins_here(self, memory_id: str) -> list[origins.Origin]:
        """The origins the memory has here (none when it is not here yet)."""
        rows = self._store.texts_of_ids([memory_id])
        return self._store.get(memory_id).origins if rows else []

    def _sent_by(self, device: str | None) -> origins.Origin | None:
        """Who sent the words a put replaces here: the device of its latest operation (none
        for this device's own or for the copies no device wrote)."""
        if device is None or device in ("~", "=") or device == self._identity.device:
            return None
        return origins.device(self._device_name(device))

    def _device_name(self, device: str) -> str:
        """A device's name as it gave it (its id when it gave none)."""
        rows = self._db.query("SELECT name FROM sync_devices WHERE id = ?", (device,))
        return (rows[0][0] if rows else "") or device

    def _note_waiting(self, memory_id: str, waiting: int) -> None:
        if waiting:
            self._db.conn.execute(
                "INSERT OR REPLACE INTO sync_waiting(memory_id, operations) VALUES (?, ?)",
                (memory_id, waiting),
            )
        else:
            self._db.conn.execute("DELETE FROM sync_waiting WHERE memory_id = ?", (memory_id,))

    def _keep_original(
        self, memory_id: str, original_id: str, record: dict, made_from: str | None
    ) -> bool:
        """Record the trashed copy of a version edited apart as an operation of its own
        (the same on every device: no device writes it), with the revision it keeps (whose
        device wrote it: `conflicts`); whether it is new."""
        rev = f"{original_id}~"
        if self._db.query("SELECT 1 FROM sync_ops WHERE rev = ?", (rev,)):
            return False
        record = {k: v for k, v in record.items() if k != "versions"}  # (its memory's)
        body = json.dumps(
            {"rec": record, "base": [], "from": made_from}, sort_keys=True, ensure_ascii=False
        )
        self._db.conn.execute(
            "INSERT INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
            "VALUES (?, ?, '~', 0, 0, 'put', ?)",
            (rev, original_id, body),
        )
        return True

    def _settle(
        self,
        memory_id: str,
        folded: fold.Folded,
        counts: fold.Counts,
        result: Pass,
        write_rows: bool,
        sender: str | None = None,
        carried: list | None = None,
    ) -> None:
        heads = sorted(folded.heads)
        keep = self._state.keep
        if folded.record is None:
            if write_rows and memory_id not in keep and self._store.delete_synced(memory_id):
                result.applied += 1
            here = memory_id in keep and self._store.texts_of_ids([memory_id])
            kept = self._store.get(memory_id) if here else None
            counts_here = (  # (kept here: its counts are not sent again as new ones)
                (kept.observation_count, kept.recall_count, kept.last_recalled_at)
                if kept is not None
                else (0, 0, None)
            )
            self.synced(memory_id, heads, "purged", counts_here)
            return
        memory = Memory.from_dict(
            {
                **folded.record,
                "id": memory_id,
                "observation_count": min(MAX_COUNT, max(1, counts.observations)),
                "recall_count": min(MAX_COUNT, max(0, counts.recalls)),
                "last_recalled_at": counts.last_recalled_at,
            }
        )
        here = self._identity.name
        memory.origins = [  # (what was written here says no device here)
            replace(o, device="") if o.device == here else o
            for o in origins.decode(folded.record.get("origins"))
        ]
        synced = record_of(memory, here)
        carried = carried or []
        if write_rows and memory_id not in self._state.keep:
            rows = self._store.texts_of_ids([memory_id])
            current = self._store.get(memory_id) if rows else None
            if current is None or (
                record_of(current, here) != synced
                or (current.observation_count, current.recall_count, current.last_recalled_at)
                != (memory.observation_count, memory.recall_count, memory.last_recalled_at)
            ):
                words = (memory.title, memory.text, memory.reasoning)
                replaced = current is not None and (
                    (current.title, current.text, current.reasoning) != words
                )  # (kept as a version, with who sent the new ones)
                by = self._sent_by(sender) if replaced else None
                apart = frozenset(  # (edits made apart: their words are kept in the trash)
                    (r.get("title"), r.get("text"), r.get("reasoning"))
                    for r in folded.originals.values()
                )
                self._store.put_synced(memory, by, tuple(carried), apart)
                result.applied += 1
            elif carried and self._store.versions.take(memory_id, carried):
                result.applied += 1  # (only versions: a superseded memory's words)
        kept = self._store.versions.of(memory_id) if self._store.texts_of_ids([memory_id]) else []
        self.synced(
            memory_id,
            heads,
            fold.digest(synced),
            (memory.observation_count, memory.recall_count, memory.last_recalled_at),
            live=not memory.deleted_at,
            versions=history.mark(kept),
        )

    def synced(
        self,
        memory_id: str,
        heads: list[str],
        digest: str,
        counts: tuple = (0, 0, None),
        live: bool = False,
        versions: str | None = None,
    ) -> None:
        """Record what was last synced of a memory (a change here is what differs from it):
        its heads, its digest ('purged'), its counts, whether it was live (not trashed),
        its versions (`history.mark`)."""
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_memories(id, heads, digest, observations, recalls, "
            "last_recalled_at, live, versions) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (memory_id, json.dumps(heads), digest, *counts, int(live), versions),
        )

    def export(self, folder: Folder, result: Pass, also: frozenset[str] = frozenset()) -> None:
        """Write every memory changed here since the last pass as operations (and `also`
        these: what a person kept here over another device's removal)."""
        cursor = self._db.get_meta("sync_journal")
        head = oplog.journal_head(self._db)
        if cursor is None or not oplog.journal_reaches(self._db, int(cursor)):
            ids = {r[0] for r in self._db.query("SELECT id FROM memories")}
            ids |= {r[0] for r in self._db.query("SELECT id FROM sync_memories")}
        else:
            ids = {
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT memory_id FROM changes WHERE seq > ? AND kind != 'inbox'",
                    (int(cursor),),
                )
            }
        again = set(json.loads(self._db.get_meta("sync_again", "[]")))
        ids |= self._holding.held_here() | also | again
        if again:
            self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_again'")
        ids -= self._holding.hold_local_removals(ids, result)
        if not ids:
            self._db.set_meta("sync_journal", str(head))
            self._db.conn.execute("DELETE FROM sync_said")
            return
        device = folder.device
        seq = int(
            self._db.query(
                "SELECT COALESCE(MAX(seq), 0) FROM sync_ops WHERE device = ?", (device,)
            )[0][0]
        )
        seq = max(seq, self._state.floor.get(device, 0))  # (a rebuild from its own snapshot)
        lamport = int(self._db.query("SELECT COALESCE(MAX(lamport), 0) FROM sync_ops")[0][0])
        lines: list[str] = []
        revs: list[str] = []
        first = seq + 1

        def emit(kind: str, memory_id: str, **fields) -> str:
            nonlocal seq, lamport
            seq += 1
            lamport = min(lamport + 1, LAMPORT_LIMIT)
            rev = f"{device}.{seq}"
            op = {"v": 1, "rev": rev, "dev": device, "seq": seq, "lc": lamport, "op": kind}
            op.update(id=memory_id, at=now(), **fields)
            body = trust.canonical(op).decode("utf-8")  # (as a reader keeps it)
            lines.append(body)
            revs.append(rev)
            self._db.conn.execute(
                "INSERT INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rev, memory_id, device, seq, lamport, kind, body),
            )
            return rev

        for memory_id in sorted(ids):
            self._export_one(memory_id, emit, result)
        signer = self._identity.signer  # (sealed: the sealed line is what is signed)
        if self._sealer is not None:
            lines = [
                signer.line(self._sealer.seal(line, rev))
                for line, rev in zip(lines, revs, strict=True)
            ]
        else:
            lines = [signer.canonical_line(line) for line in lines]
        folder.append(lines, first)  # durable before the transaction commits
        result.written += len(lines)
        self._db.set_meta("sync_journal", str(head))
        self._db.conn.execute("DELETE FROM sync_said")

    def _export_one(self, memory_id: str, emit: Callable[..., str], result: Pass) -> None:
        rows = self._db.query(
            "SELECT heads, digest, observations, recalls, last_recalled_at, versions "
            "FROM sync_memories WHERE id = ?",
            (memory_id,),
        )
        synced = rows[0] if rows else None
        heads = json.loads(synced[0]) if synced else []
        if not self._store.texts_of_ids([memory_id]):
            if synced and synced[1] != "purged":
                self.synced(memory_id, [emit("purge", memory_id, base=heads)], "purged")
            return
        memory = self._store.get(memory_id)
        record = record_of(memory, self._identity.name)
        digest = fold.digest(record)  # (not of origins: set once, they never change)
        kept = self._store.versions.of(memory_id)
        marked = history.mark(kept)  # (nor of versions: a change of its own is sent)
        if synced is None or synced[1] != digest or synced[5] not in (None, marked):
            if self._sealer is None and _holds_secret(record):
                problem(  # a plain folder never gets one (`--allow-secrets`)
                    self._db,
                    result,
                    "secret",
                    f"memory {memory_id} holds a secret and was not written to the sync "
                    "folder, whose files are not encrypted: it stays on this device",
                )
                return
            plain = self._sealer is None
            carried = history.outgoing(kept, self._identity.name, plain)
            heads = [emit("put", memory_id, base=heads, rec={**record, "versions": carried})]
        obs = memory.observation_count - (synced[2] if synced else 0)
        recalls = memory.recall_count - (synced[3] if synced else 0)
        last = memory.last_recalled_at
        newer = last is not None and (synced is None or last > (synced[4] or ""))
        if obs or recalls or newer:
            emit("count", memory_id, obs=obs, recalls=recalls, last=last if newer else None)
        latest = max(last or "", synced[4] or "" if synced else "") or None
        self.synced(
            memory_id,
            heads,
            digest,
            (memory.observation_count, memory.recall_count, latest),
            live=not memory.deleted_at,
            versions=marked,
        )

    def differs(self, memory_id: str) -> bool:
        """Whether a memory here differs from what was last synced of it (what `_export`
        would write)."""
        rows = self._db.query(
            "SELECT digest, observations, recalls, versions FROM sync_memories WHERE id = ?",
            (memory_id,),
        )
        if not self._store.texts_of_ids([memory_id]):
            return bool(rows) and rows[0][0] != "purged"
        if not rows:
            return True
        memory = self._store.get(memory_id)
        marked = rows[0][3]
        return (
            fold.digest(record_of(memory)) != rows[0][0]
            or (memory.observation_count, memory.recall_count) != (rows[0][1], rows[0][2])
            or marked not in (None, history.mark(self._store.versions.of(memory_id)))
        )


def _holds_secret(record: dict) -> bool:
    try:
        guard_secrets(dict(record), "refuse")
    except SecretError:
        return True
    return False
