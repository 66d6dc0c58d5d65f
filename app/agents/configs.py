"""Reading and writing an agent's config file without losing anything in it.

YAML (Goose, Continue) is read by ruamel.yaml's round trip and edited as text where Mnemo's
entry goes (`yaml_text`): every other byte, comments included, stays where it was.
JSON is read strictly: a syntax error is refused, never rewritten, since the broken part
would be lost. Every JSON file, with comments (JSONC: Zed's, VS Code's and Gemini CLI's
settings) or without, is edited as text: what Mnemo changes (its server, its hooks, an item
added to or cut from an event's list) is put in or cut out where it belongs in the file's own
indentation, and everything else, comments and layout included, stays byte for byte (`Jsonc`).
TOML goes through tomlkit, which keeps comments and layout; a table Mnemo takes out again is
cut as text, so the remarks above the table after it stay (`toml_cut`). Every write is
atomic, keeps the file's mode, and leaves the previous version beside it (`NAME.mnemo-backup`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from app.agents import yaml_text
from app.agents.yaml_text import yaml_for
from app.core import paths
from app.core.errors import InputError

BACKUP_SUFFIX = ".mnemo-backup"
# A plain JSON file larger than this is written whole in its indentation, not edited as text
# (Claude Code's ~/.claude.json grows to megabytes, and it rewrites that file itself: 8 MB
# took 6 s as text, 1.3 s whole); a file with comments is always edited as text.
TEXT_EDIT_MAX = 1024 * 1024


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


def jsonc_value(path: Path, data: bytes) -> dict[str, Any]:
    """A JSONC file's value; InputError (never a traceback) when it is broken past its
    comments (a string or a comment not closed, a stray character)."""
    try:
        return Jsonc(path, _text(path, data)).value()
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} is not valid JSON ({exc}); not changed") from None


def jsonc_edit(path: Path, data: bytes, before: dict, after: dict, name: str) -> bytes:
    """The new bytes of a JSON file (with or without comments) whose value goes from `before`
    to `after`, edited as text: what changed is put in, cut out or replaced where it is (an
    array's items one by one), in the file's own indentation, and every other byte stays.
    InputError when that cannot be done without losing a comment."""
    text = _text(path, data)
    doc = Jsonc(path, text)
    try:
        doc.change([], before, after)
        same = Jsonc(path, doc.text).value() == after
    except (ValueError, InputError, StopIteration):
        same = False
    if not same:
        raise InputError(
            f"{path} has comments (JSONC) Mnemo could not keep while changing its `{name}` "
            "entries; not changed"
        )
    bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
    return (bom + doc.text).encode("utf-8")


def json_edit(path: Path, data: bytes | None, before: dict, after: dict, name: str) -> bytes:
    """A plain JSON file's new bytes: edited as text like JSONC (a minimal change in its own
    layout: one-line arrays stay on one line, tabs stay tabs), or, where that cannot be done,
    written whole in its indentation (nothing is lost: it has no comments)."""
    if data is None or not data.strip() or len(data) > TEXT_EDIT_MAX:
        return dump_json(path, after, data)
    try:
        return jsonc_edit(path, data, before, after, name)
    except InputError:
        return dump_json(path, after, data)


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


_HEADER = re.compile(r"^\s*\[\[?(?P<key>[^\]]+)\]\]?\s*(?:#.*)?$")


def toml_cut(data: bytes, after: dict[str, Any]) -> bytes | None:
    """A TOML file with the tables its value lost (Mnemo's, on an uninstall) cut out as text:
    a table's lines from its header to the next one, but not the remarks right above that
    next header (the user's, about what follows: tomlkit counts them in the table before,
    and a table removed through it took them along). None when the text is not the value
    `after` then (another change, an inline table): the caller writes through tomlkit."""
    import tomllib

    try:
        text = data.decode("utf-8-sig")
        lines = text.splitlines(keepends=True)
        headers = []
        for n, line in enumerate(lines):
            found = _HEADER.match(line)
            if found:
                headers.append((n, tomllib.loads(f"[{found['key']}]\n")))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None

    def kept(path: dict) -> bool:  # whether the table a header names is still in `after`
        value: Any = after
        while isinstance(path, dict) and path:
            ((key, path),) = path.items()
            if not isinstance(value, dict) or key not in value:
                return False
            value = value[key]
        return True

    cut = [False] * len(lines)
    for i, (n, path) in enumerate(headers):
        if kept(path):
            continue
        end = headers[i + 1][0] if i + 1 < len(headers) else len(lines)
        top = end
        while top > n + 1 and (
            lines[top - 1].lstrip().startswith("#") or not lines[top - 1].strip()
        ):
            top -= 1
        if any(lines[k].lstrip().startswith("#") for k in range(top, end)):
            while top < end and not lines[top].strip():
                top += 1  # the blank lines before the remarks go with the table
        else:
            top = end
        for k in range(n, top):
            cut[k] = True
    new = "".join(line for line, gone in zip(lines, cut, strict=True) if not gone)
    try:
        same = tomllib.loads(new) == after
    except tomllib.TOMLDecodeError:
        same = False
    bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
    return (bom + new).encode("utf-8") if same else None


def load_toml(path: Path, data: bytes | None):
    """The TOML document in a config file (comments and layout kept)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    text = _text(path, data) if data else ""
    try:
        return tomlkit.parse(text)
    except (ParseError, RecursionError) as exc:
        raise InputError(f"{path} is not valid TOML ({exc}); not changed") from None


def load_yaml(path: Path, data: bytes | None):
    """The YAML mapping in a config file ({} when missing or empty), comments kept."""
    from ruamel.yaml.error import YAMLError

    if data is None or not data.strip():
        from ruamel.yaml.comments import CommentedMap

        return CommentedMap()
    try:
        value = yaml_for().load(_text(path, data))
    except (YAMLError, RecursionError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path} is not valid YAML ({why}); not changed") from None
    if value is None:  # (comments only)
        from ruamel.yaml.comments import CommentedMap

        return CommentedMap()
    if not isinstance(value, dict):
        raise InputError(f"{path} does not hold a YAML mapping; not changed")
    return value


def dump_yaml(
    path: Path, value: Any, before: bytes | None, original: Any = None, first: bytes | None = None
) -> bytes:
    """The new bytes of a YAML config: edited as text where `yaml_text` can (`original`:
    the plain value `before` holds; `first`: the file before Mnemo first wrote it, when
    known), else written whole by ruamel.yaml."""
    import io

    text = _text(path, before) if before else ""
    if text.strip() and isinstance(original, dict):
        after = json.loads(json.dumps(value, default=str))
        since = first.decode("utf-8-sig", errors="replace") if first else None
        new = yaml_text.edited(text, original, after, plain_yaml_as_loaded, since)
        if new is not None:
            bom = "\ufeff" if before.startswith(b"\xef\xbb\xbf") else ""
            return (bom + new).encode("utf-8")
    out = io.StringIO()
    try:
        yaml_for(text).dump(value, out)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} cannot be written back ({exc}); not changed") from None
    return out.getvalue().encode("utf-8")


