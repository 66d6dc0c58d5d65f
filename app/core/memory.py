"""The memory record and the rules for its text: normalization, identity, limits."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields

from app.core.errors import InputError

MAX_TEXT_CHARS = 2_000_000  # about 300,000 words; larger input is refused, not cut
MAX_TITLE_CHARS = 500
CONFIDENCES = ("low", "medium", "high")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def content_hash(text: str) -> str:
    """First 16 hex digits of SHA-256 of the lower-cased, whitespace-collapsed text."""
    normalized = " ".join(text.lower().split())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


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


def title_from(text: str) -> str:
    """A title from a text's first non-empty line, shortened to a readable length."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= 80 else line[:79].rstrip() + "…"
    return ""


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

    @property
    def embed_text(self) -> str:
        """What the model embeds: title (unless the text starts with it), text and reasoning."""
        title = self.title.rstrip("…")
        if title and " ".join(self.text.split()).startswith(" ".join(title.split())):
            title = ""
        return "\n".join(part for part in (title, self.text, self.reasoning) if part)

    @property
    def display_title(self) -> str:
        """The title, or the first line of the text."""
        return self.title or title_from(self.text)

    def to_dict(self) -> dict:
        """All fields, JSON-ready (the export format)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Memory:
        """A memory from an exported dict; unknown keys are ignored, bad values refused."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if not isinstance(values.get("text"), str) or not values["text"].strip():
            raise InputError("a memory needs a non-empty text")
        values["text"] = clean_text(values["text"])
        values["tags"] = split_list(values.get("tags"))
        values["references"] = split_list(values.get("references"))
        if values.get("keywords") is not None:
            values["keywords"] = split_list(values["keywords"])
        if values.get("confidence", "medium") not in CONFIDENCES:
            raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
        values.setdefault("id", content_hash(values["text"]))
        return cls(**values)


def public_dict(memory: Memory, score: float | None = None, signals: dict | None = None) -> dict:
    """The one JSON shape of a memory shown to people and agents (README: "JSON output").

    Used by `recall --json`, `remember --json`, `context --json` and every MCP tool result;
    `score` and `signals` are present only where a search produced them.
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
    }
    if memory.deleted_at:
        out["deleted_at"] = memory.deleted_at
    if score is not None:
        out["score"] = round(float(score), 6)
    if signals is not None:
        out["signals"] = signals
    return out
