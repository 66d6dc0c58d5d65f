"""Reading and writing an agent's config file without losing anything in it.

YAML (Goose, Continue) goes through ruamel.yaml's round trip, which keeps comments and order.
JSON is read strictly: a syntax error is refused, never rewritten, since the broken part
would be lost. A file with comments (JSONC: Zed's and VS Code's settings) is edited as text:
Mnemo's one member is inserted or cut out where it belongs and everything else, comments
included, stays byte for byte (`Jsonc`). TOML goes through tomlkit, which keeps comments and
layout. Every write is atomic, keeps the file's mode, and leaves the
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


def is_jsonc(data: bytes | None) -> bool:
    """Whether a file that is not strict JSON is JSON with comments or trailing commas
    (then `Jsonc` edits it as text)."""
    if not data:
        return False
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False  # refused by `load_json`, which says why
    try:
        json.loads(text)
        return False
    except RecursionError:
        return False
    except ValueError:
        pass
    try:
        return Jsonc.has_comments(text) or Jsonc.trailing_comma(text)
    except ValueError:
        return False


def jsonc_edit(path: Path, data: bytes, before: dict, after: dict, name: str) -> bytes:
    """The new bytes of a JSONC file whose value goes from `before` to `after`, where only
    members named `name` of top-level objects may differ: those are put in or cut out as
    text, everything else left byte for byte. InputError for any other change."""
    text = _text(path, data)
    doc = Jsonc(path, text)
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, {}), after.get(key, {})
        if old == new:
            continue
        if not (isinstance(old, dict) and isinstance(new, dict)) or {
            k for k in set(old) | set(new) if old.get(k) != new.get(k)
        } - {name}:
            raise InputError(
                f"{path} has comments (JSONC): Mnemo can put only its `{name}` entry in it; "
                "not changed"
            )
        if name in new:
            doc.put([key], name, new[name])
        else:
            doc.remove([key], name)
    try:
        same = Jsonc(path, doc.text).value() == after
    except (ValueError, InputError):
        same = False
    if not same:
        raise InputError(f"{path}: Mnemo could not edit its comments-and-all safely; not changed")
    bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
    return (bom + doc.text).encode("utf-8")


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
        if Jsonc.trailing_comma(text):
            raise InputError(f"{path} has a trailing comma (JSONC); not changed") from None
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


def _yaml(text: str = ""):
    """A round-trip YAML (comments, order and quotes kept) indenting as `text` does."""
    from ruamel.yaml import YAML
    from ruamel.yaml.util import load_yaml_guess_indent

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never folds a long command line
    mapping, offset = 2, 0
    if text:
        try:
            _, guessed, offset_guessed = load_yaml_guess_indent(text)
            mapping, offset = guessed or 2, offset_guessed or 0
        except Exception:  # noqa: BLE001 - a guess: the defaults do
            pass
    yaml.indent(mapping=mapping, sequence=max(mapping, offset + 2), offset=offset)
    return yaml


def load_yaml(path: Path, data: bytes | None):
    """The YAML mapping in a config file ({} when missing or empty), comments kept."""
    from ruamel.yaml.error import YAMLError

    if data is None or not data.strip():
        from ruamel.yaml.comments import CommentedMap

        return CommentedMap()
    try:
        value = _yaml().load(_text(path, data))
    except (YAMLError, RecursionError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path} is not valid YAML ({why}); not changed") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} does not hold a YAML mapping; not changed")
    return value


def dump_yaml(path: Path, value: Any, before: bytes | None) -> bytes:
    import io

    out = io.StringIO()
    try:
        _yaml(before.decode("utf-8-sig") if before else "").dump(value, out)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} cannot be written back ({exc}); not changed") from None
    return out.getvalue().encode("utf-8")


def plain_yaml(text: str) -> dict[str, Any]:
    """A YAML file's value as plain data (to compare before and after an edit)."""
    from ruamel.yaml import YAML

    value = YAML(typ="safe", pure=True).load(text) or {}
    return json.loads(json.dumps(value, default=str))


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