def plain_yaml(text: str) -> dict[str, Any]:
    """A YAML file's value as plain data (to compare before and after an edit)."""
    from ruamel.yaml import YAML

    value = YAML(typ="safe", pure=True).load(text) or {}
    return json.loads(json.dumps(value, default=str))


def plain_yaml_as_loaded(text: str) -> dict[str, Any]:
    """A YAML text's value as plain data as `load_yaml` reads it (a timestamp, say, made
    plain as the round trip's type writes it, not as the safe loader's): what an edit's
    result is compared with, both sides read alike."""
    value = yaml_for().load(text) or {}
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

    def _newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def _indent_inside(self, at: int, depth: int) -> str:
        """The indentation of a line inside the container opening at `at` (`depth` deep):
        its first item's, or the file's own unit (a tab, 4 spaces…) times the depth."""
        for kind, a, _ in self._tokens(self.text[at + 1 :]):
            if kind == "comment" or kind in "}]":
                break
            line = self.text.rfind("\n", 0, at + 1 + a)
            lead = self.text[line + 1 : at + 1 + a]
            return lead if not lead.strip() else ""
        unit = re.search(r"\n([ \t]+)[\"{\[]", self.text)
        return (unit.group(1) if unit else "  ") * depth

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
            closing, members = self._members(at)
            one_line = "\n" not in self.text[at : (members[0][1] if members else closing)]
            if one_line:  # a one-line object stays on one line: put before its first member
                where = members[0][1] if members else at + 1
                comma = ", " if members else ""
                self.text = self.text[:where] + inner + comma + self.text[where:]
                return
            indent = self._indent_inside(at, depth + 1)
            unit = self._unit()
            pretty = json.dumps({name: member}, ensure_ascii=False, indent=unit)
            inner = "\n".join(line[len(unit) :] for line in pretty.splitlines()[1:-1])
            for key in reversed(keys[depth:]):
                body = "\n".join(unit + line for line in inner.splitlines())
                inner = json.dumps(key) + ": {\n" + body + "\n}"
            inner = inner.replace("\n", self._newline() + indent)
            comma = "," if members else ""
            lead = self._newline() + indent
            self.text = self.text[: at + 1] + lead + inner + comma + self.text[at + 1 :]
            return
        raise ValueError("no object to put it in")

    def _unit(self) -> str:
        """The file's indentation step (its first indented line's), two spaces if none."""
        found = re.search(r"\n([ \t]+)[\"{\[/]", self.text)
        return found.group(1) if found else "  "

    def _cut_last(self, previous_end: int, start: int, end: int) -> None:
        """Cut the last item or member (`start`-`end`) and the comma after the one before it
        (which ends at `previous_end`), leaving a remark between the two where it is."""
        comma = next(
            previous_end + a
            for kind, a, _ in self._tokens(self.text[previous_end:start])
            if kind == ","
        )
        line = self.text.rfind("\n", 0, start)
        if line > comma and not self.text[line + 1 : start].strip():
            start = line - (1 if self.text[line - 1] == "\r" else 0)
        if self.has_comments(self.text[start:end]):
            raise ValueError("a comment is in what would be cut")
        between = self.text[comma + 1 : start]
        between = between if between.strip() else ""  # ", " on one line goes with it
        self.text = self.text[:comma] + between + self.text[end:]

    def change(self, keys: list[str], old: dict, new: dict) -> None:
        """Make the object at `keys` go from `old` to `new` member by member: a member cut
        out, put in, changed inside (objects, arrays whose items were added or taken away)
        or, a scalar or another array, its value replaced in place."""
        for name in [n for n in old if n not in new]:
            self.remove(keys, name, prune=False)
        for name, value in new.items():
            if name not in old:
                self.put(keys, name, value)
            elif old[name] == value:
                continue
            elif isinstance(old[name], dict) and isinstance(value, dict):
                self.change([*keys, name], old[name], value)
            elif isinstance(old[name], list) and isinstance(value, list):
                self._change_items(keys, name, old[name], value)
            else:
                self._replace(keys, name, value)

    def _value_at(self, keys: list[str], name: str) -> tuple[int, int]:
        """Where the value of member `name` of the object at `keys` starts and ends."""
        at = self._object_at(keys)
        if at is None:
            raise ValueError("no such object")
        _, members = self._members(at)
        key, key_at, end, _ = next(m for m in members if m[0] == name)
        tokens = [t for t in self._tokens(self.text[key_at:end]) if t[0] != "comment"]
        return key_at + tokens[2][1], end  # (the key, the colon, then the value)

    def _replace(self, keys: list[str], name: str, value: Any) -> None:
        start, end = self._value_at(keys, name)
        if self.has_comments(self.text[start:end]):
            raise ValueError("a comment is in what would be replaced")
        self.text = self.text[:start] + json.dumps(value, ensure_ascii=False) + self.text[end:]

    def _items(self, start: int) -> tuple[int, list[tuple[int, int, int | None]]]:
        """The array whose "[" is at `start`: where it ends, and each item (where it starts,
        ends, and where its comma ends or None)."""
        depth, items, first, last = 0, [], None, 0
        for kind, a, b in self._tokens(self.text[start:]):
            a, b = start + a, start + b
            if kind == "comment":
                continue
            if kind in "{[":
                depth += 1
                if depth == 2 and first is None:
                    first = a
                continue
            if kind in "}]":
                depth -= 1
                if depth == 0:
                    if first is not None:
                        items.append((first, last, None))
                    return b, items
                last = b
                continue
            if depth == 1 and kind == ",":
                if first is not None:
                    items.append((first, last, b))
                first = None
                continue
            if depth == 1 and first is None:
                first = a
            last = b
        raise ValueError("an array is not closed")

    def _change_items(self, keys: list[str], name: str, old: list, new: list) -> None:
        """Items appended at the end, or items taken away (the others in order): as text;
        any other change replaces the array."""
        start, _ = self._value_at(keys, name)
        if self.text[start] != "[":
            raise ValueError("not an array")
        end, items = self._items(start)
        if new[: len(old)] == old:  # appended
            added = ", ".join(json.dumps(v, ensure_ascii=False) for v in new[len(old) :])
            if not items:
                self.text = self.text[: start + 1] + added + self.text[start + 1 :]
                return
            last_start, last_end, _ = items[-1]
            between = self.text[items[-2][2] if len(items) > 1 else start + 1 : last_start]
            if "\n" in between:  # one item a line: the new ones too, after the last one's
                line = self.text.rfind("\n", 0, last_start)  # remark on its line, if any
                lead = self.text[line + 1 : last_start]
                indent = lead[: len(lead) - len(lead.lstrip())]  # (not a remark before it)
                added = ("," + self._newline() + indent).join(
                    json.dumps(v, ensure_ascii=False) for v in new[len(old) :]
                )
                line_end = self.text.find("\n", last_end)
                rest = self.text[last_end : line_end if line_end >= 0 else len(self.text)]
                after = last_end
                if rest.strip().startswith("//") and line_end >= 0:
                    after = line_end - (1 if self.text[line_end - 1] == "\r" else 0)
                self.text = (
                    self.text[:last_end] + "," + self.text[last_end:after] + self._newline()
                    + indent + added + self.text[after:]
                )  # fmt: skip
            else:
                self.text = self.text[:last_end] + ", " + added + self.text[last_end:]
            return
        if len(new) == len(old):  # items changed in place (an older Mnemo's hook, or the
            for i in reversed(range(len(old))):  # user's handler beside Mnemo's): each one
                if old[i] != new[i]:
                    item_start, item_end, _ = items[i]
                    if self.has_comments(self.text[item_start:item_end]):
                        raise ValueError("a comment is in what would be replaced")
                    replaced = json.dumps(new[i], ensure_ascii=False)
                    self.text = self.text[:item_start] + replaced + self.text[item_end:]
            return
        kept, n = [], 0
        for i, value in enumerate(old):
            if n < len(new) and new[n] == value:
                kept.append(i)
                n += 1
        if n != len(new):
            self._replace(keys, name, new)
            return
        for i in reversed([i for i in range(len(old)) if i not in kept]):
            item_start, item_end, comma = items[i]
            if comma is None and i > 0:
                self._cut_last(items[i - 1][1], item_start, item_end)
                end, items = self._items(start)
                continue
            cut_start, cut_end = item_start, comma if comma is not None else item_end
            if self.has_comments(self.text[cut_start:cut_end]):
                raise ValueError("a comment is in what would be cut")
            line = self.text.rfind("\n", 0, cut_start)
            if line >= 0 and not self.text[line + 1 : cut_start].strip():
                cut_start = line - (1 if line and self.text[line - 1] == "\r" else 0)
            self.text = self.text[:cut_start] + self.text[cut_end:]
            end, items = self._items(start)

    def remove(self, keys: list[str], name: str, prune: bool = True) -> bool:
        """Cut `"name": …` out of the object at `keys` with its comma and its line's
        indentation (what `put` added goes byte for byte), and (`prune`) a container it
        leaves empty; whether it was there."""
        at = self._object_at(keys)
        if at is None:
            return False
        _, members = self._members(at)
        for n, (key, start, end, comma) in enumerate(members):
            if key != name:
                continue
            if comma is None and n > 0:  # the last: the one before loses its comma
                self._cut_last(members[n - 1][2], start, end)
                if prune and keys and len(members) == 1:
                    self.remove(keys[:-1], keys[-1])
                return True
            cut_start, cut_end = start, comma if comma is not None else end
            if comma is not None and self.text[cut_start - 1] in "{[":  # one line: its space
                while self.text[cut_end : cut_end + 1] == " ":
                    cut_end += 1
            line_start = self.text.rfind("\n", 0, cut_start)
            if line_start >= 0 and not self.text[line_start + 1 : cut_start].strip():
                cut_start = line_start  # the newline and indentation before it
                if cut_start and self.text[cut_start - 1] == "\r":
                    cut_start -= 1
            if self.has_comments(self.text[cut_start:cut_end]):
                raise ValueError("a comment is in what would be cut")
            self.text = self.text[:cut_start] + self.text[cut_end:]
            if prune and keys and len(members) == 1:
                self.remove(keys[:-1], keys[-1])
            elif len(members) == 1:  # left empty, and kept: `{}`, not a brace on each line
                closing, _ = self._members(at)
                if not self.text[at + 1 : closing - 1].strip():
                    self.text = self.text[: at + 1] + self.text[closing - 1 :]
            return True
        return False
