"""The versions a put carries (issue 44, ADR 0023): what a memory said before, sent with it
as its origins are (outside the fields a digest and a conflict compare, `fold.SYNCED`), and
taken on another device only as data: each checked like any incoming record (types, sizes,
secrets), its origins vouched for as a put's are (`ledger.senders_own`). A bad version is
skipped and reported; the put it came in is taken all the same."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from app.core import origin as origins
from app.core.errors import InputError, SecretError
from app.core.memory import MAX_TEXT_CHARS, Memory, guard_secrets, utc_stamp
from app.core.version import WHYS, Version

MOST = 50  # the versions a put carries: the newest (older ones stay on the device)
MAX_VERSION_CHARS = MAX_TEXT_CHARS  # a version's words: the memory's own limits
MAX_CARRIED_BYTES = 2 * 2**20  # all a put carries of them (a line stays under 16 MB)
AHEAD = timedelta(days=1)  # a version's times: no later than this past now (a clock's skew)


def _stamp(o: origins.Origin, here: str) -> dict:
    return (o if o.device or not here else replace(o, device=here)).to_dict()


def outgoing(versions: list[Version], here: str, plain: bool) -> list[dict]:
    """What a put carries of a memory's versions (newest first, as `Versions.of` gives
    them): the newest MOST that fit in MAX_CARRIED_BYTES, each origin saying the device it
    was written on (`here` when it says none); to a plain folder, none that holds a secret
    (stored by the user's choice)."""
    out = []
    budget = MAX_CARRIED_BYTES
    for v in versions[:MOST]:
        item = {
            "title": v.title,
            "text": v.text,
            "reasoning": v.reasoning,
            "category": v.category,
            "tags": v.tags,
            "references": v.references,
            "project": v.source_project,
            "confidence": v.confidence,
            "origins": [_stamp(o, here) for o in v.origins],
            "written_at": v.written_at,
            "replaced_at": v.replaced_at,
            "replaced_by": _stamp(v.replaced_by, here) if v.replaced_by else None,
            "why": v.why,
        }
        size = len(json.dumps(item, ensure_ascii=False).encode())
        if size > budget or (plain and _holds_secret(item)):
            continue  # (dropped from the put, kept here)
        budget -= size
        out.append(item)
    return out


def mark(versions: list[Version]) -> str:
    """What a memory's carried versions are, hashed (they changed here since last synced)."""
    keys = sorted(v.key() for v in versions[:MOST])
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:24]


def checked(memory_id: str, item, sealed: bool) -> Version:
    """One carried version, type- and size-checked like any incoming record, secrets
    refused unless the line came sealed (InputError/SecretError)."""
    if not isinstance(item, dict):
        raise InputError("a version must be an object")
    why = item.get("why")
    if why not in WHYS:
        raise InputError(f"a version is kept for one of {', '.join(WHYS)}")
    stamps = {}
    latest = (datetime.now(UTC) + AHEAD).isoformat(timespec="microseconds")
    for name in ("written_at", "replaced_at"):
        value = item.get(name)
        stamp = utc_stamp(value) if isinstance(value, str) and len(value) <= 40 else None
        if stamp is None:
            raise InputError(f"a version's {name} must be an ISO date/time")
        if stamp > latest:  # (it would list as the newest, and say what a memory was, forever)
            raise InputError(f"a version's {name} is in the future")
        stamps[name] = stamp  # (as Mnemo writes times: what Mnemo sent is as it was)
    fields = {
        "text": item.get("text"),
        "title": item.get("title") or "",
        "reasoning": item.get("reasoning") or "",
        "category": item.get("category") or "note",
        "tags": item.get("tags") or [],
        "references": item.get("references") or [],
        "source_project": item.get("project"),
        "confidence": item.get("confidence") or "medium",
    }
    for name in ("text", "title", "reasoning"):
        if not isinstance(fields[name], str) or len(fields[name]) > MAX_VERSION_CHARS:
            raise InputError(f"a version's {name} must be a text of at most {MAX_TEXT_CHARS}")
    state = Memory.from_dict({**fields, "id": memory_id})  # types, ranges, sizes
    if not sealed:
        guard_secrets(dict(fields), "refuse")  # the same check as every other path
    if (state.title, state.text, state.reasoning) != (
        fields["title"],
        fields["text"],
        fields["reasoning"],
    ):
        raise InputError("a version's words must be as Mnemo keeps them (cleaned)")
    by = item.get("replaced_by")
    replaced_by = origins.Origin.from_dict(by) if by is not None else None
    if by is not None and replaced_by is None:
        raise InputError("a version's replaced_by must be an origin")
    return Version.kept(
        memory_id,
        state,
        origins=origins.decode(item.get("origins")),
        written_at=stamps["written_at"],
        replaced_at=stamps["replaced_at"],
        replaced_by=replaced_by,
        why=why,
    )


@dataclass
class Incoming:
    """The versions the puts of one memory carry that may be kept here, and what was
    skipped (for the pass's report)."""

    versions: list[Version]
    skipped: list[str]


def incoming(
    memory_id: str,
    records: list[tuple[str, dict]],
    vouch: Callable[[str, origins.Origin, tuple, bool], origins.Origin],
    sealed: bool,
) -> Incoming:
    """Every version the puts (`records`: (sending device, record)) carry, each once (by
    `Version.key`), checked (`checked`) and its origins vouched for (`vouch(sender, origin,
    its words, whether it is who replaced them)`: `ledger.senders_own`'s rule, for its
    words); a put without versions (an older Mnemo) carries none."""
    seen: dict[str, Version] = {}
    owned: set[str] = set()  # (keys taken from the device that replaced their words)
    read: set[tuple[str, str]] = set()  # (each put carries most of its parent's: read once)
    skipped: list[str] = []
    for sender, record in records:
        items = record.get("versions")
        if items is None:
            continue
        if not isinstance(items, list):
            skipped.append("its versions are not a list")
            continue
        for item in items[:MOST]:
            try:
                raw = (sender, json.dumps(item, sort_keys=True, ensure_ascii=False))
            except (TypeError, ValueError, RecursionError):
                raw = None
            if raw is not None and raw in read:
                continue
            read.add(raw)
            try:
                version = checked(memory_id, item, sealed)
            except (InputError, SecretError) as exc:
                skipped.append(str(exc))
                continue
            k = version.key()
            if k in owned:
                continue
            by = version.replaced_by
            words = version.words()
            vouched = vouch(sender, by, words, True) if by is not None else None
            # (the copy of the device that replaced the words is its account: another copy
            # of the same version, first in order, cannot name its writers instead)
            theirs = vouched is not None and (
                vouched.device == vouch(sender, replace(by, device=""), words, True).device
            )
            if k in seen and not theirs:
                continue
            if theirs:
                owned.add(k)
            seen[k] = replace(
                version,
                origins=[vouch(sender, o, words, False) for o in version.origins],
                replaced_by=vouched,
            )
    newest = sorted(seen.values(), key=lambda v: (v.replaced_at, v.written_at), reverse=True)
    # (as a put carries them: many puts in one fold add no more than one; older ones are
    # not an error, nor reported: a long history in a log not compacted yet has them)
    return Incoming(newest[:MOST], skipped)


def _holds_secret(item: dict) -> bool:
    try:
        guard_secrets({k: item.get(k) for k in ("title", "text", "reasoning", "tags")}, "refuse")
    except SecretError:
        return True
    return False
