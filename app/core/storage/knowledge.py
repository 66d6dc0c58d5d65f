"""Knowledge-bank markdown: `### Title` sections with `- Field: value` lines (design 004).

The same format is what Mnemo writes to its markdown export and to the optional mirror
folder, so a database can be rebuilt from either by `mnemo import`.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

from app.core import paths
from app.core.errors import InputError
from app.core.memory import CONFIDENCES, MAX_COUNT, Memory, split_list, utc_stamp

log = logging.getLogger(__name__)

KNOWN_CATEGORIES = ("anti-patterns", "patterns", "heuristics")
_FIELD = re.compile(r"^\s*[-*]\s+\**([A-Za-z][A-Za-z ]{1,30}?)\**\s*:\s*\**\s*(.*?)\s*$")
FIELDS = {
    "observation count": "observation_count",
    "observations": "observation_count",
    "confidence": "confidence",
    "last observed": "updated_at",
    "updated": "updated_at",
    "created": "created_at",
    "reasoning": "reasoning",
    "why": "reasoning",
    "references": "references",
    "refs": "references",
    "category": "category",
    "tags": "tags",
    "keywords": "keywords",
    "labels": "keywords",
    "project": "source_project",
    "source project": "source_project",
    "id": "id",
    "deleted": "deleted_at",
    "pinned": "pinned",
    "recall count": "recall_count",
    "source": "source",
    "thread": "thread",
    "origin": "origin",  # written for a person to read; never taken back (ADR 0022)
}


def parse_section(title: str, body: str, path: Path) -> Memory:
    """A memory from one markdown section: field lines become fields, the rest is the text."""
    memory = Memory(id="", text="", title=title[:500], source="import", references=[])
    category = path.stem.lower()
    if category in KNOWN_CATEGORIES:
        memory.category = category
    text_lines = []
    for line in body.splitlines():
        match = _FIELD.match(line)
        field = FIELDS.get(match.group(1).strip().lower()) if match else None
        if field is None:
            text_lines.append(line)
            continue
        value = match.group(2)
        if field in ("observation_count", "recall_count"):
            digits = re.match(r"\d+", value)
            if digits:
                count = min(int(digits.group()[:12]), MAX_COUNT)
                setattr(memory, field, max(count, 1 if field[0] == "o" else 0))
        elif field == "confidence":
            if value.lower() in CONFIDENCES:
                memory.confidence = value.lower()
        elif field in ("updated_at", "created_at", "deleted_at"):
            stamp = utc_stamp(value)  # UTC, as every stored time
            if stamp:
                setattr(memory, field, stamp)
            elif field == "updated_at" and value:
                memory.references.append(f"last observed: {value}")
        elif field in ("references", "tags", "keywords"):
            setattr(memory, field, split_list((getattr(memory, field) or []) + value.split(",")))
        elif field == "pinned":
            memory.pinned = value.lower() in ("yes", "true", "1")
        elif field == "id":
            memory.id = value.lower() if re.fullmatch(r"[0-9a-fA-F]{16}", value) else ""
        elif field == "origin":
            continue  # what a file says of who wrote it: the import sets that
        else:
            setattr(memory, field, value)
    memory.text = "\n".join(text_lines).strip()
    if not memory.references:
        memory.references = [str(path)]
    if not memory.text:
        return memory  # no memory: the caller skips it
    # The checks every path goes through (`- Thread:` with nothing after it, a 600-character
    # category, control characters): a bad field is an InputError naming it
    data = {k: v for k, v in memory.to_dict().items() if v != "" or k == "text"}
    checked = Memory.from_dict(data)
    checked.id = memory.id  # "" stays "": the id is made when the section is imported
    return checked


def to_markdown(memory: Memory) -> str:
    """A memory as a knowledge-bank section that `parse_section` reads back."""
    lines = [f"### {memory.display_title}", "", memory.text, ""]
    if memory.reasoning:
        lines.append(f"- Reasoning: {' '.join(memory.reasoning.split())}")
    lines += [
        f"- Id: {memory.id}",
        f"- Category: {memory.category}",
        f"- Confidence: {memory.confidence}",
        f"- Observation count: {memory.observation_count}",
        f"- Created: {memory.created_at}",
        f"- Last observed: {memory.updated_at}",
    ]
    for label, values in (
        ("Tags", memory.tags),
        ("References", memory.references),
        ("Keywords", memory.keywords or []),
    ):
        if values:
            lines.append(f"- {label}: {', '.join(values)}")
    if memory.source_project:
        lines.append(f"- Project: {memory.source_project}")
    if memory.thread:
        lines.append(f"- Thread: {' '.join(memory.thread.split())}")
    if memory.pinned:
        lines.append("- Pinned: yes")
    if memory.deleted_at:
        lines.append(f"- Deleted: {memory.deleted_at}")
    if memory.origins:  # who wrote it, for the audit trail the mirror is
        written = "; ".join(f"{o.describe()} {o.at[:19]}".strip() for o in memory.origins)
        lines.append(f"- Origin: {' '.join(written.split())}")
    return "\n".join(lines) + "\n"


def mirror_file(folder: str) -> Path:
    """This month's file of the markdown mirror in `folder`."""
    return Path(folder).expanduser() / f"mnemo-{datetime.now(UTC):%Y-%m}.md"


def mirror_problem(folder: str) -> str | None:
    """Why this month's mirror file cannot be written (a link planted there, a file of
    another user's, not a file), without writing it; None when it can."""
    path = mirror_file(folder)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link (never followed: it could point anywhere)"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a file"
    if os.name == "posix" and st.st_uid != os.getuid():
        return f"{path} belongs to another user (never written: they could read it)"
    return None


def append_to_mirror(folder: str, memories: list[Memory]) -> str | None:
    """Append changed memories to this month's file of the markdown mirror in `folder`
    (nothing when no folder is set). A failure is logged and said (returned), never
    raised: the mirror is a copy, and the write it follows has already landed."""
    if not folder or not memories:
        return None
    path = mirror_file(folder)
    try:
        if not path.parent.is_dir():  # made private when Mnemo makes it; a folder of the
            paths.private_dir(path.parent)  # user's (even /tmp) keeps its own mode
        fd = paths.private_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            for memory in memories:
                f.write("\n" + to_markdown(memory))
    except (OSError, InputError) as exc:
        why = mirror_problem(folder) or f"{path}: {exc}"
        log.warning("could not append to the mirror %s: %s", path, exc)
        return f"the markdown mirror was not written: {why}"
    return None
