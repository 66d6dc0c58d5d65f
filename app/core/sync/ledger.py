"""The database side of sync (ADR 0015): every operation seen, each memory folded from
them and written here, and this device's changes written as operations."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from app.core.errors import InputError, SecretError
from app.core.memory import MAX_COUNT, Memory, guard_secrets, utc_stamp
from app.core.storage.db import now
from app.core.sync import fold, trust
from app.core.sync.folder import Folder

BATCH_LINES = 5_000  # operations read and applied in one transaction
LAMPORT_LIMIT = 2**53  # a clock past this is refused (`intake`); a new one stops there


@dataclass
class Pass:
    """What one pass did."""

    written: int = 0  # operations this device wrote
    read: int = 0  # operations read from other devices
    applied: int = 0  # memories changed here
    conflicts: int = 0  # memories edited apart on two devices, merged
    problems: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each problem's kind ("conflict", …)
    new_devices: list[str] = field(default_factory=list)  # seen first: wait for a person
    held: dict[str, int] = field(default_factory=dict)  # device → removals held for a person
    conflicted: list[str] = field(default_factory=list)  # memories edited apart, this pass

    def summary(self, problem: str = "") -> dict:
        """What a front end is told of it (`Listener.synced`; `duties.py` records it for the
        other processes): plain numbers and names, no memory text."""
        return {
            "written": self.written,
            "read": self.read,
            "applied": self.applied,
            "conflicts": self.conflicts,
            "problem": problem,
            # for a person, said once each: a device that waits for approval, removals held
            "new_devices": list(self.new_devices),
            "held": dict(self.held),
        }


def record_of(memory: Memory) -> dict:
    """The synced fields of a memory."""
    return {name: getattr(memory, name) for name in fold.SYNCED}


class Ledger:
    """What a pass folds and writes (a part of `Syncer`: its database, store and sealer)."""

    def _apply(self, affected: set[str], result: Pass, write_rows: bool) -> None:
        """Fold each affected memory and write it here (`write_rows`), or only record it as
        synced (this device's own operations: the row already says it, or says more). What
        another device removes here en masse is held for a person first."""
        if write_rows:  # (a rebuild too: a restore does not let a wipe through)
            self._hold_removals(affected, result)
        pending = sorted(affected)
        while pending:
            memory_id = pending.pop()
            nodes, counts = self._operations(memory_id)
            folded = fold.fold(memory_id, nodes, self._covered)
            self._note_waiting(memory_id, folded.waiting)
            if not folded.heads:
                if write_rows and not nodes and self._store.texts_of_ids([memory_id]):
                    # its only operation lost to another with the same number: kept here,
                    # and written again as this device's (never deleted for that)
                    self._db.conn.execute("DELETE FROM sync_memories WHERE id = ?", (memory_id,))
                    again = set(json.loads(self._db.get_meta("sync_again", "[]")))
                    self._db.set_meta("sync_again", json.dumps(sorted(again | {memory_id})))
                    self._problem(
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
                self._problem(
                    result,
                    "conflict",
                    f"memory {memory_id} was edited on two devices apart: both kept, merged "
                    f"(the versions are in the trash; `mnemo unmerge {memory_id}` splits them)",
                )
                pending.extend(new)
            try:
                self._settle(memory_id, folded, counts, result, write_rows)
            except InputError as exc:  # the same on every device: it stays as it was here
                self._problem(result, "fold", f"memory {memory_id} was not updated: {exc}")

    def _note_waiting(self, memory_id: str, waiting: int) -> None:
        if waiting:
            self._db.conn.execute(
                "INSERT OR REPLACE INTO sync_waiting(memory_id, operations) VALUES (?, ?)",
                (memory_id, waiting),
            )
        else:
            self._db.conn.execute("DELETE FROM sync_waiting WHERE memory_id = ?", (memory_id,))

    def _operations(
        self, memory_id: str, covers: dict[str, int] | None = None
    ) -> tuple[list[fold.Node], fold.Counts]:
        """A memory's puts and purges, and its counts (with `covers`: only the operations a
        snapshot covering that holds, and the counts as they were written)."""
        nodes: list[fold.Node] = []
        counts = fold.Counts()
        rows = self._db.query(  # (not what is held for a person, but in a snapshot: it
            # covers every operation up to its numbers, and a device starting from it has
            # no memory of its own to hold them for)
            "SELECT rev, device, seq, lamport, kind, body FROM sync_ops "
            "WHERE memory_id = ? AND (held = 0 OR ?)",
            (memory_id, covers is not None),
        )
        for rev, device, seq, lamport, kind, body in rows:
            if covers is not None and device not in "~=" and seq > covers.get(device, 0):
                continue
            op = json.loads(body)
            if kind == "count":  # (a time that is not one, held from before it was
                last = op.get("last")  # checked, never blocks the memory)
                last = utc_stamp(last) if isinstance(last, str) else None
                counts.add(op.get("obs", 0), op.get("recalls", 0), last)
                continue
            record = op.get("rec") if kind == "put" else None
            if device == "~" and covers is None:  # a version kept from edits made apart:
                counts.add(1, 0, None)  # observed once
            nodes.append(fold.Node(rev, (lamport, device, seq), tuple(op.get("base", [])), record))
        return nodes, counts

    def _keep_original(
        self, memory_id: str, original_id: str, record: dict, made_from: str | None
    ) -> bool:
        """Record the trashed copy of a version edited apart as an operation of its own
        (the same on every device: no device writes it), with the revision it keeps (whose
        device wrote it: `conflicts`); whether it is new."""
        rev = f"{original_id}~"
        if self._db.query("SELECT 1 FROM sync_ops WHERE rev = ?", (rev,)):
            return False
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
    ) -> None:
        heads = sorted(folded.heads)
        if folded.record is None:
            if write_rows and memory_id not in self._keep and self._store.delete_synced(memory_id):
                result.applied += 1
            here = memory_id in self._keep and self._store.texts_of_ids([memory_id])
            kept = self._store.get(memory_id) if here else None
            counts_here = (  # (kept here: its counts are not sent again as new ones)
                (kept.observation_count, kept.recall_count, kept.last_recalled_at)
                if kept is not None
                else (0, 0, None)
            )
            self._synced(memory_id, heads, "purged", counts_here)
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
        synced = record_of(memory)
        if write_rows and memory_id not in self._keep:
            rows = self._store.texts_of_ids([memory_id])
            current = self._store.get(memory_id) if rows else None
            if current is None or (
                record_of(current) != synced
                or (current.observation_count, current.recall_count, current.last_recalled_at)
                != (memory.observation_count, memory.recall_count, memory.last_recalled_at)
            ):
                self._store.put_synced(memory)
                result.applied += 1
        self._synced(
            memory_id,
            heads,
            fold.digest(synced),
            (memory.observation_count, memory.recall_count, memory.last_recalled_at),
            live=not memory.deleted_at,
        )

    def _synced(
        self,
        memory_id: str,
        heads: list[str],
        digest: str,
        counts: tuple = (0, 0, None),
        live: bool = False,
    ) -> None:
        """Record what was last synced of a memory (a change here is what differs from it):
        its heads, its digest ('purged'), its counts, whether it was live (not trashed)."""
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_memories(id, heads, digest, observations, recalls, "
            "last_recalled_at, live) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory_id, json.dumps(heads), digest, *counts, int(live)),
        )

    def _export(self, folder: Folder, result: Pass, also: frozenset[str] = frozenset()) -> None:
        """Write every memory changed here since the last pass as operations (and `also`
        these: what a person kept here over another device's removal)."""
        cursor = self._db.get_meta("sync_journal")
        head = self._journal_head()
        if cursor is None or not self._journal_reaches(int(cursor)):
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
        ids |= self._held_here() | also | again
        if again:
            self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_again'")
        ids -= self._hold_local_removals(ids, result)
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
        seq = max(seq, self._floor.get(device, 0))  # (a rebuild from its own snapshot)
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
        signer = self.signer  # (sealed: the sealed line is what is signed)
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

    def _journal_reaches(self, cursor: int) -> bool:
        """Whether the journal still holds every change after `cursor` (it is pruned)."""
        rows = self._db.query("SELECT MIN(seq) FROM changes")
        return rows[0][0] is None or rows[0][0] <= cursor + 1

    def _export_one(self, memory_id: str, emit: Callable[..., str], result: Pass) -> None:
        rows = self._db.query(
            "SELECT heads, digest, observations, recalls, last_recalled_at FROM sync_memories "
            "WHERE id = ?",
            (memory_id,),
        )
        synced = rows[0] if rows else None
        heads = json.loads(synced[0]) if synced else []
        if not self._store.texts_of_ids([memory_id]):
            if synced and synced[1] != "purged":
                self._synced(memory_id, [emit("purge", memory_id, base=heads)], "purged")
            return
        memory = self._store.get(memory_id)
        record = record_of(memory)
        digest = fold.digest(record)
        if synced is None or synced[1] != digest:
            if self._sealer is None and _holds_secret(record):
                self._problem(  # a plain folder never gets one (`--allow-secrets`)
                    result,
                    "secret",
                    f"memory {memory_id} holds a secret and was not written to the sync "
                    "folder, whose files are not encrypted: it stays on this device",
                )
                return
            heads = [emit("put", memory_id, base=heads, rec=record)]
        obs = memory.observation_count - (synced[2] if synced else 0)
        recalls = memory.recall_count - (synced[3] if synced else 0)
        last = memory.last_recalled_at
        newer = last is not None and (synced is None or last > (synced[4] or ""))
        if obs or recalls or newer:
            emit("count", memory_id, obs=obs, recalls=recalls, last=last if newer else None)
        latest = max(last or "", synced[4] or "" if synced else "") or None
        self._synced(
            memory_id,
            heads,
            digest,
            (memory.observation_count, memory.recall_count, latest),
            live=not memory.deleted_at,
        )

    def _differs(self, memory_id: str) -> bool:
        """Whether a memory here differs from what was last synced of it (what `_export`
        would write)."""
        rows = self._db.query(
            "SELECT digest, observations, recalls FROM sync_memories WHERE id = ?", (memory_id,)
        )
        if not self._store.texts_of_ids([memory_id]):
            return bool(rows) and rows[0][0] != "purged"
        if not rows:
            return True
        memory = self._store.get(memory_id)
        return fold.digest(record_of(memory)) != rows[0][0] or (
            memory.observation_count,
            memory.recall_count,
        ) != (rows[0][1], rows[0][2])


def _holds_secret(record: dict) -> bool:
    try:
        guard_secrets(dict(record), "refuse")
    except SecretError:
        return True
    return False


# ---- removals held for a person (issue 40): a pass that would remove more than
# HOLD_MIN memories and more than HOLD_SHARE of the live ones because of one device's
# lines holds those removals; a removal here that did not come through Mnemo (a trigger,
# an sqlite shell) is not sent en masse. `mnemo sync held`, Settings → Sync.
HOLD_MIN = 50
HOLD_SHARE = 0.10


def _massive(count: int, live: int) -> bool:
    return count > HOLD_MIN and count > HOLD_SHARE * live


class Holding:
    """What waits for a person (a part of `Syncer`, beside `Ledger`): removals held, and
    memories edited apart on two devices (their versions kept, linked, in the trash)."""

    def conflicts(self) -> list[dict]:
        """Each memory edited on two devices apart whose versions still wait, linked to it
        in the trash: the memory (as merged) and each version, with the device that wrote
        it. The same on every device (made from the same operations); resolved ones (kept
        merged, a version chosen, unmerged) leave the list."""
        rows = self._db.query(
            "SELECT v.id, v.merged_into, v.title, v.text, v.updated_at, o.body "
            "FROM memories v JOIN sync_ops o ON o.rev = v.id || '~' "
            "WHERE v.deleted_at IS NOT NULL AND v.merged_into IS NOT NULL "
            "ORDER BY v.merged_into, v.updated_at, v.id"
        )
        versions: dict[str, list[dict]] = {}
        for version, merged, title, text, updated, body in rows:
            made_from = json.loads(body).get("from") or ""
            device = made_from.rpartition(".")[0]
            versions.setdefault(merged, []).append(
                {
                    "id": version,
                    "title": title,
                    "text": text,
                    "at": updated,
                    "device": device,
                    "device_name": self._device_name(device) if device else "another device",
                }
            )
        out = []
        for memory_id, kept in versions.items():
            found = self._db.query(
                "SELECT title, text, deleted_at FROM memories WHERE id = ?", (memory_id,)
            )
            if found:
                title, text, trashed = found[0]
                out.append(
                    {
                        "id": memory_id,
                        "title": title,
                        "text": text,
                        "trashed": trashed is not None,
                        "versions": kept,
                    }
                )
        return out

    def _hold_removals(self, affected: set[str], result: Pass) -> None:
        """Hold the removals of live memories that one device's operations would make here,
        when they are many (or that device already has removals waiting for a person)."""
        live = self._live_among(affected)
        if not live:
            return
        held_devices = {
            r[0] for r in self._db.query("SELECT DISTINCT device FROM sync_ops WHERE held = 1")
        }
        by_device: dict[str, list[tuple[str, list[str]]]] = {}
        for memory_id in sorted(live):
            nodes, _ = self._operations(memory_id)
            folded = fold.fold(memory_id, nodes, self._covered)
            if not folded.heads or (folded.record and not folded.record.get("deleted_at")):
                continue
            removing = [
                n
                for n in nodes
                if n.rev in folded.heads and (n.record is None or n.record.get("deleted_at"))
            ]
            if not removing:
                continue
            cause = max(removing, key=lambda n: n.order)
            device = cause.order[1]
            if device in "~=" or device == self.device or device in self._let_through:
                continue
            revs = [n.rev for n in removing if n.order[1] == device]
            by_device.setdefault(device, []).append((memory_id, revs))
        for device, items in by_device.items():
            total = self._removed_by.get(device, 0) + len(items)
            if device not in held_devices and not _massive(total, self._live_at_start):
                self._removed_by[device] = total
                continue
            self._db.conn.executemany(
                "UPDATE sync_ops SET held = 1 WHERE rev = ?",
                [(rev,) for _, revs in items for rev in revs],
            )
            count = self._db.query(
                "SELECT COUNT(DISTINCT memory_id) FROM sync_ops WHERE device = ? AND held = 1",
                (device,),
            )[0][0]
            result.held[device] = count
            self._problem(
                result,
                "held",
                f"device {self._device_name(device)} ({device}) would remove {count} of your "
                f"memories here (trash or delete for good): held until you decide (mnemo sync "
                f"held apply {device}, or refuse {device} to keep them everywhere)",
            )

    def _live_among(self, ids: set[str]) -> set[str]:
        out: set[str] = set()
        listed = sorted(ids)
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            rows = self._db.query(
                f"SELECT id FROM memories WHERE deleted_at IS NULL AND id IN "
                f"({', '.join('?' * len(part))})",
                tuple(part),
            )
            out.update(r[0] for r in rows)
        return out

    def _device_name(self, device: str) -> str:
        rows = self._db.query("SELECT name FROM sync_devices WHERE id = ?", (device,))
        return (rows[0][0] if rows else "") or "unnamed"

    def _held_here(self) -> set[str]:
        """The removals made here that wait for a person (not sent yet)."""
        return set(json.loads(self._db.get_meta("sync_held_here", "[]")))

    def _hold_local_removals(self, ids: set[str], result: Pass) -> set[str]:
        """Of the memories about to be written, those removed here but not through Mnemo
        (no person said so: `sync_said`) when they are many: kept back, said once; the
        ids kept back."""
        if not ids:
            return set()
        said = {r[0] for r in self._db.query("SELECT memory_id FROM sync_said")}
        listed = sorted(ids - said)
        was_live: set[str] = set()
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            rows = self._db.query(
                f"SELECT id FROM sync_memories WHERE live = 1 AND digest != 'purged' AND id IN "
                f"({', '.join('?' * len(part))})",
                tuple(part),
            )
            was_live.update(r[0] for r in rows)
        removed = was_live - self._live_among(was_live)
        before = self._held_here()
        if not removed or (
            not before and not _massive(len(removed), self._live_at_start + len(removed))
        ):
            if before:
                self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_held_here'")
            return set()
        held = removed  # (while some wait for a person, every such removal joins them)
        if held != before:
            self._db.set_meta("sync_held_here", json.dumps(sorted(held)))
            if len(held) > len(before):
                self._problem(
                    result,
                    "held",
                    f"{len(held)} memories were removed here, not through Mnemo (a trigger, an "
                    "sqlite shell?): not sent to your other devices; `mnemo sync held refuse "
                    f"{self.device}` takes them back from the folder, `apply {self.device}` "
                    "sends the removals",
                )
        result.held[self.device] = len(held)
        return held

    def held(self) -> list[dict]:
        """What waits for a person: per device, how many memories its removals would take
        away here, and the first titles; this device's own held removals too."""
        out = []
        rows = self._db.query(
            "SELECT device, COUNT(DISTINCT memory_id) FROM sync_ops WHERE held = 1 "
            "GROUP BY device ORDER BY device"
        )
        for device, count in rows:
            ids = [
                r[0]
                for r in self._db.query(
                    "SELECT DISTINCT memory_id FROM sync_ops WHERE device = ? AND held = 1 "
                    "ORDER BY memory_id LIMIT 5",
                    (device,),
                )
            ]
            out.append(
                {
                    "device": device,
                    "name": self._device_name(device),
                    "here": False,
                    "memories": count,
                    "titles": self._titles(ids),
                }
            )
        here = sorted(self._held_here())
        if here:
            out.append(
                {
                    "device": self.device,
                    "name": self._name,
                    "here": True,
                    "memories": len(here),
                    "titles": self._titles(here[:5]),
                }
            )
        return out

    def _titles(self, ids: list[str]) -> list[str]:
        found = []
        for memory_id in ids:
            rows = self._db.query("SELECT title FROM memories WHERE id = ?", (memory_id,))
            if rows:
                found.append(rows[0][0])
            else:  # gone here: the title it was synced with
                body = self._db.query(
                    "SELECT body FROM sync_ops WHERE memory_id = ? AND kind = 'put' "
                    "ORDER BY lamport DESC LIMIT 1",
                    (memory_id,),
                )
                found.append(_title_of(body[0][0]) if body else memory_id)
        return found


def _title_of(body: str) -> str:
    try:
        record = json.loads(body).get("rec") or {}
    except (ValueError, AttributeError):
        return "?"
    return str(record.get("title") or record.get("text", "?"))[:80]
