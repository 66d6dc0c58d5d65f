"""Import (markdown, knowledge banks, JSONL) and export (JSONL, markdown); importing twice
adds nothing.

Markdown splitting rule: every heading line (`#` to `######`, outside fenced code) starts a
memory whose title is the heading and whose text is everything up to the next heading.
Text before the first heading is a memory titled after the file; a file without headings is
one memory. Sections with no text under their heading are skipped. `- Field: value` lines
in a section (knowledge-bank fields, see `knowledge.py`) become the memory's fields.
"""

from __future__ import annotations

import errno
import json
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from app.core import origin as origins
from app.core.errors import (
    InputError,
    MnemoError,
    NotFoundError,
    PlainCopyRefused,
    SecretError,
    StoreError,
)
from app.core.memory import (
    Memory,
    clean_text,
    content_hash,
    guard_memory,
    made_from,
    thread_hash,
    title_from,
)
from app.core.paths import NotAFile, open_regular, replace_file
from app.core.storage.db import now
from app.core.storage.knowledge import append_to_mirror, parse_section, to_markdown
from app.core.storage.store import EDITABLE, Filters, Store

MARKDOWN_SUFFIXES = (".md", ".markdown", ".txt")
BATCH = 200
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class ImportReport:
    """What an import did."""

    added: int = 0
    updated: int = 0  # sections naming an existing id whose content differed
    skipped: int = 0  # already known (same id or same text)
    errors: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # ids added or updated, in order


def markdown_sections(text: str, fallback_title: str) -> list[tuple[str, str]]:
    """(title, body) pairs by the splitting rule in this module's docstring."""
    sections: list[tuple[str, list[str]]] = [(fallback_title, [])]
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            sections.append((heading.group(2).strip(), []))
        else:
            sections[-1][1].append(line)
    out = []
    for title, lines in sections:
        body = "\n".join(lines).strip()
        if body:
            out.append((title, body))
    return out


def _markdown_memories(path: Path, errors: list[str]) -> Iterator[Memory]:
    """Every good section's memory; a section with a bad field is reported and skipped."""
    with _opened(path) as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None
    for title, body in markdown_sections(clean_text(text, str(path)), path.stem):
        try:
            memory = parse_section(title, body, path)
        except InputError as exc:
            errors.append(f"{path} (section “{title[:80]}”): {exc}")
            continue
        if memory.text:
            yield memory


def _opened(path: Path) -> BinaryIO:
    """`path` open for reading; InputError when it is no regular file or cannot be read."""
    try:
        return open_regular(path)
    except NotAFile as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def _jsonl_memories(
    path: Path, handle: BinaryIO, errors: list[str]
) -> Iterator[tuple[int, Memory]]:
    """(line number, memory) for every good line; a bad line is reported and skipped."""
    with handle:
        for number, raw in enumerate(handle, 1):
            try:  # a byte order mark before the first line is no part of it (Notepad)
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                errors.append(f"{path}:{number}: not UTF-8 text")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line, parse_constant=_no_constant)
                yield number, Memory.from_dict(data)
            except ValueError as exc:  # JSONDecodeError too
                errors.append(f"{path}:{number}: not valid JSON ({exc})")
            except RecursionError:  # [[[[… thousands deep: Python's parser gives up
                errors.append(f"{path}:{number}: nested too deeply to be a memory")
            except (TypeError, MnemoError) as exc:
                errors.append(f"{path}:{number}: {exc}")


def _no_constant(name: str):
    """JSON's NaN and Infinity are not numbers a memory can hold."""
    raise ValueError(f"{name} is not allowed")


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.is_file() and found.suffix.lower() in (*MARKDOWN_SUFFIXES, ".jsonl"):
                    yield found
        elif path.exists():
            yield path  # a file, or a named pipe or device its reading refuses
        else:
            raise InputError(f"no such file or folder: {path}")


