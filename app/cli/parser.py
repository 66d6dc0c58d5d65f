"""The `mnemo` command line's arguments: one parser for every subcommand."""

from __future__ import annotations

import argparse


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--category", help="only this category")
    p.add_argument("--tags", help="only memories with all these tags (comma-separated)")
    p.add_argument("--project", help="only memories from this project")
    p.add_argument("--source", help="only memories from this source (manual, cli, mcp, ...)")
    _origin(p)
    p.add_argument(
        "--since", help="created on or after: YYYY-MM-DD or words ('last week', '3 days ago')"
    )
    p.add_argument(
        "--until",
        help="created before YYYY-MM-DD (that day not included), or up to the end of a time "
        "in words ('yesterday', 'March 2024': included)",
    )


def _origin(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--origin",
        metavar="KIND[:NAME]",
        help="only memories written by this origin: person, agent, capture, import, device "
        "or unknown, and a name (agent:claude-code, import:notes.md, device:laptop)",
    )


def _secrets(p: argparse.ArgumentParser) -> None:
    """--redact-secrets / --allow-secrets: one policy for every command that writes."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--redact-secrets",
        dest="secrets",
        action="store_const",
        const="redact",
        default="refuse",
        help="store a copy with keys, tokens and passwords redacted",
    )
    group.add_argument(
        "--allow-secrets",
        dest="secrets",
        action="store_const",
        const="allow",
        help="store secrets as they are (not recommended)",
    )


class _Version(argparse.Action):
    """--version: loads llama.cpp only when asked, to name its build and devices."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from app.cli.version import version_text

        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Remember things and find them again by meaning, offline."
    )
    parser.add_argument(
        "--version", action=_Version, help="show the version, the llama.cpp build and the GPU"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    parser.add_argument(
        "--passphrase-file",
        metavar="FILE",
        help="the encrypted database's passphrase is the first line of FILE "
        "(same as MNEMO_PASSPHRASE_FILE)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    _memory_commands(sub)
    _browse_commands(sub)
    _file_commands(sub)
    _model_commands(sub)
    _agent_commands(sub)
    _privacy_commands(sub)
    _sync_commands(sub)
    _space_commands(sub)
    _app_commands(sub)
    return parser


def _memory_commands(sub) -> None:
    """remember and recall."""
    from app.cli import commands

    p = sub.add_parser("remember", help="store a memory")
    p.add_argument("text", nargs="?", default="-", help="the text, or - to read standard input")
    p.add_argument("--title")
    p.add_argument("--category")
    p.add_argument("--tags", help="comma-separated")
    p.add_argument("--project")
    p.add_argument("--reasoning", help="why this matters, how it was found")
    p.add_argument("--references", help="related files or links, comma-separated")
    p.add_argument("--confidence", choices=("low", "medium", "high"), default="medium")
    p.add_argument("--source", default="cli")
    p.add_argument(
        "--thread", help="a conversation or session it belongs to (its memories lend context)"
    )
    _secrets(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--merge",
        action="store_true",
        help="merge with a near-duplicate (every statement of both is kept)",
    )
    group.add_argument("--force", action="store_true", help="store even if a near-duplicate exists")
    p.add_argument(
        "--space", metavar="NAME", help="share it in this team space too (mnemo space list)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.remember)

    p = sub.add_parser("recall", help="search memories")
    p.add_argument("query", help="what to look for; - reads it from standard input")
    p.add_argument("--mode", choices=("hybrid", "semantic", "keyword"))
    p.add_argument("--limit", type=int)
    _filters(p)
    p.add_argument("--explain", action="store_true", help="show each signal of the score")
    p.add_argument("--no-track", action="store_true", help="do not count this as a recall")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.recall)


def _browse_commands(sub) -> None:
    """show, edit, forget, unmerge, history, restore, list."""
    from app.cli import commands, history

    p = sub.add_parser("show", help="show one memory")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.show)

    p = sub.add_parser("edit", help="change a memory's fields")
    p.add_argument("id")
    for name in (*commands.EDIT_OPTIONS, "project"):
        p.add_argument(f"--{name}")
    p.add_argument("--thread", help="the conversation it belongs to ('' for none)")
    p.add_argument("--confidence", choices=("low", "medium", "high"))
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pin", dest="pinned", action="store_true", default=None)
    pin.add_argument("--unpin", dest="pinned", action="store_false")
    _secrets(p)
    p.add_argument(
        "--space",
        metavar="NAME",
        help="share it in this team space; '' withdraws it from its space (the members drop "
        "it from their view; what they had stays theirs)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.edit)

    p = sub.add_parser(
        "forget", help="move memories to the trash (by id, or all of one origin: --origin)"
    )
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--purge", action="store_true", help="delete for good instead (ids only)")
    _origin(p)
    p.add_argument("--since", help="with --origin: only those made on or after this time")
    p.add_argument("--until", help="with --origin: only those made before this time")
    p.add_argument(
        "--yes", action="store_true", help="with --origin: do not ask (a script's answer)"
    )
    p.set_defaults(func=commands.forget)

    p = sub.add_parser("unmerge", help="undo a merge: bring back its originals")
    p.add_argument("id", metavar="MERGED_ID")
    p.set_defaults(func=commands.unmerge)

    p = sub.add_parser(
        "history", help="the versions of a memory's words (and what a merge joined); restore one"
    )
    p.add_argument("id")
    p.add_argument("--restore", type=int, metavar="N", help="make it say what version N said")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=history.history)

    p = sub.add_parser(
        "restore", help="bring memories back from the trash, or restore a snapshot FILE"
    )
    p.add_argument("ids", nargs="+", metavar="ID|FILE")
    p.add_argument(
        "--recovery-key-file", metavar="FILE", help="a snapshot's recovery key (another key)"
    )
    p.set_defaults(func=commands.restore)

    p = sub.add_parser("list", help="list recent memories")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--trash", action="store_true", help="list the trash")
    _filters(p)
    p.add_argument(
        "--space",
        metavar="NAME",
        help="only those shared in this team space ('' for those in none)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.listing)


def _file_commands(sub) -> None:
    """import, export, backfill, stats."""
    from app.cli import commands

    p = sub.add_parser("import", help="import markdown files/folders or JSONL exports")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--no-embed", action="store_true", help="leave embedding to `backfill`")
    _secrets(p)
    p.set_defaults(func=commands.import_)

    p = sub.add_parser("export", help="export memories")
    p.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    p.add_argument("--include-trash", action="store_true")
    p.add_argument(
        "--plain",
        action="store_true",
        help="export an encrypted database anyway (the export is plain text)",
    )
    p.set_defaults(func=commands.export)

    p = sub.add_parser("backfill", help="embed memories whose vectors are missing or stale")
    p.set_defaults(func=commands.backfill)

    p = sub.add_parser("stats", help="counts, model and database facts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.stats)


def _model_commands(sub) -> None:
    """model (info, convert, use, list, get) and settings."""
    from app.cli import commands

    p = sub.add_parser("model", help="the embedding model")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    m = msub.add_parser("info", help="the model in use")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=commands.model_info)
    m = msub.add_parser("convert", help="convert a sentence-transformers BERT folder to GGUF")
    m.add_argument("src", metavar="SRC_DIR")
    m.add_argument("out", metavar="OUT.gguf")
    m.add_argument("--type", choices=("f16", "q8_0", "f32"), default="f16")
    m.add_argument("--name", help="model name recorded in the file (default: folder name)")
    m.set_defaults(func=commands.model_convert)
    m = msub.add_parser("use", help="switch to another GGUF model (memories are re-embedded)")
    m.add_argument("path", metavar="MODEL.gguf", help="a GGUF file, or 'default'")
    m.add_argument("--no-backfill", action="store_true", help="re-embed later")
    m.set_defaults(func=commands.model_use)
    m = msub.add_parser("list", help="stronger and multilingual models you can download")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=commands.model_list)
    m = msub.add_parser("get", help="download a model of the catalog (resumes, verifies)")
    m.add_argument("name", help="a name from `mnemo model list`")
    m.add_argument("--use", action="store_true", help="switch to it once downloaded")
    m.add_argument("--no-backfill", action="store_true", help="with --use: re-embed later")
    m.set_defaults(func=commands.model_get)

    p = sub.add_parser("settings", help="show or change settings (--window: the dialog)")
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?")
    p.add_argument(
        "--window", action="store_true", help="open the settings window of the desktop app"
    )
    p.set_defaults(func=commands.settings)


def _agent_commands(sub) -> None:
    """context and mcp: what AI agents use."""
    from app.cli import commands
    from app.core.search.context import DEFAULT_MAX_CHARS

    p = sub.add_parser("context", help="the memory block an AI agent injects at session start")
    p.add_argument("--project", help="project name (default: the git repository's name)")
    p.add_argument("--query", help="use this text instead of the context signals")
    p.add_argument("--feature", help="a feature description file; its first paragraph is a signal")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        metavar="N",
        help="fit the block in N characters (default: %(default)s, under Claude Code's ~10,000 "
        "cap on hook output); long memories are shortened with a pointer to `mnemo show ID`, "
        "the least relevant that do not fit are left out",
    )
    p.add_argument("--no-track", action="store_true", help="do not count this as a recall")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--hook",
        choices=("claude", "gemini"),
        help="run as that agent's session-start hook: read its event (JSON) from standard "
        "input for the folder; gemini: answer in its JSON (hookSpecificOutput)",
    )
    p.set_defaults(func=commands.context)

    p = sub.add_parser(
        "hook",
        help="what an agent's hook runs: session-start / prompt (event JSON on standard "
        "input), through a resident helper; serve / stop / status of that helper",
    )
    p.add_argument("event", choices=("session-start", "prompt", "serve", "stop", "status"))
    p.add_argument("--agent", choices=("claude", "codex", "gemini", "cursor"), default="claude")

    p = sub.add_parser(
        "inbox",
        help='review what agents\' hooks captured ("remember that …", "from now on …")',
    )
    p.add_argument(
        "action", nargs="?", choices=("list", "accept", "reject"), default="list",
        help="list (the default), accept (make them memories) or reject (and never propose "
        "those words again)",
    )  # fmt: skip
    p.add_argument("ids", nargs="*", metavar="ID", help="candidates (an id's start is enough)")
    p.add_argument("--all", action="store_true", help="every candidate waiting")
    p.add_argument(
        "--source", metavar="FILE",
        help="every candidate waiting that `mnemo agents import` took from this file",
    )  # fmt: skip
    p.add_argument("--text", help="accept one candidate with this text instead (an edit)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--window", action="store_true", help="open it in the desktop app")
    p.set_defaults(func=commands.inbox)

    p = sub.add_parser("mcp", help="run the MCP server over stdio (for AI coding agents)")
    p.set_defaults(func=commands.mcp)

    p = sub.add_parser("agents", help="wire Mnemo into AI coding agents (Claude Code, Codex, …)")
    asub = p.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    for action, text in (
        (
            "install",
            "add Mnemo's MCP server (and its hooks: memory at session start and at "
            "each prompt, capture) to each agent's config",
        ),
        ("uninstall", "take them out again (a file as Mnemo left it gets its old bytes back)"),
    ):
        a = asub.add_parser(action, help=text)
        a.add_argument(
            "agents", nargs="*", metavar="AGENT", help="claude, codex, gemini, cursor, vscode, "
            "zed, cline, goose, continue (default: every agent found on this machine)"
        )  # fmt: skip
        a.add_argument("--project", metavar="DIR", help="the project's config, not the user's")
        a.add_argument("--no-hooks", action="store_true", help="the MCP server only (no hooks)")
        a.set_defaults(func=commands.agents)
    a = asub.add_parser(
        "import",
        help="propose what your agents already know (CLAUDE.md, AGENTS.md, GEMINI.md, Cursor "
        "rules, past sessions of Claude Code, Codex and Gemini CLI) into the inbox",
    )
    a.add_argument("--project", metavar="DIR", help="also this project's memory files")
    a.add_argument(
        "--dry-run", action="store_true", help="say what would be proposed, keep nothing"
    )
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=commands.agents_import)
    a = asub.add_parser("status", help="what is wired where, and whether the server answers")
    a.add_argument("--project", metavar="DIR", help="the project's config, not the user's")
    a.add_argument("--no-check", action="store_true", help="do not start the MCP server")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=commands.agents)


