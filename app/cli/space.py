"""`mnemo space id | list | create | invite | join | members | remove | leave | sync |
removals | set` (issue 45, ADR 0026): team spaces' people and invitations, the pass that
sends this device's shared memories and takes the members' (`mnemo remember --space`,
`mnemo edit --space` share one), and a member's removals en masse held for a person."""

from __future__ import annotations

import json
import shlex
import sys
from argparse import Namespace
from pathlib import Path

from app.cli.commands import _engine, _read_stdin, space_problems
from app.cli.output import say
from app.cli.output import shown as _shown
from app.core import paths
from app.core.errors import InputError
from app.core.space.sharing import HELD
from app.core.space.standing import counted

_INVITATION_BYTES = 64 * 1024  # an invitation is about 1,000 characters
_STDIN_BYTES = 1024 * 1024  # what `join -` reads of standard input at most


def _invitation(text: str) -> str:
    """The invitation given: its text, `-` (standard input) or a file holding it."""
    if text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            return _read_stdin()  # (says what is missing)
        data = sys.stdin.buffer.read(_STDIN_BYTES + 1)
        if len(data) > _STDIN_BYTES:
            raise InputError("the invitation on standard input is too long (over 1 MB): not one")
        return data.decode("utf-8", errors="replace")
    if not text.strip().startswith("mnemo-invite:") and Path(text).expanduser().is_file():
        try:
            data = paths.read_regular(Path(text).expanduser())[:_INVITATION_BYTES]
            return data.decode("utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read the invitation file {text}: {exc.strerror}") from None
    return text


def id_(args: Namespace) -> int:
    """mnemo space id"""
    print(_engine().spaces.id())
    return 0


def list_(args: Namespace) -> int:
    """mnemo space list [--json]"""
    listed = _engine().spaces.list()
    if args.json:
        print(json.dumps(listed, indent=1))
        return 0
    if not listed:
        print(
            "This device is in no space (mnemo space create NAME FOLDER, or join one with "
            "an invitation: mnemo space join INVITATION FOLDER)."
        )
    for space in listed:
        print(f"{_shown(space['name'])} ({space['id']}): {_shown(space['folder'])}")
    return 0


def create(args: Namespace) -> int:
    """mnemo space create NAME FOLDER [--person NAME]"""
    state = _engine().spaces.create(args.name, Path(args.folder), args.person)
    you = state["persons"][0]["person"]
    print(
        f"Space {state['name']!r} made in {state['folder']}, with you "
        f"({you}) as its only member. Share the folder with your "
        f"team (Syncthing, say), then invite each device: mnemo space invite "
        f"{_shown(shlex.quote(state['name']))} ID "
        "(its `mnemo space id`)."
    )
    if not (args.person or "").strip():
        print(
            f"Your teammates see you as {you!r} (your login name); --person NAME chooses "
            "another when you make a space."
        )
    return 0


def invite(args: Namespace) -> int:
    """mnemo space invite NAME ID [--person NAME]"""
    invitation, person = _engine().spaces.invite(args.name, args.id, args.person)
    print(invitation)
    named = "" if args.person else " (a device of yours; --person NAME admits another person)"
    say(
        f"admitted that device to {args.name!r} as {person!r}{named}. Give it the line above "
        "(only that device can open it; valid 7 days) and share the folder with it; it "
        "joins with: mnemo space join INVITATION FOLDER"
    )
    return 0


def join(args: Namespace) -> int:
    """mnemo space join INVITATION FOLDER [--as NAME] [--wait]"""
    state = _engine().spaces.join(
        _invitation(args.invitation), Path(args.folder), args.local_name, args.wait
    )
    print(f"Joined the space {_shown(state['name'])!r} through {_shown(state['folder'])}.")
    if not state["member"]:
        print(
            "The members' events that admit this device have not arrived in the folder yet "
            f"(share it with them); `mnemo space members {_shown(state['name'])}` says when they "
            "have."
        )
    else:
        _print_members(state)
    return 0


