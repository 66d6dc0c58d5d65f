"""The sync folder on disk: each device's own operation logs and its device file.

    FOLDER/mnemo-sync.json              what this folder is (written once, by `init`)
    FOLDER/devices/<id>/device.json     the device's name, model, last seen, what it applied
    FOLDER/devices/<id>/ops-<seq>.jsonl its operations, one JSON object a line, appended

Only device <id> writes under devices/<id>/ (no two devices ever write one file, so a
folder sync never has to choose between two versions). A copy a sync tool made of a
conflicting file (Syncthing's `ops-1.sync-conflict-….jsonl`) is read like the others:
operations are known by their revision, so one read twice counts once.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.core import paths
from app.core.errors import InputError
from app.core.sync import trust

MARK = "mnemo-sync.json"
SEGMENT_BYTES = 8 * 1024 * 1024  # a log file this large is closed and a new one started
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is skipped (a text is at most 2 MB)
_CHUNK = 1024 * 1024  # read a log this much at a time
_DEVICE_FILE_BYTES = 1024 * 1024  # a device file is a few KB
_DEVICE = re.compile(r"[a-z0-9]{6,32}")
_LOG = re.compile(r"ops-(\d+)(\.sync-conflict-[^/]*)?\.jsonl")
_SNAPSHOT = re.compile(r"snapshot-(\d+)\.jsonl")


@dataclass(frozen=True)
class LogFile:
    device: str
    path: Path
    conflict_copy: bool  # a copy the sync tool made of a file two writers touched


class Folder:
    """One sync folder, seen from one device, for one pass: its mark and the other
    devices' folders are read once (what arrives meanwhile is read by the next pass; this
    device's own folder, which the pass writes, is listed each time)."""

    def __init__(self, root: Path, device: str, mark: dict | None = None):
        self.root = Path(root)
        self.device = device
        self.own = self.root / "devices" / device
        self.mark_read = mark  # the folder's mark as this pass read it (`read_mark`)
        self._all: list[str] | None = None
        self._entries: dict[str, list[Path]] = {}
        # The devices whose files are read, with their keys (`trust.py`); None: all of
        # them (before trust is known: `mark`, status of a folder not synced yet)
        self.trusted: dict[str, str | None] | None = None
        self.signed_from: dict[str, int] = {}  # per device: its first signed operation

    # ---- setting up ----------------------------------------------------------------
    @staticmethod
    def check(root: Path) -> Path:
        """The folder, made if missing; InputError when it cannot be a sync folder."""
        root = Path(root).expanduser()
        if root.exists() and not root.is_dir():
            raise InputError(f"{root} is a file, not a folder")
        # Syncthing's own .stfolder and .stignore are fine; other people's files are not
        others = [p for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []
        if others and not (root / MARK).exists() and not (root / "devices").is_dir():
            raise InputError(
                f"{root} holds other files; give an empty folder or one Mnemo synced "
                "to before (a folder of its own inside the shared folder is best)"
            )
        paths.private_dir(root)  # ours alone whatever the umask (0700)
        return root.resolve()

    @staticmethod
    def read_mark(root: Path) -> dict | None:
        """The folder's mark ({"mnemo_sync": 1, "sealed": key id when its files are
        encrypted}), or None when Mnemo never synced there."""
        path = Path(root) / MARK
        if not path.exists() and not path.is_symlink():
            return None
        try:
            if not _regular(path):
                raise OSError("not a regular file")
            mark = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return {"mnemo_sync": 1, "unreadable": True}
        return mark if isinstance(mark, dict) else {"mnemo_sync": 1, "unreadable": True}

    @staticmethod
    def mark(
        root: Path,
        sealed: str | None = None,
        folder_id: str | None = None,
        founder=None,
        read: dict | None = None,
    ) -> dict:
        """The folder's mark (`read`: as read already), made first when missing: an id
        (random unless given: a device that moves to another folder starts over there),
        whose key seals its files, if any, and the device that made it (`founder`: its id
        and `trust.Signer`; signed: a device joining trusts it)."""
        mark = read if read is not None else Folder.read_mark(root)
        if mark is None:
            mark = {"mnemo_sync": 1, "id": folder_id or secrets.token_hex(8)}
            if sealed:
                mark["sealed"] = sealed
            if founder is not None:
                device, signer = founder
                mark.update(founder=device, founder_key=signer.public)
                mark = signer.sign(mark, trust.MARK)
            paths.replace_file(Path(root) / MARK, lambda f: f.write(json.dumps(mark) + "\n"))
        return mark

    def prepare(self, sealed: str | None = None, founder=None) -> None:
        """Make the folder's mark (once) and this device's folder; what this device made
        here is narrowed to itself (0700 folders, 0600 files) whatever the umask was."""
        try:
            self.mark_read = Folder.mark(self.root, sealed, founder=founder, read=self.mark_read)
            for folder in (self.root, self.root / "devices", self.own):
                paths.private_dir(folder)
        except InputError as exc:
            raise InputError(f"cannot use the sync folder {self.root}: {exc}") from None
        for path in self.own.iterdir():
            _narrow(path)

    def all_devices(self) -> list[str]:
        """Every device that has a folder here, trusted or not (listed once)."""
        if self._all is None:
            base = self.root / "devices"
            self._all = (
                sorted(p.name for p in base.iterdir() if p.is_dir() and _DEVICE.fullmatch(p.name))
                if base.is_dir()
                else []
            )
        return list(self._all)

    def _listed(self, device: str) -> list[Path]:
        """What a device's folder holds, in name order (another device's: listed once)."""
        if device in self._entries:
            return self._entries[device]
        folder = self.root / "devices" / device
        found = sorted(folder.iterdir()) if folder.is_dir() else []  # (unreadable: raised,
        # as before a pass listed once: the pass fails and says why)
        if device != self.device:
            self._entries[device] = found
        return found

    # ---- reading -------------------------------------------------------------------
    def devices(self) -> list[str]:
        """The devices whose files are read: every one with a folder here that is trusted
        (this one included), or all of them before trust is known."""
        found = self.all_devices()
        if self.trusted is None:
            return found
        return [d for d in found if d in self.trusted or d == self.device]

    def logs(self) -> Iterator[LogFile]:
        """Every device's operation logs (and conflict copies of them), in name order."""
        for device in self.devices():
            for path in self._listed(device):
                match = _LOG.fullmatch(path.name)
                if match and _regular(path):
                    yield LogFile(device, path, bool(match.group(2)))

    def segments(self, device: str) -> list[tuple[int, Path]]:
        """A device's own logs (not conflict copies) by the first operation they hold."""
        found = []
        for path in self._listed(device):
            match = _LOG.fullmatch(path.name)
            if match and not match.group(2) and _regular(path):
                found.append((int(match.group(1)), path))
        return sorted(found)

    def snapshots(self) -> dict[str, Path]:
        """Each device's newest snapshot."""
        newest: dict[str, tuple[int, Path]] = {}
        for device in self.devices():
            for path in self._listed(device):
                match = _SNAPSHOT.fullmatch(path.name)
                if not match or not _regular(path):
                    continue  # a pipe or a link planted there is never opened
                if int(match.group(1)) >= newest.get(device, (-1, path))[0]:
                    newest[device] = (int(match.group(1)), path)
        return {device: path for device, (_, path) in newest.items()}

    def write_snapshot(self, lines: list[str], seq: int) -> Path:
        """This device's snapshot, written whole (then its older ones are removed)."""
        paths.private_dir(self.own)
        path = self.own / f"snapshot-{seq:010d}.jsonl"
        paths.replace_file(path, lambda f: f.writelines(line + "\n" for line in lines))
        for old in self.own.iterdir():
            if _SNAPSHOT.fullmatch(old.name) and old != path:
                old.unlink(missing_ok=True)
        return path

    def device_info(self, device: str) -> dict:
        """A device's device.json ({} when missing, unreadable or over 1 MB: it is read at
        every pass, before anything says whether its device may write)."""
        path = self.root / "devices" / device / "device.json"
        if not _regular(path):
            return {}
        try:
            with paths.open_regular(path) as f:
                raw = f.read(_DEVICE_FILE_BYTES + 1)
            if len(raw) > _DEVICE_FILE_BYTES:
                return {}
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}

    def vouched_info(self, device: str) -> dict:
        """A trusted device's device.json when it is signed by the key trusted for it (a
        device from before keys: as it is); {} otherwise. What it says it applied decides
        what compaction drops: never taken from a file someone else wrote."""
        info = self.device_info(device)
        key = (self.trusted or {}).get(device)
        if key is None:
            return info if self.trusted is None or device in self.trusted else {}
        return info if trust.verify(key, info, trust.DEVICE) else {}

    @staticmethod
    def read_from(
        path: Path, offset: int, most: int, skipping: bool = False
    ) -> tuple[list[tuple[int, bytes | None]], int, bool]:
        """Up to `most` whole lines of `path` after byte `offset`, each with the offset it
        starts at (its bytes, or None for a line over MAX_LINE_BYTES: never held whole); the
        offset to go on from; and whether that is inside such a line, still unended (the
        next read, `skipping`, goes on to its end). A line still being written, without its
        newline, is left for the next read: a folder cannot make a pass read a long line
        again and again, nor hold more than one line in memory beyond the batch."""
        out: list[tuple[int, bytes | None]] = []
        line = bytearray()
        over = skipping
        start = at = offset
        with paths.open_regular(path) as f:
            f.seek(offset)
            while len(out) < most:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                i = 0
                while len(out) < most:
                    nl = chunk.find(b"\n", i)
                    if nl < 0:
                        if not over:
                            line += chunk[i:]
                            if len(line) > MAX_LINE_BYTES:
                                over, line = True, bytearray()
                        break
                    if not over:
                        line += chunk[i:nl]
                    out.append((start, None if over else bytes(line)))
                    over, line = False, bytearray()
                    start = at + nl + 1
                    i = nl + 1
                at += len(chunk)
        if over:  # an unended line too long to ever be one: what was read of it is passed
            return out, at, True
        return out, start, False

    # ---- writing (only this device's own files) ------------------------------------
    def append(self, lines: list[str], first_seq: int) -> None:
        """Append operations to this device's newest log, durably (fsync) before returning;
        a new log when it has grown past SEGMENT_BYTES. A line a crash cut short is cut off
        first (this device is the only writer of its logs)."""
        if not lines:
            return
        paths.private_dir(self.own)
        own = [path for _, path in self.segments(self.device)]
        path = own[-1] if own and own[-1].stat().st_size < SEGMENT_BYTES else None
        created = path is None
        if path is None:
            path = self.own / f"ops-{first_seq:010d}.jsonl"
        fd = paths.private_file(path, os.O_RDWR | os.O_CREAT)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size:
                os.lseek(fd, max(0, size - 1), os.SEEK_SET)
                if os.read(fd, 1) != b"\n":  # a crash cut the last line short
                    tail = _tail_newline(path)
                    os.ftruncate(fd, tail)
                    size = tail
            os.lseek(fd, size, os.SEEK_SET)
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            while data:
                written = os.write(fd, data)
                data = data[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            paths.sync(self.own)

    def write_device(self, info: dict) -> None:
        """This device's device.json, replaced whole."""
        paths.private_dir(self.own)
        text = json.dumps(info, sort_keys=True, indent=1) + "\n"
        paths.replace_file(self.own / "device.json", lambda f: f.write(text))


def _narrow(path: Path) -> None:
    """A file or folder of this device's, made under a wide umask (or by an older Mnemo),
    narrowed to its owner."""
    if os.name != "posix":
        return
    try:
        st = os.lstat(path)
        if st.st_uid != os.getuid() or stat.S_ISLNK(st.st_mode):
            return
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) & ~want:
            os.chmod(path, want)
    except OSError:
        pass


def _regular(path: Path) -> bool:
    """A regular file, not reached through a symbolic link (a pipe planted in the folder
    would block a read; a link could point anywhere)."""
    return not path.is_symlink() and path.is_file()


def _tail_newline(path: Path) -> int:
    """The offset after the last newline in `path` (0 when there is none)."""
    data = path.read_bytes()
    return data.rfind(b"\n") + 1