def _privacy_commands(sub) -> None:
    """encrypt, decrypt, unlock, backup (restore FILE is `restore`)."""
    from app.cli import privacy

    p = sub.add_parser("encrypt", help="encrypt the database at rest (key in the OS keyring)")
    p.add_argument("--rotate", action="store_true", help="re-encrypt under a new key")
    p.add_argument(
        "--passphrase", action="store_true", help="seal the key by a passphrase, not the keyring"
    )
    p.add_argument("--status", action="store_true", help="say whether and how it is encrypted")
    p.set_defaults(func=privacy.encrypt)

    p = sub.add_parser("decrypt", help="write the database back in the clear")
    p.set_defaults(func=privacy.decrypt)

    p = sub.add_parser("unlock", help="open an encrypted database here with its recovery key")
    p.add_argument("--recovery-key-file", metavar="FILE", help="read the recovery key from FILE")
    p.add_argument(
        "--passphrase", action="store_true", help="seal the key by a passphrase, not the keyring"
    )
    p.set_defaults(func=privacy.unlock)

    p = sub.add_parser("backup", help="snapshot the database now (encrypted when it is)")
    p.add_argument("--list", action="store_true", help="list the snapshots")
    p.set_defaults(func=privacy.backup)


def _sync_commands(sub) -> None:
    """sync init | now | status | key | compact | remove | off | devices | held | conflicts"""
    from app.cli import sync

    p = sub.add_parser("sync", help="sync memories with your other devices through a folder")
    actions = p.add_subparsers(dest="sync_command", metavar="ACTION", required=True)
    q = actions.add_parser("init", help="sync through FOLDER (shared by Syncthing, say)")
    q.add_argument("folder", metavar="FOLDER")
    q.add_argument("--name", help="this device's name (default: the host name)")
    q.add_argument(
        "--plain",
        action="store_true",
        help="sync an encrypted database anyway (the folder's files are not encrypted)",
    )
    q.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt the folder's files with a new sync key (the default for an encrypted "
        "database)",
    )
    q.add_argument(
        "--key",
        metavar="KEY",
        help="the sync key of a folder whose files are encrypted (`mnemo sync key` on a "
        "device that syncs; or MNEMO_SYNC_KEY)",
    )
    q.add_argument("--no-embed", action="store_true", help="leave embedding to `backfill`")
    q.set_defaults(func=sync.init)
    q = actions.add_parser("now", help="write this device's changes and apply the others'")
    q.add_argument("--no-embed", action="store_true", help="leave embedding to `backfill`")
    q.set_defaults(func=sync.now)
    q = actions.add_parser("status", help="devices, what waits, problems")
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(func=sync.status)
    q = actions.add_parser("key", help="show the sync key to give another device")
    q.set_defaults(func=sync.key)
    q = actions.add_parser("compact", help="write this device's snapshot now")
    q.set_defaults(func=sync.compact)
    q = actions.add_parser("remove", help="stop counting a lost or retired device")
    q.add_argument("device", metavar="DEVICE")
    q.set_defaults(func=sync.remove)
    q = actions.add_parser("off", help="stop syncing on this device")
    q.set_defaults(func=sync.off)
    q = actions.add_parser(
        "devices", help="the devices of the folder; approve or refuse one that waits"
    )
    q.add_argument("decision", nargs="?", choices=["approve", "refuse"], metavar="approve|refuse")
    q.add_argument("device", nargs="?", metavar="DEVICE")
    q.add_argument(
        "--key",
        metavar="FINGERPRINT",
        help="approve the key with this fingerprint (when the device shows a new one)",
    )
    q.add_argument("--json", action="store_true", help="as JSON")
    q.add_argument("--no-embed", action="store_true", help="leave embedding to `backfill`")
    q.set_defaults(func=sync.devices)
    q = actions.add_parser(
        "held", help="removals held for you (many at once); apply or refuse a device's"
    )
    q.add_argument("decision", nargs="?", choices=["apply", "refuse"], metavar="apply|refuse")
    q.add_argument("device", nargs="?", metavar="DEVICE")
    q.add_argument("--json", action="store_true", help="as JSON")
    q.add_argument("--no-embed", action="store_true", help="leave embedding to `backfill`")
    q.set_defaults(func=sync.held)
    q = actions.add_parser("conflicts", help="memories edited on two devices apart; resolve one")
    q.add_argument("decision", nargs="?", choices=["resolve"], metavar="resolve")
    q.add_argument("memory", nargs="?", metavar="ID")
    q.add_argument(
        "--keep", metavar="VERSION", help="keep this version's text (default: as merged)"
    )
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(func=sync.conflicts)