def import_paths(
    store: Store,
    paths: Iterable[Path],
    progress: Callable[[int], None] | None = None,
    secrets: str = "refuse",
    report: ImportReport | None = None,
) -> ImportReport:
    """Import markdown files/folders and JSONL exports, in batches of one transaction each.

    A bad line or section is skipped and reported (file and line) in `errors`; the rest
    is imported. A JSONL line whose id is taken by a different text is reported too. Every
    field is checked for secrets like `remember` (`secrets`: refuse = skip and report,
    redact, allow).
    """
    report = report if report is not None else ImportReport()  # the caller's, if given
    batch: list[tuple[str, Memory]] = []  # (where it came from, memory)
    mirrored: dict[str, Memory] = {}  # sections that carry an id: the last one wins
    paths = list(paths)
    named = {Path(p) for p in paths} if len(paths) == 1 else set()  # one file, named alone

    def flush() -> None:
        taken = store.texts_of_ids([m.id for _, m in batch])  # id -> content hash
        fresh = []
        for where, memory in batch:
            digest = content_hash(memory.text)
            known = taken.setdefault(memory.id, digest)  # earlier lines of this batch too
            if known != digest:
                report.errors.append(
                    f"{where}: id {memory.id} already holds a different text; skipped"
                )
                continue
            fresh.append(memory)
        added = store.insert_many(fresh)
        report.changed += added
        report.added += len(added)
        report.skipped += len(fresh) - len(added)
        batch.clear()
        if progress:
            progress(report.added + report.skipped)

    for path in _files(paths):
        # One bad file in a folder or a list (Latin-1, NUL bytes, too long, nested past
        # Python's limit, a named pipe) is skipped and reported and the other files are
        # imported; one file named alone is an error of its own
        if path.suffix.lower() == ".jsonl":
            try:
                memories = _jsonl_memories(path, _opened(path), report.errors)
            except MnemoError as exc:
                if path in named:
                    raise
                report.errors.append(f"{path}: {exc}")
                continue
        else:
            try:
                memories = [(0, m) for m in _markdown_memories(path, report.errors)]
            except MnemoError as exc:
                if path in named:
                    raise
                report.errors.append(f"{path}: {exc}")
                continue
            except RecursionError:
                if path in named:
                    raise InputError(f"{path}: nested too deeply to read") from None
                report.errors.append(f"{path}: nested too deeply to read")
                continue
        for number, memory in memories:
            where = f"{path}:{number}" if number else f"{path} (section “{memory.title}”)"
            # a title made from the text (an export holds it) is made again from the
            # redacted text, as `writer.checked_memory` does
            derived = not memory.title or made_from(memory.title, memory.text)
            try:
                guard_memory(memory, secrets)
            except SecretError as exc:
                report.errors.append(f"{where}: {exc}")
                continue
            if derived:
                memory.title = title_from(memory.text)
            # its origin: this file, now (what a line says of its origin is not taken)
            memory.origins = [origins.imported(path.name).stamped(now())]
            if memory.id and path.suffix.lower() != ".jsonl":
                mirrored[memory.id] = memory
                continue
            # The same words in another thread are another memory (`Store.find_by_hash`)
            memory.id = memory.id or thread_hash(memory.text, memory.thread)
            batch.append((where, memory))
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    for memory in mirrored.values():
        outcome = _apply_versioned(store, memory)
        if outcome != "skipped":
            report.changed.append(memory.id)
        report.added += outcome == "added"
        report.updated += outcome == "updated"
        report.skipped += outcome == "skipped"
    return report


VERSIONED_FIELDS = (*EDITABLE, "observation_count")


