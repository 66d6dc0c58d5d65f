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
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.core import paths
from app.core.errors import InputError, MnemoError
from app.core.memory import Memory, guard_secrets
from app.core.space import keys
from app.core.space.folder import device_files
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
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == text.encode():
            return  # (as it is: not written again, so a folder sync has nothing to carry)
    except OSError:
        pass
    try:
        paths.private_dir(folder)
        paths.replace_file(path, lambda f: f.write(text))
    except OSError as exc:
        raise InputError(f"cannot write the space folder {root}: {exc.strerror}") from None


def seal(key: bytes, space: str, epoch: str, author: keys.DeviceKey, seq: int, body: dict) -> str:
    """A body sealed as the `seq`-th line of its author: the text its file holds."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return json.dumps(keys.seal_line(key, space, epoch, author, seq, text), sort_keys=True)


def read(root: Path, space: str, state: Members, held: dict[str, bytes]) -> Reading:
    """Every member's lines this device may take (`state.may_write`) and can open (`held`:
    its epoch keys); InputError when the folder itself is missing."""
    out = Reading()
    present: dict[str, set[int]] = {}
    for owner, shown, data in device_files(Path(root), LINES, _FILE, MAX_FILE_BYTES, out.problems):
        seen: set[int] = set()
        for number, text in enumerate(data.split(b"\n"), 1):
            if not text.strip():
                continue
            present.setdefault(owner, set()).update(int(s) for s in _SEQ.findall(text))
            try:
                line = _take(text, owner, space, state, held, seen)
            except _Waiting:
                out.waiting += 1
                continue
            except (InputError, MnemoError) as exc:
                out.problems.append(f"{shown} line {number}: {exc}, skipped")
                continue
            seen.add(line.seq)
            out.lines.append(line)
            out.last[owner] = max(out.last.get(owner, 0), line.seq)
    out.gaps = _gaps(space, out, present)
    out.stand_in()
    return out


def _gaps(space: str, out: Reading, present: dict[str, set[int]]) -> dict[str, tuple[str, int]]:
    """The bases no line taken is, that are the place of a number missing from its
    author's file below its last line taken (a line compaction dropped): {rev: (author,
    seq)}. Looked for from each author's last number down, at most `GAP_LOOKS` places a
    pass (a base past that waits, as one not arrived yet)."""
    missing = {b for n in out.lines for b in n.base} - {n.rev for n in out.lines}
    found: dict[str, tuple[str, int]] = {}
    looks = GAP_LOOKS
    for author, last in sorted(out.last.items()):
        have = present.get(author, set())
        for seq in range(last - 1, 0, -1):
            if len(found) == len(missing) or looks <= 0:
                return found
            if seq in have:
                continue
            looks -= 1
            rev = rev_of(space, author, seq)
            if rev in missing:
                found[rev] = (author, seq)
    return found


def last_written(root: Path, space: str, state: Members) -> dict[str, int]:
    """Each device's last line number its file holds that is signed and that it may write
    (`may_write` at its epoch): what a removal names as `upto` (the lines read so far)."""
    out: dict[str, int] = {}
    for owner, _, data in device_files(Path(root), LINES, _FILE, MAX_FILE_BYTES, []):
        for text in data.split(b"\n"):
            try:
                outer = json.loads(text)
                seq, epoch = outer["seq"], outer["epoch"]
                if outer.get("space") != space or outer.get("author") != owner:
                    continue
                signed = isinstance(seq, int) and keys.line_signed(outer)
                if signed and state.may_write(owner, epoch, seq):
                    out[owner] = max(out.get(owner, 0), seq)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue
    return out


def named(problems: list[str], persons: dict[str, str]) -> list[str]:
    """The problems of a look at the lines, a file too big to read said with the member
    whose device wrote it (what they share from it does not reach this device)."""
    out = []
    for problem in problems:
        shown, _, why = problem.partition(": ")
        if shown.startswith(f"{LINES}/") and why.startswith("over "):
            start = shown[len(LINES) + 1 :].rstrip("…")
            device = next((d for d in persons if file_name(d).startswith(start)), "")
            who = persons.get(device) or "a member"
            problem = (
                f"{shown}: {who}'s device wrote more than {MAX_FILE_BYTES >> 20} MB of lines, "
                f"not read: what {who} shares from it does not reach this device (ask them "
                "to update Mnemo, which keeps it smaller, or to share less)"
            )
        out.append(problem)
    return out


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
    if not isinstance(lamport, int) or isinstance(lamport, bool) or not 0 < lamport < 2**53:
        raise InputError("a body without its clock")
    record = body.get("rec")
    if record is not None:
        if not isinstance(record, dict):
            raise InputError("a body whose memory is not a record")
        given = {k: record[k] for k in SHARED if k in record}
        record = shared_of(Memory.from_dict({**given, "id": memory}))  # types, ranges, sizes
        guard_secrets(dict(record), "refuse")  # the same check as every other path
    return Line(owner, seq, memory, rev, tuple(base), lamport, record)
