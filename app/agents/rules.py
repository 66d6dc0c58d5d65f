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
    "plain": 'a fact or habit said plainly ("logs go to Datadog"), judged by meaning',
    "agent-file": "an item of an agent's memory file (CLAUDE.md, AGENTS.md, …), imported",
}
MIN_CHARS = 12
MAX_CHARS = 400  # a longer "sentence" is a paste, not a statement
MOST_PER_PROMPT = 3
FIX_WINDOW_S = 15 * 60  # a failure and the success that fixed it, this close together

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!;?])\s+(?=[\w\"'(`])|\n+")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|cf|incl|esp)\.|\b[A-Za-z]\.)$", re.I)
_SPACE = re.compile(r"\s+")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")  # a list item's mark
# What names the whole project, not the work at hand ("this repo", "our codebase")
PROJECT = (
    r"(?:repo(?:sitory)?|project|code ?base|monorepo|team|company|org(?:ani[sz]ation)?"
    r"|workspace|app(?:lication)?|department|lab)"
)
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
    r"^(?:please\s+|pls\s+|and\s+)?(?:remember|remeber|rember|note|keep in mind"
    r"|don'?t forget|never forget)"
    r"(?:\s+that|\s*:|\s*,|\s+(?=(?:we|our|i|my)\s|(?:i['’]m|we['’]re|i am|we are)\b)"
    r"|\s+(?=the\s+[\w ./`-]{2,50}?\s+(?:is|are|runs?|needs?|uses?|lives?)\b)"
    # "keep in mind" before five words or more ("keep in mind the firmware targets an STM32")
    r"|(?<=keep in mind)\s+(?!(?:what|whatever|how|why|where|when|who|you|there|this|that"
    r"|it|the last)\b)(?=(?:[\w'’-]+\W+){4}\w)(?!.*\b(?:this|that|before|earlier)[.!]?$))"
    r"\s*(?P<what>.+)$",
    re.I,
)
_REMEMBER_TO = re.compile(
    r"^(?:please\s+|and\s+)?(?:remember|don'?t forget|dont forget)\s+to\s+(?P<what>\w.+)$",
    re.I,
)
# A reminder of a habit, not of one step: "remember to always …", "… before every commit",
# "… before you commit" said in general ("before you tag the release", "after you push the
# theme change", "when you're done" are one step of the work)
_HABIT_REMINDED = re.compile(
    r"\b(?:always|never|whenever|any ?time|anymore|in (?:the )?future|going forward)\b"
    r"|\b(?:every|each)\s+(?:[\w-]+\s+)?(?:time|commit|push|pr|pull request|release|deploy"
    r"|merge|new|change|feature)\b"
    r"|\b(?:before|after|when)\s+(?:you\s+|we\s+)?(?:commit|committing|push|pushing|merge"
    r"|merging|deploy|deploying|release|releasing|tag|tagging)\s*[.!]?$"
    # a step said of any case ("before opening a pull request", "after you edit any Go file")
    r"|\b(?:before|after)\s+(?:\w+ing\s+(?:a|an|any)|(?:you|we)\s+\w+\s+any)\s+\w+",
    re.I,
)
# ... for a while only ("until the release is out", "during the migration", "while we're debugging")
_HABIT_BOUNDED = re.compile(
    r"\b(?:until|during|while (?:we|i)(?:['’]re|['’]m| are| am)|for now|for the rest of)\b", re.I
)
# "from now on in site.yml", "… in TransferViewModel", "… in the star_align module": a rule
# for one file, class or part, not for the project
# Names written like a class that are a language or a product ("from now on in TypeScript, …")
_PRODUCTS = (
    r"(?:GitHub|GitLab|TypeScript|JavaScript|CoffeeScript|PowerShell|PostgreSQL|MySQL|GraphQL"
    r"|MongoDB|DynamoDB|BigQuery|PyTorch|NumPy|SciPy|FastAPI|NestJS|SwiftUI|WebAssembly|LaTeX"
    r"|DevOps|OpenAPI|CloudFormation|WordPress|JetBrains|IntelliJ|PyCharm|VSCode|iOS|macOS)\b"
)
_ONE_PLACE = re.compile(
    r"^(?:from now on|going forward|from here on),?\s+(?:in|inside|for)\s+"
    # a file or a class named, then the order ("in site.yml put …", "in TransferViewModel use
    # …"); not a kind of code ("in Node.js code", "in OpenAPI specs", "in *.tsx files")
    r"(?:(?:(?!\*)\S+\.[a-z]{1,5}|(?!" + _PRODUCTS + r")(?-i:[A-Z][a-z]+[A-Z])\w*)"
    r"(?=,|\s+(?:please\s+)?(?:"
    + "|".join(sorted(VERBS | {"don't", "dont", "avoid", "always", "never", "only"}))
    + r")\b)"
    r"|this\s+(?!" + PROJECT + r"\b)\w+"
    r"|the\s+[\w. -]{1,30}?\s+"
    r"(?:module|file|class|function|method|component|screen|page|guide|doc|script|notebook"
    r"|view|controller|test|section|chapter|playbook|role|template|pipeline|branch|pr|folder"
    r"|directory|dir|service|package|crate|endpoint|route|table|job|handler|hook|widget|store"
    r"|reducer|migration|lambda)\b)",
    re.I,
)
_FROM_NOW_ON = re.compile(
    r"^(?:and\s+|also\s+|ok(?:ay)?,?\s+)?(?:please\s+)?(?:(?:from now on|from now(?= always)"
    r"|henceforth)\b,?"
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
    r"^(?:i|we)(?:\s*['’]d\s+|\s+(?:am\s+)?)(?:(?:much|strongly|really|generally|far)\s+)?"
    r"(?:prefer|(?:would\s+)?rather|always use|never use|like to use|want you to use)\b"
    r"(?!\s+(?:the\s+(?:\w+\s+)?)?(?:first|second|third|last|former|latter|above|previous|"
    r"other|this|that(?!\s+(?:you|we)\b)|these|those|your|option|version|approach|one)\b).+$"
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
# The parts of a developer's setup a lasting fact is said of ("the default branch", "the CI
# runners", "the staging DB"), up to two words before one of them
_PART = (
    r"(?:[\w.`-]+\s+){0,2}(?:env|environment|server|servers|cluster|ci|pipeline|runners?"
    r"|database|db|repo|repository|monorepo|codebase|backend|frontend|staging|prod|production"
    r"|dev server|branch|registry|secrets|package manager|node|python|runtime|os|shell|editor"
    r"|linter|formatter|logs|tests)"
)
_SETUP = re.compile(
    r"^(?:our|we(?:['’]re| are)? (?:on|using|use))\b[^,;]{2,80}?,?\s+not\s+[^,;]{1,60}?[.!]?$"
    rf"|^(?:the|this|our)\s+{_PART}\s+(?:is|are|runs? on|lives? in|uses?)\s+[^,;]{{1,80}}?"
    r",?\s+not\s+(?:the\s+)?[^,;]{1,60}?(?:\s*[—–-]+\s*.+)?[.!]?$",
    re.I,
)
# Where things of the setup are, what they run on (the environments of a developer's work)
_ENVIRONMENT = re.compile(
    rf"^(?:the|our|this)\s+{_PART}\s+(?:runs? on|uses|is hosted (?:on|in|at)|lives? (?:in|on)"
    r"|deploys? (?:to|with|from)|(?:is|are) (?:on|in) (?:version|v?\d))\b.+$"
    r"|^(?:tests|docs|migrations|fixtures|configs?|scripts|types|styles|assets)\s+"
    r"(?:live|belong|go)\s+(?:in|next to|under|inside|beside)\b.+$"
    r"|^(?:the|our) team(?:['’]s)?\s+(?:rule|convention|decided|agreed|uses?|prefers?|policy)\b.+$",
    re.I,
)
# What is wrong or passing now (a fact said of the setup with it is the work's state, not a
# lasting fact), and a task asked after a comma ("…, merge them")
_NOW_PLAINLY = (
    r"why|again|wrong|blank|empty|down|unreachable|missing|stale|too (?:much|many|slow)"
    r"|out of date|duplicate|twice|forever|no longer works?|anymore\?"
    r"|(?:is|are|went) offline|asleep|degraded|restarting|in maintenance"
    r"|(?:is|are) (?:now )?out(?!\s+of)|came out"
)
_NOW = re.compile(rf"\b(?:but|since|{_NOW_PLAINLY})\b", re.I)
# …without a contrast ("I know SQL well but Python only a little") or a reason ("since I
# want it to run on old laptops"), which the rules read as the state of the work
_PLAINLY_NOW = re.compile(rf"\b(?!why\b)(?:{_NOW_PLAINLY})\b", re.I)
_ON_WHAT_WAS_SAID = {"it", "them", "that", "this", "these", "those", "what", "pls", "please"}
# A reason that is an event ("since the vendor updated their SDK", "Since the refactor, …"),
# an order after "but", what just arrived before a request ("prod has the new config, …"),
# a sentence that opens on a condition of one's own ("when you …", "if we …": a habit; "when
# the build finishes, deploy it" is a step), a habit's own words
# A verb in the past ("deployed", "ran"; not "embed", "succeed")
PAST = r"(?:\w{3,}(?<!e)(?<!emb)ed|did|was|were|went|got|made|broke|ran|came|sent|shipped)"
_SINCE_EVENT = re.compile(
    rf"\bsince\s+(?:the|you|i|we|they|my|our|it)\b(?:(?!\b(?:is|are|am)\b)[^,])*?\b{PAST}\b"
    r"|^since the \w+,",
    re.I,
)
_BUT_ORDER = re.compile(r"\bbut\s+(?:please\s+)?(?P<verb>[a-z]+)\b", re.I)
_ARRIVED = re.compile(
    r"\b(?:the new|done|finished|landed|merged|approved|ready|shipped|released|updated)\b", re.I
)
_CONDITION = re.compile(
    r"^(?:whenever|(?:when|if|unless|before|every time) (?:you|we|i)|when in doubt)\b", re.I
)
_WHENEVER = re.compile(r"\b(?:when|whenever|every time|each time|unless|before)\b", re.I)
_THEN_TASK = re.compile(
    r",\s*(?:so\s+|and\s+|then\s+)?(?:please\s+)?(?!(?:make|be) sure\b)(?P<verb>[a-z]+)\b"
    # a noun that only looks like a verb: "…, read replicas are behind …", "…, read-only"
    r"(?!-|\s+[\w-]+\s+(?:is|are|was|were|live|lives|go|goes|run|runs|get|gets|sit|sits)\b)"
    r"[^,]*$",
    re.I,
)
TASK_VERBS = VERBS | {
    "merge",
    "delete",
    "list",
    "trim",
    "find",
    "upgrade",
    "drain",
    "replace",
    "fix",
    "move",
    "profile",
    "finish",
    "clean",
    "refactor",
    "investigate",
}
_TASK = re.compile(
    r"\b(?:let'?s|let us|this (?:task|pr|commit|time|once|one|change|diff|file|function|test"
    r"|refactor|bug|session|branch|script|folder|hotfix|ticket|issue|demo|sprint|analysis"
    r"|notebook|query|run|job|spike|migration)"
    r"|right now|today|for now|for the moment|yet|after you change it"
    r"|(?:on|see|check) line \d+)\b",  # (a place in the code at hand: "on line 42")
    re.I,
)
# What is so for a moment only, said after "remember" / "note" / "keep in mind": a time just
# past or near, something "above"/"below" in the prompt, a scratch path, "…, so just …"
_MOMENT = re.compile(
    r"\b(?:a (?:minute|moment|second|few minutes) ago|just now|this (?:morning|afternoon"
    r"|evening|week)|tonight|tomorrow|at the moment|currently|on battery|yesterday|earlier"
    r"|last (?:night|week|time|run)|timed out|ago|last (?:commit|deploy|push|release|merge|weekend)"
    r"|over the weekend)\b"
    # a day or a lunch after something done ("was purged on Friday", "reverted before lunch";
    # not "standup is on Monday")
    rf"|\b{PAST}\b[^.]*\b(?:on (?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:before|after) lunch)\b"
    r"|\bthe (?:\w+ ){1,3}(?:above|below)\s*(?:[:.!]|$)|\b(?:is|are|was|were) (?:above|below)[.!]?$"
    # (what was pasted with the prompt: "the test output above was truncated")
    r"|\b(?:output|log|logs|trace|traceback|error|errors|diff|snippet|message|results?"
    r"|screenshot|query|code) (?:above|below)\b"
    r"|(?:^|\s)/tmp/\S|,\s*so\s+just\s+\w+",
    re.I,
)
# A setup fact of a while only ("at the moment", "this week", "until the end of the month")
_FOR_NOW = re.compile(
    r"\b(?:at the moment|currently|tonight|tomorrow|(?:this|next) (?:week|month|quarter|year)"
    r"|this sprint|until (?:\w+day|tomorrow|tonight|next \w+|the end of (?:the |this )?\w+))\b",
    re.I,
)
# "always"/"never" of one thing pointed at ("never commit this", "don't ever do that again"),
# and what the code should do ("make sure the function always returns a list")
_POINTED = re.compile(
    r"^(?:please\s+|and\s+|also\s+)?(?:(?:make|be)\s+sure\s+(?:that\s+)?(?:you\s+|to\s+|we\s+)?)?"
    r"(?:always|never|don['’]?t(?:\s+ever)?|do not(?:\s+ever)?)\s+[a-z]+\s+"
    r"(?:this|that|these|those|it)\b(?!\s+" + PROJECT + r"\b)"
    r"|^make sure (?:the|this|that|it|each|every)\b[^,]*?\b(?:always|never)\s+\w+s\b",
    re.I,
)
# A quotation ('The README says "from now on, use v2"'): its words are someone else's
_QUOTATION = re.compile(r"[\"“][^\"”]*[\"”]")
# What is wrong with the work now (a failing test, a bug): found, not a rule for later
_STATE = re.compile(
    r"\b(?:failing|fails|failed|broken|crash(?:es|ed|ing)?|flaky|bug"
    r"|(?:is|are|was|were|looks?|seems?|got)\s+(?:\w+\s+)?(?:slow|green|red|passing|stuck|hanging"
    r"|timing out))\b",
    re.I,
)
# Words a person opens a sentence with before what they state: not the statement
_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|also|and|but|btw|fyi|pls|plz|please|oh|heads up|for the record"
    r"|one more thing(?: for the future)?|context for this whole project|just so you know"
    r"|just so we['’]re clear|(?:also )?for (?:future|later) reference|for your information"
    r"|i['’]ve told you (?:this )?before|as i said before|sorry,? i was wrong(?: earlier)?|just)"
    r"\b\s*[,:!\u2014\u2013-]*\s+)+",
    re.I,
)
# A lasting word anywhere in the sentence: a "don't" or a request holding one stands
_LASTING = re.compile(
    r"\b(?:always|alwyas|allways|never|ever|anymore|any more|directly|going (?:forward|fwd)"
    r"|from now on|in (?:the )?future|for the future|from here on|in (?:this|our|the) "
    + PROJECT
    + r"|in new (?:code|modules|files)"
    r"|we (?:use|always|never|don['’]?t|dont|do not)|whenever (?:you|we)"
    r"|unless (?:i|we) (?:ask|say|tell)|we['’]re (?:trying to get rid of|getting rid of|"
    r"moving away from|phasing out|deprecating))\b",
    re.I,
)
# A fact about the person or the project, as told for the record ("fyi, the main branch is
# protected", "for the record, I'm on an M2 mac")
_FACT = re.compile(
    r"^(?:it['’]?s|this is|we['’]re|we are|i['’]?m|i am|i['’]m using|i use"
    r"|(?:the|all|every|my|our)\s+\S+(?:\s+\S+){0,2}\s+(?:is|are|runs?|uses?|lives?))\s.+$",
    re.I,
)
_ASK_AFTER = re.compile(
    r",\s*(?:so\s+)?(?:fix|can you|could you|please|pls|now|then|and then|anyway)\b[^,]*$", re.I
)
_SO_TASK = re.compile(r",\s*so\s+(?:please\s+|pls\s+|just\s+)?(?P<verb>[a-z'’]+)\b[^,]*$", re.I)
# What "so" leads that is no consequence: a purpose or a degree ("so that", "so far")
SO_NOT = frozenset({"that", "far", "much", "many", "long", "as", "yeah"})
# A consequence that says how things are now ("…, so requests are timing out", "…, so now
# the build takes an hour at the moment"): what it follows from is of now too
_NOW_AFTER = re.compile(
    r"\b(?:is|are|am|i['’]m|we['’]re|it['’]s|they['’]re)\s+(?:\w+\s+)?"
    r"(?!(?:going|nothing|something|anything|everything|thing|string)\b)\w+ing\b"
    r"|\b(?:right now|at the moment|currently|today|tonight|this (?:morning|week))\b",
    re.I,
)
_THEN_NOW = re.compile(r",\s*(?:so\s+)?(?:now|then|anyway)\b", re.I)
# A consequence said in passing has its own subject ("…, so I'll check it there", "…, so
# concurrent index builds are fine"); a request ("…, so avoid ascii tables"), an obligation
# ("…, so protocol changes must stay backward compatible", "…, so we can't remove them") or
# a habit on a condition ("…, so if something is a bad pattern tell me why") is none
_SUBJECT = set(
    """i i'll i'm i'd i've you you'll you'd you're it it's its there there's that's they
    they're we'll we'd""".split()
)
_FINITE = set(
    """is are was were will won't can can't could might may would wouldn't don't doesn't
    isn't aren't get gets take takes stay stays go goes live lives run runs work works use
    uses have has come comes""".split()
)
_OBLIGED = re.compile(
    r"\b(?:must|mustn['’]?t|should|shouldn['’]?t|has to|have to|needs? to|ought|shall|can['’]?t"
    r"|cannot|not allowed)\b",
    re.I,
)


