"""The versions of memories in the database (table `memory_versions`, schema 18): what a
memory said before each change of its words, with who wrote those words, when, and who
replaced them and why (`core/version.py`, ADR 0023). Sync carries the newest of them in a
put (`core/sync/history.py`); they are never exported or mirrored."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

from app.core import origin as origins
from app.core.errors import InputError
from app.core.memory import Memory
from app.core.storage.db import Database, in_slices, now
from app.core.version import WHYS, Version

_COLUMNS = (
    "seq, memory_id, title, text, reasoning, category, tags, refs, source_project, "
    "confidence, origin, written_at, replaced_at, replaced_by, why"
)

# Versions in the order their words were replaced (the times they carry from the device
# that kept them: the same order everywhere), the row's number only between equal times.
_ORDER = "replaced_at, written_at, seq"


def _list(value) -> list[str]:
    try:
        items = json.loads(value) if isinstance(value, str) else []
    except ValueError:
        return []
    return [str(i) for i in items] if isinstance(items, list) else []


def _version(row: tuple, number: int) -> Version:
    by = origins.decode(f"[{row[13]}]") if row[13] else []
    return Version(
        seq=row[0],
        memory_id=row[1],
        number=number,
        title=row[2] or "",
        text=row[3] or "",
        reasoning=row[4] or "",
        category=row[5] or "note",
        tags=_list(row[6]),
        references=_list(row[7]),
        source_project=row[8],
        confidence=row[9] or "medium",
        origins=origins.decode(row[10]),
        written_at=row[11] or "",
        replaced_at=row[12] or "",
        replaced_by=by[0] if by else None,
        why=row[14] or "edit",
    )


class Versions:
    """The versions of memories on one Database (`Store.versions`)."""

    def __init__(self, db: Database):
        self.db = db

    def add(
        self,
        memory_id: str,
        state: Memory,
        why: str,
        by: origins.Origin | None = None,
        at: str | None = None,
    ) -> int:
        """Keep `state` (what a memory said) as a version of `memory_id`, replaced `at`
        (now) by `by` for `why` (WHYS); inside the caller's write transaction when there is
        one. The row's number. (`state` may be another memory's: one this one superseded.)"""
        if why not in WHYS:
            raise InputError(f"a version is kept for one of {', '.join(WHYS)}, not {why!r}")
        version = Version.kept(
            memory_id,
            state,
            origins=state.origins,
            written_at=state.updated_at or state.created_at,
            replaced_at=at or now(),
            replaced_by=by,
            why=why,
        )
        return self.add_carried(version)

    def add_carried(self, version: Version) -> int:
        """Keep a version as it is (one another device sent, checked by `sync/history.py`;
        one an older memory had), inside the caller's write transaction; the row's number."""
        v = version
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO memory_versions ({_COLUMNS.partition(', ')[2]}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    v.memory_id,
                    v.title,
                    v.text,
                    v.reasoning,
                    v.category,
                    json.dumps(v.tags),
                    json.dumps(v.references),
                    v.source_project,
                    v.confidence,
                    origins.encode(v.origins),
                    v.written_at,
                    v.replaced_at,
                    json.dumps(v.replaced_by.to_dict(), sort_keys=True) if v.replaced_by else None,
                    v.why,
                ),
            )
            return self.db.conn.last_insert_rowid()

    def take(self, memory_id: str, carried: Iterable[Version]) -> int:
        """Keep the versions of a memory another device sent that are not here yet (known
        by `Version.key`); how many were new."""
        have = {v.key() for v in self.of(memory_id)}
        new = 0
        for version in carried:
            if version.key() not in have:
                have.add(version.key())
                self.add_carried(replace(version, memory_id=memory_id))
                new += 1
        return new

    def of(self, memory_id: str) -> list[Version]:
        """A memory's versions, newest first (numbered from 1, the oldest): in the order
        they were replaced, the same on every device that holds them."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY {_ORDER}",
            (memory_id,),
        )
        return [_version(row, n) for n, row in enumerate(rows, 1)][::-1]

    def counts(self, ids: Iterable[str]) -> dict[str, int]:
        """{id: how many versions} of those of these memories that have any."""
        out: dict[str, int] = {}
        for part, marks in in_slices(list(ids)):
            out.update(
                self.db.query(
                    "SELECT memory_id, count(*) FROM memory_versions "
                    f"WHERE memory_id IN ({marks}) GROUP BY memory_id",
                    tuple(part),
                )
            )
        return out

    def superseded(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """{id: (the text, when it was replaced)} of the older memory each of these most
        recently superseded, for those that superseded one."""
        out: dict[str, tuple[str, str]] = {}
        for part, marks in in_slices(list(ids)):
            rows = self.db.query(
                "SELECT memory_id, text, replaced_at FROM memory_versions "
                f"WHERE why = 'superseded' AND memory_id IN ({marks}) ORDER BY {_ORDER}",
                tuple(part),
            )
            out.update((memory_id, (text, at)) for memory_id, text, at in rows)
        return out

    def forget(self, ids: Iterable[str]) -> None:
        """Delete these memories' versions (a purge: inside its transaction)."""
        with self.db.write() as conn:
            conn.executemany("DELETE FROM memory_versions WHERE memory_id = ?", [(i,) for i in ids])
