"""Capture without an LLM: deterministic rules that find, in what a user types to an agent,
the statements meant to last, and in its tool calls, a command that failed and then worked.

What they find are candidates for the inbox (`storage.inbox`), reviewed before they become
memories unless the user lets a rule's captures in directly (setting
`capture_auto_accept`). The rules look at one sentence at a time, outside code blocks and
quotes, and never at a question: "always use tabs?" is asked, not stated.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from app.core.settings import CAPTURE_RULES

RULES = CAPTURE_RULES
RULE_HELP = {
    "remember": '"remember that …", "note that …", "keep in mind …"',
    "from-now-on": '"from now on …", "going forward …"',
    "always-never": '"always …", "never …", "make sure you always …", "don\'t call X directly"',
    "prefer": '"I prefer …", "we\'d rather …", "our convention is …"',
    "correction": '"no, use X instead of Y", "our CI runs on X, not Y"',
    "fixed-command": "a command that failed and then worked (its error is a keyword)",
}
MIN_CHARS = 12
MAX_CHARS = 400  # a longer "sentence" is a paste, not a statement
MOST_PER_PROMPT = 3
FIX_WINDOW_S = 15 * 60  # a failure and the success that fixed it, this close together

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!;?])\s+(?=[A-Z\"'(])|\n+")
_SPACE = re.compile(r"\s+")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")  # a list item's mark
# What an instruction starts with after "always" / "never": a verb as one says it to someone
# ("always run…", "never commit…"), not a description ("never returns…", "always a pleasure",
# "never mind", "never seen this").
VERBS = frozenset(
    """use run add write commit push pull merge rebase call check put keep make create delete
    remove import export return raise log print test format lint ask answer reply name rename
    document comment type annotate prefer pin lock install update upgrade deploy release
    build compile start stop restart open close read edit change touch modify store save load
    mock patch skip ignore include exclude quote escape sort squash sign tag branch review
    explain show tell mention include cite link wrap split bump set leave let go follow
    respect prefix suffix end begin default depend rely trust assume hardcode inline expose
    catch handle retry wait block await spawn fork kill rm sudo force amend""".split()
)

_REMEMBER = re.compile(
    r"^(?:please\s+|pls\s+|and\s+)?(?:remember|note|keep in mind|don'?t forget|never forget)"
    r"(?:\s+that|\s*:|\s*,)\s*(?P<what>.+)$",
    re.I,
)
_REMEMBER_TO = re.compile(
    r"^(?:please\s+|and\s+)?(?:remember|don'?t forget)\s+to\s+(?P<what>\w.+)$", re.I
)
_FROM_NOW_ON = re.compile(
    r"^(?:and\s+|also\s+|ok(?:ay)?,?\s+)?(?:(?:from now on|henceforth)\b,?"
    r"|(?:going forward|from here on|in (?:the )?future|for all future \w+),)\s*(?P<what>.+)$",
    re.I,
)
_ALWAYS_NEVER = re.compile(
    r"^(?:please\s+|and\s+|also\s+)?(?:(?:make|be)\s+sure\s+(?:that\s+)?(?:you\s+|to\s+|we\s+)?)?"
    r"(?:always|never|don['’]?t ever|do not ever)\s+(?P<verb>[a-z]+)\b(?P<what>.*)$"
    # "don't call X directly", "do not push to main anymore": a standing "don't" says so
    r"|^(?:please\s+|and\s+|also\s+)?(?:don['’]?t|do not)\s+(?P<dont>[a-z]+)\b"
    r".*\b(?:directly|anymore|any more|ever again|again)\b[^,;]*$",
    re.I,
)
_PREFER = re.compile(
    r"^(?:i|we)(?:\s*['’]d\s+|\s+)(?:(?:much|strongly|really|generally|far)\s+)?"
    r"(?:prefer|(?:would\s+)?rather|always use|never use|like to use|want you to use)\b"
    r"(?!\s+(?:the\s+)?(?:first|second|third|last|former|latter|above|previous|other|this|"
    r"that|these|those|your|option|version|approach|one)\b).+$"
    r"|^(?:my|our) (?:preference|convention|rule|style) (?:is|here is)\b.+$"
    r"|^we (?:always|never|usually) (?P<habit>[a-z]+)\b.+$",
    re.I,
)
_CORRECTION = re.compile(
    r"^(?:(?:no|nope|wrong|not quite|actually)\b[,.!:;]?\s+)?"
    r"(?:(?:please|you should|we)\s+)?(?P<verb>use|run|call|prefer|it'?s|it is)\s+"
    r"(?P<right>[^,]+?),?\s+(?:instead of|rather than|not)\s+(?P<wrong>[^,]+?)[.!]?$",
    re.I,
)
# A fact about the person's setup, said against another: "our CI runs on X, not Y"
_SETUP = re.compile(
    r"^(?:our|we(?:['’]re| are)? (?:on|using|use))\b[^,;]{2,80}?,?\s+not\s+[^,;]{1,60}?[.!]?$",
    re.I,
)
_TASK = re.compile(r"\b(?:let'?s|let us|this (?:task|pr|commit|time|once)|right now|today)\b", re.I)


@dataclass(frozen=True)
class Statement:
    """A candidate found in a prompt: its text (a sentence that reads alone) and rule."""

    rule: str
    text: str
    keywords: tuple[str, ...] = ()


def sentences(prompt: str) -> list[str]:
    """The prompt's sentences outside code blocks and quoted lines, whitespace collapsed."""
    text = _FENCE.sub("\n", prompt)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith((">", "    ", "\t"))]
    out = []
    for part in _SENTENCE_END.split("\n".join(lines)):
        sentence = _BULLET.sub("", _SPACE.sub(" ", part).strip())
        if sentence:
            out.append(sentence)
    return out


