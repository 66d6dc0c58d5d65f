"""A space's folder on disk (ADR 0026): its mark and each member device's own file of
membership events.

    FOLDER/mnemo-space.json             what space this folder holds (its id and root)
    FOLDER/members/<device>.jsonl       one device's signed events, one JSON object a line

`<device>` is the hex of the device's public key (64 letters: the same on every file
system, whatever its case rules). Only that device writes its file, and writes it whole
(`paths.replace_file`, as sync writes its device files: ADR 0015), so a folder sync never
has to choose between two versions. Reading the folder is reading data, never code: a
line that is not JSON, not an event, of another space, not signed by the device it
names, or in another device's file is skipped and said, once, and the rest is read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.core import paths
from app.core.errors import InputError
from app.core.space import keys
from app.core.space.membership import Record, event_hash

MARK = "mnemo-space.json"
MEMBERS = "members"
MAX_FILE_BYTES = 16 * 1024 * 1024  # a team's record is a few hundred events of a few KB
MAX_MARK_BYTES = 64 * 1024
MAX_EVENTS = 20_000  # events read of one file (a device's own record: a few dozen)
_FILE = re.compile(r"([0-9a-f]{64})(\.sync-conflict-[^/]*)?\.jsonl")


def file_name(device: str) -> str:
    """The name of a device's file of events: the hex of its public key."""
    return keys.unb64(device).hex() + ".jsonl"


def _device(hex_name: str) -> str:
    return keys.b64(bytes.fromhex(hex_name))


def device_files(
    root: Path, part: str, pattern: re.Pattern, limit: int, problems: list[str]
) -> Iterator[tuple[str, str, bytes]]:
    """Each device's file in `root/part` (named as `pattern` says: the hex of its key
    first), as (its device, how it is shown, its bytes): a link, a file that cannot be
    read or one over `limit` bytes is said in `problems` and skipped; any other name (a
    file being written, Syncthing's own) is not ours. InputError when `root` is missing or
    cannot be listed. (The members' events here, their lines in `lines.py`.)"""
    if not root.is_dir():
        raise InputError(f"the space folder {root} is missing (unmounted, or moved?)")
    folder = root / part
    if folder.is_symlink():
        problems.append(f"{part} is a link, not a folder: not read")
        return
    if not folder.is_dir():
        return
    try:
        found = sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"cannot read the space folder {root}: {exc.strerror}") from None
    for path in found:
        match = pattern.fullmatch(path.name)
        if not match:
            continue
        shown = f"{part}/{path.name[:12]}…"
        if path.is_symlink() or not path.is_file():
            problems.append(f"{shown}: not a regular file, not read")
            continue
        try:
            with paths.open_regular(path) as f:
                data = f.read(limit + 1)
        except OSError as exc:
            problems.append(f"{shown}: cannot be read ({exc.strerror or exc})")
            continue
        if len(data) > limit:
            problems.append(f"{shown}: over {limit >> 20} MB, not read")
            continue
        yield _device(match.group(1)), shown, data


@dataclass
class Reading:
    """What a look at the folder found besides the events: the lines skipped, each said
    once ("members/<file> line N: why")."""

    problems: list[str] = field(default_factory=list)