def members(args: Namespace) -> int:
    """mnemo space members NAME [--json]"""
    state = _engine().spaces.members(args.name)
    if args.json:
        print(json.dumps(state, indent=1))
        return 0
    print(f"Space {_shown(state['name'])!r} ({state['id']}), folder {_shown(state['folder'])}")
    _print_members(state)
    return 0


def _print_members(state: dict) -> None:
    for person in state["persons"]:
        print(f"  {_shown(person['person'])}")
        for device in person["devices"]:
            said = "this device" if device["this"] else "" if device["joined"] else INVITED
            print(f"    {device['id']}" + (f"  ({said})" if said else ""))
    if state["persons"]:
        print(counted(state["count"]))
    for device in state["removed"]:
        this = " (this device)" if device["id"] == state["this_device"] else ""
        print(f"  {device['how']}: {_shown(device['person'])} {device['id']}{this}")
    if state["epoch"]:
        print(f"Epoch {state['epochs']} ({state['epoch'][:12]})")
    if not state["member"]:
        print(
            f"This device is not a member any more ({state['gone']})."
            if state["arrived"]
            else "This device is not a member yet: waiting for the folder."
        )
    if state["rotation_due"]:
        print("A new key is due: this device makes it at its next change to the space.")
    elif state["needs_rotation"]:
        print("A new key is due: the next member to change the space makes it.")
    if state["waiting"]:
        print(f"Events waiting for the events they follow: {state['waiting']}")
    refused: dict[tuple[str, str], int] = {}  # (author, why) → events: said once each
    for event in state["refused"]:
        key = (event["author"], event["why"])
        refused[key] = refused.get(key, 0) + 1
    for (author, why), count in refused.items():
        events = f"{count} events" if count > 1 else "an event"
        print(f"Refused: {events} by {_shown(author)}: {_shown(why)}")
    for problem in state["problems"]:
        print(f"Skipped: {_shown(problem)}")


INVITED = "invited, not joined yet"  # (a device that wrote nothing to the folder yet)


def remove(args: Namespace) -> int:
    """mnemo space remove NAME MEMBER"""
    removed = _engine().spaces.remove(args.name, args.member)
    for device in removed["devices"]:
        print(f"Removed {_shown(device['person'])} ({device['id']}) from {args.name!r}.")
    print(
        "The space's key was changed: what they already had stays theirs (their copy of the "
        "folder, what they read), and they read nothing written after."
    )
    return 0


def leave(args: Namespace) -> int:
    """mnemo space leave NAME"""
    was_member = _engine().spaces.leave(args.name)
    if was_member is None:
        print(
            f"This device left {args.name!r} here; its folder is missing or unreadable, so "
            "the members could not be told: it stays on their list until one removes it "
            "(mnemo space remove NAME ID)."
        )
        return 0
    print(
        f"This device left {args.name!r}"
        + ("" if was_member else " (it was no longer a member)")
        + "; the folder is left as it is (delete or unshare it yourself)."
    )
    return 0


def sync(args: Namespace) -> int:
    """mnemo space sync [NAME] [--json]: one space, or every space this device is in."""
    engine = _engine()
    one = args.name is not None
    reports = [engine.spaces.sync(args.name)] if one else engine.spaces.sync_all()
    if any(report.get("applied") for report in reports):
        engine.backfill()  # (what arrived is found by meaning too)
    failed = int(any("error" in report for report in reports))  # (a folder not read)
    if args.json:
        print(json.dumps(reports[0] if one else reports, indent=1))
        return failed
    if not reports:
        print("This device is not in any space (mnemo space create or join makes one).")
    for report in reports:
        if "error" in report:
            say(f"space {report['name']!r}: {report['error']}")
        else:
            _said(report)
    return failed


