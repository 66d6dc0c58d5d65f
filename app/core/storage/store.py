"""Memories and their vectors in SQLite: every write is one transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from app.core import dates, superseding
from app.core import origin as origins
from app.core.errors import (
    ConflictError,
    InputError,
    NotFoundError,
    TrashedError,
)
from app.core.memory import CONFIDENCES, Change, Memory, content_hash, thread_hash, utc_stamp
from app.core.storage.db import Database, in_slices, now
from app.core.storage.keywords import KeywordIndex
from app.core.storage.vector_rows import VectorRows
from app.core.storage.versions import Versions
from app.core.version import History, Version

COLUMNS = (
    "id, text, title, reasoning, category, tags, refs, source, source_project, confidence, "
    "observation_count, recall_count, last_recalled_at, created_at, updated_at, pinned, "
    "deleted_at, keywords, merged_into, thread, origin"
)
CONTENT_FIELDS = ("title", "text", "reasoning")
EDITABLE = (
    "title",
    "text",
    "reasoning",
    "category",
    "tags",
    "references",
    "source_project",
    "confidence",
    "pinned",
    "keywords",
    "thread",
)


def check_limit(limit) -> int:
    """How many results a caller asked for, or InputError: 0 used to mean the default, and a
    negative number one result (recall) or no limit at all (SQL's LIMIT -3, listing)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit {limit!r}: give a whole number, at least 1")
    return limit


def _int(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _json_list(value, default):
    if value == "[]":  # most memories' references and keywords (no JSON parse: 2 µs)
        return []
    try:
        items = json.loads(value) if value is not None else default
    except (TypeError, ValueError):
        return default
    return [str(i) for i in items] if isinstance(items, list) else default


def _text(value, default: str = "") -> str:
    return value if isinstance(value, str) else default


def row_to_memory(row: tuple) -> Memory:
    """A Memory from a row of COLUMNS.

    Rows written by Mnemo always have the right types (the m004 triggers); a row from an
    older database that does not is read with defaults instead of failing every search,
    and `mnemo doctor` reports it.
    """
    return Memory(
        id=row[0],
        text=_text(row[1]),
        title=_text(row[2]),
        reasoning=_text(row[3]),
        category=_text(row[4], "note"),
        tags=_json_list(row[5], []),
        references=_json_list(row[6], []),
        source=_text(row[7], "manual"),
        source_project=row[8] if isinstance(row[8], str) else None,
        confidence=row[9] if row[9] in CONFIDENCES else "medium",
        observation_count=max(_int(row[10], 1), 1),
        recall_count=max(_int(row[11], 0), 0),
        last_recalled_at=row[12] if isinstance(row[12], str) else None,
        created_at=_text(row[13]),
        updated_at=_text(row[14]),
        pinned=row[15] in (1, True),
        deleted_at=row[16] if isinstance(row[16], str) else None,
        keywords=_json_list(row[17], None),
        merged_into=row[18] if isinstance(row[18], str) else None,
        thread=row[19] if isinstance(row[19], str) and row[19] else None,
        origins=origins.decode(row[20]),
    )


def _moment(value: str | None, name: str) -> str | None:
    """A date filter as created_at is stored (UTC ISO; a bare day as is, compared with its
    start), or InputError in words: compared as raw text, "garbage" used to match nothing
    and everything. Words a person uses (`last week`, `3 days ago`, `March 2024`) mean
    their window's start for `since` and its end for `until` (`dates.read_bound`)."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    stamp = utc_stamp(text)
    if stamp is None:
        stamp = dates.read_bound(text, end=name == "until")
        if stamp is None:
            raise InputError(
                f"{name} {value!r} is not a date: use YYYY-MM-DD, an ISO timestamp or words "
                "such as 'yesterday', 'last week', '3 days ago', 'March 2024'"
            )
        return stamp
    return text[:10] if len(text) in (10, 11) else stamp  # a day (maybe with Z) stays a day


@dataclass
class Filters:
    """What narrows a search or a listing; empty fields do not filter."""

    category: str | None = None
    tags: tuple[str, ...] = ()
    project: str | None = None
    source: str | None = None
    since: str | None = None  # ISO date or timestamp, compared with created_at
    until: str | None = None
    pinned: bool | None = None
    include_deleted: bool = False
    only_deleted: bool = False  # the trash
    # A window of time a query named (ISO UTC start, exclusive end; None is open): the
    # memories made or last changed in it (`dates.Window`)
    within: tuple[str | None, str | None] | None = None
    # KIND[:NAME]: memories one of whose origins is that (`origin.wanted`; the CLI's --origin)
    origin: str | None = None
    # What agents are given unasked (`origin.Trust`: the memories it admits; issue 44). Not
    # `active`: a search looks where it would without it and keeps the candidates it
    # admits (every origin read first would cost an agent's prompt 0.3 s at 100,000)
    trust: origins.Trust | None = None
    # A team space's id: the memories shared in it now; "": those in no space (the
    # manager's filter by space; issue 45)
    space: str | None = None

    def __post_init__(self) -> None:
        self.since = _moment(self.since, "since")  # the CLI's --since
        self.until = _moment(self.until, "until")
        if self.origin:
            origins.wanted(self.origin)  # InputError now, in words

    def sql(self, alias: str = "m") -> tuple[str, list]:
        """A WHERE fragment (starting with AND) and its bindings."""
        parts, args = [], []
        if self.only_deleted:
            parts.append(f"{alias}.deleted_at IS NOT NULL")
        elif not self.include_deleted:
            parts.append(f"{alias}.deleted_at IS NULL")
        if self.category:
            parts.append(f"{alias}.category = ?")
            args.append(self.category)
        for tag in self.tags:
            parts.append(f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE value = ?)")
            args.append(tag)
        if self.project:
            parts.append(f"{alias}.source_project = ?")
            args.append(self.project)
        if self.source:
            parts.append(f"{alias}.source = ?")
            args.append(self.source)
        if self.origin:
            condition, bound = origins.sql(*origins.wanted(self.origin), f"{alias}.origin")
            parts.append(condition)
            args.extend(bound)
        if self.trust is not None:
            condition, bound = self.trust.sql(alias)
            parts.append(condition)
            args.extend(bound)
        if self.space is not None:
            parts.append(
                f"{'NOT ' if self.space == '' else ''}EXISTS (SELECT 1 FROM space_memories sp "
                f"WHERE sp.memory_id = {alias}.id AND sp.withdrawn = 0"
                f"{' AND sp.space = ?' if self.space else ''})"
            )
            args.extend([self.space] if self.space else [])
        if self.since:
            parts.append(f"{alias}.created_at >= ?")
            args.append(self.since)
        if self.until:
            parts.append(f"{alias}.created_at < ?")
            args.append(self.until)
        if self.pinned is not None:
            parts.append(f"{alias}.pinned = ?")
            args.append(int(self.pinned))
        if self.within is not None:
            either = []
            for column in ("created_at", "updated_at"):
                bounds = []
                if self.within[0] is not None:
                    bounds.append(f"{alias}.{column} >= ?")
                    args.append(self.within[0])
                if self.within[1] is not None:
                    bounds.append(f"{alias}.{column} < ?")
                    args.append(self.within[1])
                either.append("(" + " AND ".join(bounds or ["1"]) + ")")
            parts.append("(" + " OR ".join(either) + ")")
        return "".join(f" AND {p}" for p in parts), args

    @property
    def active(self) -> bool:
        """Whether anything beyond the trash exclusion narrows the set."""
        return any(
            (
                self.category,
                self.tags,
                self.project,
                self.source,
                self.origin,
                self.space is not None,
                self.since,
                self.until,
                self.pinned is not None,
                self.within is not None,
            )
        )


# The journal's kinds from weakest to strongest: a memory edited and then trashed is "trash".
_STRENGTH = ("inbox", "usage", "metadata", "content", "trash", "purge")  # (inbox: other ids)


def _collation(column: str) -> str:
    """Text columns sort as people read them: "apple" next to "Apple", not after "Zebra"."""
    return " COLLATE NOCASE" if column in ("title", "category", "source", "tags") else ""


class Store:
    """CRUD over memories and embeddings on one Database."""

    def __init__(self, db: Database):
        self.db = db
        self.vectors = VectorRows(db)  # their vectors
        self.versions = Versions(db)  # what their words were before each change
        self._connected()
        db.on_reopen(self._connected)  # a switch (encrypt, restore) gives another connection

    def _connected(self) -> None:
        """Start afresh on the database's connection: nothing derived from another one."""
        self.keywords = KeywordIndex(self.db)  # (reads nothing until a query is planned)

    # ---- reading -------------------------------------------------------------------
    def get(self, memory_id: str, include_deleted: bool = True) -> Memory:
        """The memory with this id (or a unique prefix of at least 4 characters)."""
        memory_id = memory_id.strip().lower()
        rows = self.db.query(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        if not rows and len(memory_id) >= 4 and memory_id.isalnum():
            rows = self.db.query(
                f"SELECT {COLUMNS} FROM memories WHERE id >= ? AND id < ? LIMIT 2",
                (memory_id, memory_id + "\uffff"),
            )
            if len(rows) > 1:
                raise InputError(f"id prefix {memory_id!r} matches several memories")
        if not rows or (rows[0][16] and not include_deleted):
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return row_to_memory(rows[0])

    def noting_changes(self, memories: list[Memory]) -> list[Memory]:
        """These memories, each one that superseded an older memory saying what that one
        said and until when (`Memory.changed`, issue 44), to be shown."""
        found = self.versions.superseded(m.id for m in memories)
        for m in memories:
            # (its words back to the superseded ones, `history --restore`, or the older
            # memory back from the trash, both live again: no change to say)
            if m.id in found and found[m.id][0].strip() != m.text.strip():
                older = self.find_by_hash(content_hash(found[m.id][0]))
                if older is None or older.deleted_at:
                    m.changed = superseding.change(found[m.id][0], m.text, found[m.id][1])
        return memories

    def find_by_hash(self, digest: str, thread: str | None = None) -> Memory | None:
        """A memory (live first, then trashed) of this thread (or of none) whose text has
        this content hash: "haha" said in two conversations is two memories, a note stored
        twice is one."""
        rows = self.db.query(
            f"SELECT {COLUMNS} FROM memories WHERE content_hash = ? AND thread IS ? "
            "ORDER BY deleted_at IS NOT NULL, seq LIMIT 1",
            (digest, thread),
        )
        return row_to_memory(rows[0]) if rows else None

    def by_seqs(self, seqs: Iterable[int], filters: Filters | None = None) -> dict[int, Memory]:
        """Memories by internal row number, keeping only those passing `filters`."""
        seqs = list(seqs)
        if not seqs:
            return {}
        where, args = (filters or Filters()).sql()
        out: dict[int, Memory] = {}
        for part, marks in in_slices(seqs):
            for row in self.db.query(
                f"SELECT m.seq, {', '.join('m.' + c.strip() for c in COLUMNS.split(','))} "
                f"FROM memories m WHERE m.seq IN ({marks}){where}",
                (*part, *args),
            ):
                out[row[0]] = row_to_memory(row[1:])
        return out

    def seqs_matching(self, filters: Filters) -> np.ndarray:
        """Row numbers of every memory passing `filters`."""
        where, args = filters.sql()
        rows = self.db.query(f"SELECT m.seq FROM memories m WHERE 1{where}", tuple(args))
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    ORDERABLE = frozenset(
        (
            "updated_at",
            "created_at",
            "title",
            "recall_count",
            "category",
            "tags",
            "seq",
            "observation_count",
            "last_recalled_at",
        )
    )

    def _order(self, order: str) -> tuple[str, str]:
        """A checked (column, direction) from "column [ASC|DESC]"."""
        column, _, direction = order.partition(" ")
        direction = direction.strip().upper() or "ASC"
        if column not in self.ORDERABLE or direction not in ("ASC", "DESC"):
            raise InputError(f"cannot sort by {order!r}")
        return column, direction

    def listing(
        self,
        filters: Filters | None = None,
        order: str = "updated_at DESC",
        limit: int = 50,
        offset: int = 0,
    ) -> list[Memory]:
        """A page of memories in a fixed order (for browsing)."""
        column, direction = self._order(order)
        where, args = (filters or Filters()).sql()
        rows = self.db.query(
            f"SELECT {COLUMNS} FROM memories m WHERE 1{where} "
            f"ORDER BY {column}{_collation(column)} {direction}, seq "
            "LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [row_to_memory(r) for r in rows]

    def page(
        self, filters: Filters, order: str, offset: int, limit: int, model_id: str
    ) -> list[tuple[Memory, bool]]:
        """(memory, has vectors from `model_id`) for a page of a listing."""
        column, direction = self._order(order)
        where, args = filters.sql()
        rows = self.db.query(
            f"SELECT EXISTS (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id "
            f"AND e.model_id = ?), {', '.join('m.' + c.strip() for c in COLUMNS.split(','))} "
            # The tiebreak runs the same way as the sort, so an index can serve both.
            f"FROM memories m WHERE 1{where} ORDER BY m.{column}{_collation(column)} "
            f"{direction}, m.seq {direction} LIMIT ? OFFSET ?",
            (model_id, *args, limit, offset),
        )
        return [(row_to_memory(r[1:]), bool(r[0])) for r in rows]

    def texts_of_ids(self, ids: list[str]) -> dict[str, str]:
        """{id: content hash} of the memories with these ids that exist."""
        out: dict[str, str] = {}
        for part, marks in in_slices(ids):
            out.update(
                self.db.query(
                    f"SELECT id, content_hash FROM memories WHERE id IN ({marks})", tuple(part)
                )
            )
        return out

    def recent(self, limit: int = 10) -> list[Memory]:
        """Pinned memories first, then the most recently changed (the popup's empty query)."""
        pinned = self.listing(Filters(pinned=True), limit=limit)
        seen = {m.id for m in pinned}
        rest = [m for m in self.listing(limit=limit) if m.id not in seen]
        return (pinned + rest)[:limit]

    def count(self, filters: Filters) -> int:
        """How many memories pass `filters`."""
        where, args = filters.sql()
        return self.db.query(f"SELECT count(*) FROM memories m WHERE 1{where}", tuple(args))[0][0]

    def distinct_values(self, limit: int = 500) -> dict[str, list[str]]:
        """Categories, tags, projects, sources and origins of live memories, sorted."""
        queries = {
            "category": "SELECT DISTINCT category FROM memories WHERE deleted_at IS NULL",
            "tag": "SELECT DISTINCT j.value FROM memories m, json_each(m.tags) j "
            "WHERE m.deleted_at IS NULL",
            "project": "SELECT DISTINCT source_project FROM memories WHERE source_project "
            "IS NOT NULL AND deleted_at IS NULL",
            "source": "SELECT DISTINCT source FROM memories WHERE deleted_at IS NULL",
        }
        found = {
            name: sorted(str(r[0]) for r in self.db.query(f"{sql} LIMIT ?", (limit,)))
            for name, sql in queries.items()
        }
        found["origin"] = self._origin_values(limit)
        return found

    def _origin_values(self, limit: int) -> list[str]:
        """Every origin filter (`KIND`, `KIND:NAME`, `device:NAME`) that finds live memories."""
        rows = self.db.query(
            "SELECT DISTINCT json_extract(o.value, '$.kind'), json_extract(o.value, '$.name'), "
            "json_extract(o.value, '$.device') FROM memories m, json_each(m.origin) o "
            "WHERE m.deleted_at IS NULL LIMIT ?",
            (limit,),
        )
        values: set[str] = set()
        for kind, name, device in rows:
            values.add(str(kind))
            if name:
                values.add(f"{kind}:{name}")
            if device:
                values.update(("device", f"device:{device}"))
        return sorted(values)

    def category_counts(self) -> dict[str, int]:
        """Live memories per category, largest first."""
        return dict(
            self.db.query(
                "SELECT category, count(*) FROM memories WHERE deleted_at IS NULL "
                "GROUP BY category ORDER BY count(*) DESC"
            )
        )

    def iter_all(self, include_deleted: bool = False) -> Iterator[Memory]:
        """Every memory in insertion order, read in pages."""
        last = 0
        clause = "" if include_deleted else " AND deleted_at IS NULL"
        while True:
            rows = self.db.query(
                f"SELECT seq, {COLUMNS} FROM memories WHERE seq > ?{clause} "
                "ORDER BY seq LIMIT 1000",
                (last,),
            )
            if not rows:
                return
            for row in rows:
                yield row_to_memory(row[1:])
            last = rows[-1][0]

    def neighbours(self, seqs: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """The live memories just before and after each of these in its thread: the same
        `thread`, or without one, the same source and the very same creation time with a
        time of day (turns of a conversation imported together; notes imported with a bare
        date are not a conversation), in the order they were stored. Two index
        lookups a memory (memories_thread, memories_created)."""
        out: dict[int, tuple[int | None, int | None]] = {}
        kinds = (
            ("m.thread IS NOT NULL", "o.thread = m.thread"),
            (  # a bare date (midnight UTC) is shared by a day's notes, not a conversation
                "m.thread IS NULL AND m.created_at NOT LIKE '%T00:00:00.000000+00:00'",
                "o.created_at = m.created_at AND o.thread IS NULL AND o.source = m.source",
            ),
        )
        for part, marks in in_slices(list(seqs)):
            for which, same in kinds:
                around = (
                    f"(SELECT o.seq FROM memories o WHERE {same} AND o.seq {{}} m.seq "
                    f"AND o.deleted_at IS NULL ORDER BY o.seq {{}} LIMIT 1)"
                )
                rows = self.db.query(
                    f"SELECT m.seq, {around.format('<', 'DESC')}, {around.format('>', 'ASC')} "
                    f"FROM memories m WHERE m.seq IN ({marks}) AND {which}",
                    tuple(part),
                )
                out.update({seq: (before, after) for seq, before, after in rows if before or after})
        return out

    def counts(self) -> dict[str, int]:
        """Memory totals: live, trashed, pinned."""
        row = self.db.query(
            "SELECT count(*) FILTER (WHERE deleted_at IS NULL), "
            "count(*) FILTER (WHERE deleted_at IS NOT NULL), "
            "count(*) FILTER (WHERE pinned AND deleted_at IS NULL) FROM memories"
        )[0]
        return {"memories": row[0], "trash": row[1], "pinned": row[2]}

    def live_count(self) -> int:
        """How many memories are not in the trash, from the live memories' index (`counts`
        reads every row: 70 ms at 100k memories, seconds at 1M with a cold cache)."""
        return self.db.query("SELECT count(*) FROM memories WHERE deleted_at IS NULL")[0][0]

    def rank_rows(self) -> list[tuple]:
        """(seq, observation_count, confidence, updated_at, pinned, recall_count, category)
        of every live memory, in seq order (what ranking needs without the texts)."""
        return self.db.query(
            # Typed in SQL: a row an older version let in must not break every ranking.
            "SELECT seq, CASE WHEN typeof(observation_count) = 'integer' "
            "THEN max(observation_count, 1) ELSE 1 END, confidence, updated_at, pinned = 1, "
            "CASE WHEN typeof(recall_count) = 'integer' THEN max(recall_count, 0) ELSE 0 END, "
            "category FROM memories WHERE deleted_at IS NULL ORDER BY seq"
        )

    def max_observations(self) -> int:
        """The largest observation count of a live memory (for normalizing prominence)."""
        top = self.db.query(
            "SELECT coalesce(max(observation_count), 1) FROM memories WHERE deleted_at IS NULL"
        )[0][0]
        if isinstance(top, int):
            return top
        # A text value sorts above every number: a row an older version let in (doctor).
        return self.db.query(
            "SELECT coalesce(max(observation_count), 1) FROM memories WHERE deleted_at IS NULL "
            "AND typeof(observation_count) = 'integer'"
        )[0][0]

    # ---- writing -------------------------------------------------------------------
    def insert(self, memory: Memory) -> Memory:
        """Store a new memory; its id is the content hash, made unique if already taken."""
        stamp = now()
        memory.created_at = memory.created_at or stamp
        memory.updated_at = memory.updated_at or memory.created_at
        if not memory.origins:  # (every path names one: `Writer`, imports, sync)
            memory.origins = [origins.Origin(origins.UNKNOWN, at=memory.created_at)]
        with self.db.write() as conn:
            base = candidate = memory.id or thread_hash(memory.text, memory.thread)
            n = 1
            while conn.execute("SELECT 1 FROM memories WHERE id = ?", (candidate,)).fetchall():
                # The id is taken by a memory whose text has since been edited.
                candidate = content_hash(f"{base}:{n}")
                n += 1
            memory.id = candidate
            values = self._columns(memory)
            conn.execute(
                f"INSERT INTO memories ({', '.join(values)}) "
                f"VALUES ({', '.join('?' * len(values))})",
                tuple(values.values()),
            )
        return memory

    def insert_many(self, memories: list[Memory]) -> list[str]:
        """Store several new memories in one transaction, skipping known texts; the ids added."""
        added = []
        with self.db.write():
            for memory in memories:
                if memory.id and self.db.query("SELECT 1 FROM memories WHERE id = ?", (memory.id,)):
                    continue
                if self.find_by_hash(content_hash(memory.text), memory.thread) is not None:
                    continue
                added.append(self.insert(memory).id)
        return added

    @staticmethod
    def _columns(m: Memory) -> dict:
        """A memory as column values (the one place that encodes lists as JSON)."""
        return {
            "id": m.id,
            "text": m.text,
            "title": m.title,
            "reasoning": m.reasoning,
            "category": m.category,
            "tags": json.dumps(m.tags),
            "refs": json.dumps(m.references),
            "source": m.source,
            "source_project": m.source_project,
            "confidence": m.confidence,
            "observation_count": m.observation_count,
            "recall_count": m.recall_count,
            "last_recalled_at": m.last_recalled_at,
            "created_at": m.created_at,
            "updated_at": m.updated_at,
            "pinned": int(m.pinned),
            "deleted_at": m.deleted_at,
            "keywords": None if m.keywords is None else json.dumps(m.keywords),
            "merged_into": m.merged_into,
            "thread": m.thread,
            "origin": origins.encode(m.origins),
            "content_hash": content_hash(m.text),
        }

    def update(
        self,
        memory_id: str,
        expect: dict | None = None,
        origin: origins.Origin | None = None,
        why: str = "edit",
        words_of: list[origins.Origin] | None = None,
        **changes,
    ) -> Memory:
        """Change fields of a memory. A content change (its words) keeps what they were as
        a version (replaced by `origin` for `why`), re-stamps it, drops its vectors and adds
        `origin` (who made it: an editor, a file imported) to its origins, or gives it
        `words_of` (the origins of the words it takes back: a restore). With `expect`
        (field → the value the caller read), a field that differs now means someone else
        changed it meanwhile: ConflictError, and nothing is written."""
        unknown = set(changes) - set(EDITABLE) - {"observation_count"}
        if unknown:
            raise InputError(f"cannot edit {', '.join(sorted(unknown))}")
        with self.db.write() as conn:
            memory = self.get(memory_id)
            moved = [k for k, v in (expect or {}).items() if getattr(memory, k) != v]
            if "deleted_at" in moved and memory.deleted_at:
                raise TrashedError(f"memory {memory_id} was moved to the trash since it was opened")
            if moved:
                raise ConflictError(
                    f"memory {memory_id} was changed elsewhere since it was opened "
                    f"({', '.join(moved)})"
                )
            content_changed = any(
                k in CONTENT_FIELDS and getattr(memory, k) != v for k, v in changes.items()
            )
            before = replace(memory)
            for key, value in changes.items():
                setattr(memory, key, value)
            if content_changed:
                memory.updated_at = now()
                self.versions.add(memory.id, before, why, origin, memory.updated_at)
                if words_of:
                    memory.origins = list(words_of)
                elif origin is not None:
                    editor = origin.stamped(memory.updated_at)
                    memory.origins = origins.added(memory.origins, editor)
                conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory.id,))
                if "keywords" not in changes:
                    memory.keywords = None  # made again from the new content
            values = self._columns(memory)
            del values["id"]
            conn.execute(
                f"UPDATE memories SET {', '.join(f'{c} = ?' for c in values)} WHERE id = ?",
                (*values.values(), memory.id),
            )
        return memory

    def put_synced(
        self,
        memory: Memory,
        by: origins.Origin | None = None,
        carried: tuple[Version, ...] = (),
        kept_apart: frozenset[tuple] = frozenset(),
    ) -> None:
        """Write a memory as sync folded it (`core/sync`): inserted or replaced whole, counts
        and stamps as given; its vectors and keyword labels are kept only when the words
        they were made from are unchanged. The versions the device sent (`carried`) are
        kept; words it replaces here that none of them holds, nor a version edited apart
        kept in the trash (`kept_apart`: their words), are kept as a version of this
        device's (replaced by `by`, the device that sent them, when known)."""
        with self.db.write() as conn:
            rows = conn.execute(
                "SELECT title, text, reasoning, keywords FROM memories WHERE id = ?",
                (memory.id,),
            ).fetchall()
            same = bool(rows) and rows[0][:3] == (memory.title, memory.text, memory.reasoning)
            held = {v.words() for v in carried} | kept_apart
            if rows and not same and tuple(rows[0][:3]) not in held:  # (at the time the new
                # words were written: the same version on every device that keeps one)
                self.versions.add(memory.id, self.get(memory.id), "sync", by, memory.updated_at)
            self.versions.take(memory.id, carried)
            memory.keywords = _json_list(rows[0][3], None) if same else None
            values = self._columns(memory)
            if not rows:
                conn.execute(
                    f"INSERT INTO memories ({', '.join(values)}) "
                    f"VALUES ({', '.join('?' * len(values))})",
                    tuple(values.values()),
                )
                return
            del values["id"]
            if not same:
                conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory.id,))
            conn.execute(
                f"UPDATE memories SET {', '.join(f'{c} = ?' for c in values)} WHERE id = ?",
                (*values.values(), memory.id),
            )

    def delete_synced(self, memory_id: str) -> bool:
        """Delete a memory another device purged (with its vectors); whether it was here."""
        with self.db.write() as conn:
            if not conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchall():
                return False
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            conn.execute("DELETE FROM not_duplicates WHERE a = ? OR b = ?", (memory_id, memory_id))
            self.versions.forget([memory_id])
        return True

    def observe(self, memory_id: str) -> Memory:
        """Count one more observation of an existing memory (and bring it back from the trash)."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE memories SET observation_count = observation_count + 1, "
                "deleted_at = NULL WHERE id = ?",
                (memory_id,),
            )
            return self.get(memory_id)

    def set_deleted(self, ids: list[str], deleted: bool) -> list[str]:
        """Move memories to the trash or back; returns the ids that changed."""
        changed = []
        with self.db.write() as conn:
            for memory_id in ids:
                memory = self.get(memory_id)
                if bool(memory.deleted_at) != deleted:
                    # A merge source restored on its own is no longer part of that merge.
                    conn.execute(
                        "UPDATE memories SET deleted_at = ?, merged_into = "
                        "CASE WHEN ? THEN merged_into END WHERE id = ?",
                        (now() if deleted else None, deleted, memory.id),
                    )
                    changed.append(memory.id)
            if deleted:
                self._said(changed)
        return changed

    def _said(self, ids: Iterable[str]) -> None:
        """A person removed these through Mnemo (sync sends removals it was told of; a mass
        removal made otherwise waits for a person: `sync/held.py`)."""
        self.db.conn.executemany(
            "INSERT OR REPLACE INTO sync_said(memory_id, at) VALUES (?, ?)",
            [(i, now()) for i in ids],
        )

    def mark_merged(self, ids: list[str], into: str) -> None:
        """Move a merge's sources to the trash, pointing at its result."""
        stamp = now()
        with self.db.write() as conn:
            conn.executemany(
                "UPDATE memories SET deleted_at = ?, merged_into = ? WHERE id = ?",
                [(stamp, into, i) for i in ids],
            )
            self._said(ids)

    def merged_sources(self, merged_id: str) -> list[str]:
        """The ids of the memories merged into this one (still in the trash)."""
        rows = self.db.query(
            "SELECT id FROM memories WHERE merged_into = ? AND deleted_at IS NOT NULL ORDER BY seq",
            (merged_id,),
        )
        return [r[0] for r in rows]

    def history(self, memory_id: str) -> History:
        """A memory, its versions (newest first) and the memories merged into it."""
        memory = self.noting_changes([self.get(memory_id)])[0]  # (what it superseded)
        merged = [self.get(i) for i in self.merged_sources(memory.id)]
        return History(memory, self.versions.of(memory.id), merged)

    def unlink(self, ids: list[str]) -> None:
        """Leave memories in the trash as they are, no longer linked to a merge (the
        versions of a memory edited apart, once a person resolved it)."""
        with self.db.write() as conn:
            conn.executemany(
                "UPDATE memories SET merged_into = NULL WHERE id = ? AND deleted_at IS NOT NULL",
                [(i,) for i in ids],
            )

    def unmark_merged(self, ids: list[str]) -> None:
        """Bring a merge's sources back from the trash, unlinked."""
        with self.db.write() as conn:
            conn.executemany(
                "UPDATE memories SET deleted_at = NULL, merged_into = NULL WHERE id = ?",
                [(i,) for i in ids],
            )

    def journal_head(self) -> int:
        """The journal's last change (`changes_since` reads what came after it)."""
        return int(self.db.query("SELECT COALESCE(MAX(seq), 0) FROM changes")[0][0])

    def changes_since(self, seq: int, most: int = 5_000) -> tuple[int, list[Change] | None]:
        """What changed after journal entry `seq`, whoever wrote it, one Change per kind (in
        the order they first came; each memory under its strongest kind), and the last
        entry read. None for the changes when the
        journal no longer reaches back to `seq` (everything may have changed); a kind with
        over `most` memories carries no ids (any of them)."""
        rows = self.db.query(
            "SELECT seq, memory_id, kind FROM changes WHERE seq > ? ORDER BY seq", (seq,)
        )
        if not rows:
            return seq, []
        if rows[0][0] > seq + 1:  # entries are only ever deleted by pruning: a gap
            return rows[-1][0], None
        strongest: dict[str, str] = {}  # a memory's strongest change covers the weaker ones
        for _, memory_id, kind in rows:
            was = strongest.get(memory_id)
            if was is None or _STRENGTH.index(kind) > _STRENGTH.index(was):
                strongest[memory_id] = kind
        by_kind: dict[str, list[str]] = {}
        for memory_id, kind in strongest.items():
            by_kind.setdefault(kind, []).append(memory_id)
        changes = [
            Change(kind, tuple(ids) if len(ids) <= most else ()) for kind, ids in by_kind.items()
        ]
        return rows[-1][0], changes

    def mark_not_duplicates(self, a: str, b: str) -> None:
        """Remember that these two memories are not duplicates of each other."""
        a, b = sorted((a, b))
        with self.db.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO not_duplicates (a, b, at) VALUES (?, ?, ?)", (a, b, now())
            )

    def not_duplicates(self) -> set[tuple[str, str]]:
        """Every pair said not to be duplicates, each as (smaller id, larger id)."""
        return {(a, b) for a, b in self.db.query("SELECT a, b FROM not_duplicates")}

    def trashed_ids(self) -> list[str]:
        """Every memory in the trash."""
        return [r[0] for r in self.db.query("SELECT id FROM memories WHERE deleted_at IS NOT NULL")]

    def purge(self, ids: list[str]) -> int:
        """Delete memories for good (with their vectors): their text is zeroed in the
        database file, gone from the full-text index and from the WAL."""
        with self.db.write() as conn:
            gone = []
            for memory_id in ids:
                gone.append(self.get(memory_id).id)
                conn.execute("DELETE FROM memories WHERE id = ?", (gone[-1],))
                conn.execute(
                    "DELETE FROM not_duplicates WHERE a = ? OR b = ?", (memory_id, memory_id)
                )
            self.versions.forget(gone)
            self._said(gone)
        self.db.scrub()
        return len(ids)

    def record_recall(self, ids: Iterable[str]) -> None:
        """Count a use of each memory: recall_count + 1 and last_recalled_at now."""
        ids = list(dict.fromkeys(ids))
        if not ids or self.db.damage() is not None:  # a search still works on a damaged file
            return
        stamp = now()
        with self.db.write() as conn:
            conn.executemany(  # a memory in the trash is not in use
                "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ? "
                "WHERE id = ? AND deleted_at IS NULL",
                [(stamp, i) for i in ids],
            )

    # ---- vectors -------------------------------------------------------------------
    def needing_vectors(
        self, model_id: str, limit: int, after_seq: int = 0
    ) -> list[tuple[int, Memory, bool]]:
        """(seq, memory, has current vectors) of live memories after a seq that lack
        vectors from this model or keyword labels."""
        rows = self.db.query(
            f"SELECT m.seq, EXISTS (SELECT 1 FROM embeddings e WHERE e.memory_id = m.id "
            f"AND e.model_id = ?) AS has, {COLUMNS} FROM memories m "
            "WHERE m.seq > ? AND m.deleted_at IS NULL AND (m.keywords IS NULL OR NOT has) "
            "ORDER BY m.seq LIMIT ?",
            (model_id, after_seq, limit),
        )
        return [(r[0], row_to_memory(r[2:]), bool(r[1])) for r in rows]

    def set_keywords(self, memory_id: str, keywords: list[str]) -> None:
        """Store a memory's keyword labels (not a content change)."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE memories SET keywords = ? WHERE id = ?", (json.dumps(keywords), memory_id)
            )
