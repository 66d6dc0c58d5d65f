"""A space's lines (issue 45, ADR 0026): each member device's file of memories shared in
the space, sealed under an epoch's key and signed, and reading every member's file back.

    FOLDER/lines/<device>.jsonl     one device's lines, numbered 1, 2, 3 ... (`seq`)

Only its device writes a file, and writes it whole (`paths.replace_file`, as sync and the
membership record do), so a folder sync never merges two versions of it. A line is
`keys.seal_line` of a body:

    {"memory": ID, "rev": REV, "base": [REV...], "lamport": N, "rec": {fields} | null}

the state of one shared memory as its author last saw it (`rec` null: withdrawn), with
the versions it was made from (`base`), so the space's copies fold as one person's
devices do (`sync.fold`). Nothing but sealed lines reaches the folder.

Reading is reading data, never code (`read`): a line that is not JSON, in another
device's file, not signed by its author, of a device that may not write there
(`Members.may_write`: not a member, or past its removal's `upto`), that the key does not
open, or whose body is not a memory's state is skipped and said once; one of an epoch
whose key this device does not hold (yet, or ever: written after its removal) waits.

A device drops its own lines no other may still need (`compaction.py`), so a file's numbers
have gaps. A line's `base` naming a number its author's file no longer holds (a *gap*,
below the author's last line taken) stands for that author's lines of the same memory
numbered before it (`Reading.stand_in`): compaction drops only a line made from all of
them, so the fold sees the same versions, heads and edits made apart as over the full file.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.core import paths
from app.core.errors import InputError, MnemoError
from app.core.memory import Memory, guard_secrets
from app.core.space import keys
from app.core.space.checks import MAX_COUNT
from app.core.space.folder import device_files, holds
from app.core.space.membership import Members

LINES = "lines"
MAX_FILE_BYTES = 64 * 1024 * 1024
GAP_LOOKS = 1_000_000  # places of dropped lines hashed a pass, at most (about a second)
# The fields a space's line carries: what a member sees of a memory. How this device keeps
# it (pinned, its project, its thread, where it came from) stays here.
SHARED = (
    "text",
    "title",
    "reasoning",
    "category",
    "tags",
    "references",
    "confidence",
    "created_at",
    "updated_at",
    "deleted_at",
)
_FILE = re.compile(r"([0-9a-f]{64})\.jsonl")
_SEQ = re.compile(rb'"seq":\s*(\d{1,18})')  # (a damaged line's number: not a gap)
_ID = re.compile(r"[a-z0-9_\-]{1,64}")  # (memories' ids: lowercase, as the store reads them)


def rev_of(space: str, author: str, seq: int) -> str:
    """A line's revision: its place (space, author, number) hashed; the same on every
    device, and no two lines of one author share one."""
    return hashlib.sha256(f"{space}\0{author}\0{seq}".encode()).hexdigest()[:24]


def shared_of(memory: Memory) -> dict:
    """What a memory's line says of it."""
    return {name: getattr(memory, name) for name in SHARED}


