"""Reading and writing an agent's config file without losing anything in it.

JSON is read strictly: a file with comments (JSONC) or a syntax error is refused, never
rewritten, since its comments or its broken part would be lost. TOML goes through tomlkit,
which keeps comments and layout. Every write is atomic, keeps the file's mode, and leaves the
previous version beside it (`NAME.mnemo-backup`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from app.core.errors import InputError

BACKUP_SUFFIX = ".mnemo-backup"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None


def load_json(path: Path, data: bytes | None) -> dict[str, Any]:
    """The JSON object in a config file ({} when it is missing or empty)."""
    if data is None or not data.strip():
        return {}
    text = data.decode("utf-8-sig", errors="strict")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if re.search(r"(^|\s)//|/\*", text):
            raise InputError(
                f"{path} has comments (JSONC): not changed, they would be lost; "
                "add Mnemo's entry by hand"
            ) from None
        raise InputError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); not changed"
        ) from None
    if not isinstance(value, dict):
        raise InputError(f"{path} does not hold a JSON object; not changed")
    return value


def dump_json(value: dict[str, Any], before: bytes | None) -> bytes:
    """JSON in the file's own indentation (2 spaces for a new file), ending as it did."""
    indent = 2
    if before:
        found = re.search(rb"\n([ \t]+)\"", before)
        if found:
            indent = len(found.group(1).replace(b"\t", b"    "))
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    newline = before is None or before.endswith(b"\n")
    return (text + ("\n" if newline else "")).encode()


def load_toml(path: Path, data: bytes | None):
    """The TOML document in a config file (comments and layout kept)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse((data or b"").decode("utf-8"))
    except (ParseError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not valid TOML ({exc}); not changed") from None


def write(path: Path, data: bytes, before: bytes | None) -> None:
    """Replace the file atomically with `data`, the previous version kept beside it; if the
    file changed since it was read as `before` (the agent saved it meanwhile), nothing is
    written: InputError."""
    if read_bytes(path) != before:
        raise InputError(f"{path} changed while Mnemo was editing it; not changed (run it again)")
    if path.is_symlink():  # dotfiles kept elsewhere (stow, a synced folder): the link stays
        path = path.resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if before is not None else 0o600
        if before is not None:
            backup = path.with_name(path.name + BACKUP_SUFFIX)
            backup.write_bytes(before)
            os.chmod(backup, mode)
        temp = path.with_name(f".{path.name}.mnemo-{os.getpid()}")
        temp.write_bytes(data)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}; not changed") from None


def remove(path: Path) -> None:
    """Delete a file Mnemo created (its last version kept beside it)."""
    try:
        shutil.copyfile(path, path.with_name(path.name + BACKUP_SUFFIX))
        path.unlink()
    except OSError as exc:
        raise InputError(f"cannot remove {path}: {exc.strerror}") from None
