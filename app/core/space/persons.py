"""Who the members of a space are, by name, and how those names are sealed (ADR 0026).

A person is not a name: a person is the event that introduced them (the `create` for the
creator, an `admit` with `new` for anyone else), named by its hash, and every device the
record admits is either its author's own person's or a new person's. The fold groups
devices by that id and never reads a name (`Members.members`), so two people may carry the
same name and a member cannot add a device to someone else's person.

The names (the space's and each person's) and each event's time are sealed in the event
(`sealed`) with AES-256-GCM under the key of an epoch (`under`; a `create`'s own first
epoch, which it cannot name), with the space, that epoch, the author and the kind as
associated data: the folder shows none of them. A member opens them with the epoch keys
it holds (`Record.keys_for`); a name under an epoch this device was never given shows as
`member 3f2a…` (never an error: the fold does not need it). Version 1 events (spaces made
before) carried them in the clear, and still fold and show as they did.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter

from app.core.errors import InputError
from app.core.space import keys
from app.core.space.checks import name_ok

NAMES = b"mnemo space names\0"  # the associated data's domain
ADDED = " (added by "  # a name two persons carry: who admitted this one


def placeholder(person: str) -> str:
    """What a person whose name this device cannot open is shown as."""
    return f"member {person[:4]}…"


def _aad(space: str, under: str, author: str, kind: str) -> bytes:
    return NAMES + f"{space}\0{under}\0{author}\0{kind}".encode()


def seal(key: bytes, space: str, under: str, author: str, kind: str, said: dict) -> str:
    """`said` (names, a time) sealed under an epoch's `key`, bound to the event's space,
    that epoch (`under`: "" for a create, whose epoch is itself), author and kind."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = secrets.token_bytes(keys.NONCE_BYTES)
    text = json.dumps(said, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return keys.b64(nonce + AESGCM(key).encrypt(nonce, text, _aad(space, under, author, kind)))


def sealed_under(name: str, event: dict) -> str:
    """The epoch whose key seals an event's names: its `under`, or a create's own."""
    return name if event["kind"] == "create" else str(event.get("under", ""))


def opened(key: bytes, event: dict) -> dict:
    """What an event (version 2) sealed; InputError when `key` does not open it."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    under = "" if event["kind"] == "create" else str(event.get("under", ""))
    try:
        data = keys.unb64(str(event.get("sealed", "")))
        aad = _aad(event["space"], under, event["author"], event["kind"])
        text = AESGCM(key).decrypt(data[: keys.NONCE_BYTES], data[keys.NONCE_BYTES :], aad)
        said = json.loads(text)
    except (InvalidTag, ValueError, KeyError, TypeError) as e:
        raise InputError("this key does not open the event's names") from e
    if not isinstance(said, dict):
        raise InputError("this key does not open the event's names")
    return said


def said(name: str, event: dict, held: dict[str, bytes]) -> dict:
    """What an event says of names and time, opened with the keys `held` ({} when this
    device cannot open them, or they are not well made); a version 1 event's, as it is."""
    if event.get("v") == 1:
        return {k: event[k] for k in ("name", "person", "at") if k in event}
    key = held.get(sealed_under(name, event))
    if key is None:
        return {}
    try:
        out = opened(key, event)
    except InputError:
        return {}
    return {k: v for k, v in out.items() if k in ("name", "person", "at") and isinstance(v, str)}


def names(
    events: dict[str, dict],
    persons: set[str],
    held: dict[str, bytes],
    person_of: dict[str, str] | None = None,
) -> dict[str, str]:
    """Each person's name ({person id: name}) as this device opens it from the event that
    introduced them; a placeholder where it cannot (`placeholder`). With `person_of` (device
    → person), a name two persons carry says, for each one admitted, who admitted them
    ("alice (added by mal)"): a member can name a new person as anyone (review of issue 45)."""
    out = {}
    for person in sorted(persons):
        name = said(person, events[person], held).get("person") if person in events else None
        out[person] = name if name_ok(name) else placeholder(person)
    if person_of is None:
        return out
    carried = Counter(out.values())
    base = dict(out)
    for person, name in base.items():
        event = events.get(person, {})
        by = person_of.get(str(event.get("author")), "")
        if carried[name] > 1 and event.get("kind") == "admit" and by in base and by != person:
            out[person] = f"{name}{ADDED}{base[by]})"
    return out


def space_name(events: dict[str, dict], root: str, held: dict[str, bytes]) -> str:
    """The space's name as its create says it (opened with `held`); "" when unknown. (The
    app shows the name this device keeps, from its invitation or its own create.)"""
    name = said(root, events[root], held).get("name") if root in events else None
    return name if name_ok(name) else ""


def invited(named: dict[str, str], members: set[str], mine: str, person: str | None):
    """The new person an invitation admits (their name), or None: a device of this device's
    own person (`mine`; no name given, or its own). InputError when the name is another
    member person's (only their devices add theirs: review of issue 45)."""
    if person is None or person == named.get(mine):
        return None
    if person in (named.get(p) for p in members):
        raise InputError(
            f"another member is named {person}; a device of {person}'s must invite it (or give "
            "this person another name); nothing was written"
        )
    return person


def meant(members: dict[str, str], named: dict[str, str], member: str, space: str) -> list[str]:
    """The member devices `member` means ([] when none): a device id, a person's id (all
    their devices) or a person's name when no other member carries it (`one_named`);
    `members`: device → person id."""
    wanted = "".join(str(member).split())
    if wanted in members:
        return [wanted]
    devices: dict[str, list[str]] = {}
    for device, person in sorted(members.items()):
        devices.setdefault(person, []).append(device)
    if wanted not in devices:
        wanted = one_named({p: named[p] for p in devices}, member, space, devices) or ""
    return devices.get(wanted, [])


def one_named(
    named: dict[str, str], wanted: str, space: str, devices: dict[str, list[str]] | None = None
) -> str | None:
    """The one person (their id) a name given by a person means among `named` ({person id:
    name}); None when none; InputError when two people carry that name, naming each one's
    devices (`devices`: person id → device ids) and their person ids."""
    wanted = " ".join(str(wanted).split())
    found = sorted(p for p, n in named.items() if n == wanted)
    if len(found) < 2:  # ("alice" means each "alice (added by …)" too: never a guess)
        found = sorted({*found, *(p for p, n in named.items() if n.startswith(wanted + ADDED))})
    if len(found) > 1:
        each = "; ".join(
            f"person {p} (devices {', '.join((devices or {}).get(p, [])) or '?'})" for p in found
        )
        raise InputError(
            f"{len(found)} members are named {wanted[:100]!r} in the space {space!r}: name "
            f"one by its person id or a device id: {each}"
        )
    return found[0] if found else None


def held_of(held: dict, named, member: str, space: str) -> str:
    """The person (their id) among those whose removals are `held` that `member` (a person's
    name or id) means; `named()`: {person id: name}, read only when a name is given.
    InputError when none."""
    person = " ".join(str(member).split())
    if person not in held:
        names = named()
        person = one_named({p: names.get(p, p) for p in held}, person, space) or person
    if person not in held:
        raise InputError(
            f"no removals of {person[:100]!r} wait in the space {space!r} (`mnemo space "
            f"removals {space}` lists them)"
        )
    return person