def digest(record: dict | None) -> str:
    """A memory's shared fields, hashed (a change here is one that differs from this)."""
    if record is None:
        return "withdrawn"
    text = json.dumps({k: record.get(k) for k in SHARED}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Line:
    """One line taken: its author, number, epoch and the body opened."""

    author: str
    seq: int
    memory: str
    rev: str
    base: tuple[str, ...]
    lamport: int
    record: dict | None


@dataclass
class Reading:
    """What a look at the space's lines found: the lines taken, how many wait for a key
    this device does not hold, what was skipped (each once: "lines/<file> line N: why"),
    and each author's last number taken."""

    lines: list[Line] = field(default_factory=list)
    waiting: int = 0
    problems: list[str] = field(default_factory=list)
    last: dict[str, int] = field(default_factory=dict)
    gaps: dict[str, tuple[str, int]] = field(default_factory=dict)  # rev: (author, seq)
    fresh: list[tuple[str, int, str, str]] = field(default_factory=list)  # (author, seq,
    # hash, text) of the lines taken that this device had not taken before
    dropped: list[tuple[str, int]] = field(default_factory=list)  # (author, seq) of lines it
    # took that their member dropped since (compaction): their text need not be kept

    def stand_in(self) -> None:
        """Each line's bases that are gaps (lines their author dropped) replaced by what
        they stand for: that author's lines of the same memory numbered before the gap."""
        if not self.gaps:
            return
        numbered: dict[tuple[str, str], list[Line]] = {}
        for n in self.lines:
            numbered.setdefault((n.author, n.memory), []).append(n)
        out = []
        for n in self.lines:
            if not any(b in self.gaps for b in n.base):
                out.append(n)
                continue
            base: list[str] = []
            for b in n.base:
                author, seq = self.gaps.get(b, ("", 0))
                under = [m.rev for m in numbered.get((author, n.memory), []) if m.seq < seq]
                base += under or [b]  # (not a gap, or nothing under it: as it is, and waits)
            out.append(replace(n, base=tuple(dict.fromkeys(base))))
        self.lines = out


def file_name(device: str) -> str:
    return keys.unb64(device).hex() + ".jsonl"


def write_own(root: Path, device: str, lines: list[str]) -> None:
    """This device's file of lines, replaced whole (its sealed lines, in order) unless it
    holds them already."""
    folder = Path(root) / LINES
    if folder.is_symlink():
        raise InputError(f"{folder} is a link, not a folder; not written through")
    text = "".join(line + "\n" for line in lines)
    path = folder / file_name(device)
    if holds(path, text.encode()):
        return  # (as it is: not written again, so a folder sync has nothing to carry)
    try:
        paths.private_dir(folder)
        paths.replace_file(path, lambda f: f.write(text))
    except OSError as exc:
        raise InputError(f"cannot write the space folder {root}: {exc.strerror}") from None


def seal(key: bytes, space: str, epoch: str, author: keys.DeviceKey, seq: int, body: dict) -> str:
    """A body sealed as the `seq`-th line of its author: the text its file holds."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return json.dumps(keys.seal_line(key, space, epoch, author, seq, text), sort_keys=True)


@dataclass
class Kept:
    """What this device took before of each other device's lines (`space/ledger.py`): per
    author, each number's hash; and the sealed text of one, when still kept."""

    hashes: dict[str, dict[int, str]] = field(default_factory=dict)
    with_text: set[tuple[str, int]] = field(default_factory=set)  # (author, seq) whose text
    # is kept (not of a line its member dropped since)
    text: Callable[[str, int], str | None] = lambda author, seq: None


def line_hash(text: bytes) -> str:
    """A line's hash as this device keeps it (what it took, to see it changed)."""
    return hashlib.sha256(text.strip()).hexdigest()[:32]


def read(
    root: Path, space: str, state: Members, held: dict[str, bytes], kept: Kept | None = None
) -> Reading:
    """Every member's lines this device may take (`state.may_write`) and can open (`held`:
    its epoch keys); InputError when the folder itself is missing. `kept`: what it took
    before; a line it took that changed, or a file that lost lines it took (put back older,
    cut short, deleted), does not change what it takes: the kept line is used, said once."""
    out, kept = Reading(), kept or Kept()
    present: dict[str, set[int]] = {}
    files = device_files(Path(root), LINES, _FILE, MAX_FILE_BYTES, out.problems)
    read_here: set[str] = set()
    for owner, shown, data in files:
        if owner not in state.person_of:  # (a stranger's file: said, never read)
            out.problems.append(f"{shown}: by a device that is not a member, not read")
            continue
        read_here.add(owner)
        bad = _Bad(shown)
        seen: set[int] = set()
        had = kept.hashes.get(owner, {})
        rows = data.split(b"\n", MAX_LINES)
        if len(rows) > MAX_LINES:
            out.problems.append(f"{shown}: over {MAX_LINES:,} lines: the rest not read")
            rows = rows[:MAX_LINES]
        upto = state.gone.get(owner, 0)
        rewritten = (
            owner in state.past and past_digest(rows, space, owner, upto) != (state.past[owner])
        )
        if rewritten:  # (a removed member's past, not as its remover read it)
            out.problems.append(
                f"{shown}: lines of {WHO} up to their removal differ from what the removal "
                "recorded: those this device did not take before are not taken"
            )
        for number, text in enumerate(rows, 1):
            if not text.strip():
                continue
            one = _signed(text, space, owner) if rewritten else None
            if one and one["seq"] <= upto and one["seq"] not in had:
                continue
            if not text.lstrip().startswith(b"{"):  # (junk: said without a parse)
                bad.add(number, "not JSON")
                continue
            numbers = [int(s) for s in _SEQ.findall(text)]
            present.setdefault(owner, set()).update(numbers)
            seq = numbers[0] if len(numbers) == 1 else 0
            if seq in had and seq not in seen and had[seq] != line_hash(text):
                out.problems.append(
                    f"{shown} line {number}: line {seq} of {WHO} changed after this device "
                    "took it: kept as it was"
                )
                text = (kept.text(owner, seq) or "").encode()
                if not text:
                    continue
            _one(out, bad, text, number, owner, space, state, held, seen, had)
        out.problems += bad.summary()
    _lost(out, kept, present, read_here, space, state, held)
    out.gaps = _gaps(space, out, present)
    out.stand_in()
    return out


WHO = "this member"  # (in a problem: the member's name once `named` reads it)
MAX_LINES = 200_000  # lines read of one file (a sealed line is over 400 bytes: 64 MB holds fewer)
SAID_BAD = 3  # bad lines of one file said one by one; the rest in one line


class _Bad:
    """The bad lines of one file: the first few said one by one, the rest counted."""

    def __init__(self, shown: str):
        self.shown, self.said, self.more, self.why = shown, [], 0, {}

    def add(self, number: int, why: str) -> None:
        if len(self.said) < SAID_BAD:
            self.said.append(f"{self.shown} line {number}: {why}, skipped")
            return
        self.more += 1
        self.why[why] = self.why.get(why, 0) + 1

    def summary(self) -> list[str]:
        if not self.more:
            return self.said
        why = ", ".join(w for w, _ in sorted(self.why.items(), key=lambda p: -p[1])[:3])
        return [*self.said, f"{self.shown}: {self.more:,} more lines not taken ({why})"]


def _one(out, bad, text, number, owner, space, state, held, seen, had) -> None:
    """One line read: taken (and kept as new when this device had not taken it), waiting
    for a key, or said as bad."""
    try:
        line = _take(text, owner, space, state, held, seen)
    except _Waiting:
        out.waiting += 1
        return
    except (InputError, MnemoError) as exc:
        bad.add(number, str(exc))
        return
    seen.add(line.seq)
    out.lines.append(line)
    out.last[owner] = max(out.last.get(owner, 0), line.seq)
    if line.seq not in had:
        out.fresh.append((owner, line.seq, line_hash(text), text.decode("utf-8").strip()))


def _lost(out, kept: Kept, present, read_here, space, state, held) -> None:
    """The lines this device took that a file no longer holds, used still: every one of a
    device no longer a member (its past is read from what was kept, never from the file
    again), and of a member's those past the last number its file holds (put back older or
    cut short; a number dropped below it is compaction's gap, `stand_in`). Said once a file."""
    for owner, had in sorted(kept.hashes.items()):
        there = present.get(owner, set())
        top = max(there, default=0)
        member = owner in state.members
        lost = [s for s in sorted(had) if s not in there and (s > top or not member)]
        if member:
            gone = [s for s in had if s < top and s not in there]
            out.dropped += [(owner, s) for s in gone if (owner, s) in kept.with_text]
        rolled = False
        seen = {n.seq for n in out.lines if n.author == owner}
        for seq in lost:
            text = kept.text(owner, seq) if (owner, seq) in kept.with_text else None
            if not text or seq in seen:
                continue
            bad = _Bad(f"{LINES}/{file_name(owner)[:12]}…")
            _one(out, bad, text.encode(), seq, owner, space, state, held, seen, had)
            rolled = rolled or seq > top
        if rolled and owner in read_here:
            out.problems.append(
                f"{LINES}/{file_name(owner)[:12]}…: {WHO}'s file lost lines this device had: kept"
            )


def _gaps(space: str, out: Reading, present: dict[str, set[int]]) -> dict[str, tuple[str, int]]:
    """The bases no line taken is, that are the place of a number missing from its
    author's file (a line compaction dropped): {rev: (author, seq)}. A dropped line of a
    memory lies between its author's first and latest lines of that memory (both are
    kept), so only those spans of the memories whose lines name a missing base are looked
    at, from the top down, at most `GAP_LOOKS` places a pass (a base past that waits, as
    one not arrived yet): a line numbered far away costs nothing more."""
    have_rev = {n.rev for n in out.lines}
    missing = {b for n in out.lines for b in n.base} - have_rev
    if not missing:
        return {}
    wanting = {n.memory for n in out.lines if any(b in missing for b in n.base)}
    spans: dict[str, list[tuple[int, int]]] = {}
    numbers: dict[tuple[str, str], list[int]] = {}
    for n in out.lines:
        if n.memory in wanting:
            numbers.setdefault((n.author, n.memory), []).append(n.seq)
    for (author, _), seqs in numbers.items():
        if len(seqs) > 1:
            spans.setdefault(author, []).append((min(seqs), max(seqs)))
    found: dict[str, tuple[str, int]] = {}
    looks = GAP_LOOKS
    for author, pairs in sorted(spans.items()):
        have = present.get(author, set())
        for lo, hi in _merged(pairs):
            for seq in range(hi - 1, lo, -1):
                if len(found) == len(missing) or looks <= 0:
                    return found
                if seq in have:
                    continue
                looks -= 1
                rev = rev_of(space, author, seq)
                if rev in missing:
                    found[rev] = (author, seq)
    return found


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans (lo, hi) joined where they overlap, the highest first."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out[::-1]


def last_written(root: Path, space: str, state: Members) -> dict[str, int]:
    """Each device's last line number its file holds that is signed and that it may write
    (`may_write` at its epoch): what a removal names as `upto` (the lines read so far)."""
    out: dict[str, int] = {}
    for owner, _, data in device_files(Path(root), LINES, _FILE, MAX_FILE_BYTES, []):
        for text in data.split(b"\n"):
            outer = _signed(text, space, owner)
            if outer and state.may_write(owner, outer["epoch"], outer["seq"]):
                out[owner] = max(out.get(owner, 0), outer["seq"])
    return out


def past(root: Path, space: str, upto: dict[str, int]) -> dict[str, str]:
    """A digest of each device's signed lines numbered up to `upto` as its file holds them
    now: what a removal names (`past`), so a device that never took those lines (one that
    joins later) takes them only as the remover read them, not as the removed device may
    rewrite them after."""
    out = {}
    for owner, _, data in device_files(Path(root), LINES, _FILE, MAX_FILE_BYTES, []):
        if owner in upto:
            out[owner] = past_digest(data.split(b"\n"), space, owner, upto[owner])
    return {d: out.get(d, past_digest([], space, d, upto[d])) for d in upto}


def past_digest(rows: list[bytes], space: str, owner: str, upto: int) -> str:
    """The digest of the signed lines of `owner` numbered up to `upto` among `rows`."""
    said = sorted(
        (outer["seq"], line_hash(text))
        for text in rows
        if (outer := _signed(text, space, owner)) and outer["seq"] <= upto
    )
    return hashlib.sha256(json.dumps(said).encode()).hexdigest()


def _signed(text: bytes, space: str, owner: str) -> dict | None:
    """A line's outer form when it is one of `owner`'s in `space`, numbered and signed."""
    try:
        outer = json.loads(text)
        seq = outer["seq"]
        if outer.get("space") != space or outer.get("author") != owner:
            return None
        numbered = isinstance(seq, int) and not isinstance(seq, bool) and 0 < seq < MAX_COUNT
        if numbered and isinstance(outer.get("epoch"), str) and keys.line_signed(outer):
            return outer
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return None


def named(problems: list[str], persons: dict[str, str]) -> list[str]:
    """The problems of a look at the lines with the member whose device wrote the file
    named: a file too big to read (what they share from it does not reach this device), a
    line or a file of theirs that changed after this device took it."""
    out = []
    for problem in problems:
        shown, _, why = problem.partition(": ")
        start = _SHOWN.match(shown)
        device = start and next((d for d in persons if file_name(d).startswith(start[1])), "")
        who = persons.get(device or "") or "a member"
        if start and why.startswith("over ") and " MB" in why:
            problem = (
                f"{shown}: {who}'s device wrote more than {MAX_FILE_BYTES >> 20} MB of lines, "
                f"not read: what {who} shares from it does not reach this device (ask them "
                "to update Mnemo, which keeps it smaller, or to share less)"
            )
        elif start:
            problem = problem.replace(WHO, who)
        out.append(problem)
    return out


_SHOWN = re.compile(rf"{LINES}/([0-9a-f]{{12}})…")


class _Waiting(Exception):
    """A line of an epoch whose key this device does not hold."""


def _take(
    text: bytes, owner: str, space: str, state: Members, held: dict[str, bytes], seen: set[int]
) -> Line:
    try:
        outer = json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError):
        raise InputError("not JSON") from None
    if not isinstance(outer, dict):
        raise InputError("not a space line")
    if outer.get("space") != space:
        raise InputError("a line of another space")
    if outer.get("author") != owner:
        raise InputError("written by another device than the file's")
    seq, epoch = outer.get("seq"), outer.get("epoch")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1 or not isinstance(epoch, str):
        raise InputError("a line without its number or epoch")
    if seq >= MAX_COUNT:
        raise InputError(f"a line numbered past {MAX_COUNT - 1} (what a removal can name)")
    if seq in seen:
        raise InputError(f"a second line numbered {seq}")
    if not keys.line_signed(outer):
        raise InputError("not signed by its author")
    if not state.may_write(owner, epoch, seq):
        if owner in state.gone and owner not in state.members:
            if owner in state.recipients.get(epoch, set()):
                raise InputError(
                    f"written by a removed device after its removal (line {seq}, it "
                    f"accepted up to {state.gone[owner]})"
                )
            raise InputError("written by a removed device at an epoch it was not in")
        if epoch not in state.recipients:
            if epoch not in held:  # (an epoch whose event has not arrived yet)
                raise _Waiting()
            raise InputError("an epoch the space does not know")
        raise InputError("written by a device that is not a member at its epoch")
    if epoch not in held:
        raise _Waiting()
    body = keys.open_line(held[epoch], outer)
    return _body(body, space, owner, seq)


def _body(text: str, space: str, owner: str, seq: int) -> Line:
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError("a body that is not JSON") from None
    if not isinstance(body, dict):
        raise InputError("a body that is not a memory's state")
    memory, rev, base, lamport = (body.get(k) for k in ("memory", "rev", "base", "lamport"))
    if not isinstance(memory, str) or not _ID.fullmatch(memory):
        raise InputError("a body without a memory's id")
    if rev != rev_of(space, owner, seq):
        raise InputError("a body whose revision is not its place's")
    if not isinstance(base, list) or not all(isinstance(b, str) for b in base) or len(base) > 64:
        raise InputError("a body without the versions it was made from")
    if not isinstance(lamport, int) or isinstance(lamport, bool) or not 0 < lamport < MAX_COUNT:
        raise InputError("a body without its clock")
    record = body.get("rec")
    if record is not None:
        if not isinstance(record, dict):
            raise InputError("a body whose memory is not a record")
        given = {k: record[k] for k in SHARED if k in record}
        record = shared_of(Memory.from_dict({**given, "id": memory}))  # types, ranges, sizes
        guard_secrets(dict(record), "refuse")  # the same check as every other path
    return Line(owner, seq, memory, rev, tuple(base), lamport, record)
