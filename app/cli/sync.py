"""`mnemo sync init FOLDER | now | status | remove DEVICE | off` (ADR 0015)."""

from __future__ import annotations

import contextlib
import json
import os
from argparse import Namespace
from collections.abc import Iterator

from app.cli.commands import _backfill, _engine
from app.cli.output import progress_bar, say
from app.core import duties
from app.core.duties import Duties
from app.core.errors import InputError
from app.core.sync.state import Pass


def _progress(done: int, total: int) -> None:
    progress_bar("applying what arrived", done // 1024, total // 1024, " KB")


def _embed(args: Namespace, engine, result: Pass) -> None:
    """What arrived is searchable by keywords at once; by meaning once embedded."""
    if not args.no_embed and result.applied and engine.needs_backfill():
        _backfill(engine)


def _report(result: Pass) -> None:
    print(
        f"Wrote {result.written} operations; read {result.read} from other devices; "
        f"{result.applied} memories changed here"
        + (
            f"; {result.conflicts} edited on two devices apart, kept both"
            if result.conflicts
            else ""
        )
        + "."
    )
    for kind, problem in zip(result.kinds, result.problems, strict=True):
        if kind != "conflict":  # conflicts are counted above
            say(f"note: {problem}" if kind == "clear" else problem)


def init(args: Namespace) -> int:
    """mnemo sync init FOLDER [--name NAME] [--plain]"""
    engine = _engine()
    key = args.key or os.environ.get("MNEMO_SYNC_KEY") or None
    result = engine.sync.init(
        args.folder,
        args.name,
        plain=args.plain,
        progress=_progress,
        key=key,
        encrypt=True if args.encrypt else None,
    )
    progress_bar.end()
    status = engine.sync.status()
    print(f"This device ({status['name']}, {status['device']}) syncs through {status['folder']}.")
    sync_key = engine.sync.key()
    if sync_key and not key:
        print(
            "The folder's files are encrypted. Its sync key, for your other devices "
            f"(mnemo sync init FOLDER --key KEY; `mnemo sync key` shows it again):\n{sync_key}"
        )
    elif not sync_key:
        print("The folder's files are not encrypted (mnemo sync init NEW-FOLDER --encrypt).")
    _report(result)
    _embed(args, engine, result)
    others = [d for d in status["devices"] if not d["this"]]
    if not others:
        print(
            "No other device yet: share this folder with them (Syncthing, say) and run "
            "`mnemo sync init` with their copy of it there."
        )
    return 0


@contextlib.contextmanager
def _as_owner(engine) -> Iterator[Duties]:
    """A pass a person asked for runs here; while no other process does the background work
    (no app, MCP server or helper runs), this command does it, and says so to the others."""
    claim = Duties(engine.database_path, "cli")
    claim.held()
    try:
        yield claim
    finally:
        claim.let_go()


def now(args: Namespace) -> int:
    """mnemo sync now"""
    engine = _engine()
    with _as_owner(engine) as claim:
        result = engine.sync.now(_progress)
        claim.note_pass(result.summary())
    progress_bar.end()
    _report(result)
    _embed(args, engine, result)
    return 0


def status(args: Namespace) -> int:
    """mnemo sync status [--json]"""
    engine = _engine()
    if not engine.sync.configured():
        print("Sync is off (mnemo sync init FOLDER sets it up).")
        return 0
    state = engine.sync.status()
    if args.json:
        print(json.dumps(state, indent=1))
        return 0
    print(f"Folder: {state['folder']}")
    print(f"This device: {state['name']} ({state['device']}), key {state['key']}")
    print(duties.describe(state["owner"]))
    if not state["approved"]:
        print(
            "  not approved yet by your other devices: what it writes waits there until you "
            f"run `mnemo sync devices approve {state['device']}` on one of them (compare the key)"
        )
    for device in state["devices"]:
        if device["this"]:
            continue
        mark = (
            f" (new: waits for you, key {device['key']}: mnemo sync devices approve "
            f"{device['id']}, or refuse)"
            if device["state"] == "pending"
            else " (refused: nothing of it is read)"
            if device["state"] == "refused"
            else " (removed)"
            if device["removed"]
            else " (its logs were compacted past what this device holds: waiting for a snapshot)"
            if device.get("behind")
            else ""
        )
        print(
            f"  {device['name']} ({device['id']}){mark}: last seen {device['seen'] or 'never'}, "
            f"{device['operations']} operations received"
        )
    if len(state["devices"]) < 2:
        print("  no other device has written to this folder yet")
    if state["rebuilding"]:
        print(
            "This database was restored from a snapshot (or copied from another machine): "
            "the next pass (mnemo sync now) takes back from the folder what was written since"
        )
    else:
        print(f"Changes here not written yet: {state['pending']}")
    print(f"Arrived, not applied yet: {state['waiting_bytes']:,} bytes")
    if state["waiting_operations"]:
        print(
            f"Operations waiting for a version they were made from: "
            f"{state['waiting_operations']} (it has not arrived, or was refused: see problems)"
        )
    for item in state["held"]:
        print("Held for you: " + _held_line(item))
    if state["conflicts"]:
        print(
            f"Edited on two devices apart (both kept, merged), waiting for you: "
            f"{state['conflicts']} (mnemo sync conflicts)"
        )
    problems = [p for p in state["problems"] if p["kind"] != "conflict"]
    for problem in problems[:10]:
        print(f"Problem ({problem['at']}): {problem['what']}")
    return 0


def key(args: Namespace) -> int:
    """mnemo sync key"""
    engine = _engine()
    if not engine.sync.configured():
        print("Sync is off (mnemo sync init FOLDER sets it up).")
        return 0
    text = engine.sync.key()
    if text is None:  # never a sentence where a script reads a key (KEY=$(mnemo sync key))
        raise InputError("this folder's files are not encrypted: there is no sync key")
    print(text)
    return 0


_STATES = {
    "self": "this device",
    "approved": "approved",
    "pending": "waits for you: mnemo sync devices approve {id} (or refuse)",
    "refused": "refused: nothing of it is read",
}


def devices(args: Namespace) -> int:
    """mnemo sync devices [approve|refuse DEVICE] [--json]"""
    engine = _engine()
    if not engine.sync.configured():
        raise InputError("sync is off (mnemo sync init FOLDER sets it up)")
    if args.decision:
        if not args.device:
            raise InputError(f"which device? mnemo sync devices {args.decision} DEVICE")
        if args.decision == "approve":
            engine.sync.approve(args.device, args.key)
            print(f"Device {args.device} is approved: what it wrote is applied at this pass.")
            result = engine.sync.now(_progress)
            progress_bar.end()
            _report(result)
            _embed(args, engine, result)
        else:
            engine.sync.refuse(args.device)
            print(
                f"Device {args.device} is refused: nothing more of it is read here, nor on "
                "your devices that trust this one (what it wrote while approved stays)."
            )
        return 0
    listed = engine.sync.devices()
    if args.json:
        print(json.dumps(listed, indent=1))
        return 0
    for device in listed:
        what = _STATES.get(device["state"], device["state"]).format(id=device["id"])
        by = f" (by {device['by']})" if device["by"] and device["state"] != "self" else ""
        print(
            f"{device['name']} ({device['id']}), key {device['key']}: {what}{by}; "
            f"last seen {device['seen'] or 'never'}"
        )
    return 0


def held(args: Namespace) -> int:
    """mnemo sync held [apply|refuse DEVICE] [--json]"""
    engine = _engine()
    if not engine.sync.configured():
        raise InputError("sync is off (mnemo sync init FOLDER sets it up)")
    if args.decision:
        if not args.device:
            raise InputError(f"which device? mnemo sync held {args.decision} DEVICE")
        decide = engine.sync.apply_held if args.decision == "apply" else engine.sync.refuse_held
        result = decide(args.device)
        progress_bar.end()
        print(
            "Applied: those removals are made here."
            if args.decision == "apply"
            else "Refused: those memories stay, here and on your other devices."
        )
        _report(result)
        _embed(args, engine, result)
        return 0
    waiting = engine.sync.held()
    if args.json:
        print(json.dumps(waiting, indent=1))
        return 0
    if not waiting:
        print("Nothing is held: no device removed many memories at once.")
    for item in waiting:
        print(_held_line(item))
        for title in item["titles"]:
            print(f"    {title}")
    return 0


def _held_line(item: dict) -> str:
    if item["here"]:
        return (
            f"Removed here, not through Mnemo: {item['memories']} memories, not sent to your "
            f"other devices (mnemo sync held apply {item['device']} sends the removals; "
            f"refuse {item['device']} takes them back from the folder)"
        )
    return (
        f"{item['name']} ({item['device']}) would remove {item['memories']} memories here: "
        f"mnemo sync held apply {item['device']}, or refuse {item['device']} (they stay, "
        "everywhere)"
    )


def conflicts(args: Namespace) -> int:
    """mnemo sync conflicts [resolve ID [--keep VERSION]] [--json]"""
    engine = _engine()
    if args.decision:
        if not args.memory:
            raise InputError("which memory? mnemo sync conflicts resolve ID [--keep VERSION]")
        engine.sync.resolve(args.memory, args.keep)
        print(
            f"Resolved {args.memory}"
            + (f" as version {args.keep}" if args.keep else " as merged")
            + "; its versions stay in the trash, unlinked (on every device)."
        )
        return 0
    listed = engine.sync.conflicts() if engine.sync.configured() else []
    if args.json:
        print(json.dumps(listed, indent=1))
        return 0
    if not listed:
        print("No memory edited on two devices apart waits for you.")
    for item in listed:
        where = " (in the trash)" if item["trashed"] else ""
        print(f"{item['id']}{where}: {_short(item['title'])}")
        print(f"  as merged: {_short(item['text'], 200)}")
        for version in item["versions"]:
            print(
                f"  version {version['id']} from {version['device_name']}, "
                f"{version['at'][:16].replace('T', ' ')}: {_short(version['text'], 200)}"
            )
        print(
            f"  keep as merged: mnemo sync conflicts resolve {item['id']}; or one version: "
            "--keep VERSION; or split them: mnemo unmerge " + item["id"]
        )
    return 0


def _short(text: str, most: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def compact(args: Namespace) -> int:
    """mnemo sync compact"""
    engine = _engine()
    with _as_owner(engine):
        path = engine.sync.compact()
    print(f"Snapshot written: {path} ({path.stat().st_size / 2**20:.1f} MB)")
    return 0


def remove(args: Namespace) -> int:
    """mnemo sync remove DEVICE"""
    _engine().sync.remove(args.device)
    print(
        f"Device {args.device} is no longer counted among this collection's devices; "
        "what it wrote stays applied."
    )
    return 0


def off(args: Namespace) -> int:
    """mnemo sync off"""
    _engine().sync.off()
    print("Sync is off on this device; the folder and its files are left as they are.")
    return 0
