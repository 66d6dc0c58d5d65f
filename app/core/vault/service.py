"""Encryption at rest and snapshots as one part of the Engine (`engine.vault`, as
`engine.sync`): encrypt, decrypt, rotate the key, take, list, check and restore snapshots
(ADR 0014). Whatever replaces the database file lets go of it first, and every other Mnemo
process too (`handoff.py`); it is opened again after, whatever the switch did.

The functions at the bottom need no open database (the tray asks them before it can open
one: a passphrase to give, a recovery key to unlock with).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from app.core import paths
from app.core.errors import InputError
from app.core.settings import Settings
from app.core.storage.db import Database
from app.core.sync import restart
from app.core.vault import backups, cipher, handoff, keys


class Vault:
    """This database's encryption and snapshots."""

    def __init__(self, db: Database, settings: Settings, forget: Callable[[], None]):
        self._db = db
        self._settings = settings
        self._forget = forget  # the Engine's: drop what it read from the file (its vectors)

    @contextlib.contextmanager
    def _let_go(self) -> Iterator[None]:
        """Close the database (and what was read from it) for a switch; open it again after,
        whatever the switch did."""
        self._forget()
        self._db.release()
        try:
            yield
        finally:
            self._db.reopen()

    def hand_off(self) -> bool:
        """If another process is replacing the database (encrypt, restore...), let go of it
        until it is done and open the new one; whether it did. Also opens it again after a
        failed reopen (a locked keyring since unlocked). Cheap when there is nothing to do."""
        if not self._db.switch_wanted():
            if self._db.released:
                self._db.reopen()
                return True
            return False
        with self._let_go():
            handoff.wait(self._db.path)
        return True

    @property
    def encrypted(self) -> bool:
        """Whether the database is encrypted at rest."""
        return self._db.encrypted

    def status(self) -> dict:
        """Whether the database is encrypted and where its key is kept (the Privacy page,
        `mnemo encrypt --status`)."""
        return {**keys.describe(self._db.path), "encrypted": self._db.encrypted}

    def encrypt(self, store: str | None = None, passphrase: str | None = None) -> str:
        """Encrypt the database in place (every Mnemo process lets go meanwhile); the
        recovery key, to show once."""
        if self._settings["mirror_dir"]:
            raise InputError(
                f"the markdown mirror writes every memory in the clear to "
                f"{self._settings['mirror_dir']}; turn it off first (mnemo settings "
                "mirror_dir ''), then encrypt (nothing was changed)"
            )
        with self._let_go():
            return cipher.encrypt(self._db.path, store, passphrase)

    def rotate_key(self, passphrase: str | None = None) -> str:
        """Re-encrypt under a new key; the new recovery key."""
        with self._let_go():
            return cipher.rotate(self._db.path, passphrase)

    def decrypt(self) -> None:
        """Write the database back in the clear."""
        with self._let_go():
            cipher.decrypt(self._db.path)

    # ---- snapshots (`backups.py`) ------------------------------------------------------
    def backup(self) -> backups.Snapshot:
        """A snapshot of the database now, in the backups folder (pruned to the setting)."""
        return backups.take(self._db.path, self._settings["backups_kept"])

    def backup_if_due(self) -> backups.Snapshot | None:
        """A snapshot if the newest is older than the setting says (the runner that does the
        background work asks when idle); None when not due or another process takes it."""
        return backups.due(
            self._db.path, self._settings["backup_every_hours"], self._settings["backups_kept"]
        )

    def backups(self) -> list[backups.Snapshot]:
        """The snapshots, newest first."""
        return backups.listing(self._db.path)

    def check_backup(self, path: Path, recovery: str | None = None) -> backups.Checked:
        """Open and check a snapshot (or a database file) before a restore: what it holds."""
        return backups.check(self._db.path, path, recovery)

    def restore_backup(self, checked: backups.Checked) -> tuple[Path, dict[str, int]]:
        """Put a checked snapshot in place of the database (every Mnemo process lets go);
        where the database before was kept, and what the restored one holds."""
        with self._let_go():  # (a device that syncs stays itself and takes the folder's
            return backups.restore(self._db.path, checked, restart.carry)  # history again)


# ---- before a database is open ---------------------------------------------------------
def keyring_available() -> tuple[bool, str]:
    """Whether an OS secret store answers for a new key, and its name or why not."""
    backend, name = keys.secret_store()
    return backend is not None, name


def sealed_by_passphrase(database: Path | None = None) -> bool:
    """Whether the database's key is sealed by a passphrase (the tray then asks it)."""
    return keys.sealed_by_passphrase(database or paths.database_path())


def give_passphrase(passphrase: str, database: Path | None = None) -> None:
    """The passphrase the user typed, kept for this process's life (the tray asks once)."""
    keys.remember_passphrase(database or paths.database_path(), passphrase)


def unlock(
    recovery: str,
    store: str | None = None,
    passphrase: str | None = None,
    database: Path | None = None,
) -> str:
    """Open an encrypted database on this machine again with its recovery key (no Engine
    can open it before); where the key is kept now."""
    return cipher.unlock(database or paths.database_path(), recovery, store, passphrase)