def import_into(
    store: Store,
    paths: Iterable[Path],
    progress: Callable[[int], None] | None = None,
    secrets: str = "refuse",
    mirror_dir: str = "",
) -> ImportReport:
    """`import_paths`, and what it changed appended to the markdown mirror (if set). An
    error after some batches were committed says exactly what is in and what is not."""
    report = ImportReport()
    try:
        import_paths(store, [Path(p) for p in paths], progress, secrets, report)
    except StoreError as exc:
        if not report.added and not report.updated:
            raise
        raise StoreError(
            f"{str(exc).replace('; nothing was written', '')}: the import stopped; "
            f"{report.added} memories from earlier batches were imported, the rest was "
            "not (run the import again when this is fixed: it adds only the rest)"
        ) from exc
    if report.changed and mirror_dir:
        for start in range(0, len(report.changed), 500):
            part = report.changed[start : start + 500]
            append_to_mirror(mirror_dir, [store.get(i) for i in part])
    return report


def _apply_versioned(store: Store, memory: Memory) -> str:
    """Insert a section that names its id, or bring the stored memory up to it."""
    try:
        current = store.get(memory.id)
    except NotFoundError:
        return "added" if store.insert_many([memory]) else "skipped"
    changes = {
        f: getattr(memory, f) for f in VERSIONED_FIELDS if getattr(memory, f) != getattr(current, f)
    }
    for kept in ("keywords", "thread"):  # a section without them (an older mirror) keeps them
        if changes.get(kept) is None:
            changes.pop(kept, None)
    trashed = bool(memory.deleted_at) != bool(current.deleted_at)
    if not changes and not trashed:
        return "skipped"
    with store.db.write():
        if changes:  # (new words from a file are that file's: a section naming an id
            # cannot put words under another writer's name)
            store.update(
                memory.id, origin=next(iter(memory.origins), None), why="import", **changes
            )
        if trashed:
            store.set_deleted([memory.id], bool(memory.deleted_at))
    return "updated"


def refuse_plain_copy(encrypted: bool, plain: bool) -> None:
    """PlainCopyRefused for an export of an encrypted database unless the user said yes to
    plain text (`plain`)."""
    if encrypted and not plain:
        raise PlainCopyRefused(
            "the database is encrypted and an export is plain text that anyone with the "
            "file can read; say so to export anyway (mnemo export --plain), or make an "
            "encrypted snapshot instead: mnemo backup"
        )


def export(store: Store, fmt: str = "jsonl", include_trash: bool = False) -> Iterator[str]:
    """The export, piece by piece (one line per memory for JSONL)."""
    if fmt not in ("jsonl", "markdown"):
        raise InputError(f"unknown export format {fmt!r}; choose jsonl or markdown")
    if fmt == "markdown":
        yield "# Mnemo export\n\n"
    for memory in store.iter_all(include_deleted=include_trash):
        if fmt == "jsonl":
            yield json.dumps(memory.to_dict(), ensure_ascii=False) + "\n"
        else:
            yield to_markdown(memory) + "\n"


def export_to(
    store: Store,
    path: Path,
    fmt: str = "jsonl",
    include_trash: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write an export to a file atomically; returns how many memories it holds."""
    total = store.count(Filters(include_deleted=include_trash))

    def counted(pieces: Iterator[str]) -> Iterator[str]:
        for n, piece in enumerate(pieces, 1):
            if progress and n % 200 == 0:
                progress(n, total)
            yield piece

    written = write_atomically(Path(path), counted(export(store, fmt, include_trash)))
    return written - (fmt == "markdown")  # the markdown export starts with a heading


def write_atomically(path: Path, pieces: Iterable[str]) -> int:
    """Write pieces to `path` via a private temporary file, so a crash never leaves half a
    file; only a regular file (or a new one) is written, never a device or a symlink."""
    path = Path(path)
    try:
        st = path.lstat()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    else:
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"not written: {path} is not a regular file (a symlink, device, folder or "
                "pipe); choose a file name"
            )
    count = 0

    def write(f) -> None:
        nonlocal count
        for piece in pieces:
            f.write(piece)
            count += 1

    try:
        replace_file(path, write)
    except OSError as exc:
        why = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror
        raise InputError(f"cannot write {path}: {why}; nothing was written") from None
    return count
