"""One function per `mnemo` subcommand; each turns arguments into core calls and prints."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from argparse import Namespace
from pathlib import Path

from app.cli.output import print_memory, print_results, progress_bar, say, shown
from app.core import origin as origins
from app.core import paths
from app.core.display import visible
from app.core.engine import Engine
from app.core.errors import InputError
from app.core.search.context import check_max_chars
from app.core.settings import SETTINGS
from app.core.space.sharing import holds_secret
from app.core.storage.inbox import SAID_CHARS, SUPERSEDES
from app.core.storage.store import Filters
from app.core.writer import Remembered, RememberResult


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("no text given: pass TEXT or pipe it on standard input")
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("standard input is not UTF-8 text (binary data is not stored)") from None


def _filters(args: Namespace) -> Filters:
    tags = tuple(t.strip() for t in (args.tags or "").split(",") if t.strip())
    return Filters(
        category=args.category,
        tags=tags,
        project=args.project,
        source=args.source,
        origin=args.origin,
        since=args.since,
        until=args.until,
    )


NOT_STORED = 3  # `remember` held a near-duplicate back

_opened: list[Engine] = []  # closed by `close_engines` when the command ends, whatever happened


def _engine() -> Engine:
    """The Engine a command works with; `main` closes it when the command ends."""
    engine = Engine()
    _opened.append(engine)
    return engine


def close_engines() -> None:
    """Close every Engine the command opened (the database, and the model it loaded)."""
    while _opened:
        engine = _opened.pop()
        try:
            engine.close()
        except Exception:  # closing must not hide the command's own answer or error
            logging.getLogger(__name__).exception("closing the engine failed")


def remember(args: Namespace) -> int:
    """mnemo remember"""
    text = _read_stdin() if args.text == "-" else args.text
    if args.space is not None and args.merge:
        raise InputError(
            "--merge cannot go with --space: the merged memory would take a private "
            "memory's words and reasoning into the space (merge first, then share it)"
        )
    if args.space is not None and args.secrets == "allow":
        raise InputError(
            "--allow-secrets cannot go with --space: the space's members would read the "
            "secret (store it as yours alone without --space)"
        )
    engine = _engine()
    if args.space is not None:  # (an unknown space: said before anything is stored)
        engine.spaces.ready(args.space)
    result = engine.remember(
        text,
        title=args.title,
        category=args.category,
        tags=args.tags,
        project=args.project,
        reasoning=args.reasoning,
        source=args.source,
        references=args.references,
        confidence=args.confidence,
        merge=args.merge,
        force=args.force,
        secrets=args.secrets,
        thread=args.thread,
        origin=origins.at_the_command_line(os.environ),  # (whatever --source says)
    )
    m = result.memory
    # Not stored (a near-duplicate waits for --merge or --force): a script must not take
    # it for stored, so it exits NOT_STORED, not 0, though nothing went wrong.
    code = NOT_STORED if result.status is Remembered.SIMILAR else 0
    shared = apart = None
    if args.space is not None and code == 0:
        apart = engine.spaces.known_apart(m.id, args.space, result.status)
        shared = None if apart else engine.spaces.share(m.id, args.space)
    if args.json:
        out = result.to_dict()
        if shared is not None:
            out["space"] = shared
        if apart or (shared and shared.get("outside")):
            unsent = not_sent(shared, "the memory") if shared and shared.get("outside") else ""
            out["notice"] = "; ".join(filter(None, [out.get("notice"), apart, unsent]))
        print(json.dumps(out, ensure_ascii=False))
        return code
    similarity = f"{result.similarity:.2f}" if result.similarity is not None else "?"
    if apart:  # (in place of "Already known as …": it says which, and that it is not shared)
        print(apart[0].upper() + apart[1:])
    elif result.status is Remembered.STORED:
        print(f"Remembered {m.id}: {visible(m.display_title)}")
    elif result.status is Remembered.OBSERVED:
        print(f"Already known as {m.id} (seen {m.observation_count} times now)")
    elif result.status is Remembered.RESTORED:
        print(
            f"Already known as {m.id}: brought back from the trash "
            f"(seen {m.observation_count} times now)"
        )
    elif result.status is Remembered.MERGED:
        print(
            f"Merged with a memory (similarity {similarity}) into {m.id}: "
            f"{visible(m.display_title)}\n"
            f"Every statement of both is kept; undo: mnemo unmerge {m.id}"
        )
    else:
        print(
            f"Not stored: very similar to {m.id} (similarity {similarity}): "
            f"{visible(m.display_title)}\nUse --merge to merge into it or --force to store anyway."
        )
    if result.related:
        print("Related:")
        for other, score in result.related:
            print(f"  {other.id}  {score:.2f}  {visible(other.display_title)}")
    if result.notice:
        say(result.notice)
    if result.proposal:
        say(f"to make it so: mnemo inbox accept {result.proposal} (or reject it: both stay)")
    if shared is not None:
        print(
            not_sent(shared, "the memory")
            if shared.get("outside")
            else f"Shared in the space {shared['name']!r}."
        )
        space_problems(shared, engine)
    return code


def recall(args: Namespace) -> int:
    """mnemo recall"""
    engine = _engine()
    result = engine.recall(
        _read_stdin() if args.query == "-" else args.query,  # a page longer than argv allows
        mode=args.mode,
        limit=args.limit,
        filters=_filters(args),
        track=not args.no_track,
    )
    spaces = engine.spaces.shared([r.memory.id for r in result.results])
    if args.json:
        out = result.to_dict(explain=args.explain)
        for item, r in zip(out["results"], result.results, strict=True):
            item["space"] = spaces.get(r.memory.id)
            item["author"] = author(r.memory.origins)
        print(json.dumps(out, ensure_ascii=False))
        return 0
    if result.notice:
        say(result.notice)
    print_results(result, args.explain, spaces)
    return 0


def show(args: Namespace) -> int:
    """mnemo show"""
    engine = _engine()
    memory = engine.get(args.id)
    space = engine.spaces.shared([memory.id]).get(memory.id)
    if args.json:
        out = memory.to_dict()
        if memory.changed:  # it superseded an older memory (shown, never stored)
            out["changed"] = memory.changed
        out["space"] = space
        out["author"] = author(memory.origins) if space else None
        print(json.dumps(out, ensure_ascii=False))
    else:
        print_memory(memory)
        if space:
            one = author(memory.origins)
            by = f", by {visible(one['person'] or 'a member')}" if one else ", by you"
            print(f"{'space:':<16}shared in {visible(space)}{by}")
    return 0


# Text options of `mnemo edit`, named as the engine's fields (the parser reads this too).
EDIT_OPTIONS = ("title", "text", "reasoning", "category", "tags", "references", "keywords")


def edit(args: Namespace) -> int:
    """mnemo edit"""
    changes = {k: getattr(args, k) for k in (*EDIT_OPTIONS, "confidence", "pinned", "thread")}
    changes["source_project"] = args.project
    if all(v is None for v in changes.values()) and args.space is None:
        raise InputError("nothing to change: give at least one of --title, --text, --space, ...")
    if args.pinned:  # a pinned memory is given to every agent unasked
        _persons_say("pinning", "pin it in the manager")
    who = origins.at_the_command_line(os.environ)
    engine = _engine()
    if args.space:  # (an unknown space or memory: said before anything changes)
        engine.spaces.ready(args.space)
    memory = engine.get(args.id)
    if args.space and args.space.strip() and args.secrets == "allow":  # (shared already:
        no_secret_shared(memory.id, args.space.strip(), changes)  # Engine.edit refuses it)
    if any(v is not None for v in changes.values()):
        memory = engine.edit(memory.id, secrets=args.secrets, origin=who, **changes)
    shared = _share(engine, memory.id, args.space) if args.space is not None else None
    if args.space is None and (space := engine.spaces.shared([memory.id]).get(memory.id)):
        shared = _send(engine, space)  # (a shared memory's edit goes out now)
    if args.json:
        out = memory.to_dict()
        if args.space is not None:
            out["space"] = shared["name"] if shared and args.space else None
        if shared and shared.get("outside"):
            out["notice"] = not_sent(shared, "the edit")
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"Updated {memory.id}: {visible(memory.display_title)}")
        if shared and shared.get("outside"):  # (removed, left, no key yet: not sent)
            print(not_sent(shared, "the edit"))
        elif args.space or (shared and args.space is None):
            print(f"Shared in the space {shared['name']!r}.")
        elif args.space is not None:
            print(
                "It was in no space."
                if not shared
                else "Withdrawn from its space: its members drop it from their view (what they "
                "had stays theirs); it stays yours."
                if shared.get("author", True)
                else "No longer shared from here; it stays in the space for its other members "
                "(only its author withdraws it for them)."
            )
        if shared:
            space_problems(shared, engine)
    return 0


def not_sent(report: dict, what: str) -> str:
    """The line said in place of "Shared" when a pass sent nothing: why (removed, left: `what`
    stays here only; no current key yet: it goes out later)."""
    why = report["outside"]
    if report.get("member"):  # (a member without the current key yet: it goes out later)
        return f"Not sent yet: {why}; {what} goes out at the first pass that holds it."
    return f"Not shared: {why}, so {what} stays on this device only."


def no_secret_shared(memory_id: str, space: str, values: dict) -> None:
    """InputError (nothing changed) when words going into a memory shared in `space` hold a
    secret: its members would read it (a pass would hold it back; said up front here)."""
    if holds_secret(values):
        raise InputError(
            f"not changed: memory {memory_id} is shared in the space {space!r} and this puts "
            "a secret in it (its members would read it); leave the secret out"
        )


def _send(engine: Engine, space: str) -> dict | None:
    """A pass over the space an edited shared memory is in, so its edit goes out now; None
    when the pass cannot run (the folder cannot be written or read): the edit is kept
    here, it is the person's, and its line goes at the next pass; said on standard error."""
    try:
        return engine.spaces.sync(space)
    except InputError as exc:
        say(f"changed here; not yet sent to the space {space!r}: {exc}; sent at the next pass")
        return None


