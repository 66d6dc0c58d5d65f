"""`mnemo history ID [--restore N] [--json]`: the versions a memory's words passed through,
who wrote and who replaced each, what a merge joined into it; a version restored (ADR 0023)."""

from __future__ import annotations

import json
import os
from argparse import Namespace

from app.cli.commands import _engine
from app.core import origin as origins
from app.core.display import age, visible, word_changes
from app.core.errors import InputError
from app.core.memory import Memory, public_dict
from app.core.version import History, Version

SHOWN_CHARS = 600  # of each version's text; --json gives them whole


def _when(stamp: str) -> str:
    return f"{stamp[:16].replace('T', ' ')} UTC ({age(stamp)})" if stamp else "at a time unknown"


def _words(title: str, text: str, reasoning: str) -> list[str]:
    """A version's words, indented, a long text by its start."""
    shown = visible(text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…")
    lines = [f"      {line}" for line in shown.splitlines() or [""]]
    if len(text) > SHOWN_CHARS:
        lines.append(f"      ({len(text):,} characters; --json gives them whole)")
    own = Memory(id="", text=text, title=title).own_title
    if own:
        lines.insert(0, f"      title: {visible(own)}")
    if reasoning:
        lines.append(f"      reasoning: {visible(reasoning[:SHOWN_CHARS])}")
    return lines


def print_history(history: History) -> None:
    """The memory now, each version newest first, and what a merge joined."""
    m = history.memory
    print(f"{visible(m.display_title)}  (memory {m.id})\n")
    verb = "changed" if history.versions else "written"
    print(f"now   {verb} {_when(m.updated_at)} by {visible(history.now_by())}")
    print("\n".join(_words(m.title, m.text, m.reasoning)))
    newer = m.text
    for version in history.versions:
        print(_version_block(version, newer, history.written_by(version)))
        newer = version.text
    if history.merged_from:
        n = len(history.merged_from)
        print(
            f"\nMerged from {n} memor{'y' if n == 1 else 'ies'} (in the trash, as they were); "
            f"undo the merge: mnemo unmerge {m.id}"
        )
        for source in history.merged_from:
            by = visible(origins.summary(source.origins))
            print(f"  {source.id}  written {_when(source.updated_at)} by {by}")
            print("\n".join(_words(source.title, source.text, source.reasoning)))
    if m.deleted_at and m.merged_into:
        print(
            f"\nIn the trash: merged into {m.merged_into} (mnemo history {m.merged_into}; "
            f"mnemo unmerge {m.merged_into} brings this back)"
        )
    elif m.deleted_at:
        then = " (then a version can be restored)" if history.versions else ""
        print(f"\nIn the trash: mnemo restore {m.id} brings it back{then}")
    if history.versions and not m.deleted_at:
        print(
            f"\nRestore one: mnemo history {m.id} --restore N (what it replaces is kept as a "
            "version too)"
        )
    elif not history.versions and not history.merged_from:
        print("\nNo earlier versions: its words have not changed here.")


def _version_block(version: Version, newer: str, written_by: str) -> str:
    by = f" by {visible(version.replaced_by.describe())}" if version.replaced_by else ""
    lines = [
        "",
        f"{version.number:<5} written {_when(version.written_at)} by {visible(written_by)}",
        f"      {version.reason}, {_when(version.replaced_at)}{by}",
        *_words(version.title, version.text, version.reasoning),
    ]
    changes = word_changes(version.text, newer)
    if changes:
        lines.append(f"      then changed: {'; '.join(changes)}")
    return "\n".join(lines)


def history(args: Namespace) -> int:
    """mnemo history ID [--restore N] [--json]"""
    engine = _engine()
    found = engine.history(args.id)
    if args.restore is None:
        if args.json:
            print(json.dumps(found.to_dict(), ensure_ascii=False))
        else:
            print_history(found)
        return 0
    version = found.version(args.restore)
    if version is None:
        count = len(found.versions)
        has = f"its versions are 1–{count}" if count else "it has no earlier versions"
        raise InputError(f"memory {found.memory.id} has no version {args.restore} ({has})")
    who = origins.at_the_command_line(os.environ)
    memory = engine.restore_version(found.memory.id, version.seq, origin=who)
    kept = engine.history(memory.id).versions[0]
    if args.json:
        out = {"restored": version.number, "kept_as": kept.number, **public_dict(memory)}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"Restored version {version.number} of {memory.id}: {visible(memory.display_title)}")
    print(
        f"What it said until now is version {kept.number}; undo: "
        f"mnemo history {memory.id} --restore {kept.number}"
    )
    return 0
