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
from pathlib import Path
from typing import Any

from app.core import paths
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


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; not changed") from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice in one object")
    return dict(pairs)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is too large to write back")
    return value


def load_json(path: Path, data: bytes | None) -> dict[str, Any]:
    """The JSON object in a config file ({} when it is missing or empty). Anything Mnemo
    could not write back as it was (comments, NaN, a key twice, a number too large, a
    nesting too deep) is refused: InputError, and the file is not changed."""
    if data is None or not data.strip():
        return {}
    text = _text(path, data)
    try:
        value = json.loads(
            text,
            parse_constant=_refuse_constant,
            object_pairs_hook=_no_duplicates,
            parse_float=_finite,
        )
    except json.JSONDecodeError as exc:
        if re.search(r"(^|\s)//|/\*", text):
            raise InputError(
                f"{path} has comments (JSONC): not changed, they would be lost; "
                "add Mnemo's entry by hand"
            ) from None
        raise InputError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); not changed"
        ) from None
    except (ValueError, RecursionError) as exc:
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(f"{path} cannot be written back as it is ({why}); not changed") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} does not hold a JSON object; not changed")
    return value


def dump_json(path: Path, value: dict[str, Any], before: bytes | None) -> bytes:
    """JSON in the file's own layout: its indentation (2 spaces for a new file), line
    endings, byte order mark and final newline."""
    indent: int | str = 2
    if before:
        found = re.search(rb"\n([ \t]+)\"", before)
        if found:
            indent = found.group(1).decode()
    try:
        text = json.dumps(value, indent=indent, ensure_ascii=False)
        if before and b"\r\n" in before:
            text = text.replace("\n", "\r\n")
        ending = "\r\n" if before and before.endswith(b"\r\n") else "\n"
        newline = before is None or before.endswith(b"\n")
        bom = "\ufeff" if before and before.startswith(b"\xef\xbb\xbf") else ""
        return (bom + text + (ending if newline else "")).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        raise InputError(f"{path} holds text that cannot be written back; not changed") from None


def load_toml(path: Path, data: bytes | None):
    """The TOML document in a config file (comments and layout kept)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    text = _text(path, data) if data else ""
    try:
        return tomlkit.parse(text)
    except (ParseError, RecursionError) as exc:
        raise InputError(f"{path} is not valid TOML ({exc}); not changed") from None


def write(path: Path, data: bytes, before: bytes | None) -> None:
    """Replace the file atomically with `data`, the previous version kept beside it (with
    its mode). Nothing is written if the file changed since it was read as `before` (the
    agent saved it meanwhile) or if it is read-only: InputError."""
    if read_bytes(path) != before:
        raise InputError(f"{path} changed while Mnemo was editing it; not changed (run it again)")
    if path.is_symlink():  # dotfiles kept elsewhere (stow, a synced folder): the link stays
        path = path.resolve()
    if before is not None and not os.access(path, os.W_OK):
        raise InputError(f"{path} is read-only; not changed")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if before is not None else 0o600
        if before is not None:
            put(path.with_name(path.name + BACKUP_SUFFIX), before, mode)
        put(path, data, mode)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}; not changed") from None


def put(path: Path, data: bytes, mode: int) -> None:
    """Write a file whole or not at all through the project's one safe writer
    (`paths.replace_file`: a private temporary file, never through a planted symlink,
    flushed and renamed), then give it `mode` (the mode of the file it replaces)."""
    paths.replace_file(path, lambda f: f.write(data), binary=True)
    os.chmod(path, mode)


def remove(path: Path) -> None:
    """Delete a file Mnemo made, as Mnemo left it (nothing of the user's is in it): through a
    symlink, the file it points to goes and the link stays, as it was."""
    try:
        (path.resolve() if path.is_symlink() else path).unlink()
    except OSError as exc:
        raise InputError(f"cannot remove {path}: {exc.strerror}") from None
