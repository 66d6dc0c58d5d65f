"""Capture by meaning: lasting statements said plainly, which the wording rules do not take.

"We pin every dependency to an exact version" and "logs go to Datadog, not CloudWatch" carry
no trigger phrase; "the test DB is on port 5433 in this log" reads the same. The rules
(`rules.statements`) find the first kind by its wording only when it has a trigger. Here, a
sentence the rules leave that is said plainly as a statement (`plain`: not a question, a
task, a log line, a hypothesis or someone else's words) is judged by a logistic regression
over its embedding, with weights fitted for one model file by `bench/capture.py` (issue 42;
the corpus: tests/cli/data/capture/README.md).

Without that model (another model chosen, no model, a failure), capture is the rules alone.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.agents import rules
from app.core import paths

log = logging.getLogger(__name__)

RULE = "plain"  # the rule name a statement found by meaning is proposed under
WEIGHTS = paths.RESOURCES / "models" / "capture-all-MiniLM-L6-v2.json"

# A question said without its question mark ("who owns billing these days"); "when" asks
# before a verb ("when does the nightly job run"), and opens a habit before a clause and a
# comma ("When you finish a task, write a summary")
_ASKED = re.compile(
    r"^(?:what|what's|whats|why|how|who|where|which|is|are|am|do|does|did|can|could|should"
    r"|shall|would|will|any|anyone|has|have|was"
    r"|were(?!\s+(?:not|on|using|all|mostly|moving|switching|in)\b)"  # ("were not on X": we're)
    r"|when(?=\s+(?:is|are|was|were|does|do|did|will|would|should|can|could|has|have)\b)"
    r"|when(?!\s+i\s+(?:say|write|mean)\b)(?![^?]*[,:\u2014]))\b",
    re.I,
)
# A question inside a sentence ("…, which queries are the expensive ones, how do i find
# out", "it asks for my sudo password, why")
_ASKED_INSIDE = re.compile(
    r",\s*why\W*$|\bhow (?:do|can|should) (?:i|we)\b|\bwhat (?:can|should|do) (?:i|we)\b"
    r"|\b(?:know|sure|understand|idea|figure out)\s+why\b",
    re.I,
)
# Said of one moment ("yesterday", "this run", "at some point"), not for good
_ONCE = re.compile(
    r"\b(?:yesterday|tomorrow|tonight"
    r"|this (?:morning|afternoon|week|month|quarter|run|sprint|branch|time)"
    r"|last (?:night|week|deploy|change|merge|release|commit)|earlier|currently"
    # "just" of a moment ("I just pushed", "just now"), not of a habit ("just ask back")
    r"|just (?:now|need|want|\w+ed|did|got|saw|ran|broke|made|had|lost|went|came|wrote)"
    r"|at the moment|at some point|next (?:week|quarter|sprint|month|year)"
    # for a while only ("from now until Friday", "for the next two hours")
    r"|until (?:\w+day|tomorrow|tonight|next \w+|the end of (?:the |this )?\w+)"
    r"|for the next (?:\w+ )?(?:minutes?|hours?|days?|weeks?)"
    r"|in (?:a|the) (?:bit|moment)|so far|lol|as far as i know|no idea"
    r"|haha\w*|hehe|my bad|oops|lmao"
    # a thank-you, a sigh ("ok that makes sense now, thx", "I hate them so much")
    r"|thx|thanks(?! to)|thank you|cheers|so much(?=\W*$)|ugh|this (?:chat|conversation)"
    r"|all (?:night|day|weekend|morning)"
    # the branch one is on, what just arrived ("on the 3.2 hotfix branch", "has the new schema")
    r"|(?:i['’]?m|we['’]re|i am|we are)\s+on the [\w./-]+(?:\s+[\w./-]+)?\s+branch"
    r"|(?:has|have|got) the new)\b",
    re.I,
)
# A guess, a wish, a hypothesis, or a sentence that leans on what came before ("it", "this")
_UNSURE = re.compile(
    r"^(?:if|suppose|imagine|maybe|perhaps|in theory|i (?:was )?think(?:ing)?|i suspect"
    r"|i guess|i wonder|i need|i want to|we need|we might|we could|we should|probably"
    r"|hopefully|ideally|here'?s|here is|there'?s|there is|there are"
    # ("it's Go 1.22 now" may last; "it's only happening in the EU region" is of now)
    r"|it(?!(?:['’]?s|\s+is)\s+(?!(?:(?:only|still|just|now|really|also|constantly)\s+)?\w+ing\b))"
    r"|this|that|these"
    r"|those|then|you|you're)\b|\b(?:might|could be|would be|wonder|probably)\b",
    re.I,
)
# What the rules read for its words and left ("never mind", "in the future tense"), a
# diagnosis ("the problem is in parse()")
_LEFT = re.compile(
    r"^(?:always|never|nvm|in (?:the )?future|going forward|from now on)\b"
    r"|\b(?:never mind|problem|issue|culprit|cause|mistake|typo)\b",
    re.I,
)
_QUOTED = re.compile(
    r"\b(?:says|said|wrote|writes|claims?|mentions|mentioned|according to|thinks?|told me"
    r"|asked|wants (?:us|me|you)|(?:docs|documentation|people|folks|they) (?:say|mention)"
    # another's view ("my colleague say …", "a teammate insists …", "I read in a blog that")
    r"|insists?|keeps? saying|i read (?:in|on|that)"
    r"|(?:overflow|blog|article|post|guide|tutorial|vendor|readme|chatgpt|copilot)\s+"
    r"(?:suggests|recommends)"
    r"|(?:colleague|teammate|qa|advisor|boss|manager|lead|pm|cto)s?\s+(?:say|wants?|suggests?))\b"
    r"|[\"“”]",
    re.I,
)
_LOG = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\b(?:ERROR|WARN|WARNING|FAILED|FATAL|Traceback)\b"
    # (a log's clock, not "daily at 05:00 UTC")
    r"|\b\d{1,2}:\d{2}:\d{2}\b|^\[?\d{1,2}:\d{2}\b"
    r"|\w+\(\d+,\d+\)|:::|\b[Ee]xit [Cc]ode\b|^\$ |^PS [A-Z]:"
    # a tool's "Key: value" line ("Found: react@18.2.0"), npm's errors
    r"|^[A-Z]\w*: \S+\.?$|\bERR!|(?i:^(?:error|fatal|warning):|no such file or directory)"
    # a stack frame ("at org.x.Y.apply(HashedRelation.scala:426)")
    r"|\([\w$.-]+\.\w+:\d+\)|^\s*at\s+[\w$.]+\("
)
# A reminder of one step ("remember to bump the version before you tag the release"): the
# rules take a reminder of a habit; one they leave is of the work at hand. A rule for one
# place ("for this screen always …", "in this playbook run …")
_REMINDED = re.compile(
    r"^(?:please\s+|pls\s+|and\s+)?(?:remember|don'?t forget|dont forget)\s+to\b", re.I
)
_ONE_PLACE = re.compile(
    r"^(?:for|in|on|inside)\s+(?:this|that)\s+(?!(?:"
    + rules.PROJECT
    + r"|client|product|stack|machine|setup)\b)\w+",
    re.I,
)
# An imperative that states a habit ("explain regexes when you write them", "prefer
# table-driven tests", "default to async SQLAlchemy for new code")
_HABIT_OPENER = re.compile(r"^(?:prefer|default to)\b", re.I)
_HABIT_WORD = re.compile(r"\b(?:when|whenever|before|without|unless|every time)\b", re.I)
# A first word set off by a comma or a colon is no order: "wait, we don't use MySQL",
# "Update: we're web-only now"
_SET_OFF = re.compile(
    r"^(?:wait|update|also|ok|okay|oh|actually|btw|fyi|correction|heads up|context)\s*[,:]",
    re.I,
)
_ASKED_TO = rules.TASK_VERBS | set(
    """draft generate implement give look try switch rewrite reformat parse wire build format
    deploy review check add write make put skip rename spell show explain just stop help send
    reply convert double don't do dont tell get see sort turn""".split()
)
# An order with its reason after a comma ("don't touch vendor/, another team owns it", "keep
# answers short, I read them on my phone"): a habit as often as a task
_REASON = re.compile(
    r",\s*(?:i|i'm|im|we|we're|our|my|it|it's|its|that's|thats|the|they|another|this)\b", re.I
)
# ...a reason that is the work at hand: a promise for later ("…, I'll clean them up in a
# follow-up"), what "it" is doing now ("…, it's hiding my changes"), "this" at hand
_REASON_NOW = re.compile(
    r",\s*(?:it|they)(?:['’]s|['’]re| is| are)\s+\w+ing\b"
    r"|,.*\b(?:i['’]ll|we['’]ll|we can|i can)\b.*\blater\b|,.*\bfollow-?up\b"
    r"|,.*\bmy (?:changes|edits|branch|work|fix|pr)\b"
    r"|,.*\bthis\b(?!\s+(?:" + rules.PROJECT + r"|keeps|makes|way|is|means)\b)"
    # ("…, we're in the middle of a release", "…, I'm between meetings", "…, harmless here")
    r"|,\s*(?:i['’]m|we['’]re|i am|we are)\s+"
    r"(?:in the middle|between|about to|currently\b|right now\b)"
    r"|\bhere\W*$",
    re.I,
)
# What was done ("I pushed the branch, so open a PR", "…, so check the job I launched"):
# a request after it is of the moment
_DONE = re.compile(rf"\b(?:i|we|you)\s+(?:just\s+)?{rules.PAST}\b", re.I)
# A past "when" ("… when you ran that command"): one moment
_WHEN_PAST = re.compile(rf"\bwhen\s+(?:you|we|i|it|they|the\s+\w+)\s+{rules.PAST}\b", re.I)
# A verb after the first word makes "commit messages follow …" a statement, not a task
_STATING = set(
    """is are follow follows go goes live lives sit sits get gets need needs should must run
    runs use uses have has stay stays belong belongs""".split()
)


