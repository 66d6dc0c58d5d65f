"""The memory record and the rules for its text: normalization, identity, limits."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime

from app.core.display import written_by
from app.core.errors import InputError, SecretError
from app.core.origin import Origin
from app.core.secrets import MARKER as REDACTION_MARKER
from app.core.secrets import describe as describe_secrets
from app.core.secrets import redact as redact_secrets
from app.core.secrets import scan as scan_secrets

MAX_TEXT_CHARS = 2_000_000  # about 300,000 words; larger input is refused, not cut
MAX_TITLE_CHARS = 500
CONFIDENCES = ("low", "medium", "high")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def content_hash(text: str) -> str:
    """First 16 hex digits of SHA-256 of the lower-cased, whitespace-collapsed text."""
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def thread_hash(text: str, thread: str | None) -> str:
    """A memory's default id: its content hash, in its thread (the same words in two
    conversations are two memories)."""
    return content_hash(text if thread is None else f"{thread}\n{text}")


def clean_text(text: str, what: str = "text") -> str:
    """Text fit to store: refuses binary data and oversize input, strips stray controls."""
    if not isinstance(text, str):
        raise InputError(f"the {what} must be text")
    if "\x00" in text:
        raise InputError(f"the {what} contains NUL bytes: it looks like binary data, not text")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(
            f"the {what} has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}"
        )
    controls = len(_CONTROL.findall(text))
    if controls > 32 and controls > len(text) // 100:
        raise InputError(f"the {what} is mostly control characters: it looks like binary data")
    return unicodedata.normalize("NFC", _CONTROL.sub("", text)).strip()


def made_from(title: str | None, text: str) -> bool:
    """Whether `title` is the one `text` makes (`title_from`), also as Mnemo made it before
    titles kept a redaction marker whole (cut at 79 characters: `pw [REDAC…`): such a title
    follows its text, it is no title somebody wrote."""
    if not title:
        return False
    if title == title_from(text):
        return True
    line = next((t.strip().lstrip("#").strip() for t in text.splitlines() if t.strip()), "")
    return len(line) > 80 and title == line[:79].rstrip() + "…"


def title_from(text: str) -> str:
    """A title from a text's first non-empty line, shortened to a readable length; never
    inside a redaction marker (`[REDACTED:password]`, not `[REDAC…`): the title names a
    secret as the text does."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            if len(line) <= 80:
                return line
            cut = 79
            for marker in REDACTION_MARKER.finditer(line[: cut + 80]):
                if marker.start() < cut < marker.end():
                    cut = marker.end()
            return line if cut >= len(line) else line[:cut].rstrip() + "…"
    return ""


_STATEMENT_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def _statement_key(sentence: str) -> str:
    """What makes two statements the same: their words as written (spacing aside, and a
    final full stop). Case counts (`LOG_DIR=/Data/Logs` is not `log_dir=/data/logs`) and so
    does a question mark ("Is the cache warm?" asks, "Is the cache warm." says)."""
    return " ".join(sentence.split()).removesuffix(".").rstrip()


def join_statements(texts: list[str]) -> str:
    """Texts joined so every distinct statement (sentence or line) of each is kept.

    The first text stays as written. A later one adds nothing when every statement of it
    was said already; else a text of several lines (a shell snippet, a list) is added whole
    as written, its lines kept (its `fi` and `echo done` are its own, though the first
    snippet has them too), and prose adds a paragraph of the statements not said before.
    """
    seen: set[str] = set()
    parts: list[str] = []
    for text in texts:
        sentences = [s.strip() for s in _STATEMENT_BREAK.split(text) if s.strip()]
        new = [s for s in sentences if _statement_key(s) and _statement_key(s) not in seen]
        seen.update(_statement_key(s) for s in sentences)
        if not new:
            continue
        whole = len(new) == len(sentences) or "\n" in text.strip()
        parts.append(text.strip() if whole else " ".join(new))
    return "\n\n".join(parts)