def _share(engine, memory_id: str, space: str) -> dict | None:
    """Share a memory in `space`, or withdraw it from its space ('' or blank)."""
    if space.strip():
        return engine.spaces.share(memory_id, space)
    return engine.spaces.unshare(memory_id)


def space_problems(report: dict, engine: Engine | None = None) -> None:
    """What a space's pass skipped or is waiting for, on standard error; with `engine`,
    what it brought is embedded (found by meaning too)."""
    if engine is not None and report["applied"]:
        engine.backfill()
    for problem in report["problems"]:
        say(f"space {report['name']!r}: skipped {shown(problem)}")
    if report["waiting"]:
        say(f"space {report['name']!r}: {report['waiting']} line(s) wait for a key")


def author(memory_origins) -> dict | None:
    """Who wrote a memory of a space: the first member (person, device) its origins
    name; None when its words are this device's own."""
    one = origins.author(memory_origins)
    return None if one is None else {"person": one.name, "device": one.device}


def forget(args: Namespace) -> int:
    """mnemo forget"""
    if args.origin is not None:
        return _forget_origin(args)
    if not args.ids:
        raise InputError("name the memories to forget (ids), or --origin KIND[:NAME]")
    if args.since or args.until or args.yes:
        raise InputError("--since, --until and --yes go with --origin")
    engine = _engine()
    if args.purge:
        count = engine.purge(args.ids)
        print(f"Deleted {count} memor{'y' if count == 1 else 'ies'} for good")
        return 0
    changed = engine.forget(args.ids)
    for memory_id in changed:
        print(f"Moved {memory_id} to the trash (undo: mnemo restore {memory_id})")
    if len(changed) < len(args.ids):
        say(f"{len(args.ids) - len(changed)} already in the trash")
    return 0