def _space_commands(sub) -> None:
    """space id | list | create | invite | join | members | remove | leave | sync | set"""
    from app.cli import space

    p = sub.add_parser("space", help="team spaces: people, invitations, shared memories")
    actions = p.add_subparsers(dest="space_command", metavar="ACTION", required=True)
    q = actions.add_parser("id", help="this device's id, to give to whoever invites it")
    q.set_defaults(func=space.id_)
    q = actions.add_parser("list", help="the spaces this device is in")
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(func=space.list_)
    q = actions.add_parser("create", help="make a space in FOLDER (shared by Syncthing, say)")
    q.add_argument("name", metavar="NAME")
    q.add_argument("folder", metavar="FOLDER")
    q.add_argument("--person", metavar="NAME", help="your name in it (default: your login)")
    q.set_defaults(func=space.create)
    q = actions.add_parser("invite", help="admit a device (its ID) and print its invitation")
    q.add_argument("name", metavar="NAME")
    q.add_argument("id", metavar="ID", help="the device's `mnemo space id`")
    q.add_argument(
        "--person",
        metavar="NAME",
        help="a new person's name (default: a device of yours; another member's devices "
        "invite their own)",
    )
    q.set_defaults(func=space.invite)
    q = actions.add_parser("join", help="join with an invitation, through FOLDER")
    q.add_argument(
        "invitation", metavar="INVITATION", help="its text, - (standard input) or a file"
    )
    q.add_argument("folder", metavar="FOLDER", help="your copy of the space's shared folder")
    q.add_argument(
        "--as",
        dest="local_name",
        metavar="NAME",
        help="the name the space has here (when you already have a space of its name)",
    )
    q.add_argument(
        "--wait",
        action="store_true",
        help="join though FOLDER holds nothing of the space yet (the folder sync has not "
        "brought it): it waits for its files",
    )
    q.set_defaults(func=space.join)
    q = actions.add_parser("members", help="persons, devices, the key's epoch, problems")
    q.add_argument("name", metavar="NAME")
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(func=space.members)
    q = actions.add_parser("remove", help="remove a person or device; the key changes")
    q.add_argument("name", metavar="NAME")
    q.add_argument(
        "member",
        metavar="MEMBER",
        help="a person's name or id (see members --json), or a device id",
    )
    q.set_defaults(func=space.remove)
    q = actions.add_parser("leave", help="this device leaves the space")
    q.add_argument("name", metavar="NAME")
    q.set_defaults(func=space.leave)
    q = actions.add_parser(
        "sync", help="send this device's shared changes, take the members' (every space: no NAME)"
    )
    q.add_argument("name", metavar="NAME", nargs="?", default=None)
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(func=space.sync)
    q = actions.add_parser(
        "removals", help="a member's removals en masse, held: list them, apply or keep them"
    )
    q.add_argument("name", metavar="NAME")
    q.add_argument("action", nargs="?", choices=["apply", "keep"], metavar="apply|keep")
    q.add_argument("member", nargs="?", metavar="MEMBER", help="the person whose removals")
    q.add_argument("--json", action="store_true", help="as JSON (the list)")
    q.set_defaults(func=space.removals)
    q = actions.add_parser(
        "set",
        help="a space's setting here: inject on|off (what agents get), name NEW (what it is "
        "called here), folder PATH (where its folder is now)",
    )
    q.add_argument("name", metavar="NAME")
    q.add_argument(
        "setting", choices=["inject", "name", "folder"], metavar="SETTING", help="what to set"
    )
    q.add_argument("value", metavar="VALUE", help="on|off, a new name, or a folder")
    q.set_defaults(func=space.set_)


def _app_commands(sub) -> None:
    """the desktop app's commands, and doctor."""
    from app.cli import commands

    for name, text in (
        ("gui", "start the desktop app (the default with no command)"),
        ("popup", "open the recall popup of the running app (bind this to a key)"),
        ("manager", "open the memory manager"),
        ("remember-clipboard", "remember what is on the clipboard"),
        ("quit", "quit the running app"),
        ("status", "show the running app's state (hotkey, model, tray)"),
    ):
        p = sub.add_parser(name, help=text)
        p.set_defaults(func=commands.gui, gui_command=None if name == "gui" else name)

    p = sub.add_parser("doctor", help="check the model, the database and the search index")
    p.add_argument("--repair", action="store_true", help="rebuild the keyword index first")
    p.set_defaults(func=commands.doctor)
