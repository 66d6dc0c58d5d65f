"""Which of its own lines a device drops from its file in a space's folder (issue 45, ADR
0026 addendum "a device's file does not grow without end"): every edit of a shared memory
adds a whole sealed copy of it, and a file past `lines.MAX_FILE_BYTES` is read by nobody.

A line is dropped only when the space folds the same without it, now and with any line
that comes later (the fold is sync's, `sync.fold`; a base it does not hold makes a line
wait, so a dropped line must be one whose place can stand for it: `lines.Reading.stand_in`
reads a base naming a dropped number as its author's lines of that memory numbered before
it). A line of this device, of one memory, goes when:

- it is not the memory's first line (no `base`: who wrote the memory first is read from it,
  `Sharing.know`) and not this device's latest line of it (what the space says now);
- it was made from this device's own lines alone (its bases: none of another member's), and
  from every line of this device of that memory numbered before it (so its number stands
  for exactly what it stood on);
- this device's latest line of the memory was made from it (an edit superseded it);
- no version of the memory made apart from it says something else (no kept version of an
  edit made apart is lost: the fold's conflict rule keeps both sides in the trash).

What a later line of another member made from a dropped one, or apart from it, folds to the
same memory (both sides kept, merged as the fold merges); what is not kept is a superseded
version of this device's own that nobody had built on when it went (the trash of a member
who sees an edit made apart from it later holds that member's version and this device's
latest, not the version in between).
"""

from __future__ import annotations

from app.core.space.lines import Line
from app.core.sync.fold import meaning

COMPACT_MIN_BYTES = 256 * 1024  # dead weight worth a rewrite: at least this much ...
COMPACT_SHARE = 0.5  # ... and at least this share of the file (or the file past half the cap)


def droppable(me: str, taken: list[Line]) -> set[int]:
    """The numbers of this device's (`me`) lines the space no longer needs (above)."""
    by_memory: dict[str, list[Line]] = {}
    for line in taken:
        by_memory.setdefault(line.memory, []).append(line)
    out: set[int] = set()
    for group in by_memory.values():
        mine = sorted((n for n in group if n.author == me), key=lambda n: n.seq)
        if len(mine) > 2:
            out |= _dead(mine, group)
    return out


def _dead(mine: list[Line], group: list[Line]) -> set[int]:
    waiting = _waiting(group)
    if any(n.rev in waiting for n in mine):
        return set()  # (a line of this device still waits for one it was made from)
    group = [n for n in group if n.rev not in waiting]  # (another's line waiting for a base
    # nobody here holds, a forged one included: the fold does not fold it; when its base
    # comes, it is an edit made apart from what went, as the module's docstring says)
    by_rev = {n.rev: n for n in group}
    anc = _ancestors(group, by_rev)
    latest = mine[-1]
    own = {n.rev for n in mine}
    out = set()
    for i, line in enumerate(mine[:-1]):
        if not line.base or line.rev not in anc[latest.rev]:
            continue
        if not set(line.base) <= own or any(m.rev not in anc[line.rev] for m in mine[:i]):
            continue
        if line.record is not None and any(
            other.record is not None
            and other.rev != line.rev
            and other.rev not in anc[line.rev]
            and line.rev not in anc[other.rev]
            and meaning(other.record) != meaning(line.record)
            for other in group
        ):
            continue  # (a version made apart from it says something else: both kept)
        out.add(line.seq)
    return out


def _waiting(group: list[Line]) -> set[str]:
    """The lines of one memory that wait for a base no line here is, or for such a line."""
    held = {n.rev for n in group}
    out: set[str] = set()
    grew = True
    while grew:
        grew = False
        for n in group:
            if n.rev not in out and any(b not in held or b in out for b in n.base):
                out.add(n.rev)
                grew = True
    return out


def _ancestors(group: list[Line], by_rev: dict[str, Line]) -> dict[str, set[str]]:
    """Each line's ancestors (revisions), over bases that are all held (a cycle: cut)."""
    memo: dict[str, set[str]] = {}
    for start in group:
        stack = [start.rev]
        while stack:
            rev = stack[-1]
            if rev in memo:
                stack.pop()
                continue
            todo = [b for b in by_rev[rev].base if b not in memo and b not in stack]
            if todo:
                stack.extend(todo)
                continue
            got: set[str] = set()
            for b in by_rev[rev].base:
                got |= memo.get(b, set()) | {b}
            memo[rev] = got
            stack.pop()
    return memo


def worth_it(dead: int, total: int, cap: int) -> bool:
    """Whether a file of `total` bytes, `dead` of them droppable, is written again now."""
    if dead <= 0:
        return False
    return total > cap // 2 or (dead >= COMPACT_MIN_BYTES and dead >= COMPACT_SHARE * total)