def split_list(value: str | list[str] | None) -> list[str]:
    """Tags or references from a comma-separated string or a list, trimmed and de-duplicated."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    seen: dict[str, None] = {}
    for item in items:
        item = str(item).strip()
        if item:
            seen.setdefault(item, None)
    return list(seen)


@dataclass
class Memory:
    """One remembered thing with its metadata."""

    id: str
    text: str
    title: str = ""
    reasoning: str = ""
    category: str = "note"
    tags: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    source: str = "manual"
    source_project: str | None = None
    confidence: str = "medium"
    observation_count: int = 1
    recall_count: int = 0
    last_recalled_at: str | None = None
    created_at: str = ""
    updated_at: str = ""
    pinned: bool = False
    deleted_at: str | None = None
    keywords: list[str] | None = None  # keyword labels; None until they are made
    merged_into: str | None = None  # set on a merge's sources (in the trash): the result
    thread: str | None = None  # a conversation or session whose memories lend each other context
    # who wrote it, set by Mnemo from the path it came in by (`app.core.origin`): one for
    # each memory a merge joined, oldest first; never read from what a writer sends
    origins: list[Origin] = field(default_factory=list)
    # shown, never stored: what it said before it superseded an older memory, and until
    # when ({"was": "5432", "until": ISO}; `superseding.change`); set where it is read to
    # be shown (a search's results, `get`)
    changed: dict | None = field(default=None, compare=False)

    @property
    def origin(self) -> Origin | None:
        """Who wrote it first (a merge's oldest origin)."""
        return self.origins[0] if self.origins else None

    @property
    def own_title(self) -> str:
        """The title when it says something the text does not start with, else ''."""
        title = self.title.rstrip("…")
        if title and " ".join(self.text.split()).startswith(" ".join(title.split())):
            return ""
        return title

    @property
    def embed_text(self) -> str:
        """What the model embeds: title (unless the text starts with it), text and reasoning."""
        return "\n".join(part for part in (self.own_title, self.text, self.reasoning) if part)

    @property
    def display_title(self) -> str:
        """The title, or the first line of the text."""
        return self.title or title_from(self.text)

    def to_dict(self) -> dict:
        """All fields, JSON-ready (the export format; `origin`, the first of `origins`)."""
        out = asdict(self)
        del out["changed"]  # (not a stored field)
        out["origins"] = [o.to_dict() for o in self.origins]
        out["origin"] = out["origins"][0] if self.origins else None
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Memory:
        """A memory from an exported dict; unknown keys are ignored, every known field is
        type- and range-checked like `remember` (InputError names the first bad field)."""
        if not isinstance(data, dict):
            raise InputError(f"not a JSON object but {type(data).__name__}")
        # (origins never come from a dict: a line of a file, an agent's fields; the path
        # the memory came in by sets them)
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values.pop("origins", None)
        values.pop("changed", None)
        text = values.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError("a memory needs a non-empty text")
        values["text"] = clean_text(text)
        for name in ("title", "reasoning"):
            values[name] = clean_text(_optional_str(values, name) or "", name)
        values["title"] = values["title"][:MAX_TITLE_CHARS]
        for name in ("category", "source"):
            value = _optional_str(values, name)
            if value is not None:
                values[name] = (
                    _short(clean_text(value, name), name) or cls.__dataclass_fields__[name].default
                )
        for name in ("source_project", "merged_into", "thread"):
            value = _optional_str(values, name)
            values[name] = _short(clean_text(value, name), name) or None if value else None
        for name in ("tags", "references"):
            values[name] = _str_list(values.get(name), name)
        if values.get("keywords") is not None:
            values["keywords"] = _str_list(values["keywords"], "keywords")
        if values.get("confidence", "medium") not in CONFIDENCES:
            raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
        values["observation_count"] = _count(values, "observation_count", 1, 1)
        values["recall_count"] = _count(values, "recall_count", 0, 0)
        pinned = values.get("pinned", False)
        if pinned not in (True, False, 0, 1) or isinstance(pinned, float):
            raise InputError(f"pinned must be true or false, not {pinned!r}")
        values["pinned"] = bool(pinned)
        for name in ("created_at", "updated_at", "last_recalled_at", "deleted_at"):
            values[name] = _timestamp(values, name)
        values["created_at"] = values["created_at"] or ""
        values["updated_at"] = values["updated_at"] or ""
        memory_id = _optional_str(values, "id")
        if memory_id is not None and not _ID.fullmatch(memory_id):
            raise InputError(f"id must be 1-64 letters, digits, '-' or '_', not {memory_id!r}")
        values["id"] = memory_id or thread_hash(values["text"], values.get("thread"))
        return cls(**values)


MAX_SHORT_CHARS = 500  # category, source, project: a label, not a text
MAX_COUNT = 2**31 - 1
_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")


def _optional_str(values: dict, name: str) -> str | None:
    value = values.get(name)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{name} must be text, not {type(value).__name__}")
    return value


def _short(value: str, name: str) -> str:
    if len(value) > MAX_SHORT_CHARS:
        raise InputError(f"{name} has {len(value):,} characters; the limit is {MAX_SHORT_CHARS}")
    return value


def _str_list(value, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{name} must be a list of texts")
    return split_list([_short(clean_text(v, name), name) for v in value])


def _count(values: dict, name: str, default: int, minimum: int) -> int:
    value = values.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be a whole number, not {value!r}")
    if not minimum <= value <= MAX_COUNT:
        raise InputError(f"{name} must be between {minimum} and {MAX_COUNT}, not {value}")
    return value


def utc_stamp(value: str) -> str | None:
    """An ISO date or date-time as Mnemo stores times (UTC, microseconds: they sort as
    text), or None when it is not one. Without a zone it is taken as UTC; a trailing `Z`
    is UTC too, also after a bare date."""
    text = value.strip()
    if len(text) == 11 and text.endswith(("Z", "z")):
        text = text[:-1]
    try:
        stamp = datetime.fromisoformat(text)
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return stamp.astimezone(UTC).isoformat(timespec="microseconds")
    except (ValueError, OverflowError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        return None


def _timestamp(values: dict, name: str) -> str | None:
    value = _optional_str(values, name)
    if not value:
        return None
    stamp = utc_stamp(value)
    if stamp is None:
        raise InputError(f"{name} must be an ISO date/time, not {value[:40]!r}")
    return stamp


def public_dict(memory: Memory, score: float | None = None, signals: dict | None = None) -> dict:
    """The one JSON shape of a memory shown to people and agents (README: "JSON output").

    Used by `recall --json`, `remember --json`, `context --json` and every MCP tool result;
    `score` and `signals` are present only where a search produced them. `written_by` says
    who wrote it when a person did not write or accept its words ('written by codex, 3 days
    ago'; None otherwise): an agent shown it reads another agent's note for what it is.
    """
    out = {
        "id": memory.id,
        "title": memory.display_title,
        "text": memory.text,
        "reasoning": memory.reasoning,
        "category": memory.category,
        "tags": memory.tags,
        "keywords": memory.keywords or [],
        "references": memory.references,
        "project": memory.source_project,
        "source": memory.source,
        "confidence": memory.confidence,
        "pinned": memory.pinned,
        "observation_count": memory.observation_count,
        "recall_count": memory.recall_count,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "thread": memory.thread,
        "origin": memory.origin.to_dict() if memory.origin else None,
        "origins": [o.to_dict() for o in memory.origins],
        "written_by": written_by(memory.origins) or None,
    }
    if memory.deleted_at:
        out["deleted_at"] = memory.deleted_at
    if memory.changed:
        out["changed"] = memory.changed
    if score is not None:
        out["score"] = round(float(score), 6)
    if signals is not None:
        out["signals"] = signals
    return out


SECRET_POLICIES = ("refuse", "redact", "allow")
# Every field a person or an agent can write, in the order they are checked.
TEXT_FIELDS = ("title", "text", "reasoning", "category", "source_project", "source", "thread")
LIST_FIELDS = ("tags", "references", "keywords")
FIELD_NAMES = {"source_project": "project"}


def guard_secrets(values: dict, policy: str = "refuse") -> str | None:
    """Check every text and list field in `values` for secrets, the same on every path.

    "refuse" raises SecretError naming the field and the kind; "redact" replaces each
    secret with `[REDACTED:kind]` in place and returns a notice; "allow" does nothing.
    """
    if policy not in SECRET_POLICIES:
        raise InputError(f"secrets must be one of {', '.join(SECRET_POLICIES)}")
    if policy == "allow":
        return None
    # Each secret once, with the fields it is in: a title made from the text holds the
    # same token, and "2 secrets" for one token read as if there were two.
    found: dict[str, tuple[list, list[str]]] = {}
    scanned: dict[str, list] = {}  # each text's findings, scanned once
    for name in (*TEXT_FIELDS, *LIST_FIELDS):
        value = values.get(name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, str):
                continue
            if item not in scanned:
                scanned[item] = scan_secrets(item)
            for hit in scanned[item]:
                hits, fields = found.setdefault(item[hit.start : hit.end], ([], []))
                hits.append(hit)
                field = FIELD_NAMES.get(name, name)
                if field not in fields:
                    fields.append(field)
    if not found:
        return None
    found, labels = _pieces_joined(found)
    where = ", ".join(
        f"{describe_secrets(hits[:1])} in the {' and the '.join(fields)}"
        for hits, fields in found.values()
    )
    if policy == "refuse":
        raise SecretError(
            f"not stored: it contains a secret ({where}); remove it, or store a redacted copy"
        )

    # One secret, one label in every field, and gone from every field it is in, also where
    # its context is missing (a title that holds the token without "password:" before it)
    def redacted(text: str) -> str:
        hits = [replace(h, kind=labels.get(text[h.start : h.end], h.kind)) for h in scanned[text]]
        text = redact_secrets(text, hits)
        for secret in sorted(labels, key=len, reverse=True):
            if len(secret) >= 6:
                text = text.replace(secret, f"[REDACTED:{labels[secret]}]")
        return text

    for name in (*TEXT_FIELDS, *LIST_FIELDS):
        value = values.get(name)
        if isinstance(value, str):
            values[name] = redacted(value)
        elif isinstance(value, list):
            values[name] = [redacted(v) if isinstance(v, str) else v for v in value]
    count = len(found)
    return f"redacted {count} secret{'' if count == 1 else 's'}: {where}"


def _pieces_joined(found: dict) -> tuple[dict, dict[str, str]]:
    """Findings whose secret is a piece of another's (a title made from a long text ends
    inside it) counted as that one, in its fields; and each secret found, with its pieces,
    mapped to one label: the kind of the whole one."""
    wholes: dict[str, tuple[list, list[str]]] = {}
    whole_of: dict[str, str] = {}
    for secret in sorted(found, key=len, reverse=True):
        whole = next((w for w in wholes if secret in w), secret)
        whole_of[secret] = whole
        hits, fields = wholes.setdefault(whole, ([], []))
        hits.extend(found[secret][0])
        fields.extend(f for f in found[secret][1] if f not in fields)
    labels = {secret: wholes[whole][0][0].kind for secret, whole in whole_of.items()}
    return wholes, labels


def guard_memory(memory: Memory, policy: str = "refuse") -> str | None:
    """`guard_secrets` over a Memory's fields (redacted in place)."""
    values = {name: getattr(memory, name) for name in (*TEXT_FIELDS, *LIST_FIELDS)}
    notice = guard_secrets(values, policy)
    for name, value in values.items():
        setattr(memory, name, value)
    return notice


# What a write changed, for views to refresh only what they show (the desktop's worker
# reports one after each write): a use (a recall count) never reloads a list.
# content: words a search reads; metadata: other fields; usage: a recall count; trash: to or
# from the trash; purge: deleted for good; settings; model: another model in use.
CHANGE_KINDS = ("content", "metadata", "usage", "trash", "purge", "settings", "model", "inbox")


@dataclass(frozen=True)
class Change:
    """One write's effect: its kind (CHANGE_KINDS) and the memories it touched (empty:
    any, or unknown)."""

    kind: str = "content"
    ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in CHANGE_KINDS:
            raise ValueError(f"unknown change kind {self.kind!r}")

    # What each kind means, decided here once (as Anki's OpChanges): the runner, the Qt
    # worker and every view ask these, never the kind's name.
    @property
    def reloads_lists(self) -> bool:
        """Lists of memories shown must be read again (a use, a setting or the inbox
        changes no list: counts are updated in place)."""
        return self.kind not in ("usage", "settings", "inbox")

    @property
    def needs_embedding(self) -> bool:
        """Memories may now lack vectors or labels: the backfill looks (a use, a setting, a
        purge or the inbox leave nothing to embed)."""
        return self.kind not in ("usage", "settings", "purge", "inbox")

    @property
    def only_counts(self) -> bool:
        """Only these memories' counts moved (a copy, an agent's recall): rows shown of
        them are read again in place."""
        return self.kind == "usage"

    @property
    def moves_inbox(self) -> bool:
        """The capture inbox changed (a statement proposed, accepted or rejected)."""
        return self.kind == "inbox"