def _in_passing(after_so: str) -> bool:
    """Whether what follows ", so" is a statement said in passing, not a request or a rule."""
    words = re.findall(r"[\w'-]+", after_so.lower().replace("’", "'"))[1:]  # (after "so")
    if not words or _OBLIGED.search(after_so) or words[0] in ("if", "when", "whenever", "unless"):
        return False  # (a rule, or a habit on a condition: "…, so if … tell me why")
    return words[0] in _SUBJECT or bool(_FINITE & set(words[1:4]))


# What leads a statement in, and nothing after it: what followed the comma was the statement
_ONLY_LEAD = re.compile(
    r"^\W*(?:from now on|going forward|from here on|in (?:the )?future|henceforth|remember"
    r"|note|keep in mind|always|never)\W*$",
    re.I,
)
_STOP = re.compile(r"^(?:stop|quit)\s+(?P<doing>[a-z]+ing)\b.+$", re.I)
_HATE = re.compile(r"^i (?:really )?(?:hate|can'?t stand|don'?t like) (?:it )?when you\b.+$", re.I)
_SWITCHED = re.compile(
    r"^we(?:['’]ve| have)? (?:moved|switched|migrated|changed)\b.*\bto\b.+$", re.I
)
_TEAM = re.compile(
    r"^(?:(?:in|for) (?:this|our) " + PROJECT + r"\b,?\s+"
    r"(?:we|all|every|no|nothing)\b.+"
    r"|(?:we|i) (?:use|write|keep|name|put|follow|stick to)\b.+"
    r"|we (?:deploy|host|ship|release|build with|test with|squash|rebase)\b.+"
    r"|we (?:don['’]?t|dont|do not) (?:use|write|do|add|put|allow|run)\b.+"
    r"|our (?:house style|convention|style|naming|policy|rule)s? (?:is|are)\b.+"
    r"|(?:please\s+)?prefer\s+.+\s+(?:over|to|instead of)\s+.+)$",
    re.I,
)
_OUR_SETUP = re.compile(
    r"^our\s+(?:[\w./`-]+\s+){1,4}(?:is|are|uses?|runs?(?: on)?|lives? in|has|have|"
    r"(?:is|are) (?:named|called|on|in|hosted))\b.+$",
    re.I,
)
# "no no, the package manager is yarn berry, not yarn classic"; "it's not MySQL, it's MariaDB"
_SAID_NO = re.compile(
    r"^(?:(?:no+|nope|wrong|not quite|actually|wait)\b[,.!:;]?\s+)+(?:no,?\s+)?"
    r"(?:(?:(?:the|our)\s+)?[\w ./`-]{2,60}?\s+(?:is|are|runs? on|lives? in)\s+.+?,?\s+not\s+.+"
    r"|it['’]?s not\s+.+?,\s*it['’]?s\s+.+)$"
    r"|^it['’]?s not\s+[^,]+,\s*it['’]?s\s+.+$",
    re.I,
)


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
    out: list[str] = []
    glued = False  # the part before ended with an abbreviation ("e.g."): the same sentence
    for part in _SENTENCE_END.split("\n".join(lines)):
        sentence = _BULLET.sub("", _SPACE.sub(" ", part).strip())
        if sentence and (glued or _goes_on(out, sentence)) and out:
            out[-1] = f"{out[-1]} {sentence}"
        elif sentence:
            out.append(sentence)
        glued = bool(sentence) and bool(_ABBREVIATION.search(sentence)) and "\n" not in part
    return out