# A lead that frames what follows ("Context about me:", "Two things for the future:",
# "Correction to something I told you before:", "reminder that …"): not part of it
_FRAMING = re.compile(
    r"^(?:(?:ok(?:ay)?|so|also|and|btw|just|a|an|the|one|two|three|few|some|quick|more|my|our"
    r"|couple of|important)[\s,]+)*"
    r"(?:(?:context|things?|reminders?|corrections?|background|heads up|notes?|rules?"
    r"|conventions?)\b[^:.!?]{0,50}:|reminder(?:\s+that\b|\s*[:,]))\s+",
    re.I,
)
# Two statements said as one ("I'm a PhD student in chemistry, and I run everything on the
# HPC"): each clause, when it has its own subject, is judged and proposed on its own
_PERSON = r"i|i'm|im|i've|we|we're|we've"  # (without a comma only these start a clause)
_AND = re.compile(
    rf",\s+and\s+(?=(?:{_PERSON}|our|my|the|everything|all|every)\b)|\s+and\s+(?=(?:{_PERSON})\b)",
    re.I,
)


# A framing lead of the moment ("The rules for this PR:", "Context for the bug you're
# fixing:"): what follows holds for the moment only
_LEAD_OF_NOW = re.compile(
    r"\b(?:this|today|tonight|you['’]re|the (?:bug|ticket|task|issue|pr))\b", re.I
)