def _tidy(text: str) -> str:
    text = text.strip().rstrip(",;:")
    if text and text[-1] not in ".!":
        text += "."
    return text[0].upper() + text[1:] if text else text


def _statement(sentence: str) -> Statement | None:
    if sentence.endswith("?") or not MIN_CHARS <= len(sentence) <= MAX_CHARS:
        return None
    if _TASK.search(sentence):  # about the work at hand, not lasting
        return None
    if m := _REMEMBER.match(sentence):
        what = m["what"].strip()
        return Statement("remember", _tidy(what)) if len(what) >= MIN_CHARS else None
    if m := _REMEMBER_TO.match(sentence):
        return Statement("remember", _tidy(m["what"]))
    if _FROM_NOW_ON.match(sentence):
        return Statement("from-now-on", _tidy(sentence))
    if m := _CORRECTION.match(sentence):
        said_no = sentence.lower().startswith(("no", "nope", "wrong", "not quite", "actually"))
        if not said_no and m["verb"].lower() not in ("use", "run", "call", "prefer"):
            return None  # "it's X not Y" is a correction only after a "no"
        if len(m["wrong"].split()) > 6:
            return None
        verb = m["verb"].lower()
        verb = "It is" if verb.startswith("it") else verb.capitalize()
        right, wrong = m["right"].strip(), m["wrong"].strip()
        return Statement("correction", f"{verb} {right} instead of {wrong}.")
    if (m := _ALWAYS_NEVER.match(sentence)) and (m["verb"] or m["dont"]).lower() in VERBS:
        return Statement("always-never", _tidy(sentence))
    if _SETUP.match(sentence):
        return Statement("correction", _tidy(sentence))
    if (m := _PREFER.match(sentence)) and (not m["habit"] or m["habit"].lower() in VERBS):
        return Statement("prefer", _tidy(sentence))
    return None


def statements(prompt: str) -> list[Statement]:
    """What a prompt states as lasting, by the rules above (at most MOST_PER_PROMPT)."""
    if not isinstance(prompt, str) or prompt.lstrip().startswith("/"):  # a slash command
        return []
    found: list[Statement] = []
    for sentence in sentences(prompt):
        statement = _statement(sentence)
        if statement is not None and statement not in found:
            found.append(statement)
        if len(found) == MOST_PER_PROMPT:
            break
    return found


# ---- a command that failed, then worked ---------------------------------------------
_ERROR_IDS = (
    re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Warning))\b"),  # Python, Java, JS
    re.compile(r"\berror\[?\s*([A-Z]{1,4}\d{3,5})\]?"),  # rustc E0432, tsc TS2307, C2065
    re.compile(r"\b(E[A-Z]{3,}[A-Z0-9_]*)\b"),  # ENOENT, EACCES, ERESOLVE
    re.compile(r"\b(ERR_[A-Z0-9_]+)\b"),  # node's ERR_MODULE_NOT_FOUND
    re.compile(r"\b(SQLSTATE\[?\w+\]?|[A-Z]{2,}\d{3,5})\b"),  # SQLSTATE, ORA-style codes
)


def error_id(output: str) -> str | None:
    """The identifier of the error in a failed command's output (the last one named: the
    one that stopped it), or None."""
    for pattern in _ERROR_IDS:
        found = pattern.findall(output[-20_000:])
        if found:
            return found[-1]
    return None


def _program(command: str) -> str:
    words = [w for w in command.split() if "=" not in w.split("/")[0]]  # skip VAR=value
    while words and words[0] in ("sudo", "env", "time", "nice", "uv", "npx", "poetry"):
        words = words[1:]
        if words and words[0] == "run":
            words = words[1:]
    return words[0].rsplit("/", 1)[-1] if words else ""


@dataclass
class _Failure:
    command: str
    error: str
    at: float
    between: list[str] = field(default_factory=list)  # what else worked meanwhile (the fix)


@dataclass
class CommandWatch:
    """Per session: the last failed shell command with an error identifier; a later
    command of the same program that works makes a `fixed-command` statement."""

    failures: dict[str, _Failure] = field(default_factory=dict)

    def saw(
        self, session: str, command: str, ok: bool, output: str, at: float | None = None
    ) -> Statement | None:
        at = time.monotonic() if at is None else at
        command = _SPACE.sub(" ", command).strip()
        if not command or len(command) > MAX_CHARS:
            return None
        program = _program(command)
        if not ok:
            error = error_id(output)
            if error and program:
                self.failures[session] = _Failure(command, error, at)
            return None
        failed = self.failures.get(session)
        if failed is None:
            return None
        if _program(failed.command) != program:
            failed.between = [*failed.between, command][-3:]
            return None
        del self.failures[session]
        if at - failed.at > FIX_WINDOW_S or (command == failed.command and not failed.between):
            return None  # long after; or the same command again (a flaky one, not a fix)
        steps = "".join(f"`{c}`, then " for c in failed.between)
        text = f"`{failed.command}` failed with {failed.error}; {steps}`{command}` worked."
        return Statement("fixed-command", text, (failed.error,))