# What forbids ("never …", "don't …", "no …"), not "never mind" nor "no worries"
_FORBADE = re.compile(
    r"^\W*(?:please\s+)?(?:never(?!\s+mind)|don['’]?t|dont|do not|avoid"
    r"|no(?!\s+(?:worries|rush|problem|idea|need|pressure|stress)))\b",
    re.I,
)


def _goes_on(before: list[str], clause: str) -> bool:
    """Whether a clause after a semicolon says what to do instead of what the one before
    forbade: "Never call the payments API directly; go through the gateway client" is one
    instruction. Not after a rule that tells to do ("We use pnpm; run pnpm install" is a
    rule, then a task), not a clause of the work at hand ("…; remove the key you just
    added"), not one with its own "always"/"never"."""
    if not before or not before[-1].endswith(";") or not _FORBADE.match(before[-1]):
        return False
    first = clause.split(maxsplit=1)[0].lower()
    now = _TASK.search(clause) or _STATE.search(clause) or re.search(r"\bjust\b", clause, re.I)
    return first in VERBS and first != "let" and not now


def _tidy(text: str) -> str:
    text = text.strip().rstrip(",;:")
    if text and text[-1] not in ".!":
        text += "."
    return text[0].upper() + text[1:] if text else text


def _statement(sentence: str) -> Statement | None:
    asked = sentence.endswith("?")
    if not MIN_CHARS <= len(sentence) <= MAX_CHARS:
        return None
    if _TASK.search(sentence):  # about the work at hand, not lasting
        return None
    if asked:  # a question, unless it asks for a standing habit ("could you always …?")
        standing = re.match(r"^(?:could|can|would) you (?:please )?always\b", sentence, re.I)
        later = re.search(r"\b(?:going forward|from now on|in future)\s*\?$", sentence, re.I)
        if later and re.match(r"^(?:could|can|would) you (?:please )?(?:mind )?", sentence, re.I):
            return Statement("from-now-on", _tidy(sentence.rstrip("?")))
        if not standing or not re.search(r"\b(?:please|pls)\b", sentence, re.I):
            return None  # "can you always use tabs?" may ask whether it can
        return Statement("always-never", _tidy(sentence.rstrip("?")))
    after = _ASK_AFTER.search(sentence)  # "…, fix the file you just wrote": the task
    trimmed = sentence[: after.start()] if after else sentence
    # "…, so translate this deseq code": the task it leads to; "…, so I'll check it there
    # once you push", "…, so concurrent index builds are fine": a consequence said in passing;
    # "…, so (now) requests are timing out": what it follows from is of now too
    so = _SO_TASK.search(trimmed)
    task = so and so["verb"].lower() in TASK_VERBS | {"don't", "dont", "do"}
    said_after = so[0] if so else after[0] if after and _THEN_NOW.match(after[0]) else ""
    now_after = not task and bool(_NOW_AFTER.search(said_after))
    passing = so and so["verb"].lower() not in SO_NOT and _in_passing(so[0])
    if so and not now_after and (task or passing):
        lasting = _LASTING.search(so[0]) or _WHENEVER.search(so[0])
        # (kept when it points at what was said: "…, so leave them out", "…, so just read …")
        pointed = re.search(r"\bjust\b", so[0]) or _on_what_was_said(so[0], VERBS)
        general = re.search(
            r"\b(?:new|any|all|every|each|anything|everything)\b"
            r"|^,\s*so\s+(?:no|nothing|only)\b",  # ("…, so no merges after Thursday noon")
            so[0],
            re.I,
        )
        if not (lasting or pointed or general):
            trimmed = trimmed[: so.start()]
    if not _ONLY_LEAD.match(trimmed):  # ("From now on, please ask me …" is the statement)
        sentence = trimmed
    core = _LEAD.sub("", sentence)
    if len(core) < MIN_CHARS:
        return None
    found = _rule(core, sentence)
    told = re.match(
        r"^(?:fyi|for the record|heads up|context for this whole project|just so you know"
        r"|just so we['’]re clear|(?:also )?for (?:future|later) reference)\b",
        sentence,
        re.I,
    ) or re.search(r"\b(?:btw|fyi)[.!]?$", sentence, re.I)
    # ("fyi I'm out for lunch, keep going": the state of now)
    if (
        found is None
        and told
        and _FACT.match(core)
        and not _STATE.search(core)
        and not _task_after(core)
    ):
        found = Statement("prefer", _tidy(sentence))
    if found is not None and found.rule in ("remember", "correction") and _STATE.search(core):
        return None  # "note: the failing test is …": the state of the work, not a rule
    if found is not None and found.rule in ("prefer", "correction") and now_after:
        return None  # a fact followed by how things are now: of now ("always …, so …" stays)
    return found


