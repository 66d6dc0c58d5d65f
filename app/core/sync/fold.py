"""What a memory is, given every operation about it: a deterministic fold (pure, no I/O).

A memory's puts and purges form a graph: each names the versions it was made from (`base`).
The versions no other builds on are its heads. One head: the memory is that version. Several
heads that say different things (edits made apart): they are merged the way Mnemo merges
(every distinct statement, tags united), and every version that was edited concurrently with
another is kept in the trash as its own memory, linked to the result (`merged_into`), so
`unmerge` brings them back. Counts are the sum of every device's increments. The result
depends only on the set of operations, never on the order they arrived in.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from app.core import origin
from app.core.memory import (
    CONFIDENCES,
    MAX_TEXT_CHARS,
    join_statements,
    made_from,
    split_list,
    title_from,
)

# The fields a put carries (a memory's state as the user sees it; counts travel apart, and
# vectors and keyword labels are made on each device). A put carries its origins too
# (`ledger.record_of`), outside these: they are set once, never a change to send.
SYNCED = (
    "text",
    "title",
    "reasoning",
    "category",
    "tags",
    "references",
    "source",
    "source_project",
    "confidence",
    "created_at",
    "updated_at",
    "pinned",
    "deleted_at",
    "merged_into",
    "thread",
)
# What makes two versions say different things (not when or where they were written;
# trashed or not is added by `meaning`).
_MEANING = tuple(
    f
    for f in SYNCED
    if f not in ("source", "source_project", "created_at", "updated_at", "deleted_at")
)


def meaning(record: dict) -> str:
    """A version's content, for comparing two versions (trashed or not counts, not when)."""
    key = {name: record.get(name) for name in _MEANING}
    key["trashed"] = bool(record.get("deleted_at"))
    return json.dumps(key, sort_keys=True, ensure_ascii=False)


def digest(record: dict) -> str:
    """A version's every synced field, hashed (a local row differs from what was synced)."""
    payload = json.dumps({k: record.get(k) for k in SYNCED}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def original_id(memory_id: str, rev: str) -> str:
    """The id of the trashed copy that keeps version `rev` of a memory edited apart."""
    return f"{memory_id[:44]}-v{hashlib.sha256(rev.encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class Node:
    """A put (record) or a purge (record None) of one memory."""

    rev: str
    order: tuple  # (lamport clock, device, seq): a total order every device agrees on
    base: tuple[str, ...] = ()
    record: dict | None = None


@dataclass
class Counts:
    """A memory's observation and recall increments, summed over every device."""

    observations: int = 0
    recalls: int = 0
    last_recalled_at: str | None = None

    def add(self, observations: int, recalls: int, last: str | None) -> None:
        self.observations += observations
        self.recalls += recalls
        if last and (self.last_recalled_at is None or last > self.last_recalled_at):
            self.last_recalled_at = last


@dataclass
class Folded:
    """A memory's state after every operation: `record` None when purged (or never put)."""

    record: dict | None
    heads: list[str]
    # versions edited concurrently with another: each kept in the trash (id → its record)
    originals: dict[str, dict] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)  # each kept version's revision
    conflict: bool = False  # several heads said different things
    # operations not folded yet: a version they were made from has not arrived (a folder
    # sync delivers each device's files in order, but not one device's before another's)
    waiting: int = 0