def parts(sentence: str) -> list[str]:
    """What of a sentence is judged as a statement: without a framing lead, each clause
    joined by ", and" with its own subject apart (a clause under four words stays joined).
    Nothing of a sentence of the moment as a whole ("The demo is tomorrow, and …") or
    under a lead of the moment ("Conventions for this spike: …")."""
    body = _FRAMING.sub("", sentence, count=1)
    if len(body) < rules.MIN_CHARS:
        body = sentence
    if body != sentence or _AND.search(body):
        lead = sentence[: len(sentence) - len(body)]
        if rules.at_hand(sentence) or _ONCE.search(sentence) or _LEAD_OF_NOW.search(lead):
            return []
    clauses = _AND.split(body)
    if len(clauses) < 2 or any(len(re.findall(r"[\w'-]+", c)) < 4 for c in clauses):
        clauses = [body]
    return [part for clause in clauses for part in _reason_apart(clause)]


# A reason before a request ("since the host has no ssh, give me the steps for cPanel"), a
# second thought after a dash ("we're on Kotlin 2.0 - why does this cast fail"): each part
# is judged on its own. What follows ", so" is judged apart too (`so_apart`), and stays with
# its reason when it lasts as well ("I mostly write Go, so explain Rust in terms of Go").
_DASH = re.compile(r"\s+[\u2014\u2013-]{1,2}\s+")
_SINCE = re.compile(r"^(?:since|because|as)\s+(?P<why>[^,]{12,}),\s+(?P<rest>\w.+)$", re.I)