def _said(report: dict) -> None:
    """What one space's pass did, said as `space sync` says it."""
    print(
        f"Space {report['name']!r}: sent {report['sent']}, took {report['applied']}, "
        f"withdrawn {report['withdrawn']}."
    )
    for one in report.get("joined") or []:
        who = _shown(one["person"] or one["device"][:12])
        print(f"{who} is now in the space (device {one['device'][:12]}).")
    for person, count in (report.get("held_removals") or {}).items():
        member, space = shlex.quote(_shown(person)), shlex.quote(report["name"])
        print(
            f"{_shown(person)} would withdraw or trash {count} memories here at once: held "
            f"until you decide (mnemo space removals {space} apply {member} sends them to your "
            f"trash, or keep {member} keeps them here, no longer shared)."
        )
    if report.get("outside"):
        print(
            f"Not sent: {report['outside']}; it reads only what was written while it could."
            if not report["member"]
            else f"Not sent: {report['outside']}."
        )
    space_problems(report)
    new_held = sum(p.endswith(HELD) for p in report["problems"])
    earlier = report["refused"] - (len(report["problems"]) - new_held)
    if earlier:
        say(f"space {report['name']!r}: {earlier} line(s) refused, said at an earlier pass")
    if count := report.get("held", 0) - new_held:
        say(
            f"space {report['name']!r}: {count} memor{'y' if count == 1 else 'ies'} not sent "
            "(holding a secret), said at an earlier pass"
        )


def set_(args: Namespace) -> int:
    """mnemo space set NAME inject on|off | name NEW | folder PATH"""
    spaces = _engine().spaces
    if args.setting == "name":
        new = spaces.rename(args.name, args.value)
        print(
            f"The space {args.name.strip()!r} is called {_shown(new)!r} here now (each member "
            "keeps their own name for it)."
        )
        return 0
    if args.setting == "folder":
        state = spaces.move(args.name, Path(args.value))
        print(f"The space {_shown(state['name'])!r} is read through {_shown(state['folder'])} now.")
        if not state["arrived"]:
            print("Its members' files have not arrived there yet: the space waits for them.")
        return 0
    if args.value not in ("on", "off"):
        raise InputError(f"inject is on or off, not {args.value[:40]!r}")
    on = args.value == "on"
    spaces.inject(args.name, on)
    if on:
        print(
            f"The memories of {args.name!r} now reach your agents' sessions and prompts "
            "unasked, as your own do (mnemo space set NAME inject off stops it)."
        )
    else:
        print(f"The memories of {args.name!r} reach your agents only when they search.")
    return 0


def removals(args: Namespace) -> int:
    """mnemo space removals NAME [apply|keep MEMBER] [--json]"""
    spaces = _engine().spaces
    if args.action and not args.member:
        raise InputError(
            f"say whose removals to {args.action}: mnemo space removals NAME {args.action} MEMBER"
        )
    if args.action == "apply":
        count = {h["member"]: h["memories"] for h in spaces.removals(args.name)}
        person = " ".join(args.member.split())
        spaces.apply_removals(args.name, args.member)
        print(
            f"{count.get(person, 0)} memories {_shown(person)} withdrew or trashed went to "
            "your trash here (mnemo restore brings one back)."
        )
        return 0
    if args.action == "keep":
        kept = spaces.keep_removals(args.name, args.member)
        print(
            f"Kept {kept} memories of {_shown(args.member.strip())} here: no longer shared, "
            "yours now."
        )
        return 0
    held = spaces.removals(args.name)
    if args.json:
        print(json.dumps(held, indent=1))
        return 0
    if not held:
        print(f"Nothing waits in {args.name!r}: no member's removals are held.")
    for one in held:
        titles = "; ".join(_shown(t) for t in one["titles"])
        more = ", ..." if one["memories"] > len(one["titles"]) else ""
        print(
            f"{_shown(one['member'])}: {one['memories']} memories they withdrew or trashed, "
            f"held here ({titles}{more})."
        )
    return 0
