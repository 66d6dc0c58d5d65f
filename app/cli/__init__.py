"""The `mnemo` command line: a thin layer over `app.core`."""

from __future__ import annotations

import os
import sys

from app.core.errors import MnemoError


def main(argv: list[str] | None = None) -> int:
    """Run one command; known problems print one line on stderr and return 1."""
    argv = sys.argv[1:] if argv is None else argv
    first = 0  # global options before the command: `mnemo --passphrase-file F hook …`
    while first < len(argv) and argv[first] in ("-v", "--verbose", "--passphrase-file"):
        if argv[first] == "--passphrase-file" and first + 1 < len(argv):
            os.environ["MNEMO_PASSPHRASE_FILE"] = argv[first + 1]
            first += 1
        first += 1
    if argv[first:] in (["hook", "serve"], ["hook", "stop"], ["hook", "status"]):
        from app.agents import helper  # the resident helper (the hook never imports it)

        return helper.command(argv[first + 1])
    if argv[first : first + 1] == ["hook"]:  # an agent's hook: nothing else loaded
        from app.agents.hook import main as hook

        return hook(argv[first + 1 :])  # (it always exits 0 for the agent, output or not)
    if argv[first:] == ["mcp"] and sys.stdin is not None and not sys.stdin.isatty():
        import contextlib

        from app import mcp_greeting  # an agent starts it: `initialize` answered before

        # the SDK loads (0.7 s), when this code answered it before; never keeps the server
        # from starting: what was read is kept (`mcp_greeting.first`) and the SDK answers
        with contextlib.suppress(Exception):
            mcp_greeting.greet()
    if sys.stdout is None:  # `mnemo list >&-`: no output could be written, so nothing is done
        if sys.stderr is not None:
            print("mnemo: error: standard output is closed; nothing was done", file=sys.stderr)
        return 1
    if sys.stderr is None:  # `2>&-`: notices and errors have nowhere to go but nowhere
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the whole process
    for n, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes the locale could not decode (surrogateescape)
            print(
                f"mnemo: error: argument {n} is not UTF-8 text (binary data is not stored)",
                file=sys.stderr,
            )
            return 1
    import logging

    from app.cli import commands  # here, not at the top: `import app.cli` stays light
    from app.cli.parser import build_parser

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.passphrase_file:
        os.environ["MNEMO_PASSPHRASE_FILE"] = args.passphrase_file  # for the core, and children
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="mnemo: %(levelname)s: %(message)s",
    )
    from app.core.crash import Formatter  # tracebacks without memory text (issue 26)

    for handler in logging.getLogger().handlers:
        handler.setFormatter(Formatter("mnemo: %(levelname)s: %(message)s"))
    if not args.command:
        args.func, args.gui_command = commands.gui, None
    try:
        try:
            status = args.func(args) or 0
        finally:
            commands.close_engines()
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        return status
    except MnemoError as exc:
        print(f"mnemo: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mnemo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); silence the flush at exit too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # Writing the output failed (`mnemo export > /dev/full`): one line, no traceback.
        import errno

        why = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        print(f"mnemo: error: cannot write the output: {why}", file=sys.stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
