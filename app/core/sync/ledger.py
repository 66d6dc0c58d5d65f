"""The database side of sync (ADR 0015): every operation seen, each memory folded from
them and written here, and this device's changes written as operations."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from app.core.errors import InputError, SecretError
from app.core.memory import MAX_COUNT, Memory, guard_secrets, utc_stamp
from app.core.storage.db import now
from app.core.sync import fold
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


def record_of(memory: Memory) -> dict:
    """The synced fields of a memory."""
    return {name: getattr(memory, name) for name in fold.SYNCED}


class Ledger:
    """What a pass folds and writes (a part of `Syncer`: its database, store and sealer)."""

    def _apply(self, affected: set[str], result: Pass, write_rows: bool) -> None:
        """Fold each affected memory and write it here (`write_rows`), or only record it as
        synced (this device's own operations: the row already says it, or says more)."""
        pending = sorted(affected)
        while pending:
            memory_id = pending.pop()
            nodes, counts = self._operations(memory_id)
            folded = fold.fold(memory_id, nodes, self._covered)
            self._note_waiting(memory_id, folded.waiting)
            if not folded.heads:
                if write_rows and not nodes and self._store.delete_synced(memory_id):
                    result.applied += 1  # its only operation was replaced by another (above)
                    self._db.conn.execute("DELETE FROM sync_memories WHERE id = ?", (memory_id,))
                continue  # (else nothing of it has arrived in order yet)
            new = [
                original_id
                for original_id, record in folded.originals.items()
                if self._keep_original(memory_id, original_id, record)
            ]
            if new:
                result.conflicts += 1
                counted = int(self._db.get_meta("sync_conflicts", "0")) + 1
                self._db.set_meta("sync_conflicts", str(counted))
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
        rows = self._db.query(
            "SELECT rev, device, seq, lamport, kind, body FROM sync_ops WHERE memory_id = ?",
            (memory_id,),
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

    def _keep_original(self, memory_id: str, original_id: str, record: dict) -> bool:
        """Record the trashed copy of a version edited apart as an operation of its own
        (the same on every device: no device writes it); whether it is new."""
        rev = f"{original_id}~"
        if self._db.query("SELECT 1 FROM sync_ops WHERE rev = ?", (rev,)):
            return False
        body = json.dumps({"rec": record, "base": []}, sort_keys=True, ensure_ascii=False)
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
            self._synced(memory_id, heads, "purged")
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
        )

    def _synced(
        self, memory_id: str, heads: list[str], digest: str, counts: tuple = (0, 0, None)
    ) -> None:
        """Record what was last synced of a memory (a change here is what differs from it):
        its heads, its digest ('purged'), its counts."""
        self._db.conn.execute(
            "INSERT OR REPLACE INTO sync_memories(id, heads, digest, observations, recalls, "
            "last_recalled_at) VALUES (?, ?, ?, ?, ?, ?)",
            (memory_id, json.dumps(heads), digest, *counts),
        )

    def _export(self, folder: Folder, result: Pass) -> None:
        """Write every memory changed here since the last pass as operations."""
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
        if not ids:
            self._db.set_meta("sync_journal", str(head))
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
        first = seq + 1

        def emit(kind: str, memory_id: str, **fields) -> str:
            nonlocal seq, lamport
            seq += 1
            lamport = min(lamport + 1, LAMPORT_LIMIT)
            rev = f"{device}.{seq}"
            op = {"v": 1, "rev": rev, "dev": device, "seq": seq, "lc": lamport, "op": kind}
            op.update(id=memory_id, at=now(), **fields)
            body = json.dumps(op, sort_keys=True, ensure_ascii=False)
            lines.append(body)
            self._db.conn.execute(
                "INSERT INTO sync_ops(rev, memory_id, device, seq, lamport, kind, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rev, memory_id, device, seq, lamport, kind, body),
            )
            return rev

        for memory_id in sorted(ids):
            self._export_one(memory_id, emit, result)
        if self._sealer is not None:
            lines = [self._sealer.seal(line, json.loads(line)["rev"]) for line in lines]
        lines = [self.signer.line(line) for line in lines]  # (sealed: the sealed line)
        folder.append(lines, first)  # durable before the transaction commits
        result.written += len(lines)
        self._db.set_meta("sync_journal", str(head))

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
            memory_id, heads, digest, (memory.observation_count, memory.recall_count, latest)
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
