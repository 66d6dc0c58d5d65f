"""Where a space's folder is on this device (ADR 0026, addendum 2026-11-30): the folder a
join goes through, checked to hold something of the space (a mistyped path would otherwise
wait for ever), and a new place for a space whose folder moved (`mnemo space set NAME
folder PATH`): it must hold this space's mark, or be empty."""

from __future__ import annotations

from pathlib import Path

from app.core.errors import InputError
from app.core.space.folder import MEMBERS, SpaceFolder, file_name


class NotArrived(InputError):
    """The folder a join names holds nothing of the space yet (missing, or empty)."""


def checked(root: Path, space: str, known: dict, wait: bool) -> Path:
    """The folder a device joins `space` through, as an absolute path (`SpaceFolder.check`);
    NotArrived when it holds nothing of the space yet, unless `wait` (the user says the
    folder sync has not brought it: joined, it waits)."""
    root = SpaceFolder.check(Path(root), space, known)
    if wait or (root.is_dir() and SpaceFolder(root).mark() is not None):
        return root
    what = "does not exist" if not root.exists() else "is empty"
    raise NotArrived(
        f"the folder {root} {what}: it holds nothing of the space yet. Check it is this "
        "device's copy of the folder the members share (Syncthing's), and join once its "
        "files are there; "
        "or join now and wait for them (--wait); nothing was written"
    )


def moved(root: Path, space: str, known: dict) -> Path:
    """A new folder for `space` (absolute): one that exists and holds this space's mark, or
    is empty (this device's own file is written there; the folder sync brings the rest).
    InputError when it is missing, a file, another space's or holds other files."""
    root = Path(root).expanduser().absolute()
    if not root.is_dir():
        raise InputError(f"no folder at {root} (make it, or check the path); nothing changed")
    return SpaceFolder.check(root, space, known)


def present(root: Path, device: str, events: list[dict]) -> None:
    """This device's file of events written again when it is missing from the folder (a
    device that joined before a join wrote it, or a lost file): the members see it joined."""
    if not (Path(root) / MEMBERS / file_name(device)).exists():
        SpaceFolder(Path(root)).write_own(device, events)
