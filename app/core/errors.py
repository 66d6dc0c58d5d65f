"""The two kinds of error: known problems the user can act on, and bugs."""

from __future__ import annotations


class MnemoError(Exception):
    """A known problem: shown to the user as one clear line, never as a traceback."""


class InputError(MnemoError):
    """The user's input cannot be used as given (empty, binary, too large, unknown id)."""


class NotFoundError(InputError):
    """No memory has the given id."""


class ModelError(MnemoError):
    """The embedding model is missing, corrupt, or cannot be loaded."""


class StoreError(MnemoError):
    """The database cannot be opened or written (locked, read-only, corrupt, disk full)."""


class SecretError(InputError):
    """The text holds a secret (key, token, password) and the caller asked to refuse it."""


class ConflictError(InputError):
    """The memory changed elsewhere (the CLI, an agent) since the caller read it: writing
    would replace that change unseen."""


class TrashedError(ConflictError):
    """The memory went to the trash (a merge undone, a delete elsewhere) since the caller
    read it: an edit must not be saved into the trash, where nothing finds it."""


class LockedError(MnemoError):
    """The database is encrypted and cannot be opened now: each subclass says why and what
    opens it (`mnemo unlock`, the passphrase, the keyring)."""


class NoKeyError(LockedError):
    """The database is encrypted and no key for it was found (keyring, passphrase)."""


class WrongKeyError(LockedError):
    """A key or passphrase was found or given, and it does not open the database."""


class KeyringLockedError(LockedError):
    """The OS secret store holds the key but is locked (or cannot ask to be unlocked)."""


class NewerCipherError(LockedError):
    """The database was encrypted by a newer Mnemo (a key file or cipher it does not know)."""


class PlainCopyRefused(InputError):
    """The database is encrypted and the action would write memories in the clear (an
    export, the markdown mirror): done only when the user says so."""
