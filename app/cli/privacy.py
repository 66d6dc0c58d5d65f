"""`mnemo encrypt | decrypt | unlock | backup` and `mnemo restore FILE` (ADR 0014)."""

from __future__ import annotations

import getpass
import os
import sys
from argparse import Namespace
from pathlib import Path

from app.cli.output import say
from app.core import paths
from app.core.engine import Engine
from app.core.errors import InputError
from app.core.vault import keys
from app.core.vault.cipher import signals_held


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def new_passphrase(rotating: bool = False) -> str:
    """A passphrase for a new key: MNEMO_PASSPHRASE / --passphrase-file (for a rotation:
    MNEMO_NEW_PASSPHRASE, the other one opening the database now), else typed twice."""
    given = (
        os.environ.get("MNEMO_NEW_PASSPHRASE")
        if rotating
        else keys.passphrase_for(paths.database_path())
    )
    if given:
        return given
    if not _interactive():
        raise InputError(
            "a passphrase is needed and there is no terminal to type it: give it with "
            + ("MNEMO_NEW_PASSPHRASE" if rotating else "MNEMO_PASSPHRASE or --passphrase-file")
        )
    first = getpass.getpass("New passphrase: ")
    if len(first) < 8:
        raise InputError("a passphrase of at least 8 characters, please (nothing was changed)")
    if getpass.getpass("The same again: ") != first:
        raise InputError("the two passphrases differ (nothing was changed)")
    return first


def _recovery_key(args: Namespace) -> str:
    if args.recovery_key_file:
        try:
            return Path(args.recovery_key_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {args.recovery_key_file}: {exc}") from None
    if _interactive():
        return getpass.getpass("Recovery key: ")
    if sys.stdin is None:
        raise InputError("give the recovery key with --recovery-key-file or on standard input")
    return sys.stdin.readline().strip()


def _show_recovery(recovery: str, what: str) -> None:
    """Show the recovery key; if it cannot be written, say that the switch is done all the
    same and how to get a key that is shown (a new one)."""
    try:
        print(what)
        print()
        print("Recovery key (shown this once: write it down, or keep it in a password manager):")
        print()
        print(f"    {recovery}")
        print()
        print("It opens this database and the snapshots taken from now on, on any machine:")
        print("    mnemo unlock")
        sys.stdout.flush()
    except OSError as exc:
        raise InputError(
            f"the database IS encrypted, but its recovery key could not be written out "
            f"({exc.strerror or exc}); run mnemo encrypt --rotate to get a new one shown"
        ) from None


def encrypt(args: Namespace) -> int:
    """mnemo encrypt [--rotate | --status] [--passphrase]"""
    db_path = paths.database_path()
    if args.status:
        for name, value in keys.describe(db_path).items():
            print(f"{name}: {value}")
        return 0
    with Engine() as engine:
        if args.rotate:
            passphrase = new_passphrase(rotating=True) if args.passphrase else None
            with signals_held():  # a Ctrl+C waits: never a new key nobody was shown
                recovery = engine.vault.rotate_key(passphrase)
                _show_recovery(
                    recovery, f"{db_path} now has a new key; the old one opens it no more."
                )
            return 0
        passphrase = new_passphrase() if args.passphrase else None
        if passphrase is None:
            available, why = Engine.keyring_available()
            if not available:
                say(f"{why}: the key will be sealed by a passphrase instead")
                passphrase = new_passphrase()
        kept = "sealed by your passphrase" if passphrase else "kept in the OS keyring"
        with signals_held():
            recovery = engine.vault.encrypt("passphrase" if passphrase else "keyring", passphrase)
            _show_recovery(
                recovery,
                f"Encrypted {db_path} (ChaCha20-Poly1305); its key is {kept}.\n"
                "The vector copy is sealed too; exports and the markdown mirror are refused "
                "while it is encrypted (mnemo export --plain says yes to one export).",
            )
        if warning := engine.sync.clear_folder_warning():
            say(f"note: {warning}")
    return 0


def decrypt(args: Namespace) -> int:
    """mnemo decrypt"""
    with Engine() as engine, signals_held():
        engine.vault.decrypt()
        print(f"{engine.database_path} is no longer encrypted.")
    return 0


def unlock(args: Namespace) -> int:
    """mnemo unlock: open an encrypted database again with its recovery key."""
    recovery = _recovery_key(args)
    passphrase = new_passphrase() if args.passphrase else None
    where = Engine.unlock(recovery, "passphrase" if passphrase else None, passphrase)
    print(f"Unlocked: the key is now in {where}.")
    return 0


def backup(args: Namespace) -> int:
    """mnemo backup [--list]"""
    with Engine() as engine:
        if args.list:
            for snap in engine.vault.backups():
                size = f"{snap.size / 2**20:8.1f} MB"
                print(f"{snap.taken:%Y-%m-%d %H:%M:%S} UTC  {size}  {snap.path}")
            return 0
        snap = engine.vault.backup()
        state = "encrypted" if engine.vault.encrypted else "not encrypted"
    print(f"Snapshot written ({state}, {snap.size / 2**20:.1f} MB): {snap.path}")
    return 0


def restore_file(args: Namespace, path: Path) -> int:
    """mnemo restore FILE: a snapshot in place of the database, the current one kept."""
    recovery = _recovery_key(args) if args.recovery_key_file else None
    with Engine() as engine:
        checked = engine.vault.check_backup(path, recovery)
        say(
            f"{path} is whole: {checked.counts['memories']} memories and "
            f"{checked.counts['trashed']} in the trash; restoring it"
        )
        aside, found = engine.vault.restore_backup(checked)
    print(
        f"Restored {found['memories']} memories ({found['trashed']} in the trash) from {path}; "
        f"the database before is kept as {aside}"
    )
    return 0
