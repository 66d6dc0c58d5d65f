"""What waits for a person after a pass (ADR 0015, issue 40): removals held, and memories
edited apart on two devices (their versions kept, linked, in the trash).

A pass that would remove more than HOLD_MIN memories and more than HOLD_SHARE of the live
ones because of one device's lines holds those removals; a removal here that did not come
through Mnemo (a trigger, an sqlite shell) is not sent en masse. `mnemo sync held`,
Settings → Sync.
"""

from __future__ import annotations

import json

from app.core.storage.db import Database, in_slices
from app.core.sync import fold, oplog
from app.core.sync.state import Identity, Pass, PassState, problem

HOLD_MIN = 50
HOLD_SHARE = 0.10


def massive(count: int, live: int) -> bool:
    """Whether removing `count` of `live` memories at once is "many at once": held for a
    person (the rule device sync and team spaces share, ADR 0015)."""
    return count > HOLD_MIN and count > HOLD_SHARE * live


class Holding:
    """Removals held for a person and memories edited apart (a part of `Syncer`; the
    `Ledger` asks it before it removes or writes)."""

    def __init__(self, db: Database, state: PassState, identity: Identity):
        self._db = db
        self._state = state
        self._identity = identity

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

    def hold_removals(self, affected: set[str], result: Pass) -> None:
        """Hold the removals of live memories that one device's operations would make here,
        when they are many (or that device already has removals waiting for a person)."""
        live = self._live_among(affected)
        if not live:
            return
        held_devices = {
            r[0] for r in self._db.query("SELECT DISTINCT device FROM sync_ops WHERE held = 1")
        }
        by_device: dict[str, list[tuple[str, list[str]]]] = {}
        here = self._identity.device
        for memory_id in sorted(live):
            nodes, _ = oplog.operations(self._db, memory_id)
            folded = fold.fold(memory_id, nodes, self._state.covered)
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
            if device in "~=" or device == here or device in self._state.let_through:
                continue
            revs = [n.rev for n in removing if n.order[1] == device]
            by_device.setdefault(device, []).append((memory_id, revs))
        for device, items in by_device.items():
            total = self._state.removed_by.get(device, 0) + len(items)
            if device not in held_devices and not massive(total, self._state.live_at_start):
                self._state.removed_by[device] = total
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
            problem(
                self._db,
                result,
                "held",
                f"device {self._device_name(device)} ({device}) would remove {count} of your "
                f"memories here (trash or delete for good): held until you decide (mnemo sync "
                f"held apply {device}, or refuse {device} to keep them everywhere)",
            )

    def _live_among(self, ids: set[str]) -> set[str]:
        return self._among("SELECT id FROM memories WHERE deleted_at IS NULL", ids)

    def _among(self, select: str, ids: set[str]) -> set[str]:
        """The ids of `ids` that `select` (a query of ids) finds."""
        out: set[str] = set()
        for part, marks in in_slices(sorted(ids)):
            out.update(r[0] for r in self._db.query(f"{select} AND id IN ({marks})", tuple(part)))
        return out

    def _device_name(self, device: str) -> str:
        rows = self._db.query("SELECT name FROM sync_devices WHERE id = ?", (device,))
        return (rows[0][0] if rows else "") or "unnamed"

    def held_here(self) -> set[str]:
        """The removals made here that wait for a person (not sent yet)."""
        return set(json.loads(self._db.get_meta("sync_held_here", "[]")))

    def hold_local_removals(self, ids: set[str], result: Pass) -> set[str]:
        """Of the memories about to be written, those removed here but not through Mnemo
        (no person said so: `sync_said`) when they are many: kept back, said once; the
        ids kept back."""
        if not ids:
            return set()
        said = {r[0] for r in self._db.query("SELECT memory_id FROM sync_said")}
        was_live = self._among(
            "SELECT id FROM sync_memories WHERE live = 1 AND digest != 'purged'", ids - said
        )
        removed = was_live - self._live_among(was_live)
        before = self.held_here()
        if not removed or (
            not before and not massive(len(removed), self._state.live_at_start + len(removed))
        ):
            if before:
                self._db.conn.execute("DELETE FROM _metadata WHERE key = 'sync_held_here'")
            return set()
        held = removed  # (while some wait for a person, every such removal joins them)
        here = self._identity.device
        if held != before:
            self._db.set_meta("sync_held_here", json.dumps(sorted(held)))
            if len(held) > len(before):
                problem(
                    self._db,
                    result,
                    "held",
                    f"{len(held)} memories were removed here, not through Mnemo (a trigger, an "
                    "sqlite shell?): not sent to your other devices; `mnemo sync held refuse "
                    f"{here}` takes them back from the folder, `apply {here}` sends the removals",
                )
        result.held[self._identity.device] = len(held)
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
        here = sorted(self.held_here())
        if here:
            out.append(
                {
                    "device": self._identity.device,
                    "name": self._identity.name,
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