class SpaceFolder:
    """One space's folder, seen from this device."""

    def __init__(self, root: Path):
        self.root = Path(root)

    # ---- setting up ----------------------------------------------------------------
    @staticmethod
    def check(root: Path, space: str | None = None, known: dict | None = None) -> Path:
        """The folder a space is made or joined in, as an absolute path, not made yet;
        InputError when it is a file, holds another space (`space`: the one it may hold),
        or holds other files (Syncthing's own dot files are fine)."""
        root = Path(root).expanduser().absolute()
        if root.exists() and not root.is_dir():
            raise InputError(f"{root} is a file, not a folder")
        if not root.exists():
            return root
        mark = SpaceFolder(root).mark()
        if mark is not None and mark.get("id") != space:
            raise InputError(
                f"{root} already holds {_which(mark, known or {})}; give a "
                "folder of its own to each space"
            )
        try:
            others = [p for p in root.iterdir() if not p.name.startswith(".")]
        except OSError as exc:
            raise InputError(f"cannot read the folder {root}: {exc.strerror}") from None
        if others and mark is None:
            raise InputError(
                f"{root} holds other files; give an empty folder (a folder of its own inside "
                "the shared folder is best)"
            )
        return root

    def prepare(self, mark: dict | None = None) -> None:
        """Make the folder and its members folder (ours alone: 0700) and write its mark
        when given; InputError when it cannot be written."""
        if (self.root / MEMBERS).is_symlink():  # (our file would be written where it points)
            raise InputError(f"{self.root / MEMBERS} is a link, not a folder; not written through")
        try:
            paths.private_dir(self.root)
            paths.private_dir(self.root / MEMBERS)
            if mark is not None:
                text = json.dumps(mark, sort_keys=True) + "\n"
                paths.replace_file(self.root / MARK, lambda f: f.write(text))
        except OSError as exc:
            raise InputError(f"cannot write the space folder {self.root}: {exc.strerror}") from None

    def mark(self) -> dict | None:
        """The folder's mark (None: none, or not a readable one)."""
        path = self.root / MARK
        if path.is_symlink() or not path.is_file():
            return None
        try:
            with paths.open_regular(path) as f:
                data = f.read(MAX_MARK_BYTES + 1)
            if len(data) > MAX_MARK_BYTES:
                return None  # (a mark is 150 bytes; one planted huge is not read)
            mark = json.loads(data.decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        return mark if isinstance(mark, dict) else None

    # ---- reading -------------------------------------------------------------------
    def read(self, record: Record, kept: list[dict] = ()) -> Reading:
        """`kept` (the others' events this device saw before, from its own database) and
        every device's events from the folder, added to `record`: a device's record only
        grows, so a member's file that lost events, truncated or put back by someone who
        can write the folder, undoes nothing; the loss is said, once a file. What was
        skipped is said once a line. InputError when the folder itself is missing or
        unreadable."""
        out = Reading()
        had: dict[str, str] = {}  # event → its author, for those kept
        for event in kept:
            try:
                had[record.keep(event)] = event["author"]
            except InputError:
                continue  # (kept after its checks: cannot happen, and costs nothing)
        found_here: set[str] = set()
        self._read_files(record, out, found_here)
        lost: dict[str, int] = {}
        for name, author in had.items():
            if name not in found_here:
                lost[author] = lost.get(author, 0) + 1
        for author, count in sorted(lost.items()):
            out.problems.append(
                f"{MEMBERS}/{file_name(author)[:12]}…: file lost events this device had: kept "
                f"({count})"
            )
        return out

    def _read_files(self, record: Record, out: Reading, found_here: set[str]) -> None:
        """Every file's lines: parsed and checked, then added device by device
        (`_admitted`)."""
        pending: dict[str, list[tuple[str, int, dict]]] = {}  # device → its lines' events
        files = device_files(self.root, MEMBERS, _FILE, MAX_FILE_BYTES, out.problems)
        for owner, shown, data in files:
            count = 0
            for number, line in enumerate(data.split(b"\n"), 1):
                if not line.strip():
                    continue
                count += 1
                if count > MAX_EVENTS:
                    out.problems.append(f"{shown}: over {MAX_EVENTS} events: the rest not read")
                    break
                event, why = _parse(record, owner, line)
                if why:
                    out.problems.append(f"{shown} line {number}: {why}")
                else:
                    pending.setdefault(owner, []).append((shown, number, event))
        _admitted(record, pending, out, found_here)

    # ---- writing (this device's own file only) -------------------------------------
    def restore_own(self, device: str, events: list[dict]) -> None:
        """This device's file written again when it differs from the events it made (lost,
        cut short or put back by someone else: a newcomer waits on it); nothing when it made
        none, or when the folder cannot take it now (a link, a write refused: the pass goes
        on, and the folder's read says what is wrong)."""
        if not events or (self.root / MEMBERS).is_symlink():
            return
        try:
            self.write_own(device, events)
        except InputError:
            return

    def write_own(self, device: str, events: list[dict]) -> None:
        """This device's file, replaced whole by the events it made, in order (unless it
        holds them already: a folder sync then has nothing to carry)."""
        text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in events)
        path = self.root / MEMBERS / file_name(device)
        if holds(path, text.encode()) and not (self.root / MEMBERS).is_symlink():
            return
        self.prepare()
        try:
            paths.replace_file(self.root / MEMBERS / file_name(device), lambda f: f.write(text))
        except OSError as exc:
            raise InputError(f"cannot write the space folder {self.root}: {exc.strerror}") from None


