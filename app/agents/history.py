"""What agents already know, read for `mnemo agents import`: their memory files (CLAUDE.md,
AGENTS.md, GEMINI.md, Cursor rules) and the person's own words in their past sessions
(Claude Code's, Codex's and Gemini CLI's transcripts), as statements to propose for review.

No LLM and no network: a memory file's items are lasting by what the file is (each bullet, or
each sentence of a paragraph, outside code and headings); a transcript's prompts go through
the capture rules and, with the model, capture by meaning (`meaning.statements`), after what
the agent injected into them is cut (`events.own_words`). Formats read (2026-11): Claude
Code `~/.claude/projects/*/*.jsonl` (`{"type": "user", "message": {"content": …}, "cwd",
"sessionId", "timestamp"}`); Codex
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` (`session_meta`, then `event_msg` lines:
`user_message`, or since 0.169 `item_completed` with a `UserMessage` item); Gemini CLI
`~/.gemini/tmp/*/chats/session-*.jsonl` (a header line, then messages
`{"type": "user", "content": [{"text"}]}`; older `.json` files hold them in `messages`). A
line or a file that is not what it should be is skipped and counted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.agents import events, meaning, rules

MAX_FILE = 64 * 1024 * 1024  # a transcript larger than this is not read (said, not guessed)
MAX_LINE = 4 * 1024 * 1024  # a line of a transcript (a pasted file); longer is skipped
MEMORY_RULE = "agent-file"  # the rule of an item of an agent's memory file

_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


@dataclass(frozen=True)
class Said:
    """A statement found in an agent's file: its text, the rule that found it, where it came
    from (agent, file, project, session) and when it was said ('' when not known)."""

    text: str
    rule: str
    agent: str
    source: str
    project: str | None = None
    session: str = ""
    at: str = ""
    said: str = ""  # the prompt or the file's item it came from


@dataclass(frozen=True)
class Source:
    agent: str
    path: Path
    kind: str  # "memory" (instructions), or the transcript's format: claude, codex, gemini
    project: str | None = None  # a project's own memory file: the project's name


def sources(home: Path, project: Path | None = None) -> list[Source]:
    """Every memory file and transcript of the agents under `home` (and `project`'s own
    memory files), in a stable order."""
    found: list[Source] = []

    def memory(agent: str, *paths: Path, of: str | None = None) -> None:
        found.extend(Source(agent, p, "memory", of) for p in paths if p.is_file())

    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    memory("claude", home / ".claude" / "CLAUDE.md")
    memory("claude", *sorted((home / ".claude" / "projects").glob("*/memory/*.md")))
    memory("codex", codex / "AGENTS.md")
    memory("gemini", home / ".gemini" / "GEMINI.md")
    if project is not None:
        name = project.resolve().name
        memory("claude", project / "CLAUDE.md", project / "CLAUDE.local.md", of=name)
        memory("claude", project / ".claude" / "CLAUDE.md", of=name)
        memory("codex", project / "AGENTS.md", of=name)
        memory("gemini", project / "GEMINI.md", of=name)
        memory("cursor", project / ".cursorrules", of=name)
        rules_dir = project / ".cursor" / "rules"
        cursor_rules = sorted([*rules_dir.glob("*.mdc"), *rules_dir.glob("*.md")])
        memory("cursor", *cursor_rules, of=name)
    for path in sorted((home / ".claude" / "projects").glob("*/*.jsonl")):
        found.append(Source("claude", path, "claude"))
    for path in sorted((codex / "sessions").rglob("*.jsonl")):
        found.append(Source("codex", path, "codex"))
    for pattern in ("*/chats/session-*.jsonl", "*/chats/session-*.json"):
        for path in sorted((home / ".gemini" / "tmp").glob(pattern)):
            found.append(Source("gemini", path, "gemini"))
    return found


class Skipped(Exception):
    """A file that cannot be read as what it should be (the reason, in one line)."""


def read(source: Source, model=None) -> tuple[list[Said], int]:
    """The statements of one source, and how many of its lines were skipped as unreadable
    (`model`: the embedding model capture by meaning uses, or None for the rules alone).
    Skipped when the whole file cannot be read."""
    try:
        size = source.path.stat().st_size
    except OSError as exc:
        raise Skipped(f"cannot read it ({exc.strerror})") from None
    if size > MAX_FILE:
        raise Skipped(f"it is larger than {MAX_FILE // (1024 * 1024)} MB")
    if source.kind == "memory":
        return _memory_file(source), 0
    prompts, bad = _PROMPTS[source.kind](source.path)
    out = []
    for prompt in prompts:
        words = events.own_words(prompt.text)
        for statement in meaning.statements(words, model):
            out.append(
                Said(
                    statement.text, statement.rule, source.agent, str(source.path),
                    prompt.project, prompt.session, prompt.at, words,
                )
            )  # fmt: skip
    return out, bad


@dataclass(frozen=True)
class _Prompt:
    text: str
    project: str | None
    session: str
    at: str


def _lines(path: Path) -> Iterator[dict | None]:
    """Each line of a JSONL file as an object (None for one that is not)."""
    with path.open("rb") as f:
        for raw in f:
            if len(raw) > MAX_LINE:
                yield None
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                yield None if raw.strip() else {}
                continue
            yield value if isinstance(value, dict) else None


def _name(cwd: object) -> str | None:
    return Path(cwd).name or None if isinstance(cwd, str) and cwd else None


def _texts(blocks: list, kind: str | None) -> str:
    """The text of a message's blocks (of `kind` only, when given: a tool's result that
    comes back as a user's message is not the person's words)."""
    return "\n".join(
        b["text"]
        for b in blocks
        if isinstance(b, dict)
        and isinstance(b.get("text"), str)
        and (kind is None or b.get("type") == kind)
    )


def _claude(path: Path) -> tuple[list[_Prompt], int]:
    prompts, bad = [], 0
    for line in _lines(path):
        if line is None:
            bad += 1
            continue
        if line.get("type") != "user" or line.get("isMeta") or line.get("isSidechain"):
            continue
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # text blocks; tool results are not the person's
            content = _texts(content, "text")
        if not isinstance(content, str) or content.lstrip().startswith(
            ("<command-", "<local-command-", "Caveat:")
        ):
            continue
        prompts.append(
            _Prompt(content, _name(line.get("cwd")), str(line.get("sessionId") or ""),
                    str(line.get("timestamp") or ""))
        )  # fmt: skip
    return prompts, bad


def _codex(path: Path) -> tuple[list[_Prompt], int]:
    # (a file that records the words both ways, as `user_message` and as a `UserMessage`
    # item, gives them once: the items, when there are any)
    prompts, items, bad, project, session = [], [], 0, None, ""
    for line in _lines(path):
        if line is None:
            bad += 1
            continue
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else {}
        if line.get("type") == "session_meta":
            project, session = _name(payload.get("cwd")), str(payload.get("id") or "")
        elif line.get("type") == "turn_context" and payload.get("cwd"):
            project = _name(payload.get("cwd")) or project
        elif line.get("type") == "event_msg":
            text = _codex_user_text(payload)
            if text is not None:
                said = _Prompt(text, project, session, str(line.get("timestamp") or ""))
                (prompts if payload.get("type") == "user_message" else items).append(said)
    return items or prompts, bad


def _codex_user_text(payload: dict) -> str | None:
    """What the person typed, from a Codex event: `user_message` (up to 0.1xx) or an
    `item_completed` `UserMessage` (0.169); not the `response_item`s, which also carry
    the environment and instructions Codex puts in the user's role."""
    if payload.get("type") == "user_message":
        text = payload.get("message")
        return text if isinstance(text, str) else None
    item = payload.get("item")
    if payload.get("type") != "item_completed" or not isinstance(item, dict):
        return None
    if item.get("type") != "UserMessage" or not isinstance(item.get("content"), list):
        return None
    texts = [
        part["text"]
        for part in item["content"]
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def _gemini(path: Path) -> tuple[list[_Prompt], int]:
    root = path.parent.parent / ".project_root"
    try:
        project = _name(root.read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        project = path.parent.parent.name
    if path.suffix == ".json":  # an older Gemini CLI: one JSON object with its messages
        try:
            whole = json.loads(path.read_bytes())
        except (ValueError, RecursionError, OSError):
            return [], 1
        lines = [whole] if isinstance(whole, dict) else [None]
    else:
        lines = list(_lines(path))
    prompts, bad, session, seen = [], 0, "", set()
    for line in lines:
        if line is None:
            bad += 1
            continue
        session = str(line.get("sessionId") or session)
        messages = line.get("messages") or (line.get("$set") or {}).get("messages") or [line]
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, dict) or message.get("type") != "user":
                continue
            if message.get("id") in seen:  # (a "$set" repeats what a line said)
                continue
            seen.add(message.get("id"))
            content = message.get("content")
            if isinstance(content, list):
                content = _texts(content, None)
            if isinstance(content, str):
                prompts.append(
                    _Prompt(content, project, session, str(message.get("timestamp") or ""))
                )
    return prompts, bad


_PROMPTS = {"claude": _claude, "codex": _codex, "gemini": _gemini}


def _memory_file(source: Source) -> list[Said]:
    """A memory file's items: each bullet, or each sentence of a paragraph, outside code,
    headings, HTML comments and a front matter; a line of its own is an item too."""
    try:
        text = source.path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise Skipped("it is not UTF-8 text") from None
    except OSError as exc:
        raise Skipped(f"cannot read it ({exc.strerror})") from None
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # a Cursor rule's front matter
        end = next((n for n, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    items: list[tuple[str, bool]] = []  # (text, whether a list's item)
    paragraph: list[str] = []
    bullet = in_code = False
    for line in [*lines, ""]:
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code or line.lstrip().startswith(("#", "|", ">", "@")):
            continue  # code, headings, tables, quotes, Claude's @imports
        if _BULLET.match(line) or not line.strip():
            if paragraph:
                items.append((" ".join(paragraph), bullet))
            paragraph, bullet = [], bool(_BULLET.match(line))
            if bullet:
                paragraph = [_BULLET.sub("", line).strip()]
        else:
            paragraph.append(line.strip())
    out = []
    for item, listed in items:  # a list's item is one statement; a paragraph, its sentences
        whole = listed and len(item) <= rules.MAX_CHARS
        for sentence in [item] if whole else rules.sentences(item):
            if rules.MIN_CHARS <= len(sentence) <= rules.MAX_CHARS:
                out.append(Said(sentence, MEMORY_RULE, source.agent, str(source.path),
                                source.project, "", "", item[:500]))  # fmt: skip
    return out


@dataclass
class Tally:
    """What an import did: per outcome ("proposed", "again", "observed", "known",
    "rejected", "secret"), the files read, and each file skipped or line unreadable."""

    files: int = 0
    counts: dict[str, int] | None = None
    problems: list[str] | None = None

    def add(self, what: str, n: int = 1) -> None:
        self.counts = self.counts or {}
        self.counts[what] = self.counts.get(what, 0) + n

    def say(self, problem: str) -> None:
        self.problems = [*(self.problems or []), problem]


def take(engine, found: list[Source], dry_run: bool = False, progress=None) -> Tally:
    """Read every source and hand its statements to `engine.capture_imported` (or, with
    `dry_run`, only count them: those taken from the same file before, those holding a
    secret, the rest); `progress(done, total, path)` after each file."""
    from app.core.errors import MnemoError, SecretError
    from app.core.secrets import scan as scan_secrets
    from app.core.storage.inbox import Candidate

    tally = Tally()
    model = engine.embedder if engine is not None else None
    for n, source in enumerate(found, 1):
        try:
            said, bad = read(source, model)
        except Skipped as exc:
            tally.say(f"{source.path}: skipped, {exc}")
            continue
        tally.files += 1
        if bad:
            tally.say(f"{source.path}: {bad} line(s) not readable, skipped")
        for item in said:
            candidate = Candidate(
                item.text, item.rule, [], item.agent, item.project, item.session[:200],
                item.said, source=item.source, said_at=item.at[:40],
            )  # fmt: skip
            if dry_run:  # (what a real run would say of it, nothing kept)
                known = engine is not None and engine.capture_imported(candidate, keep=False)
                if known == "known":
                    tally.add("known")
                else:
                    tally.add("secret" if scan_secrets(item.text) else "found")
                continue
            try:
                tally.add(engine.capture_imported(candidate))
            except SecretError:
                tally.add("secret")  # nothing kept, not even that it was there
            except MnemoError as exc:
                tally.say(f"{source.path}: a statement was not taken ({exc})")
        if progress is not None:
            progress(n, len(found), source.path)
    return tally