def _complete(nodes: list[Node], covered=None) -> tuple[list[Node], int]:
    """The nodes whose every ancestor has arrived (in order), and how many wait. A base
    `covered(rev)` says was folded into a snapshot counts as arrived; a cycle of bases (only
    a hostile folder makes one) never completes."""
    by_rev = {n.rev: n for n in nodes}
    ok: dict[str, bool] = {}
    for start in nodes:
        stack, on_path = [start.rev], set()
        while stack:
            rev = stack[-1]
            if rev in ok:
                stack.pop()
                on_path.discard(rev)
                continue
            on_path.add(rev)
            bases = [
                b for b in by_rev[rev].base if not (covered and b not in by_rev and covered(b))
            ]
            if any(b not in by_rev or b in on_path and b not in ok for b in bases):
                ok[rev] = False
                stack.pop()
                on_path.discard(rev)
                continue
            todo = [b for b in bases if b not in ok]
            if todo:
                stack.extend(todo)
                continue
            ok[rev] = all(ok[b] for b in bases)
            stack.pop()
            on_path.discard(rev)
    done = sorted((n for n in nodes if ok[n.rev]), key=lambda n: n.order)
    return done, len(nodes) - len(done)


def _ancestors(nodes: list[Node]) -> dict[str, int]:
    """Each node's ancestors as a bit set (bit i = nodes[i]), over the bases that are known."""
    index = {n.rev: i for i, n in enumerate(nodes)}
    memo: dict[str, int] = {}
    for start in nodes:
        stack = [start.rev]
        while stack:  # iterative post-order: a long history never overflows the stack
            rev = stack[-1]
            if rev in memo:
                stack.pop()
                continue
            bases = [b for b in nodes[index[rev]].base if b in index]
            missing = [b for b in bases if b not in memo]
            if missing and not any(b in stack for b in missing):  # (a cycle: cut there)
                stack.extend(missing)
                continue
            bases = [b for b in bases if b in memo]
            bits = 0
            for b in bases:
                bits |= memo[b] | (1 << index[b])
            memo[rev] = bits
            stack.pop()
    return memo


def fold(memory_id: str, nodes: list[Node], covered=None) -> Folded:
    """The memory `memory_id` after every put and purge in `nodes` (any order; `covered`:
    `_complete`)."""
    nodes, waiting = _complete(nodes, covered)
    if not nodes:
        return Folded(None, [], waiting=waiting)
    based = {b for n in nodes for b in n.base}
    heads = [n for n in nodes if n.rev not in based]
    originals = _originals(memory_id, nodes)
    puts = _distinct([n for n in heads if n.record is not None])
    purged = any(n.record is None for n in heads)
    head_revs = [n.rev for n in heads]
    if not puts:
        return Folded(None, head_revs, originals, waiting=waiting)
    if len(puts) == 1 and not purged:
        return Folded(dict(puts[0].record), head_revs, originals, waiting=waiting)
    record = merged([n.record for n in puts])
    if purged and not record.get("deleted_at"):  # purged on one side: kept, in the trash
        record["deleted_at"] = max(n.record["updated_at"] or "" for n in puts) or None
    return Folded(record, head_revs, originals, conflict=len(puts) > 1, waiting=waiting)


def compact(nodes: list[Node], stable=lambda node: False, covered=None) -> list[Node]:
    """What a snapshot keeps of one memory's puts and purges, folding the same now and with
    any operation that comes later: its heads, the versions kept from edits made apart
    (device "~"), and whatever still waits with its ancestors. Each kept node names as its
    bases the kept nodes it was made from (so no two look concurrent that were not)."""
    done, _ = _complete(nodes, covered)
    complete = {n.rev for n in done}
    based = {b for n in done for b in n.base}
    by_rev = {n.rev: n for n in nodes}
    # a version goes only once every device has seen it (`stable`): none can still send
    # one made apart from it, or from it
    keep = {n.rev for n in done if n.rev not in based or not stable(n)}
    keep |= {n.rev for n in nodes if n.order[1] == "~"}
    stack = [n.rev for n in nodes if n.rev not in complete]
    while stack:
        rev = stack.pop()
        if rev not in keep:
            keep.add(rev)
            stack.extend(b for b in by_rev[rev].base if b in by_rev)
    ordered = sorted(nodes, key=lambda n: n.order)
    anc = _ancestors(ordered)
    index = {n.rev: i for i, n in enumerate(ordered)}
    kept = [n for n in ordered if n.rev in keep]
    out = []
    for node in kept:
        if node.rev not in complete:  # still waiting: kept as written (a cycle stays one)
            out.append(node)
            continue
        bases = [m.rev for m in kept if anc[node.rev] >> index[m.rev] & 1]
        out.append(Node(node.rev, node.order, tuple(bases), node.record))
    return out


