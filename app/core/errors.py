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
