"""YAML configs (Goose's, Continue's) edited as text, as JSON and TOML are (`configs`).

ruamel.yaml's round trip keeps comments, but it hangs each one on a neighbouring node: a
remark the user wrote above the first item of a list belongs to the list, so an item put
first ended up under it, and one cut out again could take a remark with it. Here what Mnemo
changes in a top-level collection (`mcpServers:`, `extensions:`) is one child: put in after
the last child's own lines, cut out as the lines it spans, or replaced where it is, each in
the file's own indentation and line endings. Every other byte stays, so an install and an
uninstall give the file back as it was. The result is read back; whatever this cannot do
(a flow-style `[...]` with items, a layout it does not know) is left to ruamel.yaml
(`edited`: None).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

# A top-level key at the start of a line: "quoted", 'quoted' or plain, then a colon
_KEY = re.compile(
    r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#'"{}\[\],&*!|>%@`-][^#]*?|-[^\s#][^#]*?))"""
    r"""\s*:(?=\s|$)"""
)


def _last_remark_slot(node: Any, key: Any) -> tuple[Any, Any, int] | None:
    """Where ruamel.yaml keeps the comment after `node[key]`'s last line: on the last scalar
    inside it (its collection, the key or index, the place in that key's comment slots)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    while isinstance(node[key], CommentedMap | CommentedSeq) and len(node[key]):
        node = node[key]
        key = list(node)[-1] if isinstance(node, CommentedMap) else len(node) - 1
    if not hasattr(node, "ca"):
        return None
    return node, key, 2 if isinstance(node, CommentedMap) else 0


def pass_on_remarks(collection: Any, gone: Any, kept: Any) -> None:
    """The remarks on the lines after `collection[gone]`, its last child (ruamel.yaml hangs
    them on its last scalar), go to `collection[kept]`: before the last child is deleted
    from a round-trip value, or after a child is added after it, so that they stay in the
    file where the user wrote them (after the list, not above Mnemo's child)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    if not isinstance(collection, CommentedMap | CommentedSeq):
        return
    source = _last_remark_slot(collection, gone)
    target = _last_remark_slot(collection, kept)
    if source is None or target is None:
        return
    node, key, at = source
    token = (node.ca.items.get(key) or [None] * 4)[at]
    if token is None or not isinstance(token.value, str):
        return
    own, _, after = token.value.partition("\n")  # (own: its own line's remark)
    if not after.strip():
        return
    node.ca.items[key][at] = None
    if own.strip():
        token.value = own + "\n"
        node.ca.items[key][at] = token
    node, key, at = target
    slots = node.ca.items.setdefault(key, [None] * 4)
    if slots[at] is None:
        slots[at] = CommentToken("\n" + after, CommentMark(0), None)
    else:
        own = slots[at].value
        slots[at].value = own + ("" if own.endswith("\n") else "\n") + after


def commented(value: Any) -> Any:
    """A plain value as a round-trip one (a remark can hang on it), block style."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        out = CommentedMap((k, commented(v)) for k, v in value.items())
        out.fa.set_block_style()
        return out
    if isinstance(value, list):
        seq = CommentedSeq(commented(v) for v in value)
        seq.fa.set_block_style()
        return seq
    return value


def yaml_for(text: str = ""):
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


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    """Neither blank nor a comment."""
    text = _bare(line).strip()
    return bool(text) and not text.startswith("#")


def _dash(text: str) -> bool:
    return text == "-" or text.startswith(("- ", "-\t"))


def _key_of(text: str) -> tuple[str, str] | None:
    """The mapping key a line (from its indentation on) starts, and what follows the colon."""
    found = _KEY.match(text)
    if found is None:
        return None
    double, single, plain = found.groups()
    if double is not None:
        import json

        try:
            key = json.loads(f'"{double}"')
        except ValueError:
            return None
    else:
        key = single.replace("''", "'") if single is not None else plain.strip()
    return key, text[found.end() :]


@dataclass
class _Block:
    """A top-level key's lines: its own line and its children's spans (first, last line)."""

    line: int | None = None  # None: the key is not in the file
    spans: list[list[int]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # a mapping's children's keys
    indent: int | None = None  # the children's indentation
    remarks: bool = False  # a comment on the key's line or among its children
    flow: bool = False  # an empty `[]` / `{}` on the key's line
    tail: int = 0  # its last line (a child's, or an indented remark's)


def _block(lines: list[str], key: str, listed: bool) -> _Block | None:
    """Where `key` and its children are, or None when the layout is not one this knows."""
    found = [n for n, line in enumerate(lines) if line[:1] not in " \t#-" and _content(line)
             and (_key_of(_bare(line)) or ("",))[0] == key]  # fmt: skip
    if len(found) > 1:
        return None
    block = _Block()
    if not found:
        return block
    block.line = block.tail = found[0]
    rest = _key_of(_bare(lines[block.line]))[1].strip()
    empty = _EMPTY.match(rest)
    if empty:  # `[]` or `{}`: no children, written as they go in (`_opened`)
        block.flow, rest = True, rest[empty.end() :].strip()
    elif rest and not rest.startswith("#"):
        return None  # a value on the key's own line (`[1]`, `{a: 1}`, a scalar)
    extends = False  # whether a deeper comment still belongs to the last child
    for n in range(block.line + 1, len(lines)):
        text = _bare(lines[n])
        depth = _indent(text)
        if not text.strip():
            continue
        if text.lstrip(" ").startswith("\t"):
            return None
        if text.strip().startswith("#"):
            if block.indent is not None and depth > block.indent and extends:
                block.spans[-1][1] = n
            else:
                extends = False
            if depth > 0:
                block.tail = n
            continue
        if block.indent is None:
            if depth == 0 and not (listed and _dash(text)):
                break  # the next top-level key: no children
            block.indent = depth
        if depth < block.indent or (depth == 0 and not _dash(text)):
            break
        if depth == block.indent:
            if listed != _dash(text[depth:]):
                return None
            if not listed:
                child = _key_of(text[depth:])
                if child is None:
                    return None
                block.keys.append(child[0])
            block.spans.append([n, n])
        elif not block.spans:
            return None
        block.spans[-1][1] = block.tail = n
        extends = True
    # A remark the user wrote on the key's line or among its children (not inside one)
    inside = {n for first, last in block.spans for n in range(first, last + 1)}
    last = block.spans[-1][1] if block.spans else block.line
    block.remarks = rest.startswith("#") or any(
        _bare(lines[n]).strip().startswith("#")
        for n in range(block.line + 1, last + 1)
        if n not in inside
    )
    return block


_EMPTY = re.compile(r"(\[\]|\{\})(?=\s|$)")


def _opened(line: str) -> str:
    """A key's line with its empty `[]` / `{}` taken out, for children to follow: blanks
    where it was, so a remark after it stays in its column."""
    body = _bare(line)
    _, rest = _key_of(body)
    head = body[: len(body) - len(rest)]
    empty = _EMPTY.search(rest)
    if empty is not None:
        rest = rest[: empty.start()] + " " * len(empty.group()) + rest[empty.end() :]
    return head + (rest if rest.strip() else "") + line[len(body) :]


def _closed(line: str, listed: bool) -> str:
    """A key's line given an empty `[]` / `{}` (never a null where the user had a list or
    a map): `_opened` undone where it can be."""
    body = _bare(line)
    _, rest = _key_of(body)
    head = body[: len(body) - len(rest)]
    value = "[]" if listed else "{}"
    if rest.strip():  # a remark: it keeps its column where the blanks allow
        blanks = len(rest) - len(rest.lstrip(" "))
        rest = " " + value + " " * max(1, blanks - 3) + rest.lstrip(" ")
    else:
        rest = " " + value
    return head + rest + line[len(body) :]


def _rendered(yaml, key: str, value: Any, indent: int | None, newline: str) -> list[str]:
    """`value` as the children of `key` would be written, at `indent` when it is known."""
    out = io.StringIO()
    yaml.dump({key: value}, out)
    lines = out.getvalue().splitlines(keepends=True)[1:]
    if not lines:
        raise ValueError("nothing to write")
    shift = 0 if indent is None else indent - _indent(lines[0])
    if shift < 0 and any(_indent(line) < -shift for line in lines if line.strip()):
        raise ValueError("cannot indent as the file does")
    moved = [(" " * shift + line if shift > 0 else line[-shift:]) if line.strip() else line
             for line in lines]  # fmt: skip
    return [line.replace("\n", newline) if newline != "\n" else line for line in moved]


def _splice(lines: list[str], first: int, last: int, new: list[str], newline: str) -> None:
    """Lines first..last (inclusive; last = first - 1 to insert before `first`) become `new`,
    a missing newline at the end of the file kept missing."""
    at_end = last == len(lines) - 1 and lines and not lines[-1].endswith("\n")
    if at_end and new:
        new = [*new[:-1], new[-1].rstrip("\r\n")]
        if last < first and first > 0:  # (inserting after the last line)
            lines[first - 1] += newline
    elif at_end and first > 0:  # the last lines cut: the one before them ends the file
        lines[first - 1] = lines[first - 1].rstrip("\r\n")
    lines[first : last + 1] = new


def _users_line(line: str, key: str, listed: bool, first: list[str] | None) -> str | None:
    """The key's line as the user wrote it before Mnemo's first edit (`first`: that file's
    lines), when it had no children then and `line` is what an install made of it."""
    was = _block(first, key, listed) if first is not None else None
    if was is None or was.line is None or was.spans:
        return None
    own = first[was.line]
    return own if _bare(_opened(own)) == _bare(line) else None


def _change(
    lines: list[str], key: str, old: Any, new: Any, yaml, newline: str,
    first: list[str] | None = None,
) -> bool:  # fmt: skip
    """Put the change of `key` from `old` to `new` in `lines`; False when it cannot be
    (`first`: the file's lines before Mnemo's first edit, when known)."""
    listed = isinstance(old if old is not None else new, list)
    for value in (old, new):
        if value is not None and not isinstance(value, list if listed else dict):
            return False
    block = _block(lines, key, listed)
    if block is None:
        return False
    if block.line is None:
        if old is not None:
            return False
        out = io.StringIO()
        yaml.dump({key: new}, out)
        added = [line.replace("\n", newline) for line in out.getvalue().splitlines(True)]
        _splice(lines, len(lines), len(lines) - 1, added, newline)
        return True
    spans, indent = block.spans, block.indent
    # (with no child yet: after the remarks under the key, which stay the user's)
    after = spans[-1][1] + 1 if spans else block.tail + 1
    if not new:  # every child goes, and the key too unless it was the user's or a remark
        if not spans:  # of the user's stays; a key kept is the user's own line again, else
            return not old  # it holds `[]` / `{}` (never a null: Continue refuses one)
        line = lines[block.line]
        kept = _users_line(line, key, listed, first)
        if kept is None and block.remarks:
            kept = _closed(line, listed)
        if kept is None:
            _splice(lines, block.line, spans[-1][1], [], newline)
            return True
        for start, end in reversed(spans):
            _splice(lines, start, end, [], newline)
        line = lines[block.line]  # (its newline as the cut left it, at the file's end)
        lines[block.line] = _bare(kept) + line[len(_bare(line)) :]
        return True
    old = old if old is not None else ([] if listed else {})
    if len(spans) != len(old) or (not listed and block.keys != [str(k) for k in old]):
        return False
    edits: list[tuple[int, int, list[str]]] = []  # (first, last, new lines), bottom up
    if block.flow:  # the first child after an empty `[]` / `{}`: it goes, blanks in its place
        edits.append((block.line, block.line, [_opened(lines[block.line])]))
    if listed:
        if new[: len(old)] == old and len(new) == len(old) + 1:
            edits.append((after, after - 1, _rendered(yaml, key, new[-1:], indent, newline)))
        elif len(new) == len(old) - 1:
            gone = next((n for n in range(len(old)) if old[:n] + old[n + 1 :] == new), None)
            if gone is None:
                return False
            edits.append((*spans[gone], []))
        elif len(new) == len(old):
            changed = [n for n in range(len(old)) if old[n] != new[n]]
            if len(changed) != 1:
                return False
            n = changed[0]
            edits.append((*spans[n], _rendered(yaml, key, [new[n]], indent, newline)))
        else:
            return False
    else:
        added = [k for k in new if k not in old]
        if added:
            fresh = {k: new[k] for k in added}
            edits.append((after, after - 1, _rendered(yaml, key, fresh, indent, newline)))
        for n, k in enumerate(old):
            if k not in new:
                edits.append((*spans[n], []))
            elif new[k] != old[k]:
                edits.append((*spans[n], _rendered(yaml, key, {k: new[k]}, indent, newline)))
    for first, last, added_lines in sorted(edits, key=lambda e: -e[0]):
        _splice(lines, first, last, added_lines, newline)
    return True


def edited(
    text: str, before: dict[str, Any], after: dict[str, Any], plain, first: str | None = None
) -> str | None:
    """`text` with its top-level collections changed from `before` to `after` (plain
    values) as text, or None when that cannot be done here; `plain` reads a YAML text's
    plain value back (as `before` and `after` were read), and the result must read as
    `after`. Where a collection Mnemo changed is left empty, its key's line is the user's
    again as `first` (the file before Mnemo's first edit, when known) had it; else the key
    goes unless a remark of the user's is among its lines, and then it holds `[]` / `{}`:
    each is as good as no key at all, and a null only where the user's own line is one."""
    lines = text.splitlines(keepends=True)
    users = first.splitlines(keepends=True) if first is not None else None
    newline = "\r\n" if "\r\n" in text else "\n"
    yaml = yaml_for(text)
    changed = [k for k in {**before, **after} if before.get(k) != after.get(k)]
    try:
        for key in changed:
            if not isinstance(key, str) or not _change(
                lines, key, before.get(key), after.get(key), yaml, newline, users
            ):
                return None
        new = "".join(lines)
        got = plain(new)
    except Exception:  # noqa: BLE001 - whatever goes wrong, ruamel.yaml writes it instead
        return None
    try:
        was = plain(first) if users else {}
    except Exception:  # noqa: BLE001 - not read: no null is the user's
        was = {}

    def solid(value: dict[str, Any]) -> dict[str, Any]:
        def empty(k: str, v: Any) -> bool:
            return v in ([], {}) or (v is None and k in was and was[k] is None)

        return {k: v for k, v in value.items() if k not in changed or not empty(k, v)}

    return new if isinstance(got, dict) and solid(got) == solid(after) else None