def statement(sentence: str) -> Statement | None:
    """What one sentence (of `sentences`) states as lasting by these rules, or None."""
    return _statement(sentence)


def at_hand(sentence: str) -> bool:
    """Whether a sentence is plainly about the work at hand or how things are now ("today",
    "this PR", a failing test, a server down again), without reading a contrast, a reason
    or a request after a comma as the work of now, as the rules' own facts do (`_a_fact`):
    "I mostly write Go, so explain Rust in terms of Go" lasts. Capture by meaning judges
    those itself, except a reason that is an event ("since the refactor landed, …"), an
    order after "but" ("… but keep the current colors") and a request on what was said or
    what just arrived ("…, merge them"; "prod has the new config, so restart the pods")."""
    if _TASK.search(sentence) or _STATE.search(sentence) or _PLAINLY_NOW.search(sentence):
        return True
    if _SINCE_EVENT.search(sentence):
        return True
    condition = _CONDITION.match(sentence)
    habit = _LASTING.search(sentence) or condition or _WHENEVER.search(sentence)
    order = _BUT_ORDER.search(sentence)
    if order and order["verb"].lower() in TASK_VERBS and not habit:
        return True
    task = _THEN_TASK.search(sentence)
    if not task or task["verb"].lower() not in TASK_VERBS or condition:
        return False  # ("When you add a dependency, pin it": "it" is what the habit is about)
    return _on_what_was_said(sentence, TASK_VERBS) or bool(
        _ARRIVED.search(sentence[: task.start()])
    )