def _distinct(puts: list[Node]) -> list[Node]:
    """One put per distinct content (the latest of each), in order."""
    latest: dict[str, Node] = {}
    for node in puts:
        latest[meaning(node.record)] = node
    return sorted(latest.values(), key=lambda n: n.order)


def origins(memory_id: str, nodes: list[Node]) -> dict[str, str]:
    """The revision each kept version (`_originals`) was made from (a version's id names
    it only by a hash)."""
    return {original_id(memory_id, n.rev): n.rev for n in nodes}


def _originals(memory_id: str, nodes: list[Node]) -> dict[str, dict]:
    """Every put with a concurrent put that says something else: a trashed copy each,
    linked to the memory. Only grows as operations arrive (concurrency never goes away)."""
    puts = [(i, n) for i, n in enumerate(nodes) if n.record is not None]
    if len(puts) < 2:
        return {}
    anc = _ancestors(nodes)
    kept: dict[str, dict] = {}
    for a, (i, p) in enumerate(puts):
        for j, q in puts[a + 1 :]:
            if anc[q.rev] >> i & 1 or anc[p.rev] >> j & 1:
                continue  # one was made from the other
            if meaning(p.record) == meaning(q.record):
                continue
            for node in (p, q):
                copy = dict(node.record)
                copy["deleted_at"] = copy.get("deleted_at") or copy.get("updated_at")
                copy["merged_into"] = memory_id
                kept[original_id(memory_id, node.rev)] = copy
    return kept


def merged(records: list[dict]) -> dict:
    """Versions merged as `Writer._merge` merges memories: every distinct statement, tags and
    references united, the first one's title unless it was made from its text."""
    first = records[0]
    text = join_statements([r["text"] for r in records])
    if len(text) > MAX_TEXT_CHARS:  # too long together: the first as it is (the others are
        text = first["text"]  # kept whole in the trash, as the versions edited apart)
    own_title = first.get("title") and not made_from(first["title"], first["text"])
    trashed = [r["deleted_at"] for r in records if r.get("deleted_at")]
    threads = {r.get("thread") for r in records}
    return {
        "text": text,
        "title": first["title"] if own_title else title_from(text),
        "reasoning": _within(
            join_statements([r["reasoning"] for r in records if r.get("reasoning")]),
            first.get("reasoning") or "",
        ),
        "category": first.get("category") or "note",
        "tags": split_list([t for r in records for t in split_list(r.get("tags"))]),
        "references": split_list([t for r in records for t in split_list(r.get("references"))]),
        "source": first.get("source") or "manual",
        "source_project": next(
            (r["source_project"] for r in records if r.get("source_project")), None
        ),
        "confidence": CONFIDENCES[
            max(CONFIDENCES.index(r.get("confidence") or "medium") for r in records)
        ],
        "created_at": min(r.get("created_at") or "" for r in records),
        "updated_at": max(r.get("updated_at") or "" for r in records),
        "pinned": any(r.get("pinned") for r in records),
        # a trashed side wins: a memory never comes back from the trash by itself (its
        # words are all kept, and restoring it brings them back)
        "deleted_at": max(trashed) if trashed else None,
        "merged_into": next((r["merged_into"] for r in records if r.get("merged_into")), None),
        "thread": first.get("thread") if len(threads) == 1 else None,
        # every origin of every version, as a merge keeps them
        "origins": [
            o.to_dict() for o in origin.joined([origin.decode(r.get("origins")) for r in records])
        ],
    }


def _within(joined: str, first: str) -> str:
    """A joined text, or the first one's when together they are over the limit."""
    return joined if len(joined) <= MAX_TEXT_CHARS else first
