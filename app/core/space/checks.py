"""What a membership event's fields may hold, checked at the door (`Record.check`, ADR 0026).

Every field of every kind is checked before an event is kept: ids, hashes, sealed keys,
line numbers, names; and, in a version 2 event, the sealed names and time (`sealed`, the
epoch that seals them, `under`) and that no name or time is left in the clear. An event
that fails says why in one line (InputError) and nothing is kept.
"""

from __future__ import annotations

import re

from app.core.errors import InputError
from app.core.space import keys

VERSIONS = (1, 2)  # 1: names and times in the clear (spaces made before issue 45's seal)
KINDS = ("create", "admit", "remove", "rotate", "leave")
MAX_PARENTS = 64
MAX_DEVICES = 1000  # devices an event names (a team has a few dozen)
MAX_EPOCHS = 10_000  # earlier epochs' keys an event wraps
MAX_SEALED = 512  # characters of a key sealed to a device or wrapped (about 110)
MAX_NAMES = 1024  # characters of an event's sealed names and time (about 300)
MIN_NAMES = 12 + 16  # bytes: a nonce and a tag
MAX_NAME = 100  # a space's or a person's name (as `mnemo space` takes them)
CLEAR = ("name", "person", "at")  # what a version 1 event said in the clear

_HASH = re.compile(r"[0-9a-f]{64}")


def check(event: object, space: str) -> None:
    """InputError when `event` is not an event of the space `space` of a shape the fold
    takes (its signature aside: checking it costs more, `Record.add` does)."""
    if not isinstance(event, dict) or event.get("v") not in VERSIONS:
        raise InputError("not a space event")
    if isinstance(event["v"], bool):
        raise InputError("not a space event")
    if event.get("space") != space:
        raise InputError("an event of another space")
    if event.get("kind") not in KINDS:
        raise InputError(f"an unknown kind of event: {str(event.get('kind'))[:40]!r}")
    parents = event.get("parents")
    if not isinstance(parents, list) or len(parents) > MAX_PARENTS:
        raise InputError("an event without its parents")
    if not all(hash_ok(p) for p in parents):
        raise InputError("an event without its parents")
    if not device_ok(event.get("author")):
        raise InputError("an event not signed by the device it names")
    kind = event["kind"]
    if event["v"] == 2 and any(name in event for name in CLEAR):
        raise InputError(f"an event ({kind}) with a name or a time in the clear")
    for name in (REQUIRED if event["v"] == 1 else REQUIRED_2)[kind]:
        if name not in event:
            raise InputError(f"an event ({kind}) without its {name!r}")
    for name, (ok, why) in FIELDS.items():
        if name in event and not ok(event[name]):
            raise InputError(f"an event ({kind}) with {why}")


def hash_ok(value: object) -> bool:
    return isinstance(value, str) and _HASH.fullmatch(value) is not None


def device_ok(value: object) -> bool:
    """A device id: the base64 of 32 bytes."""
    if not isinstance(value, str) or len(value) != 44:
        return False
    try:
        return len(keys.unb64(value)) == 32
    except InputError:
        return False


def _sealed_ok(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_SEALED


def _names_ok(value: object) -> bool:
    """Sealed names and time: base64 of a nonce, the sealed text and its tag."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAMES:
        return False
    try:
        return len(keys.unb64(value)) > MIN_NAMES
    except InputError:
        return False


MAX_COUNT = 2**53  # (line numbers and clocks: exact in every JSON reader)


def _count_ok(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT


def name_ok(value: object) -> bool:
    """A space's or a person's name as `mnemo space` takes them: one line of at most 100
    printable characters, spaces single, none at either end (names come from other
    devices and reach a terminal: review of issue 45)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NAME
        and value.isprintable()
        and value == " ".join(value.split())
    )


def _map_ok(value: object, key, item, most: int) -> bool:
    return (
        isinstance(value, dict)
        and len(value) <= most
        and all(key(k) and item(v) for k, v in value.items())
    )


def _devices_ok(value: object) -> bool:
    return (
        isinstance(value, list)
        and 0 < len(value) <= MAX_DEVICES
        and all(device_ok(d) for d in value)
        and len(set(value)) == len(value)
    )


REQUIRED = {  # version 1
    "create": ("name", "person", "keys"),
    "admit": ("device", "person", "epoch", "key"),
    "remove": ("devices", "upto", "keys"),
    "rotate": ("keys",),
    "leave": ("upto",),
}
REQUIRED_2 = {  # version 2: names and time sealed (`sealed`) under an epoch's key (`under`;
    # a create's own first epoch, which it cannot name)
    "create": ("keys", "sealed"),
    "admit": ("device", "epoch", "key", "new", "sealed", "under"),
    "remove": ("devices", "upto", "keys", "sealed", "under"),
    "rotate": ("keys", "sealed", "under"),
    "leave": ("upto", "sealed", "under"),
}
FIELDS = {  # a field, wherever it is: what it must be, and what is said when it is not
    "at": (lambda v: isinstance(v, str) and len(v) <= 64, "a time that is not one"),
    "sig": (lambda v: isinstance(v, str) and len(v) <= 200, "a signature that is not one"),
    "name": (name_ok, f"a name that is not one line of at most {MAX_NAME} printable characters"),
    "person": (
        name_ok,
        f"a person's name that is not one line of at most {MAX_NAME} printable characters",
    ),
    "device": (device_ok, "a device that is not a device id"),
    "epoch": (hash_ok, "an epoch that is not an event's hash"),
    "key": (_sealed_ok, "a sealed key that is not one"),
    "devices": (_devices_ok, f"devices that are not 1 to {MAX_DEVICES} device ids"),
    "upto": (
        lambda v: _map_ok(v, device_ok, _count_ok, MAX_DEVICES),
        "line numbers that are not one per device",
    ),
    "keys": (
        lambda v: _map_ok(v, device_ok, _sealed_ok, MAX_DEVICES),
        "keys that are not one sealed key per device",
    ),
    "prev": (
        lambda v: _map_ok(v, hash_ok, _sealed_ok, MAX_EPOCHS),
        "earlier keys that are not one per epoch",
    ),
    "sealed": (_names_ok, f"sealed names that are not base64 of at most {MAX_NAMES} characters"),
    "under": (hash_ok, "names sealed under an epoch that is not an event's hash"),
    "new": (lambda v: isinstance(v, bool), "a new person that is not true or false"),
    "past": (
        lambda v: _map_ok(v, device_ok, hash_ok, MAX_DEVICES),
        "digests of lines that are not one per device",
    ),
}