# What follows from a reason ("minSdk is 26, so don't suggest APIs that need 28", "our
# postgres is 15 on RDS, so concurrent index builds are fine"): the reason lasts, what
# follows may be the task at hand ("…, so write the tests in Pest syntax") or said in passing
# ("every hour or so", "and so", "even so", "if so": no consequence)
_SO_ASKED = re.compile(
    r"(?<!\bor)(?<!\band)(?<!\beven)(?<!\bif),?\s+so\s+"
    r"(?=(?:please\s+|pls\s+|just\s+)?(?P<verb>[a-z']+)\b)",
    re.I,
)


# A request on things in general ("keep lines under 100 characters"), not on the ones at
# hand ("write the tests in Pest syntax")
_GENERIC = re.compile(
    r"^(?:please\s+|just\s+)?[a-z']+\s+(?!(?:the|this|that|these|those|my|it|them|our|your)\b)"
    r"[\w-]+s\b",
    re.I,
)


# ...nor a "so" of degree ("is so small that …", "not so stable", "so often that …")
_DEGREE = re.compile(
    r"\b(?:is|are|was|were|be|been|am|not|too|very|i['’]m|it['’]s|we['’]re)\W*$", re.I
)


def so_apart(clause: str) -> tuple[str, str] | None:
    """(the reason, what follows) of "<reason>, so <request or consequence>", or None."""
    for m in _SO_ASKED.finditer(clause):
        reason, request = clause[: m.start()], clause[m.end() :]
        if m["verb"].lower() in rules.SO_NOT or _DEGREE.search(reason):
            continue
        if "," not in m[0] and re.match(r"[\w'-]+\s+that\b", request):
            continue
        if len(re.findall(r"[\w'-]+", reason)) < 4 or len(request) < rules.MIN_CHARS:
            return None
        return reason, request
    return None


def _rides(sentence: str, before: str, part: str) -> bool:
    """Whether `part` is an order after a dash on `before` ("<situation> - <order>")."""
    if not re.search(re.escape(before) + _DASH.pattern + re.escape(part), sentence):
        return False
    words = re.findall(r"[\w'-]+", part.lower())
    while words and words[0] in ("please", "pls", "just", "so", "and"):
        words = words[1:]
    return bool(words) and words[0] in _ASKED_TO | {"avoid", "assume", "treat", "stick", "point"}


def _reason_apart(clause: str) -> list[str]:
    if m := _SINCE.match(clause):
        return [m["why"], m["rest"]]
    pieces = _DASH.split(clause)
    if len(pieces) == 2 and all(len(re.findall(r"[\w'-]+", p)) >= 4 for p in pieces):
        return pieces
    return [clause]


