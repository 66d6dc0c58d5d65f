"""The membership record of a space (ADR 0026): who is in it, and under which key.

An append-only set of events, each signed by a member device and naming the events its
author had seen (`parents`, their hashes): `create` (the root: the space's id and name,
its first epoch), `admit` (a device, of its author's own person or a new one, the current
epoch's key sealed to it), `remove` (devices, the last line of each still accepted, a new
epoch whose key is sealed to every remaining member device), `rotate` (a new epoch, nobody
removed) and `leave` (the author goes); names and times sealed (`persons`). The record
travels as any file of the space's folder does; a
device keeps every event whose signature holds and folds them (`Record.fold`) to the
members, the current epoch and which events were refused, a pure function of the set of
events: every device that holds the same events sees the same space, whatever order they
arrived in.

The fold walks the events in one order every device computes (parents before children;
among events ready together, removals and leaves first, then the more senior author,
the one admitted earlier, then the smaller hash), applying each whose author is a member
at that point. Then an event of a removed device that its removal had not seen (made
apart from it, or dated back by the removed device) is refused, and the walk is made
again, until nothing more is refused: so when two members remove each other, the senior
one's removal stands and the other's is refused.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

from app.core.errors import InputError
from app.core.space import checks, keys, persons
from app.core.space.checks import KINDS, MAX_PARENTS  # noqa: F401  (what others import here)
from app.core.sync import trust

EVENT = b"mnemo space event\0"  # the signature's domain
VERSION = 2  # what this device writes (1: names and times in the clear, still read)
FIRST = ("remove", "leave")  # ordered ahead of what was made apart from them
STARTS_EPOCH = ("create", "remove", "rotate")
_REMOVED = (  # why a removed device's event is refused
    "written by a device removed before it",
    "written by a device whose removal it had not seen",
)


def event_hash(event: dict) -> str:
    """An event's name: the SHA-256 of its canonical form, its signature included."""
    text = json.dumps(event, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Members:
    """What a record folds to."""

    name: str = ""  # the space's name when its create says it in the clear (version 1)
    members: dict[str, str] = field(default_factory=dict)  # device → its person (the hash of
    # the event that introduced them: `persons`; never a name)
    person_of: dict[str, str] = field(default_factory=dict)  # every device admitted (the
    # removed too) → its person
    epoch: str = ""  # the current epoch (the hash of the event that started it)
    epochs: list[str] = field(default_factory=list)  # every epoch, in the fold's order
    recipients: dict[str, set[str]] = field(default_factory=dict)  # epoch → devices its
    # key was sealed to
    gone: dict[str, int] = field(default_factory=dict)  # removed or left device → its
    # last line still accepted
    past: dict[str, str] = field(default_factory=dict)  # removed device → the digest of its
    # lines up to there, as its remover read them (`lines.past`)
    refused: dict[str, str] = field(default_factory=dict)  # event → why
    waiting: set[str] = field(default_factory=set)  # events whose parents have not arrived
    applied: list[str] = field(default_factory=list)  # events that took effect, in order
    walked: list[str] = field(default_factory=list)  # events walked (applied or refused)
    seniority: dict[str, int] = field(default_factory=dict)  # device → when admitted
    removals: list[str] = field(default_factory=list)  # remove and leave events applied
    unreached: set[str] = field(default_factory=set)  # epochs the current key does not
    # reach through the keys each epoch wraps (one started apart from the current one)

    @property
    def needs_rotation(self) -> bool:
        """Whether the current epoch's key is held by a device no longer a member, or not
        by every member (a removal and an admission made apart, a leave): the next member
        to write starts a new epoch first (`Record.rotate`)."""
        return self.recipients.get(self.epoch, set()) != set(self.members)

    def rotation_due(self, device: str) -> bool:
        """Whether `device`, a member about to write, starts a new epoch first: the current
        key is held by other devices than the members (`needs_rotation`), or an epoch the
        current key does not reach was sealed to it (its rotation wraps that key too, so a
        member admitted later reads that epoch's lines; a member without it would rotate
        to no avail)."""
        if device not in self.members:
            return False
        return self.needs_rotation or any(device in self.recipients[e] for e in self.unreached)

    def persons(self) -> dict[str, list[str]]:
        """Each member person's devices, by person id (their names: `persons.names`)."""
        out: dict[str, list[str]] = {}
        for device, person in sorted(self.members.items()):
            out.setdefault(person, []).append(device)
        return out

    def may_write(self, device: str, epoch: str, seq: int) -> bool:
        """Whether a line sealed under `epoch` by `device`, its `seq`-th, is accepted: the
        epoch's key was sealed to the device, and the device is a member, or was removed
        (or left) after that line (a line past the last one its removal accepted is
        refused, on every device)."""
        if device not in self.recipients.get(epoch, set()):
            return False
        if device in self.members:
            return True
        return device in self.gone and seq <= self.gone[device]


class Record:
    """One space's membership events as this device holds them."""

    def __init__(self, space: str, root: str):
        self.space = space  # the space's random id
        self.root = root  # the hash of its create event: another create is not the space
        self.events: dict[str, dict] = {}
        self.walk_size = 0  # how many events the last fold walked (strangers' are not)

    # -- taking events in

    def add(self, event: dict) -> str:
        """Keep an event (from the folder or made here) and return its hash; InputError
        for one that is malformed (`check`), or not signed by the author it names.
        Whether its author was a member is the fold's to say (it depends on the others)."""
        self.check(event)
        if not trust.verify(event["author"], event, EVENT):
            raise InputError("an event not signed by the device it names")
        name = event_hash(event)
        self.events[name] = event
        return name

    def keep(self, event: dict) -> str:
        """Keep an event this device checked before (its own, or another's it saw: from its
        own database, not the folder), its shape checked again but not its signature;
        its hash."""
        self.check(event)
        name = event_hash(event)
        self.events[name] = event
        return name

    def check(self, event: object) -> None:
        """InputError when `event` is not an event of this space of a shape the fold
        takes (its signature aside: checking it costs more, `add` does; `checks`)."""
        checks.check(event, self.space)

    def candidates(self) -> set[str]:
        """The devices that could ever be members: the creator, and every device admitted
        by an event whose author is one (to a fixed point). The events of any other device
        are a stranger's: refused before the fold, whatever they say."""
        root = self.events.get(self.root)
        if root is None:
            return set()
        admits: dict[str, list[str]] = {}
        for event in self.events.values():
            if event["kind"] == "admit" and isinstance(event.get("device"), str):
                admits.setdefault(event["author"], []).append(event["device"])
        out: set[str] = set()
        todo = [root["author"]]
        while todo:
            device = todo.pop()
            if device not in out:
                out.add(device)
                todo += admits.get(device, [])
        return out

    def worth_keeping(self, state: Members | None = None) -> set[str]:
        """The events a device keeps once it saw them (its record only grows): those of
        devices that could be members (`candidates`), but for a removed device's refused
        for its removal (only it would gain by them, and it can drop them from its own
        file anyway: a removed member's flood does not grow every device's database)."""
        state = state or self.fold()
        could = self.candidates()
        return {
            name
            for name, event in self.events.items()
            if event["author"] in could and state.refused.get(name) not in _REMOVED
        }

    def heads(self, state: Members | None = None) -> list[str]:
        """What a new event names as its parents: the events the fold walked (arrived with
        all their parents, from a device that could be a member: applied or refused) that
        no other walked event builds on. Never an event waiting for its parents or a
        stranger's (either would hold back every change made after it: review of issue
        45); a refused event is named (it was seen: a removal refused in the end may
        stand in a walk before, and what named it is then no event "made apart" from it).
        At most MAX_PARENTS: the latest the fold walked (the others are older)."""
        state = state or self.fold()
        built_on = {p for name in state.walked for p in self.events[name]["parents"]}
        heads = [name for name in state.walked if name not in built_on]
        return sorted(heads[-MAX_PARENTS:])

    # -- folding

    def fold(self) -> Members:
        """The members, the current epoch and what was refused, from the events held.

        Linear in the events held, give or take a log (review of issue 45): a stranger's
        events (`candidates`) are refused before anything else, so a flood of them costs
        nothing here; what a removal had seen is asked of that removal alone."""
        could = self.candidates()
        state_refused = {
            name: "a create that is not this space's"
            if event["kind"] == "create"
            else "written by a device that is not a member"
            for name, event in self.events.items()
            if event["author"] not in could
        }
        events = {n: e for n, e in self.events.items() if n not in state_refused}
        children: dict[str, list[str]] = {n: [] for n in events}
        missing: dict[str, int] = {}
        for name, event in events.items():
            parents = set(event["parents"])
            missing[name] = len(parents)
            for parent in parents:
                if parent in children:
                    children[parent].append(name)
        arrived = [n for n, count in missing.items() if count == 0]
        todo, left = list(arrived), dict(missing)
        while todo:
            for child in children[todo.pop()]:
                left[child] -= 1
                if left[child] == 0:
                    arrived.append(child)
                    todo.append(child)
        live = {n: events[n] for n in arrived}
        waiting = set(events) - set(live)
        by_author: dict[str, list[str]] = {}
        for name, event in live.items():
            by_author.setdefault(event["author"], []).append(name)
        seen: dict[str, set[str]] = {}  # removal → the events before or after it
        discarded: set[str] = set()
        while True:
            state = self._walk(live, children, discarded)
            more = set()
            for removal in state.removals:
                if removal not in seen:
                    seen[removal] = _related(live, children, removal)
                for device in _leaving(live[removal]):
                    more |= {
                        n
                        for n in by_author.get(device, [])
                        if n != removal and n not in seen[removal]
                    }
            if more <= discarded:
                break
            discarded |= more
        state.refused.update(state_refused)
        state.waiting = waiting
        state.unreached = _unreached(state, live)
        self.walk_size = len(live)
        return state

    def _walk(
        self, live: dict[str, dict], children: dict[str, list[str]], discarded: set[str]
    ) -> Members:
        state = Members()
        missing = {n: len(set(e["parents"])) for n, e in live.items()}
        heap: list[tuple[tuple, str]] = []
        ready_by: dict[str, set[str]] = {}  # author → its events ready, not walked yet

        def ready(name: str) -> None:
            heapq.heappush(heap, (_order(live[name], name, state), name))
            ready_by.setdefault(live[name]["author"], set()).add(name)

        for name, count in missing.items():
            if count == 0:
                ready(name)
        while heap:
            key, name = heapq.heappop(heap)
            if name not in ready_by.get(live[name]["author"], ()):
                continue  # walked already (an entry pushed again)
            if key != _order(live[name], name, state):
                ready(name)  # its author's seniority changed since
                continue
            ready_by[live[name]["author"]].discard(name)
            event = live[name]
            state.walked.append(name)
            why = self._apply(state, name, event, discarded)
            if why:
                state.refused[name] = why
            else:
                state.applied.append(name)
                if event["kind"] in ("create", "admit"):
                    device = event["author"] if event["kind"] == "create" else event["device"]
                    for other in list(ready_by.get(device, ())):
                        ready(other)  # now ranked by the seniority just given
            for child in children[name]:
                if child in missing:  # (not one waiting for another parent)
                    missing[child] -= 1
                    if missing[child] == 0:
                        ready(child)
        return state

    def _apply(self, state: Members, name: str, event: dict, discarded: set[str]) -> str:
        """Apply one event to the state; why not, when it is refused."""
        kind, author = event["kind"], event["author"]
        if kind == "create":
            if name != self.root or state.epoch:
                return "a create that is not this space's"
            if event["v"] == 1 and not (
                isinstance(event.get("name"), str) and isinstance(event.get("person"), str)
            ):
                return "a create without a name"
            if _epoch_problem(event):
                return _epoch_problem(event)
            state.name = event.get("name", "") if event["v"] == 1 else ""
            state.members[author] = state.person_of[author] = name  # (the creator's person)
            state.seniority[author] = 0
            return _start_epoch(state, name, event)
        if name in discarded:
            return _REMOVED[1]
        if author in state.gone and author not in state.members:
            return _REMOVED[0]
        if author not in state.members:
            return "written by a device that is not a member"
        if kind == "admit":
            device, epoch = event.get("device"), event.get("epoch")
            if not isinstance(device, str):
                return "an admission without a device"
            if not isinstance(epoch, str):
                return "an admission at an unknown epoch"
            if device in state.members:
                return "an admission of a member"
            if epoch not in state.recipients:
                return "an admission at an unknown epoch"
            state.members[device] = state.person_of[device] = _person(
                self.events, name, event, state.members[author]
            )
            state.seniority[device] = len(state.applied) + 1
            state.gone.pop(device, None)
            if isinstance(event.get("key"), str):
                state.recipients[epoch].add(device)
            return ""
        if kind == "leave":
            state.members.pop(author)
            state.gone[author] = _upto(event).get(author, 0)
            state.removals.append(name)
            return ""
        if kind == "remove":
            devices = event.get("devices")
            if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
                return "a removal without devices"
            if not devices or author in devices:
                return "a removal without devices (or of its author: that is a leave)"
            if not all(d in state.members for d in devices):
                return "a removal of a device that is not a member"
            if _epoch_problem(event):
                return _epoch_problem(event)
            upto = _upto(event)
            past = event.get("past") if isinstance(event.get("past"), dict) else {}
            for device in devices:
                state.members.pop(device)
                state.gone[device] = upto.get(device, 0)
                if isinstance(past.get(device), str):
                    state.past[device] = past[device]
            state.removals.append(name)
        return _start_epoch(state, name, event)

    # -- the keys this device holds

    def keys_for(self, device: keys.DeviceKey, state: Members | None = None) -> dict[str, bytes]:
        """Every epoch key this device can open, by epoch: those sealed to it by events
        that took effect, and the earlier ones each of those seals (`keys.wrap`)."""
        state = state or self.fold()
        held: dict[str, bytes] = {}
        for name in state.applied:
            event = self.events[name]
            if event["kind"] == "admit":
                sealed = event.get("key") if event.get("device") == device.public else None
            else:
                given = event.get("keys") if event["kind"] in STARTS_EPOCH else None
                sealed = given.get(device.public) if isinstance(given, dict) else None
            if isinstance(sealed, str):
                epoch = event["epoch"] if event["kind"] == "admit" else name
                try:
                    held[epoch] = device.open_sealed(sealed)
                except InputError:
                    continue  # a key a member sealed wrong: the others still open
        for name in reversed(state.applied):
            wrapped = self.events[name].get("prev")
            if name not in held or not isinstance(wrapped, dict):
                continue
            for epoch, text in wrapped.items():
                try:
                    opened = keys.unwrap(held[name], {epoch: text})
                except (InputError, AttributeError, TypeError):
                    continue
                held.setdefault(epoch, opened[epoch])
        return held

    def names(self, device: keys.DeviceKey, state: Members | None = None) -> dict[str, str]:
        """{person id: name} of every person admitted, as `device` opens the names with the
        keys it holds (a placeholder where it cannot: `persons.names`)."""
        state = state or self.fold()
        held = self.keys_for(device, state)
        return persons.names(self.events, set(state.person_of.values()), held)

    # -- writing events

    def append(self, by: keys.DeviceKey, kind: str, said: dict | None = None, **fields) -> str:
        """A new event by this device (`by`) after the events in effect it holds (`heads`),
        its time and what `said` names sealed under the current epoch's key as this device
        holds it (else the latest it holds), signed, kept. (`admit`, `remove`, `rotate` and
        `leave` then check it took effect.)"""
        state = self.fold()
        held = self.keys_for(by, state)
        under = next((e for e in reversed(state.epochs) if e in held), state.epoch or self.root)
        if under not in held:  # (a device holding no key: what it says, nobody opens)
            held = {under: keys.new_epoch_key()}
        said = {**(said or {}), "at": _now()}
        event = {
            "v": VERSION,
            "space": self.space,
            "kind": kind,
            "author": by.public,
            "parents": self.heads(state),
            "under": under,
            "sealed": persons.seal(held[under], self.space, under, by.public, kind, said),
            **fields,
        }
        return self.add(by.sign(event, EVENT))

    def _in_effect(self, name: str) -> str:
        """`name`, an event just appended, when the fold applies it; otherwise it is taken
        back and InputError says why (a command never claims what did not happen)."""
        state = self.fold()
        if name not in state.applied:
            why = state.refused.get(name, "it waits for events this device does not hold")
            kind = self.events.pop(name)["kind"]
            raise InputError(f"this {kind} would not take effect ({why}); nothing was written")
        return name

    @staticmethod
    def create(device: keys.DeviceKey, name: str, person: str) -> tuple[Record, bytes]:
        """A new space: its record (holding its create event) and its first epoch's key.
        Its name, the creator's and the time are sealed under that key."""
        _named(name, person)
        key = keys.new_epoch_key()
        space = secrets.token_hex(16)
        said = {"name": name, "person": person, "at": _now()}
        event = {
            "v": VERSION,
            "space": space,
            "kind": "create",
            "author": device.public,
            "parents": [],
            "sealed": persons.seal(key, space, "", device.public, "create", said),
            "keys": {device.public: keys.seal_to(device.public, key)},
        }
        event = device.sign(event, EVENT)
        record = Record(event["space"], event_hash(event))
        record.add(event)
        return record, key

    def admit(self, device: keys.DeviceKey, to: str, person: str | None = None) -> str:
        """Admit the device `to`, the current epoch's key sealed to it: a device of this
        device's own person when `person` is None, else a new person of that name (a
        member's device cannot join another person: review of issue 45)."""
        if person is not None:
            _named(person)
        state = self.fold()
        held = self.keys_for(device, state)
        if state.epoch not in held:
            raise InputError("this device does not hold the space's current key")
        return self._in_effect(
            self.append(
                device,
                "admit",
                said={"person": person} if person is not None else {},
                device=to,
                new=person is not None,
                epoch=state.epoch,
                key=keys.seal_to(to, held[state.epoch]),
            )
        )

    def remove(
        self,
        device: keys.DeviceKey,
        devices: list[str],
        upto: dict[str, int],
        past: dict[str, str] | None = None,
    ) -> str:
        """Remove devices (accepting each one's lines up to `upto`, which hash to `past`
        as the remover read them) and start a new epoch whose key only the remaining
        member devices receive."""
        state = self.fold()
        staying = sorted(set(state.members) - set(devices))
        extra = {"past": {d: past[d] for d in devices if d in past}} if past else {}
        return self._in_effect(
            self.append(
                device,
                "remove",
                devices=sorted(devices),
                upto={d: int(upto.get(d, 0)) for d in devices},
                **extra,
                **self._new_epoch(device, state, staying),
            )
        )

    def rotate(self, device: keys.DeviceKey) -> str:
        """Start a new epoch for the current members (after a leave, or when an epoch's
        key reached a device no longer a member: `Members.needs_rotation`)."""
        state = self.fold()
        fresh = self._new_epoch(device, state, sorted(state.members))
        return self._in_effect(self.append(device, "rotate", **fresh))

    def leave(self, device: keys.DeviceKey, upto: int) -> str:
        """This device leaves (its lines up to `upto` stay accepted)."""
        return self._in_effect(self.append(device, "leave", upto={device.public: int(upto)}))

    def _new_epoch(self, device: keys.DeviceKey, state: Members, to: list[str]) -> dict:
        key = keys.new_epoch_key()
        return {
            "keys": {d: keys.seal_to(d, key) for d in to},
            "prev": keys.wrap(key, self.keys_for(device, state)),
        }


# ---- persons, names and times -------------------------------------------------------------


def _person(events: dict[str, dict], name: str, event: dict, authors: str) -> str:
    """The person an admission (`name`) adds its device to: a new one (the admission's own
    hash) or its author's (`authors`). Version 2 says which (`new`); a version 1 admission
    named a person in the clear: its author's own when the name is the one the author's
    person was introduced with, else a new person. Never a third member's."""
    if event["v"] != 1:
        return name if event.get("new") else authors
    introduced = events.get(authors, {})
    same = introduced.get("v") == 1 and introduced.get("person") == event.get("person")
    return authors if same else name


def _named(*names: str) -> None:
    for one in names:
        if not checks.name_ok(one):
            raise InputError(
                f"a name must be one line of at most {checks.MAX_NAME} printable characters"
            )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _epoch_problem(event: dict) -> str:
    """Why an event cannot start an epoch ("" when it can)."""
    sealed = event.get("keys")
    if not isinstance(sealed, dict) or not all(isinstance(k, str) for k in sealed.values()):
        return "a new epoch without keys"
    if not isinstance(event.get("prev", {}), dict):
        return "a new epoch with earlier keys of the wrong shape"
    return ""


def _start_epoch(state: Members, name: str, event: dict) -> str:
    """A new epoch, checked first (`_epoch_problem`); nothing changes when it is refused."""
    why = _epoch_problem(event)
    if why:
        return why
    sealed = event["keys"]
    state.epoch = name
    state.epochs.append(name)
    state.recipients[name] = set(sealed)
    return ""


def _unreached(state: Members, live: dict[str, dict]) -> set[str]:
    """The epochs whose keys the current epoch's key does not open, directly or through
    the keys it wraps."""
    reached, todo = set(), [state.epoch] if state.epoch else []
    while todo:
        epoch = todo.pop()
        if epoch in reached:
            continue
        reached.add(epoch)
        wrapped = live[epoch].get("prev")
        todo += [e for e in wrapped if e in state.recipients] if isinstance(wrapped, dict) else []
    return set(state.epochs) - reached


def _upto(event: dict) -> dict[str, int]:
    upto = event.get("upto")
    if not isinstance(upto, dict):
        return {}
    return {d: n for d, n in upto.items() if isinstance(n, int) and not isinstance(n, bool)}


def _leaving(event: dict) -> list[str]:
    """The devices a removal or a leave takes out."""
    return [event["author"]] if event["kind"] == "leave" else list(event.get("devices", []))


def _order(event: dict, name: str, state: Members) -> tuple:
    """Where an event goes among those ready together: removals and leaves first, then
    the more senior author's, then the smaller hash (a removed device cannot choose its
    seniority, and a hash it could grind only decides between equals)."""
    rank = state.seniority.get(event["author"], 1 << 62)
    return (0 if event["kind"] in FIRST else 1, rank, name)


def _related(live: dict[str, dict], children: dict[str, list[str]], event: str) -> set[str]:
    """The events made before `event` (its ancestors) or after it (its descendants): what
    it had seen, or what saw it. (Asked of removals only, so never one set per event.)"""
    out: set[str] = set()
    for step in (lambda n: live[n]["parents"], lambda n: children[n]):
        todo = list(step(event))
        while todo:
            name = todo.pop()
            if name not in out and name in live:
                out.add(name)
                todo += step(name)
    return out