def _on_what_was_said(text: str, verbs: set[str] | frozenset[str]) -> bool:
    """Whether a request after a comma is about what was just said: "…, merge them", "…,
    fix pls", "…, upgrade the manifests accordingly", "I prefer the shorter name, call it
    fetch"."""
    task = _THEN_TASK.search(text)
    if not task or task["verb"].lower() not in verbs:
        return False
    rest = re.findall(r"[\w']+", text[task.end("verb") :].lower())
    return not rest or rest[0] in _ON_WHAT_WAS_SAID or "accordingly" in rest


def tidy(text: str) -> str:
    """A statement as proposed: trimmed, capitalized, ending with a full stop."""
    return _tidy(text)


def _said_now(core: str) -> bool:
    """Whether a sentence says how things are now (a failing test, a server down again)."""
    return bool(_STATE.search(core) or _NOW.search(core))


def _a_fact(core: str) -> bool:
    """Whether a fact said of the setup lasts: not what is wrong now, not for a while only (a
    pool "maxed out at the moment", a license that "runs out next week"; a correction "our
    database is currently Postgres 16, not 15" is another rule), not followed by a task
    ("…, merge them"; "…, make sure you never …" is a rule and stays)."""
    return not _said_now(core) and not _FOR_NOW.search(core) and not _task_after(core)


