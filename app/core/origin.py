"""Who wrote a memory: its origin, set by Mnemo from the path a memory came in by, never by
what the writer says of itself (issue 44, ADR 0022).

An origin is a kind (a person at this device, an agent over MCP, a statement captured from
an agent's session, an import, another device), a name (the surface a person used, the MCP
client's own `clientInfo.name`, the agent, the file, the device), the session where one is
known, and when. A memory holds a list of them: one for what was written once, one for each
memory a merge joined (a merge keeps every origin). Stored as a JSON array in the column
`origin` (schema 17); a merge's list is ordered oldest first.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, replace

from app.core.errors import InputError

PERSON, AGENT, CAPTURE, IMPORT, DEVICE = "person", "agent", "capture", "import", "device"
SPACE = "space"  # a member of a team space wrote it (issue 45): the person, and their device
UNKNOWN = "unknown"  # an older memory whose source word says nothing of who wrote it
KINDS = (PERSON, AGENT, CAPTURE, IMPORT, DEVICE, UNKNOWN, SPACE)
MAX_NAME_CHARS = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def label(value, limit: int = MAX_NAME_CHARS) -> str:
    """A name fit for an origin: text, one line, no controls or direction overrides, cut to
    `limit` characters ('' for anything else)."""
    if not isinstance(value, str):
        return ""
    text = unicodedata.normalize("NFC", _CONTROL.sub(" ", value))
    return " ".join(text.split())[:limit]


@dataclass(frozen=True)
class Origin:
    """Where one memory's words came from (the fields a person sees: `describe`)."""

    kind: str
    name: str = ""  # the surface, the MCP client, the agent, the file or the device
    session: str = ""  # an agent's session, an MCP connection; '' when none is known
    at: str = ""  # when it was written (UTC ISO, as memories' times)
    device: str = ""  # the device it was written on, when that is another one (sync)
    reviewed: bool = False  # a person accepted it from the inbox (a capture, an agent's file)
    inferred: bool = False  # guessed from an older memory's source word (m017)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"unknown origin kind {self.kind!r}")

    def to_dict(self) -> dict:
        """The JSON shape (stored, synced, shown): kind and at always, the rest when set."""
        out: dict = {"kind": self.kind, "name": self.name, "at": self.at}
        for key in ("session", "device"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        for key in ("reviewed", "inferred"):
            if getattr(self, key):
                out[key] = True
        return out

    @classmethod
    def from_dict(cls, data) -> Origin | None:
        """An origin from its JSON shape, cleaned; None when it is not one."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        return cls(
            data["kind"],
            label(data.get("name")),
            label(data.get("session")),
            label(data.get("at"), 40),
            label(data.get("device")),
            data.get("reviewed") is True,
            data.get("inferred") is True,
        )

    def stamped(self, at: str) -> Origin:
        """This origin with its time (kept when it has one)."""
        return self if self.at else replace(self, at=at)

    def describe(self, when: str = "") -> str:
        """One line for a person: 'agent claude-code (session 4f2a) on laptop', with `when`
        (its time, as the caller words it) right after who wrote it: before 'accepted by
        you', which it would otherwise seem to date."""
        if self.kind in (PERSON, UNKNOWN):
            text = "you" if self.kind == PERSON else "unknown"
            text += f" ({self.name})" if self.name else ""
        else:
            text = f"{_WORDS[self.kind]} {self.name or '(name unknown)'}"
        if self.session:
            text += f", session {self.session}"
        if self.device:
            text += f", on {self.device}"
        text += when
        if self.reviewed:
            text += ", accepted by you"
        if self.inferred:
            text += " (inferred from its source)"
        return text


def summary(origins: list[Origin]) -> str:
    """Who wrote a memory in a few words: its first origin, and how many more a merge
    joined ('agent claude-code, and 1 more')."""
    if not origins:
        return "origin unknown"
    more = len({(o.kind, o.name) for o in origins[1:]} - {(origins[0].kind, origins[0].name)})
    first = replace(origins[0], session="", reviewed=False, inferred=False)
    return first.describe() + (f", and {more} more" if more else "")


_WORDS = {
    AGENT: "agent",
    CAPTURE: "captured from",
    IMPORT: "imported from",
    DEVICE: "device",
    SPACE: "space member",
}


# ---- the origins of each path (front ends choose one; no writer's field reaches them) ---
def person(surface: str) -> Origin:
    """A person at this device: `surface` is cli, popup, manager or clipboard."""
    return Origin(PERSON, label(surface))


def agent(client: str, session: str = "") -> Origin:
    """An agent over MCP: the client's own name from its `initialize`."""
    return Origin(AGENT, label(client), label(session))


def capture(agent_name: str, session: str = "", reviewed: bool = False) -> Origin:
    """A statement an agent's hook captured (`reviewed`: a person accepted it)."""
    return Origin(CAPTURE, label(agent_name), label(session), reviewed=reviewed)


# What a coding agent sets in the environment of the shell commands it runs: a `mnemo`
# run there is the agent's, not the person's (an agent's own word, but it can only make a
# memory less trusted). Claude Code: CLAUDECODE=1; Gemini CLI: GEMINI_CLI=1; Codex:
# CODEX_THREAD_ID (its conversation), CODEX_CI or CODEX_SANDBOX.
SHELL_MARKERS = (
    ("CLAUDECODE", "claude-code", ""),
    ("GEMINI_CLI", "gemini-cli", ""),
    ("CODEX_THREAD_ID", "codex", "CODEX_THREAD_ID"),
    ("CODEX_CI", "codex", "CODEX_THREAD_ID"),
    ("CODEX_SANDBOX", "codex", "CODEX_THREAD_ID"),
)


def at_the_command_line(environ, surface: str = "cli") -> Origin:
    """Who runs `mnemo` here: an agent whose shell tool it is (SHELL_MARKERS), with its
    session where it says it, else the person at the terminal (`surface`)."""
    for marker, name, session in SHELL_MARKERS:
        if environ.get(marker):
            return agent(name, environ.get(session, "") if session else "")
    return person(surface)


def imported(file_name: str) -> Origin:
    """A memory read from a file (markdown, a knowledge bank, a JSONL export, an agent's
    memory file): the file's name."""
    return Origin(IMPORT, label(file_name))


def member(person_name: str, device_id: str, at: str = "") -> Origin:
    """A memory a member of a team space wrote (its line signed by that device): the
    person's name in the space and the start of the device's id. Not among the kinds
    agents get unasked (`INJECTABLE`): a space's memories reach an agent only when it
    allows it (issue 45, next)."""
    return Origin(SPACE, label(person_name), device=label(device_id)[:12], at=label(at, 40))


def author(origins: list[Origin]) -> Origin | None:
    """Who wrote a memory of a team space: the member its first origin names (the words
    came from the space), or None when its words began on this device (its later space
    origins are members who edited it; they do not make it theirs)."""
    return origins[0] if origins and origins[0].kind == SPACE else None


def device(name: str) -> Origin:
    """A memory another device wrote, whose operation said nothing of its origin (a peer
    older than origins)."""
    return Origin(DEVICE, label(name))


# ---- stored as a JSON array ----------------------------------------------------------
def encode(origins: list[Origin]) -> str:
    """The column's value."""
    return json.dumps([o.to_dict() for o in origins], ensure_ascii=False, sort_keys=True)


def decode(value) -> list[Origin]:
    """The origins a column (or a synced record) holds; entries that are not origins are
    left out."""
    if value == "[]":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # (a synced line's text nested too deep)
            return []
    if not isinstance(value, list):
        return []
    return [o for o in map(Origin.from_dict, value[:1000]) if o is not None]


def joined(groups: list[list[Origin]]) -> list[Origin]:
    """Every origin of the memories a merge joins, each once, oldest first."""
    seen: dict[Origin, None] = {}
    for group in groups:
        for one in group:
            seen.setdefault(one, None)
    return sorted(seen, key=lambda o: o.at)


def added(origins: list[Origin], one: Origin) -> list[Origin]:
    """A memory's origins once `one` changed its words (an edit, a file imported over it):
    `one` joins them unless the same writer is there already (a person editing their own
    note twice is one origin; the versions say when)."""
    same = replace(one, at="", reviewed=False, inferred=False)
    if any(replace(o, at="", reviewed=False, inferred=False) == same for o in origins):
        return list(origins)
    return joined([origins, [one]])


# ---- what an older memory's source word says (migration m017) ------------------------
def from_source(source: str, at: str) -> Origin:
    """The best origin a source word allows: `mcp` was an agent (which one was never
    recorded), `hook:NAME` a capture from that agent, `import` a file, `cli`, `manual`
    (the popup, the manager) and `clipboard` a person. Any other word was typed with
    `--source` or came in an import: it says nothing of who wrote the memory."""
    word = label(source)
    if word == "mcp":
        found = Origin(AGENT)
    elif word == "hook" or word.startswith("hook:"):
        found = Origin(CAPTURE, word.partition(":")[2])
    elif word == "import":
        found = Origin(IMPORT)
    elif word in ("cli", "clipboard"):
        found = Origin(PERSON, word)
    elif word in ("manual", ""):
        found = Origin(PERSON)
    else:
        found = Origin(UNKNOWN, word)
    return replace(found, at=label(at, 40), inferred=True)


# ---- a filter: KIND[:NAME] ------------------------------------------------------------
def wanted(text: str) -> tuple[str, str | None]:
    """(kind, name or None) from `KIND[:NAME]` as a person writes it (`agent:claude-code`,
    `import`), or InputError naming the kinds."""
    kind, colon, name = str(text).strip().partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise InputError(f"origin {text!r}: the kind is one of {', '.join(KINDS)} (KIND[:NAME])")
    name = label(name)
    if colon and not name:
        raise InputError(f"origin {text!r}: give a name after the colon, or none")
    return kind, name or None


def sql(kind: str, name: str | None, column: str) -> tuple[str, list]:
    """An SQL condition that holds when one of the origins in `column` is of `kind` (and
    `name`, case aside); `device:NAME` also matches whatever arrived from that device."""
    each = f"EXISTS (SELECT 1 FROM json_each({column}) o WHERE "
    field = "json_extract(o.value, '$.{}')".format
    if kind == DEVICE:
        if name is None:
            return each + f"{field('kind')} = 'device' OR {field('device')} != '')", []
        return (
            each + f"({field('kind')} = 'device' AND {field('name')} = ? COLLATE NOCASE) "
            f"OR {field('device')} = ? COLLATE NOCASE)",
            [name, name],
        )
    if name is None:
        return each + f"{field('kind')} = ?)", [kind]
    return each + f"{field('kind')} = ? AND {field('name')} = ? COLLATE NOCASE)", [kind, name]


# ---- what agents get without asking (issue 44, ADR 0024) ----------------------------
AUTO_CAPTURE = "auto-capture"  # a capture a rule stored without a person's review
# The setting `inject_origins` names these; a capture is `capture` once a person accepted it
INJECTABLE = (PERSON, CAPTURE, IMPORT, DEVICE, UNKNOWN, AGENT, AUTO_CAPTURE)
INJECTED_BY_DEFAULT = [PERSON, CAPTURE, IMPORT, DEVICE, UNKNOWN]


@dataclass(frozen=True)
class Trust:
    """Which origins reach an agent's session and prompt blocks without being asked
    (`inject_origins`): a memory goes in when every one of its origins is trusted (a merge
    carries the words of each), or when it is pinned (a person's say), unless a device not
    approved here wrote part of it (a pin travels with what that device sent)."""

    kinds: frozenset[str] = frozenset(INJECTED_BY_DEFAULT)
    # devices this one knows and does not (or no longer) approve: what they wrote stays out
    unapproved: frozenset[str] = frozenset()
    # team spaces (their ids) whose members' memories go in too (`mnemo space set NAME
    # inject on`, issue 45): a `space` origin is trusted only in one of these
    spaces: frozenset[str] = frozenset()

    @property
    def everything(self) -> bool:
        """Whether nothing is held back (every kind trusted, every device approved)."""
        return self.kinds >= set(INJECTABLE) and not self.unapproved

    def trusts(self, one: Origin) -> bool:
        """Whether this origin is trusted: its kind (a capture by whether a person accepted
        it) and, for what another device wrote, `device` and that device's approval."""
        word = AUTO_CAPTURE if one.kind == CAPTURE and not one.reviewed else one.kind
        if word not in self.kinds or self._unapproved(one):
            return False
        return DEVICE in self.kinds or not (one.device or one.kind == DEVICE)

    def _unapproved(self, one: Origin) -> bool:
        return bool(one.device or one.kind == DEVICE) and (one.device or one.name) in (
            self.unapproved
        )

    def admits(self, origins: list[Origin], pinned: bool = False) -> bool:
        """Whether a memory with these origins goes into a block unasked (none known: as
        `unknown`)."""
        if pinned:
            return not any(map(self._unapproved, origins))
        return all(map(self.trusts, origins)) if origins else UNKNOWN in self.kinds

    def sql(self, alias: str = "m") -> tuple[str, list]:
        """`admits` as an SQL condition on the memories row `alias`, and its bindings."""
        field = "json_extract(o.value, '$.{}')".format
        kinds = sorted(self.kinds)
        word = (
            f"CASE WHEN {field('kind')} = 'capture' AND coalesce({field('reviewed')}, 0) != 1 "
            f"THEN '{AUTO_CAPTURE}' ELSE {field('kind')} END"
        )
        where = f"coalesce(nullif({field('device')}, ''), {field('name')})"
        elsewhere = f"(coalesce({field('device')}, '') != '' OR {field('kind')} = 'device')"
        names = sorted(self.unapproved)
        unapproved = f"{elsewhere} AND {where} IN ({', '.join('?' * len(names))})"
        untrusted = f"{word} NOT IN ({', '.join('?' * len(kinds))})"
        spaces = sorted(self.spaces)
        if spaces:  # (a member's memory, in a space whose memories agents get)
            untrusted = (
                f"({untrusted} AND NOT ({field('kind')} = '{SPACE}' AND {alias}.id IN "
                "(SELECT memory_id FROM space_memories WHERE withdrawn = 0 AND space IN "
                f"({', '.join('?' * len(spaces))}))))"
            )
        if DEVICE not in self.kinds:
            untrusted += f" OR {elsewhere}"
        any_of = f"EXISTS (SELECT 1 FROM json_each({alias}.origin) o WHERE {{}})".format
        empty = "" if UNKNOWN in self.kinds else f" AND json_array_length({alias}.origin) > 0"
        pinned = f"{alias}.pinned = 1"
        if names:
            untrusted += f" OR ({unapproved})"
            pinned += f" AND NOT {any_of(unapproved)}"
        trusted = [*kinds, *spaces]
        return (
            f"(({pinned}) OR (NOT {any_of(untrusted)}{empty}))",
            [*names, *trusted, *names] if names else trusted,
        )


def trust_from(kinds, unapproved=(), spaces=()) -> Trust:
    """The trust a setting's list of kinds gives (unknown words left out: the settings
    module refuses them), less the devices named in `unapproved`, with the memories of the
    team spaces (ids) in `spaces`."""
    return Trust(
        frozenset(k for k in kinds if k in INJECTABLE),
        frozenset(map(label, unapproved)) - {""},
        frozenset(spaces),
    )


def marked(origins: list[Origin]) -> Origin | None:
    """The origin to name when a memory is shown to an agent: the first whose words no
    person wrote or accepted (an agent's, a capture stored without review); None when a
    person, a file or a device wrote it all."""
    return next(
        (o for o in origins if o.kind == AGENT or (o.kind == CAPTURE and not o.reviewed)), None
    )