SHOWN_FIRST = 10  # of the memories `forget --origin` would move, listed before it asks


def _forget_origin(args: Namespace) -> int:
    """mnemo forget --origin KIND[:NAME] [--since WHEN] [--until WHEN] [--yes]: says how
    many and which, asks (or takes --yes), and moves them to the trash, never deletes."""
    if args.ids or args.purge:
        raise InputError(
            "--origin moves every memory of that origin to the trash: no ids, and no --purge "
            "(look at them in the trash first: mnemo list --trash --origin ...)"
        )
    engine = _engine()
    filters = Filters(origin=args.origin, since=args.since, until=args.until)
    count = engine.count(filters)
    when = "".join(f" {k} {v}" for k, v in (("since", args.since), ("until", args.until)) if v)
    if not count:
        print(f"No memory written by {args.origin}{when}: nothing to forget")
        return 0
    found = engine.listing(filters, limit=count, order="created_at ASC")
    print(f"{count} memor{'y' if count == 1 else 'ies'} written by {args.origin}{when}:")
    for m in found[:SHOWN_FIRST]:
        print(f"  {m.id}  {visible(m.display_title)}  ({visible(origins.summary(m.origins))})")
    if count > SHOWN_FIRST:
        print(f"  … and {count - SHOWN_FIRST} more (mnemo list --origin {args.origin} lists them)")
    mixed = sum(len({(o.kind, o.name) for o in m.origins}) > 1 for m in found)
    if mixed:
        print(f"  ({mixed} of them hold words of other origins too: merges, or edited since)")
    if not args.yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise InputError(f"not moved: say --yes to move these {count} to the trash")
        print("Move them to the trash? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("Nothing was moved")
            return 0
    moved = engine.forget([m.id for m in found])
    print(f"Moved {len(moved)} to the trash; undo: mnemo restore {' '.join(moved)}")
    return 0


def unmerge(args: Namespace) -> int:
    """mnemo unmerge"""
    restored = _engine().unmerge(args.id)
    print(f"Restored {len(restored)} original(s): {' '.join(restored)}; the merge is in the trash")
    return 0


def restore(args: Namespace) -> int:
    """mnemo restore ID... (from the trash) or mnemo restore FILE (a snapshot)"""
    if len(args.ids) == 1 and (
        "/" in args.ids[0] or args.ids[0].endswith(".db") or Path(args.ids[0]).is_file()
    ):
        from app.cli.privacy import restore_file

        return restore_file(args, Path(args.ids[0]))
    changed = _engine().restore(args.ids)
    for memory_id in changed:
        print(f"Restored {memory_id}")
    if len(changed) < len(args.ids):
        say(f"{len(args.ids) - len(changed)} were not in the trash")
    return 0


def listing(args: Namespace) -> int:
    """mnemo list"""
    filters = _filters(args)
    filters.only_deleted = args.trash
    engine = _engine()
    if args.space is not None:
        filters.space = _space_id(engine, args.space)
    memories = engine.listing(filters, limit=args.limit)
    spaces = engine.spaces.shared([m.id for m in memories])
    if args.json:
        print(
            json.dumps(
                [{**m.to_dict(), "space": spaces.get(m.id)} for m in memories],
                ensure_ascii=False,
            )
        )
        return 0
    for m in memories:
        where = f"  [{visible(spaces[m.id])}]" if m.id in spaces else ""
        print(f"{m.id}  {visible(m.category):<12} {visible(m.display_title)}{where}")
    return 0


def _space_id(engine: Engine, name: str) -> str:
    """The id of the space named (`list --space NAME`); "" for memories in none."""
    if not name.strip():
        return ""
    wanted = " ".join(name.split())
    for space in engine.spaces.list():
        if space["name"] == wanted:
            return space["id"]
    raise InputError(f"no space named {name[:100]!r} here (`mnemo space list` shows them)")


def import_(args: Namespace) -> int:
    """mnemo import"""
    engine = _engine()
    report = engine.import_paths(
        [Path(p) for p in args.paths],
        progress=lambda n: progress_bar("importing", n, 0),
        secrets=args.secrets,
    )
    progress_bar.end()
    updated = f", {report.updated} updated" if report.updated else ""
    print(f"Imported {report.added} new memories ({report.skipped} already known{updated})")
    for error in report.errors:  # every one: `2> skipped.txt` keeps the whole report
        say(f"skipped {error}")
    if report.errors:
        say(f"{len(report.errors)} line(s) or section(s) skipped; the rest was imported")
    if not args.no_embed:
        status = engine.vector_status()  # also what an earlier, interrupted run left
        if report.added or status.get("missing", 0) + status.get("stale", 0):
            _backfill(engine)
    return 1 if report.errors else 0


def export(args: Namespace) -> int:
    """mnemo export"""
    engine = _engine()
    if args.output:
        count = engine.export_to(
            Path(args.output), args.format, args.include_trash, plain=args.plain
        )
        say(f"Exported {count} memories to {args.output}")
    else:
        for piece in engine.export(args.format, args.include_trash, plain=args.plain):
            sys.stdout.write(piece)
    return 0


def _backfill(engine: Engine) -> int:
    if engine.embedder is None:
        say(f"not embedded now ({engine.model_error}); run `mnemo backfill` later")
        return 0
    done = engine.backfill(progress=lambda n, total: progress_bar("embedding", n, total))
    progress_bar.end()
    return done


def backfill(args: Namespace) -> int:
    """mnemo backfill"""
    engine = _engine()
    if engine.embedder is None:
        raise InputError(f"cannot embed: {engine.model_error}")
    done = _backfill(engine)
    print(f"Embedded {done} memor{'y' if done == 1 else 'ies'} with {engine.embedder.info.name}")
    return 0


def stats(args: Namespace) -> int:
    """mnemo stats"""
    data = _engine().stats()
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
        return 0
    print(f"Database:   {data['database']} (schema {data['schema_version']})")
    print(f"Memories:   {data['memories']} ({data['pinned']} pinned, {data['trash']} in trash)")
    encryption = data["encryption"]
    print(
        "Encrypted:  "
        + (f"yes; its key is {encryption.get('key', '')}" if encryption["encrypted"] else "no")
    )
    snaps = data["snapshots"]
    newest = f", the newest {snaps['newest'][:19].replace('T', ' ')} UTC" if snaps["newest"] else ""
    print(f"Snapshots:  {snaps['count']}{newest} (mnemo backup --list)")
    model = data["model"]
    if "error" in model:
        print(f"Model:      unavailable: {model['error']}")
    else:
        print(f"Model:      {model['name']} ({model['dimension']} dimensions, {model['path']})")
        print(f"Embedded:   {data['embedded']}  missing: {data['missing']}  stale: {data['stale']}")
    for category, count in data["categories"].items():
        print(f"  {category:<16} {count}")
    return 0


def model_info(args: Namespace) -> int:
    """mnemo model info"""
    engine = _engine()
    info = engine.model.info()
    data = {
        "name": info.name,
        "id": info.model_id,
        "path": str(info.path),
        "architecture": info.architecture,
        "dimension": info.dimension,
        "trained_context": info.trained_context,
        "window": info.window,
        "sha256": info.sha256,
        "query_prefix": info.query_prefix,
        "document_prefix": info.document_prefix,
        "default": info.path.resolve() == paths.DEFAULT_MODEL.resolve(),
    }
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            print(f"{key + ':':<17}{value!r}" if "prefix" in key else f"{key + ':':<17}{value}")
    return 0


def model_convert(args: Namespace) -> int:
    """mnemo model convert"""
    out = Engine.convert_model(Path(args.src), Path(args.out), args.type, args.name)
    print(f"Wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {args.type})")
    return 0


def model_list(args: Namespace) -> int:
    """mnemo model list"""
    from app.core.model import catalog

    entries = [catalog.describe(m) for m in catalog.catalog()]
    if args.json:
        print(json.dumps(entries, ensure_ascii=False))
        return 0
    current = _engine().model.path().resolve()
    for m, entry in zip(catalog.catalog(), entries, strict=True):
        size = f"{m.size / 1e6:.0f} MB" if m.size else "size ?"
        state = ""
        if entry["downloaded"]:
            in_use = Path(entry["downloaded"]).resolve() == current
            state = " · in use" if in_use else f" · downloaded: {entry['downloaded']}"
        print(f"{m.name}  ({size}, {m.dimension} dims, {m.languages}, {m.license}){state}")
        print(f"    retrieval {m.retrieval}; about {m.cost:.0f}× MiniLM's work per text")
        if m.note:
            print(f"    {m.note}")
    print(
        "Bundled and in use unless you switch: all-MiniLM-L6-v2 (46 MB, English, retrieval "
        "41.95). `mnemo model get NAME` downloads one; nothing is downloaded otherwise."
    )
    return 0


def model_get(args: Namespace) -> int:
    """mnemo model get"""
    from app.core.model import catalog

    model = catalog.find(args.name)
    try:
        path = catalog.download(
            model,
            progress=lambda done, total: progress_bar(
                f"downloading {model.name}", done // 1_000_000, (total or 0) // 1_000_000, " MB"
            ),
        )
    except KeyboardInterrupt:
        progress_bar.end()
        say(f"interrupted: what was downloaded is kept; `mnemo model get {model.name}` resumes")
        return 130
    finally:
        progress_bar.end()  # an error is said on a line of its own
    print(f"{model.name} is in {path} (size and SHA-256 verified)")
    if args.use:
        args.path = str(path)
        return model_use(args)
    print(f"Switch to it with: mnemo model use {path}  (every memory is embedded again)")
    return 0


def model_use(args: Namespace) -> int:
    """mnemo model use"""
    engine = _engine()
    target = "" if args.path == "default" else str(Path(args.path).expanduser().resolve())
    change = engine.apply_settings({"model_path": target})
    if engine.embedder is None:
        raise InputError(f"the model is set but does not load: {change.model_error}")
    counts = engine.vector_status()
    print(
        f"Now using {engine.embedder.info.name} ({engine.embedder.info.path}); "
        f"{counts['missing'] + counts['stale']} memories need re-embedding"
    )
    if not args.no_backfill:
        _backfill(engine)
    return 0


def _persons_say(what: str, elsewhere: str) -> None:
    """InputError when a coding agent's shell runs this (`origin.SHELL_MARKERS`): what agents
    are given unasked (the setting, a pin) is the person's to choose, not an agent's that a
    planted memory told to (ADR 0024)."""
    who = origins.at_the_command_line(os.environ)
    if who.kind == origins.AGENT:
        raise InputError(
            f"{what} is yours to change, not an agent's ({who.name}'s shell runs this): run "
            f"it in your own terminal, or {elsewhere}"
        )


def settings(args: Namespace) -> int:
    """mnemo settings [KEY [VALUE]] | --window"""
    if args.window:
        if args.key:
            raise InputError("settings --window takes no key or value")
        args.gui_command = "settings"
        return gui(args)
    if args.key == "inject_origins" and args.value is not None:
        _persons_say(args.key, "change it in the settings window")
    engine = _engine()
    if engine.settings.problem:
        say(f"{engine.settings.problem}; using the defaults")
    if args.key and args.value is not None:
        before = engine.settings["hotkey"]
        engine.apply_settings({args.key: args.value})
        if args.key == "hotkey" and engine.settings["hotkey"] != before:
            refused = _hotkey_taken(engine.settings["hotkey"])
            if refused:
                raise InputError(f"hotkey not changed: {refused}; {before} still opens Mnemo")
        if engine.settings.problem and "kept as" in engine.settings.problem:
            say(engine.settings.problem.split("; ")[-1])
        if args.key == "start_at_login":  # applied now, whether the app runs or not
            from app.gui import desktop  # no Qt: the XDG autostart entry

            desktop.set_autostart(engine.settings["start_at_login"])
    current = engine.settings
    for setting in SETTINGS:
        if args.key and setting.key != args.key:
            continue
        print(f"{setting.key} = {current[setting.key]!r}    # {setting.help}")
    if args.key and args.key not in {s.key for s in SETTINGS}:
        raise InputError(f"unknown setting {args.key!r}")
    return 0


HOTKEY_ANSWER_S = 8  # how long `settings hotkey` waits for the running app to grab the key


def _hotkey_taken(key: str) -> str | None:
    """Why the running app could not grab `key` (it keeps the old one and sets it back), or
    None: it grabbed it, or no app runs (it grabs it when it starts)."""
    from app.gui import ipc  # no display needed to ask

    deadline = time.monotonic() + HOTKEY_ANSWER_S
    while time.monotonic() < deadline:
        state = ipc.status(1000)
        if state is None:
            return None
        refused = state.get("hotkey_refused") or {}
        if refused.get("key") == key:
            return refused.get("error") or "another program holds it"
        if state.get("hotkey") == key:
            return None
        time.sleep(0.1)  # the app reads the settings file every second or two
    say(f"the running app has not taken {key} yet: `mnemo status` says whether it did")
    return None


def doctor(args: Namespace) -> int:
    """mnemo doctor"""
    from app.core import crash

    print(f"log:  {crash.log_path()}")
    engine = _engine()
    if args.repair:
        fixed, quarantined = engine.repair()
        if fixed or quarantined:
            print(
                f"Fixed {fixed} memor{'y' if fixed == 1 else 'ies'} with fields of the wrong "
                f"type; set {quarantined} unusable row(s) aside in memories_quarantine"
            )
        print("Rebuilt the keyword index")
    problems = 0
    for ok, line in engine.health():
        print(("ok    " if ok else "FAIL  ") + line)
        problems += not ok
        if args.repair and not ok and line.startswith("database integrity"):
            say(
                "the repair could not mend this: the damage is in the table itself, not in an "
                "index; `mnemo export -o FILE` saves what can be read, and `mnemo import FILE` "
                "with another MNEMO_HOME makes a new database of it"
            )
    return 1 if problems else 0


def context(args: Namespace) -> int:
    """mnemo context"""
    max_chars = check_max_chars(args.max_chars)  # before the model loads
    cwd = _hook_folder() if args.hook else None
    block = _engine().context(
        query=args.query,
        limit=args.limit,
        cwd=cwd,
        project=args.project,
        feature=Path(args.feature) if args.feature else None,
        track=not args.no_track,
        max_chars=max_chars,
    )
    if args.hook == "gemini":  # its hooks must print JSON only
        out = {"hookEventName": "SessionStart", "additionalContext": block.markdown()}
        print(json.dumps({"hookSpecificOutput": out}, ensure_ascii=False))
    elif args.json:
        print(json.dumps(block.to_dict(), ensure_ascii=False))
    else:
        print(block.markdown())
    return 0


def _hook_folder() -> Path | None:
    """The project folder an agent's hook event names (`cwd` in the JSON on standard input),
    or None (then this process's own folder); a hook's input that is not JSON is ignored."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    try:
        event = json.loads(sys.stdin.read(1_000_000) or "{}")
    except ValueError:
        return None
    folder = event.get("cwd") if isinstance(event, dict) else None
    return Path(folder) if isinstance(folder, str) and Path(folder).is_dir() else None


def inbox(args: Namespace) -> int:
    """mnemo inbox [list | accept | reject] | --window"""
    if args.window:
        if args.action != "list" or args.ids or args.all or args.text:
            raise InputError("inbox --window takes nothing else")
        args.gui_command = "inbox"
        return gui(args)
    engine = _engine()
    if args.action == "list":
        if args.ids or args.all or args.text:
            raise InputError("mnemo inbox lists every candidate; to act on some: accept or reject")
        waiting = engine.inbox_from(_source(args.source)) if args.source else engine.inbox()
        if args.json:
            print(json.dumps([c.to_dict() for c in waiting], ensure_ascii=False))
        elif not waiting:
            print("The inbox is empty: nothing captured waits for review")
        for c in [] if args.json else waiting:
            seen = f", said {c.seen}×" if c.seen > 1 else ""
            where = f", {visible(c.project)}" if c.project else ""
            replacing = c.rule == SUPERSEDES
            near = f", close to {c.similar}" if c.similar and not replacing else ""
            near += f", by {visible(c.agent)}" if replacing and c.agent else ""
            came = f", from {visible(_home_relative(Path(c.source)))}" if c.source else ""
            rule = f"{c.rule} {c.similar}" if replacing else c.rule  # (before the project)
            print(f"{c.id}  [{rule}{where}{seen}{near}{came}] {visible(c.text)}")
            if replacing:
                cut = f"… (mnemo show {c.similar})" if len(c.said) >= SAID_CHARS else ""
                print(f"{' ' * len(c.id)}  which said: {visible(c.said)}{cut}")
        return 0
    if (bool(args.ids) + args.all + bool(args.source)) != 1:
        raise InputError(
            f"name the candidates to {args.action} (ids from `mnemo inbox`), or --all, or "
            "--source FILE"
        )
    if args.source:
        ids = [c.id for c in engine.inbox_from(_source(args.source))]
        if not ids:
            raise InputError(f"nothing imported from {args.source} waits in the inbox")
    else:
        ids = [c.id for c in engine.inbox(limit=1000)] if args.all else args.ids
    if args.action == "reject":
        if args.text:
            raise InputError("--text is for accept")
        count = engine.reject(ids)
        print(f"Rejected {count}; the same words will not be proposed again")
        return 0
    # A stale proposal among them is named and left waiting, and what was accepted before
    # and after it is still said (not one error for all); an id not waiting: nothing done
    failed: list[str] = []
    done = engine.accept(ids, args.text, failed if len(ids) > 1 else None)
    for result in [] if args.json else done:
        _print_accepted(result)
    if args.json:
        print(json.dumps([r.to_dict() for r in done], ensure_ascii=False))
    for problem in failed:
        print(f"mnemo: error: {problem}", file=sys.stderr)
    return 1 if failed else 0


def _print_accepted(result: RememberResult) -> None:
    if result.status is Remembered.SUPERSEDED:
        old = result.supersedes
        print(
            f"{result.memory.id} supersedes {old.id}: its words are a version of "
            f"{result.memory.id} now (mnemo history {result.memory.id}); {old.id} is in "
            "the trash"
        )
        return
    how = "Stored" if result.status == Remembered.STORED else "Counted again (known already):"
    print(f"{how} {result.memory.id}  {visible(result.memory.display_title)}")
    if result.proposal:  # a capture that says an older memory's fact with another value
        say(result.notice.rsplit("; ", 1)[-1])
        say(f"to make it so: mnemo inbox accept {result.proposal} (or reject it: both stay)")


def _source(given: str) -> str:
    """A file named on the command line as `mnemo agents import` recorded it."""
    return str(Path(given).expanduser().resolve())


def agents_import(args: Namespace) -> int:
    """mnemo agents import [--project DIR] [--dry-run]"""
    from app.agents import history

    project = Path(args.project).expanduser().resolve() if args.project else None
    if project is not None and not project.is_dir():
        raise InputError(f"--project {args.project}: no such folder")
    found = history.sources(Path.home(), project)
    if not found:
        print("No agent memory file or past session found (looked in ~/.claude, ~/.codex, "
              "~/.gemini" + (f" and {project}" if project else "") + ")")  # fmt: skip
        return 0
    bar = sys.stderr is not None and sys.stderr.isatty() and not args.json

    def progress(done: int, total: int, path: Path) -> None:
        if bar:
            filled = round(30 * done / total)
            print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} files",
                  end="" if done < total else "\n", file=sys.stderr, flush=True)  # fmt: skip

    engine = _engine()  # (a dry run too: what was taken before, by the rules and meaning)
    tally = history.take(engine, found, dry_run=args.dry_run, progress=progress)
    counts = tally.counts or {}
    if args.json:
        print(json.dumps({"files": tally.files, **counts, "problems": tally.problems or []}))
        return 0
    for problem in tally.problems or []:
        print(f"mnemo: {problem}", file=sys.stderr)
    if args.dry_run:
        also = [f"{counts[k]} {v}" for k, v in (("known", "taken from the same file before"),
                ("secret", "holding a secret (never kept)")) if counts.get(k)]  # fmt: skip
        print(f"Would propose up to {counts.get('found', 0)} statements from {tally.files} files"
              + "".join(f"; {a}" for a in also))  # fmt: skip
        return 0
    words = {"proposed": "proposed for review", "again": "waiting already (counted again)",
             "observed": "known already (counted as seen again)",
             "known": "taken from the same file before", "rejected": "rejected by you before",
             "secret": "holding a secret (not kept)"}  # fmt: skip
    said = [f"{counts[k]} {v}" for k, v in words.items() if counts.get(k)]
    print(f"Read {tally.files} files: " + ("; ".join(said) if said else "nothing to propose"))
    if counts.get("proposed"):
        print("Review them: mnemo inbox (accept or reject a file's at once: --source FILE)")
    return 0


def mcp(args: Namespace) -> int:
    """mnemo mcp"""
    from app.mcp_server import main

    return main()


def agents(args: Namespace) -> int:
    """mnemo agents install | uninstall | status"""
    from app.agents import wiring

    project = Path(args.project).expanduser().resolve() if args.project else None
    if project is not None and not project.is_dir():
        raise InputError(f"--project {args.project}: no such folder")
    if args.agents_command == "status":
        rows = wiring.status(project, check=not args.no_check)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        from app.cli.agents import print_status

        print_status(rows)
        return 0
    act = wiring.install if args.agents_command == "install" else wiring.uninstall
    done = act(args.agents or None, project, hooks=not args.no_hooks)
    names = {a.key: a.name for a in wiring.AGENTS}
    for change in done:
        where = f" {_home_relative(change.path)}" if str(change.path) != "." else ""
        detail = f" ({change.detail})" if change.detail else ""
        print(f"{names[change.agent]}: {change.what}{where}{detail}")
    if not done:
        print("nothing to change")
    wired = [c for c in done if c.what in ("added", "updated", "already")]
    if args.agents_command == "install" and wired:
        from app import mcp_greeting

        # the server's answer to `initialize` kept now: the agents' first start is quick too
        try:
            mcp_greeting.prepare(wiring.mnemo_command())
        except (ImportError, OSError) as exc:  # the configs are written: say it, go on
            say(f"the MCP server's first answer was not kept ({exc}): an agent's first start "
                "may take a second longer")  # fmt: skip
    refused = [c for c in done if c.what == "refused"]
    return 1 if refused else 0


def _home_relative(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


def gui(args: Namespace) -> int:
    """mnemo [gui|popup|manager|remember-clipboard|quit]"""
    from app.gui.app import run

    return run(args.gui_command)