def _task_after(text: str) -> bool:
    """Whether a task is asked after a comma ("…, merge them"), not a rule ("…, make sure
    you never …")."""
    task = _THEN_TASK.search(text)
    return bool(task and task["verb"].lower() in TASK_VERBS and not _LASTING.search(task[0]))


def _rule(core: str, sentence: str) -> Statement | None:
    """The rule a sentence (`core`: without its lead words) states as lasting, if any."""
    if m := _REMEMBER.match(core):
        what = m["what"].strip()
        if re.match(
            r"^(?:\w+ing\s+)?(?:this|it)\b(?!\s+" + PROJECT + r"\b)",
            what,
            re.I,
        ):
            return None  # "remember: this is a draft": the task ("this repo uses uv" stays)
        if _MOMENT.search(what):  # "remember that I changed the port a minute ago"
            return None
        return Statement("remember", _tidy(what)) if len(what) >= MIN_CHARS else None
    if m := _REMEMBER_TO.match(core):
        if not _HABIT_REMINDED.search(m["what"]) or _HABIT_BOUNDED.search(m["what"]):
            return None  # "remember to bump versionCode before you tag the release"
        return Statement("remember", _tidy(m["what"]))
    if _ONE_PLACE.match(core):
        return None  # "from now on in site.yml, …"
    if m := _FROM_NOW_ON.match(core):
        if re.match(r"^(?:the|this|it)\b[^,]*\bshould\b", m["what"], re.I):
            return None  # "from now on the endpoint should return 404": the code's spec
        return Statement("from-now-on", _tidy(sentence))
    if _SAID_NO.match(core):
        return Statement("correction", _tidy(sentence))
    if m := _CORRECTION.match(core):
        said_no = core.lower().startswith(("no", "nope", "wrong", "not quite", "actually"))
        if not said_no and m["verb"].lower() not in ("use", "run", "call", "prefer"):
            return None  # "it's X not Y" is a correction only after a "no"
        if re.match(r"^\w+ing\s+(?:it|this|that|them|everything|all)\b", m["wrong"], re.I):
            return None  # "use the variable instead of recomputing it": the code at hand
        told = re.match(
            r"^(?:(?:no|nope|wrong|not quite|actually)\W+)?(?:please\s+)?use\b", core, re.I
        )
        if told and re.search(r"\bhere$", m["right"], re.I):
            return None  # "use a dict here instead of the list": this spot in the code
        if len(m["wrong"].split()) > 6:
            return None
        verb = m["verb"].lower()
        verb = "It is" if verb.startswith("it") else verb.capitalize()
        right, wrong = m["right"].strip(" ,;:"), m["wrong"].strip(" ,;:")
        return Statement("correction", f"{verb} {right} instead of {wrong}.")
    if _POINTED.match(core) and not _WHENEVER.search(core):  # "don't ever do that again"
        return None  # (that one thing; "always check these logs before …" is a habit)
    if (m := _ALWAYS_NEVER.match(core)) and _commanded(m["verb"], m["dont"]):
        return Statement("always-never", _tidy(sentence))
    # "our CI runs on X, not Y, so ignore the Jenkinsfile": the fact, and what follows of it
    said_against = _SETUP.match(re.sub(r",\s*so\s+.*$", "", core))
    if said_against and not _said_now(core):
        return Statement("correction", _tidy(sentence))
    setup = _SWITCHED.match(core) or _OUR_SETUP.match(core) or _ENVIRONMENT.match(core)
    if setup and _a_fact(core):
        return Statement("correction" if " not " in core else "prefer", _tidy(sentence))
    if (
        (m := _PREFER.match(core))
        and (not m["habit"] or m["habit"].lower() in VERBS)
        and not re.search(r"\bhere[.!]?$", core, re.I)  # "… than add a retry here"
        and not _on_what_was_said(core, TASK_VERBS | _TOLD)  # "I prefer X, call it fetch"
    ):
        return Statement("prefer", _tidy(sentence))
    if (_TEAM.match(core) and _a_fact(core)) or _HATE.match(core):
        return Statement("prefer", _tidy(sentence))
    if (m := _STOP.match(core)) and not core.lower().startswith(("stop the", "quit the")):
        return Statement("always-never", _tidy(sentence))
    if re.match(r"^whenever (?:you|we)\b", core, re.I):
        return Statement("always-never", _tidy(sentence))
    if re.match(r"^no\s+\w[^,]*,\s*(?:ever|anywhere|please)[.!]?$", core, re.I):
        return Statement("always-never", _tidy(sentence))  # "no emojis in commits, ever"
    lasting = _LASTING.search(_QUOTATION.sub(lambda q: " " * len(q[0]), core))
    if not lasting or re.search(r"\bnever mind\b|\bgoing forward with\b", core, re.I):
        return None
    if re.search(r"\b(?:that|which|who)\s+(?:\w+\s+)?$", core[: lasting.start()], re.I):
        return None  # "a function that always rounds up": what the code does
    if re.match(r"^(?:don['’]?t|do not|alwyas|make sure)\b", core, re.I):  # (always: above)
        return Statement("always-never", _tidy(sentence))
    if re.search(r"\b(?:going (?:forward|fwd)|from now on|in future)\b", core, re.I):
        return Statement("from-now-on", _tidy(sentence))
    if lasting[0].lower() not in ("never", "ever") and re.match(
        r"^(?:use|write|keep|put|add|run|name)\b", core, re.I
    ):
        return Statement("always-never", _tidy(sentence))
    return None


def _commanded(verb: str | None, dont: str | None) -> bool:
    """Whether "always …", "never …" or "don't ever …" goes on with a verb told to do: one
    of VERBS or `_TOLD` ("always send reporting queries to the replica", "dont ever trigger
    the prod job yourself"). Not any word: "always happy to help", "never easy with legacy
    code" and "always mess up the rebase" are remarks, not rules."""
    word = (verb or dont or "").lower()
    return word in VERBS or (verb is not None and word in _TOLD)


# Verbs an instruction to a coding agent starts with after "always"/"never", beside VERBS
# (which also decide what is a task: these do not)
_TOLD = frozenset(
    """send trigger route point target ship pass validate sanitize encode decode cache batch
    paginate notify back vendor version bundle publish upload download migrate seed drop
    truncate reindex rotate encrypt hash login refactor rewrite reformat regenerate
    generate scaffold query fetch request post revert reset stash
    allow approve disable enable expose""".split()
)


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
