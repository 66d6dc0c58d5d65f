"""Where this device and the others stand in a space (ADR 0026, addendum 2026-11-30: what
the user is told): whether what this device changes reaches the members (a member holding
the current key: `outside` says why not, naming who removed it or that it left), which
admitted devices have joined (written to the folder: an event or a line) rather than only
been invited (`joined`), and who joined since this device's last pass (`news`: never told
to a device that is not a member, never of a device this device invited itself)."""

from __future__ import annotations

import os
from pathlib import Path

from app.core.space import lines
from app.core.space.folder import MEMBERS, file_name
from app.core.space.membership import Members

MAX_JOINS = 50  # joins remembered for the app to tell, per space
NEWS_S = 7 * 86400  # (and for how long)
BY = "removed by "


def how_gone(state: Members, events: dict[str, dict], me: str, named: dict[str, str]) -> str:
    """How this device stopped being a member: "it left", "bob removed it", or "removed,
    or it left" when the record does not say (a removal it cannot read)."""
    how = went(state, events, me, named)
    if how == "left":
        return "it left"
    if how.startswith(BY):
        return f"{how[len(BY) :]} removed it"
    return "removed, or it left" if how == "removed or left" else how


def went(state: Members, events: dict[str, dict], device: str, named: dict[str, str]) -> str:
    """How a device stopped being a member: "left", "removed by bob", "removed" (by whom
    cannot be read), or "removed or left" when the record does not say."""
    for name in reversed(state.removals):
        event = events.get(name, {})
        if event.get("kind") == "leave" and event.get("author") == device:
            return "left"
        if event.get("kind") == "remove" and device in (event.get("devices") or []):
            by = named.get(state.person_of.get(event.get("author", ""), ""), "")
            return f"{BY}{by}" if by else "removed"
    return "removed or left"


def outside(
    space: str, state: Members, events: dict, me: str, named: dict, held, waiting: bool
) -> str:
    """Why what this device changes in the space would not reach its members ("" when it
    does: a member holding the current key; `held` None: a member), in one clause without
    a full stop."""
    if me in state.members:
        if held is None or state.epoch in held:
            return ""
        return (
            f"this device does not hold the space {space!r}'s current key yet: wait for the "
            "folder to bring the members' latest events"
        )
    if waiting:
        return (
            f"this device is not a member of the space {space!r} yet: the members' events "
            "that admit it have not arrived in its folder"
        )
    return (
        f"this device is not a member of the space {space!r} any more "
        f"({how_gone(state, events, me, named)})"
    )


def joined(folder: Path, state: Members) -> set[str]:
    """The devices admitted (now or once) that wrote to the space's folder: a file of events
    or of lines (a device writes its file of events when it joins); the others were only
    invited, as far as this copy of the folder shows. One listing per part, nothing opened."""
    names: set[str] = set()
    for part in (MEMBERS, lines.LINES):
        try:
            names.update(os.listdir(Path(folder) / part))
        except OSError:
            continue
    return {d for d in state.person_of if file_name(d) in names}


def invited_by(events: dict[str, dict], me: str) -> set[str]:
    """The devices this device admitted itself (it knows of their joining already)."""
    return {
        str(e.get("device"))
        for e in events.values()
        if e.get("kind") == "admit" and e.get("author") == me
    }


def news(
    entry: dict, state: Members, events: dict, names: dict[str, str], me: str, at: float
) -> tuple[list[dict], dict]:
    """The member devices that joined (first wrote to the folder) since this device's last
    pass over the space ({"device", "person"}; none at its first pass: what it knew then is
    where it starts; none when this device is not a member; none of a device it invited),
    and what to keep in the space's entry (`present`, `joins`: so that each is told once; {}
    when nothing changed)."""
    now = sorted(d for d in joined(Path(entry["folder"]), state) if d in state.members)
    known = entry.get("present")  # (not `known`, the members an older pass kept: those
    # invited but not joined then are told when they join)
    if known == now:
        return [], {}
    mine = invited_by(events, me)
    told = (
        []
        if known is None or me not in state.members
        else [
            {"device": d, "person": names.get(d, "")}
            for d in now
            if d not in set(known) and d != me and d not in mine
        ]
    )
    joins = [j for j in entry.get("joins", []) if j["at"] > at - NEWS_S]
    joins += [{**j, "at": at} for j in told]
    return told, {"present": now, "joins": joins[-MAX_JOINS:]}


def since(kept: dict[str, dict], at: float) -> list[dict]:
    """Who joined a space after `at` (a time), from the entries kept (`news`)."""
    return [
        {**one, "space": entry["name"]}
        for entry in kept.values()
        for one in entry.get("joins", [])
        if one["at"] > at
    ]


def view(entry: dict, record, reading, state: Members, named: dict, me: str) -> dict:
    """What `Spaces.members` answers: each person's devices (which is this one, which only
    invited: `joined`), who was removed or left, the epoch, and what the fold said."""
    order = sorted(state.persons().items(), key=lambda p: min(state.seniority[d] for d in p[1]))
    missing = [h for h in entry.get("head", []) if h not in record.events]
    wrote = joined(Path(entry["folder"]), state)
    invited = sum(d not in wrote for d in state.members)
    return {
        "name": entry["name"],
        "id": entry["id"],
        "folder": entry["folder"],
        "this_device": me,
        "member": me in state.members,
        "arrived": not missing,
        "gone": "" if me in state.members or missing else how_gone(state, record.events, me, named),
        "persons": [
            {
                "person": named[p],
                "id": p,
                "devices": [{"id": d, "this": d == me, "joined": d in wrote} for d in ds],
            }
            for p, ds in order
        ],
        "count": {"persons": len(order), "devices": len(state.members), "invited": invited},
        "removed": [
            {
                "id": d,
                "person": named.get(state.person_of.get(d, ""), ""),
                "how": went(state, record.events, d, named),  # (left, removed by …)
            }
            for d in sorted(state.gone)
        ],
        "epoch": state.epoch,
        "epochs": len(state.epochs),
        "rotation_due": state.rotation_due(me),
        "needs_rotation": state.needs_rotation,
        "waiting": len(state.waiting),
        "refused": [
            {"event": h, "author": record.events[h]["author"], "why": why}
            for h, why in sorted(state.refused.items())
        ],
        "problems": reading.problems,
        "heads": record.heads(),
    }


def counted(count: dict) -> str:
    """ "2 people (3 devices, 1 invited)": the members (`view`'s `count`), and how many of
    their devices only were invited."""
    people = f"{count['persons']} {'person' if count['persons'] == 1 else 'people'}"
    devices = f"{count['devices']} device{'' if count['devices'] == 1 else 's'}"
    invited = f", {count['invited']} invited" if count["invited"] else ""
    return f"{people} ({devices}{invited})"