class Jsonc:
    """A JSON-with-comments file edited as text: members of objects found by position
    (strings, escapes, `//` and `/* */` comments and trailing commas understood)."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.text = text

    @staticmethod
    def has_comments(text: str) -> bool:
        return any(kind == "comment" for kind, _, _ in Jsonc._tokens(text))

    @staticmethod
    def trailing_comma(text: str) -> bool:
        tokens = [t for t in Jsonc._tokens(text) if t[0] != "comment"]
        return any(
            a[0] == "," and b[0] in ("}", "]") for a, b in zip(tokens, tokens[1:], strict=False)
        )

    @staticmethod
    def _tokens(text: str):
        """(kind, start, end): punctuation, "string", "comment" or "word" (numbers, true…)."""
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c.isspace():
                i += 1
            elif text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end < 0 else end
                yield "comment", i, end
                i = end
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end < 0:
                    raise ValueError("a comment is not closed")
                yield "comment", i, end + 2
                i = end + 2
            elif c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    raise ValueError("a string is not closed")
                yield "string", i, j + 1
                i = j + 1
            elif c in "{}[]:,":
                yield c, i, i + 1
                i += 1
            else:
                j = i
                while j < n and not text[j].isspace() and text[j] not in '{}[]:,"/':
                    j += 1
                if j == i:
                    raise ValueError(f"unexpected {c!r}")
                yield "word", i, j
                i = j

    def value(self) -> dict[str, Any]:
        """The value, comments and trailing commas left out, checked like `load_json`."""
        kept, tokens = [], [t for t in self._tokens(self.text) if t[0] != "comment"]
        for n, (kind, start, end) in enumerate(tokens):
            following = tokens[n + 1][0] if n + 1 < len(tokens) else ""
            if kind == "," and following in ("}", "]"):
                continue
            kept.append(self.text[start:end])
        return load_json(self.path, " ".join(kept).encode())

    def _members(self, start: int) -> tuple[int, list[tuple[str, int, int, int | None]]]:
        """The object whose "{" is at `start`: where it ends, and each member (its key,
        where the key starts, where the value ends, where its comma ends or None)."""
        depth, members, expecting = 0, [], True
        key, key_at, last = None, 0, 0
        for kind, a, b in self._tokens(self.text[start:]):
            a, b = start + a, start + b
            if kind == "comment":
                continue
            if kind in "{[":
                depth += 1
                if depth > 1:
                    last = b
                continue
            if kind in "}]":
                depth -= 1
                if depth == 0:
                    if key is not None:
                        members.append((key, key_at, last, None))
                    return b, members
                last = b
                continue
            if depth == 1 and kind == ",":
                if key is not None:
                    members.append((key, key_at, last, b))
                key, expecting = None, True
                continue
            if depth == 1 and kind == ":":
                continue
            if depth == 1 and kind == "string" and expecting:
                key, key_at, expecting = json.loads(self.text[a:b]), a, False
                continue
            last = b
        raise ValueError("an object is not closed")

    def _object_at(self, keys: list[str]) -> int | None:
        """Where the "{" of the object at `keys` (from the top) is, or None."""
        position = next(a for k, a, _ in self._tokens(self.text) if k == "{")
        for key in keys:
            _, members = self._members(position)
            found = next((m for m in members if m[0] == key), None)
            if found is None:
                return None
            position = next(
                found[1] + a for k, a, _ in self._tokens(self.text[found[1] :]) if k in "{["
            )
            if self.text[position] != "{":
                return None
        return position

    def put(self, keys: list[str], name: str, member: Any) -> None:
        """Put `"name": member` first in the object at `keys` (made if missing), replacing
        a member of that name."""
        self.remove(keys, name)
        inner = json.dumps({name: member}, ensure_ascii=False)[1:-1]
        for depth in range(len(keys), -1, -1):
            at = self._object_at(keys[:depth])
            if at is None:
                continue
            for key in reversed(keys[depth:]):
                inner = json.dumps(key) + ": {" + inner + "}"
            _, members = self._members(at)
            comma = "," if members else ""
            newline = "\r\n" if "\r\n" in self.text else "\n"
            self.text = self.text[: at + 1] + newline + "  " + inner + comma + self.text[at + 1 :]
            return
        raise ValueError("no object to put it in")

    def remove(self, keys: list[str], name: str) -> bool:
        """Cut `"name": …` out of the object at `keys` with its comma and its line's
        indentation (what `put` added goes byte for byte), and a container it leaves empty;
        whether it was there."""
        at = self._object_at(keys)
        if at is None:
            return False
        _, members = self._members(at)
        for n, (key, start, end, comma) in enumerate(members):
            if key != name:
                continue
            if comma is not None:
                cut_start, cut_end = start, comma
            elif n > 0:  # the last, without a comma: the one before loses its comma
                cut_start, cut_end = members[n - 1][2], end
            else:
                cut_start, cut_end = start, end
            line_start = self.text.rfind("\n", 0, cut_start)
            if line_start >= 0 and not self.text[line_start + 1 : cut_start].strip():
                cut_start = line_start  # the newline and indentation before it
                if cut_start and self.text[cut_start - 1] == "\r":
                    cut_start -= 1
            self.text = self.text[:cut_start] + self.text[cut_end:]
            if keys and len(members) == 1:
                self.remove(keys[:-1], keys[-1])
            return True
        return False
