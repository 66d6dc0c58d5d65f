"""What a memory said before: the versions its words passed through (issue 44, ADR 0023).

Every change of a memory's words (title, text, reasoning) keeps the state it replaced as a
version, in the same transaction (`Store.update`, `Store.put_synced`): its fields, the
origins of its words, when they were written, and when, by whom and why they were
replaced. A memory's history is the memory, its versions (newest first) and, for a merge,
the memories it was merged from (in the trash: `unmerge` brings them back).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from app.core.memory import Memory, public_dict
from app.core.origin import Origin, summary

# Why a version was replaced: a person's or an agent's edit, a file imported over it, words
# another device sent (sync), an older version restored over it, or (`superseded`) it was
# another, older memory that this one superseded.
WHYS = ("edit", "import", "sync", "restore", "superseded")
REASONS = {
    "edit": "replaced by an edit",
    "import": "replaced by an import",
    "sync": "replaced by words from another device",
    "restore": "replaced when an older version was restored",
    "superseded": "an older memory this one superseded",
}


@dataclass
class Version:
    """One earlier state of a memory's words, kept when they were replaced."""

    seq: int  # the row's number (unique in the database)
    memory_id: str
    number: int  # its place among the memory's versions, 1 the oldest
    title: str
    text: str
    reasoning: str
    category: str
    tags: list[str]
    references: list[str]
    source_project: str | None
    confidence: str
    origins: list[Origin]  # who wrote these words
    written_at: str  # when these words were written (the memory's updated_at then)
    replaced_at: str
    replaced_by: Origin | None  # who replaced them, when known
    why: str  # WHYS

    @classmethod
    def kept(
        cls,
        memory_id: str,
        state: Memory,
        *,
        origins: list[Origin],
        written_at: str,
        replaced_at: str,
        replaced_by: Origin | None,
        why: str,
    ) -> Version:
        """What `state` (what a memory said) holds, as a version of `memory_id` not stored
        yet (its row's number and place are given when it is)."""
        return cls(
            seq=0,
            memory_id=memory_id,
            number=0,
            title=state.title,
            text=state.text,
            reasoning=state.reasoning,
            category=state.category,
            tags=state.tags,
            references=state.references,
            source_project=state.source_project,
            confidence=state.confidence,
            origins=origins,
            written_at=written_at,
            replaced_at=replaced_at,
            replaced_by=replaced_by,
            why=why,
        )

    @property
    def reason(self) -> str:
        """Why it was replaced, in words."""
        return REASONS.get(self.why, self.why)

    def key(self) -> str:
        """What identifies a version on every device that holds it (sync carries versions):
        its words, when they were written, when and why they were replaced; not who (a
        planted copy cannot make a second one by naming another writer)."""
        fields = [self.title, self.text, self.reasoning, self.written_at, self.replaced_at]
        payload = json.dumps([*fields, self.why], ensure_ascii=False).encode()
        return hashlib.sha256(payload).hexdigest()[:24]

    def words(self) -> tuple[str, str, str]:
        """Its title, text and reasoning."""
        return (self.title, self.text, self.reasoning)

    def same_words(self, memory: Memory) -> bool:
        """Whether `memory` says what this version says (title, text, reasoning)."""
        return self.words() == (memory.title, memory.text, memory.reasoning)

    def to_dict(self) -> dict:
        """The JSON shape (`mnemo history --json`)."""
        return {
            "number": self.number,
            "seq": self.seq,
            "memory_id": self.memory_id,
            "title": self.title,
            "text": self.text,
            "reasoning": self.reasoning,
            "category": self.category,
            "tags": self.tags,
            "references": self.references,
            "project": self.source_project,
            "confidence": self.confidence,
            "origins": [o.to_dict() for o in self.origins],
            "written_at": self.written_at,
            "replaced_at": self.replaced_at,
            "replaced_by": self.replaced_by.to_dict() if self.replaced_by else None,
            "why": self.why,
        }


@dataclass
class History:
    """A memory as it is now, the versions its words passed through (newest first), and
    the memories a merge joined into it (in the trash; `unmerge` brings them back)."""

    memory: Memory
    versions: list[Version] = field(default_factory=list)
    merged_from: list[Memory] = field(default_factory=list)

    def now_by(self) -> str:
        """Who the memory's words now are by, for a person: who last changed them (the
        newest version's replacer), else who wrote it. (An older memory it superseded is
        another memory's words: a person accepting that changed none of these.)"""
        last = next((v for v in self.versions if v.why != "superseded"), None)
        if last is None:
            return summary(self.memory.origins)
        return last.replaced_by.describe() if last.replaced_by else "someone unknown"

    def written_by(self, version: Version) -> str:
        """Who wrote a version's words, for a person: who replaced the version of this
        memory before it (when known), else the origins the words had then."""
        older = next(
            (v for v in self.versions if v.number < version.number and v.why != "superseded"),
            None,
        )
        if version.why != "superseded" and older is not None and older.replaced_by is not None:
            return older.replaced_by.describe()
        return summary(version.origins)

    def version(self, number: int) -> Version | None:
        """The version with this number (1 the oldest), or None."""
        return next((v for v in self.versions if v.number == number), None)

    def to_dict(self) -> dict:
        """The JSON shape (`mnemo history --json`)."""
        return {
            "memory": public_dict(self.memory),
            "versions": [v.to_dict() for v in self.versions],
            "merged_from": [public_dict(m) for m in self.merged_from],
            "merged_into": self.memory.merged_into if self.memory.deleted_at else None,
        }