# "When you get to the auth module, …": a step of the work, not a habit
_WHEN_THERE = re.compile(
    r"^when\s+you(?:['’]re| are)?\s+(?:get(?:ting)? to|reach|(?:are )?done with|finish(?:ed)? with"
    r"|in|come to|open)\s+the\b",
    re.I,
)
# "Prefer smaller commits in this refactor", "default to the new URL": one case, not a habit
_ONE_CASE = re.compile(
    r"\b(?:this|that|these|those)\s+"
    r"(?!(?:" + rules.PROJECT + r"|have|has|are|is|was|return|returns|use|uses"
    r"|do|does|can|will)\b)\w+"
    r"|\bthe (?:new|old|current|second|first)\b",
    re.I,
)


# What a word is taken to mean ("when I say 'tonight' I mean CET", "by tomorrow I mean …"):
# not a time of the moment
_MEANT = re.compile(r"\b(?:say|says|write|mean)\s+['‘\"“]?(?:\w+\s+)?\w+['’\"”]?", re.I)


# A platform by its name ("I'm on Windows"), not a state ("I'm on mobile", "I'm on it")
_NAMED = re.compile(r"\bon\s+[A-Z0-9]")


def plain(sentence: str) -> bool:
    """Whether a sentence is said plainly as a statement that could last: not a question,
    not the work at hand or of one moment, not a guess, a quote or a log line, not a task."""
    if not rules.MIN_CHARS <= len(sentence) <= rules.MAX_CHARS:
        return False
    if _WHEN_THERE.match(sentence) or (
        _HABIT_OPENER.match(sentence) and _ONE_CASE.search(sentence)
    ):
        return False
    words = re.findall(r"[\w'-]+", sentence.lower())
    said = len(words) == 3 and (  # ("CI is Buildkite", "prod runs Kubernetes", "I'm on Windows")
        words[1] in ("is", "are", "uses", "runs")
        or (words[0] in ("i'm", "we're") and words[1] == "on" and bool(_NAMED.search(sentence)))
    )
    short = len(words) < 4 and not said
    if short or sentence.rstrip().endswith(("?", ":")) or _ASKED.match(sentence):
        return False
    if _ASKED_INSIDE.search(sentence):
        return False
    once = _ONCE.search(_MEANT.sub(" ", sentence)) or _WHEN_PAST.search(sentence)
    if rules.at_hand(sentence) or once or _UNSURE.search(sentence):
        return False
    if _LEFT.search(sentence) or _QUOTED.search(sentence) or _LOG.search(sentence):
        return False
    if _REMINDED.match(sentence) or _ONE_PLACE.match(sentence):
        return False
    while len(words) > 4 and words[0] in ("please", "pls", "plz", "so", "and", "also"):
        words = words[1:]  # ("please check the wording …" asks as "check …" does)
    # (a verb in the second to fourth place: "test data always uses …", "commit messages
    # here have to follow …")
    asked_to = words[0] in _ASKED_TO and not _STATING & set(words[1:4])
    asked_to = asked_to and not _SET_OFF.match(sentence)
    if asked_to and _REASON.search(sentence):
        return not _REASON_NOW.search(
            sentence
        )  # ("keep answers short, I read them on my phone": the classifier judges)
    return not asked_to or bool(_HABIT_WORD.search(sentence) or _HABIT_OPENER.match(sentence))