def holds(path: Path, data: bytes) -> bool:
    """Whether the regular file at `path` holds exactly `data` (read no further than that)."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with paths.open_regular(path) as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def read_capped(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file at `path` (b"" when there is none), None when it holds
    more than `limit` bytes or cannot be read: never more than that is read."""
    if path.is_symlink() or not path.is_file():
        return b""
    try:
        with paths.open_regular(path) as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    return None if len(data) > limit else data


def _parse(record: Record, owner: str, line: bytes) -> tuple[dict, str]:
    """One line's event, its shape checked (`Record.check`); why it was skipped ("" when
    it was not)."""
    try:
        event = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}, "not JSON, skipped"
    if isinstance(event, dict) and event.get("author") != owner:
        return {}, "written by another device than the file's, skipped"
    try:
        record.check(event)
    except InputError as exc:
        return {}, f"{exc}, skipped"
    return event, ""


def _admitted(
    record: Record,
    pending: dict[str, list[tuple[str, int, dict]]],
    out: Reading,
    found_here: set[str],
) -> None:
    """The events read, added to `record` (signatures checked) device by device as far
    as the devices could be members (`Record.candidates`: the creator, and whom such a
    device admitted); the others' files are said once each and cost nothing more (a
    stranger's flood is neither verified nor folded: review of issue 45)."""

    def take(lines: list[tuple[str, int, dict]]) -> None:
        for shown, number, event in lines:
            name = event_hash(event)
            if name in record.events:  # the same bytes as one held: signed already
                found_here.add(name)
                continue
            try:
                found_here.add(record.add(event))
            except InputError as exc:
                out.problems.append(f"{shown} line {number}: {exc}, skipped")

    if record.root not in record.events:  # the space's create first: it names its creator
        for device, lines in pending.items():
            root = [line for line in lines if line[2]["kind"] == "create" and _root(record, line)]
            take(root)
            pending[device] = [line for line in lines if line not in root]
    while True:
        could = record.candidates()
        ready = [device for device in pending if device in could]
        if not ready:
            break
        for device in ready:
            take(pending.pop(device))
    for lines in pending.values():
        files = sorted({shown for shown, _, _ in lines})
        for shown in files:
            count = sum(1 for line in lines if line[0] == shown)
            out.problems.append(
                f"{shown}: {count} event{'s' if count > 1 else ''} by a device that is not "
                "a member, not read"
            )


def _root(record: Record, line: tuple[str, int, dict]) -> bool:
    return event_hash(line[2]) == record.root


def _which(mark: dict, known: dict) -> str:
    """The space a folder's mark names, by the name this device keeps (`known`: this
    device's spaces by id) when it is one of its own: the folder shows no name."""
    space = str(mark.get("id"))[:32]
    return f"the space {known[space]['name']!r}" if space in known else f"another space ({space})"


def stamps(folders: dict[str, Path], parts: tuple[str, ...], own: str) -> tuple[tuple, tuple]:
    """(space, part, file name, size, time) of every file in each space's `parts` folders:
    those of the other devices (what moves when another device wrote: `Spaces.mark`) and
    this device's own (`own`, its public id: one put back older, cut short or deleted by
    someone else, which its pass writes again). A stat per file, none opened."""
    own_name, others, mine = file_name(own), [], []
    for space, root in sorted(folders.items()):
        for part in parts:
            try:
                names = sorted(set(os.listdir(root / part)) | {own_name})
            except OSError:
                continue
            for name in names:
                into = mine if name == own_name else others
                try:
                    stat = os.stat(root / part / name, follow_symlinks=False)
                except OSError:
                    into.append((space, part, name, -1, 0))
                    continue
                into.append((space, part, name, stat.st_size, stat.st_mtime_ns))
    return tuple(others), tuple(mine)