@dataclass(frozen=True)
class Classifier:
    """Whether a plain sentence is meant to last, from its embedding by one model."""

    model_id: str  # the model file the weights were fitted for (name@sha256 prefix)
    weights: np.ndarray
    bias: float
    threshold: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> Classifier | None:
        """The classifier stored at `path`, or None when it cannot be read."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            weights = np.asarray(data["weights"], dtype=np.float32)
            return cls(str(data["model_id"]), weights, float(data["bias"]), data["threshold"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("capture by meaning is off: %s", type(exc).__name__)
            return None

    def lasting(self, vectors: np.ndarray) -> np.ndarray:
        """For each row of `vectors` (normalized embeddings), the chance it is meant to last."""
        return 1.0 / (1.0 + np.exp(-(vectors @ self.weights + self.bias)))


_loaded: dict[Path, Classifier | None] = {}


def classifier(path: Path = WEIGHTS) -> Classifier | None:
    """The classifier of `path`, read once per process."""
    if path not in _loaded:
        _loaded[path] = Classifier.load(path)
    return _loaded[path]


def statements(prompt: str, model=None, judge: Classifier | None = None) -> list[rules.Statement]:
    """What a prompt states as lasting: the rules' statements, then the plain sentences
    `judge` (by default the shipped classifier) finds lasting by `model`'s embedding, in
    the prompt's order (at most rules.MOST_PER_PROMPT). The rules alone without a model
    that fits the classifier, or when embedding fails."""
    found = rules.statements(prompt)
    if not found and (not isinstance(prompt, str) or prompt.lstrip().startswith("/")):
        return found  # (not a prompt; a slash command)
    judge = judge or (classifier() if model is not None else None)
    if model is None or judge is None or len(found) >= rules.MOST_PER_PROMPT:
        return found
    if getattr(getattr(model, "info", None), "model_id", None) != judge.model_id:
        return found
    texts = judged(prompt)
    if not texts:
        return found
    try:  # one batch for the prompt's sentences
        vectors = model.decode([model.query_sequence(s) for s in texts], interactive=True)[0]
    except Exception as exc:  # noqa: BLE001 - the rules' statements stand without it
        log.info("capture by meaning skipped a prompt: %s", type(exc).__name__)
        return found
    chances = dict(zip(texts, judge.lasting(vectors).tolist(), strict=True))
    return chosen(prompt, found, lambda text: chances.get(text, 0.0), judge.threshold)


def judged(prompt: str) -> list[str]:
    """The texts of a prompt that meaning judges (one batch): each plain part of a sentence
    the rules leave and, of "<reason>, so <what follows>", the two apart."""
    texts: list[str] = []
    for sentence in rules.sentences(prompt):
        if rules.statement(sentence) is not None:
            continue
        for part in parts(sentence):
            texts += [part] if plain(part) else []
            if split := so_apart(part):
                texts += [split[0]] if plain(split[0]) else []
                texts.append(split[1])
    return list(dict.fromkeys(texts))


def chosen(
    prompt: str, found: list[rules.Statement], chance: Callable[[str], float], threshold: float
) -> list[rules.Statement]:
    """The rules' statements (`found`) and the parts whose `chance` of lasting reaches
    `threshold`, in the prompt's order; the rules' are never crowded out. Of "<reason>, so
    <what follows>", the whole when what follows lasts too or is a general request, else the
    reason alone: "every client project uses Pest, so write the tests in Pest syntax" is
    proposed as its first half."""
    room = rules.MOST_PER_PROMPT - len(found)
    out: list[rules.Statement] = []
    for sentence in rules.sentences(prompt):
        statement = rules.statement(sentence)
        if statement is not None:
            out += [statement] if statement in found and statement not in out else []
            continue
        pieces = parts(sentence)
        for i, part in enumerate(pieces):
            if (
                i
                and _rides(sentence, pieces[i - 1], part)
                and not (plain(pieces[i - 1]) and chance(pieces[i - 1]) >= threshold)
            ):
                continue  # ("I'm working from the train - avoid big downloads": the moment's)
            whole = plain(part) and chance(part) >= threshold
            split = so_apart(part)
            if split and not (
                whole
                and not _DONE.search(part)
                and (chance(split[1]) >= threshold or _GENERIC.match(split[1]))
            ):
                part = split[0]
                whole = plain(part) and chance(part) >= threshold
            taken = rules.Statement(RULE, rules.tidy(part))
            if whole and taken not in out and room > 0:
                out.append(taken)
                room -= 1
    return out
