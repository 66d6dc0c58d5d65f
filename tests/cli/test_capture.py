"""Capture without an LLM (issue 25, item 3): what a user states as lasting in a prompt, and
a command that failed and then worked, proposed for review through the real hook and helper;
secrets kept out; near-duplicates counted as observations; `mnemo inbox` to review."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.agents import rules
from app.agents.events import own_words
from app.agents.rules import CommandWatch, error_id, statements
from tests.conftest import REPO, wait

MNEMO = Path(sys.executable).parent / "mnemo"


@pytest.mark.parametrize(
    ("prompt", "rule", "text"),
    [
        (
            "Remember that the staging database lives on db2.internal. Now fix the login bug",
            "remember",
            "The staging database lives on db2.internal.",
        ),
        (
            "from now on, use pnpm instead of npm here",
            "from-now-on",
            "From now on, use pnpm instead of npm here.",
        ),
        ("Always run the tests with -x before pushing!", "always-never", None),
        ("- never commit generated files", "always-never", "Never commit generated files."),
        ("I prefer small commits with clear messages", "prefer", None),
        ("No, use ruff instead of flake8.", "correction", "Use ruff instead of flake8."),
        ("Use pnpm, not npm.", "correction", "Use pnpm instead of npm."),
        ("Remember to run the formatter before you commit.", "remember", None),
        ("We always deploy from the main branch.", "prefer", None),
        ("Going forward, all new modules need type hints.", "from-now-on", None),
        ("nope, it's Postgres 16 not 15", "correction", "It is Postgres 16 instead of 15."),
        # issue 42, item 6: missed by the rules before
        ("I'd rather you use pnpm than npm.", "prefer", None),
        (
            "we’d much rather keep functions small",
            "prefer",
            "We’d much rather keep functions small.",
        ),
        ("Make sure you always run the linter before committing.", "always-never", None),
        ("make sure to never commit .env files", "always-never", None),
        ("Don't call the payments API directly.", "always-never", None),
        # the way to do it after a semicolon is kept with the instruction (it was dropped)
        (
            "Never call the payments API directly; go through the gateway client.",
            "always-never",
            "Never call the payments API directly; go through the gateway client.",
        ),
        # …but not a task after a rule, nor a clause of the work at hand (a red team, helper-56)
        ("We use pnpm; run pnpm install and then start the dev server.", "prefer", "We use pnpm."),
        (
            "Never commit secrets; remove the key you just added to config.py.",
            "always-never",
            "Never commit secrets.",
        ),
        ("Never push to main; open a PR for this change instead.", "always-never", None),
        # "this" of the project, not of the task; "here" of the project when "we" say it
        ("Keep in mind that this repo uses uv, not pip.", "remember", None),
        ("We use tabs here instead of spaces.", "correction", None),
        # lasting, though they say "line 1", "above", "/tmp/", "these" (a review, helper-59)
        ("Remember that line 1 of every CSV is a header.", "remember", None),
        ("Remember that the cache is above the database in our stack.", "remember", None),
        ("Remember that /tmp/ is wiped on every boot on our CI runners.", "remember", None),
        ("Always check these logs before filing a bug.", "always-never", None),
        ("do not push to main anymore", "always-never", "Do not push to main anymore."),
        ("Our CI runs on GitHub Actions, not Jenkins.", "correction", None),
        # "please" after "from now on," is not a task after the statement; a correction's
        # words end at a semicolon (a new user's walkthrough, helper-54)
        (
            "From now on, please ask me before adding any new dependencies.",
            "from-now-on",
            "From now on, please ask me before adding any new dependencies.",
        ),
        (
            "No, use httpx instead of requests; the whole codebase is async.",
            "correction",
            "Use httpx instead of requests.",
        ),
        # a verb the rules had no list entry for (a third writer's corpus, more.jsonl)
        ("always send reporting queries to the replica.", "always-never", None),
        ("and dont ever trigger the prod job yourself.", "always-never", None),
        (
            "keep in mind the firmware targets an STM32F407 with 192KB RAM.",
            "remember",
            "The firmware targets an STM32F407 with 192KB RAM.",
        ),
        # a request after ", so" that is the task it leads to goes (a lasting one stays)
        (
            "Btw we never use lodash in new code, we're phasing it out, so dont reach for _.sumBy.",
            "prefer",
            "Btw we never use lodash in new code, we're phasing it out.",
        ),
        (
            "We always deploy from main, so never push to other branches.",
            "prefer",
            "We always deploy from main, so never push to other branches.",
        ),
        # …and so does a consequence said in passing; a purpose ("so that") is no consequence,
        # and a rule after ", so" stays (13 writers, each left out in turn)
        (
            "Our database is Postgres 15 on RDS, so concurrent index builds are fine.",
            "prefer",
            "Our database is Postgres 15 on RDS.",
        ),
        (
            "We deploy on Vercel and preview links are posted on the PR, so I'll check it there "
            "once you push.",
            "prefer",
            "We deploy on Vercel and preview links are posted on the PR.",
        ),
        (
            "We deploy on Fridays, so no merges after Thursday noon.",
            "prefer",
            "We deploy on Fridays, so no merges after Thursday noon.",
        ),
        (
            "We always tag releases, so that the changelog can be generated.",
            "prefer",
            "We always tag releases, so that the changelog can be generated.",
        ),
        # …but not an obligation or a request after it, nor a rule's reason of now; a rule
        # keeps its place and a correction "currently" its own (a review, helper-70)
        (
            "We use Postgres 16 in prod, so migrations must use concurrent index builds.",
            "prefer",
            "We use Postgres 16 in prod, so migrations must use concurrent index builds.",
        ),
        (
            "We squash-merge everything, so the PR title has to follow conventional commits.",
            "prefer",
            "We squash-merge everything, so the PR title has to follow conventional commits.",
        ),
        ("We don't use Prettier, so just stick to the existing style.", "prefer", None),
        ("Never commit .env files, so secrets don't leak again.", "always-never", None),
        ("Our database is currently Postgres 16, not 15.", "correction", None),
        ("We use Jira and plan the next sprint on Mondays.", "prefer", None),
        (
            "Our CI runs on GitHub Actions, so I only check it there once you push.",
            "prefer",
            "Our CI runs on GitHub Actions.",
        ),
        # a reminder of a habit ("every", "always", a step said in general)
        ("remember to always bump the version and the changelog together", "remember", None),
        ("Don't forget to run the linter before every commit.", "remember", None),
        # (a review, helper-66: a habit said of any case)
        ("Remember to rebase onto main before opening a pull request.", "remember", None),
        ("remember to update CHANGELOG.md with every user-facing change", "remember", None),
        ("remember to add a migration for each schema change", "remember", None),
        ("remember to run gofmt after you edit any Go file", "remember", None),
        ("From now on in commit messages, use the imperative mood.", "from-now-on", None),
        ("From now on in new code, use pathlib.", "from-now-on", None),
        ("from now on in this repo use uv instead of pip", "from-now-on", None),
        ("from now on in *.tsx files use named exports", "from-now-on", None),
        ("from now on in GitHub Actions pin every action by its SHA", "from-now-on", None),
        # (a review: a kind of code or a place of the whole project is no one place)
        ("From now on in this repository, use conventional commits.", "from-now-on", None),
        ("From now on in Node.js code, use ESM imports.", "from-now-on", None),
        ("From now on in OpenAPI specs use camelCase.", "from-now-on", None),
        ("from now on in TypeScript, prefer unknown over any", "from-now-on", None),
        ("Remember that standup is on Monday at 10 CET.", "remember", None),
        # "this repository" names the project as "this repo" does (every rule alike)
        ("Keep in mind that this repository uses uv, not pip.", "remember", None),
        ("In this repository we never commit generated files.", "prefer", None),
        (
            "keep in mind most of our users are on low-end android phones",
            "remember",
            "Most of our users are on low-end android phones.",
        ),
    ],
)
def test_the_rules_find_what_is_stated_as_lasting(prompt, rule, text):
    found = statements(prompt)
    assert [s.rule for s in found] == [rule]
    if text:
        assert found[0].text == text


@pytest.mark.parametrize(
    "prompt",
    [
        # the red team's near misses: descriptions, the task at hand, a question first
        "Always a pleasure. Now let's tackle the flaky test.",
        "Never seen this error before: SSL: CERTIFICATE_VERIFY_FAILED.",
        "never had this problem on the old laptop",
        "Always returns None when the cache is cold.",
        "never mind the lint warnings in this file",
        "keep in mind the edge cases",
        # remarks, not rules (a review of the rules that took any word after "always")
        "always happy to help",
        "never easy with these legacy systems",
        "always mess up the rebase",
        "keep in mind what I said about the tests before",
        "keep in mind you have full access to the repo",
        "keep in mind there might be other callers of this",
        "Going forward, let's split this into three commits.",
        "Never mind, the issue was in my local env.",
        "Always fails at the lint step with E501.",
        "In the future tense the docs read awkwardly.",
        "Going forward with the plan, implement step 2.",
        "Never returns anything useful, this endpoint.",
        "I prefer the second approach you suggested.",
        "Actually it's the second argument, not the first, that is off by one.",
        "Remember that bug we fixed yesterday in the cache layer? It's back, same stack trace.",
        "do you remember that file?",  # a question
        "Can you always use tabs?",
        "```\nremember that this is code\n```\nrun it",  # in a code block
        "> always do X\nwhat does this quote mean",  # a quote
        "/compact remember that x",  # a slash command
        "fix the failing test in the importer",  # nothing lasting
        "remember that",  # nothing said
        "I'd rather the second one.",  # a choice between the agent's options
        "don't call it yet, we need the schema first",  # the task at hand
        "Make sure you run the tests",
        "our CI runs on tuesdays?",
        "Don't worry about the docs for now.",
        # rule-shaped, of the work at hand (a red team of the rules, helper-58)
        "Always check the return value here, the call on line 42 can fail.",
        "From now on in this refactor, keep the old names as aliases.",
        "Remember that I changed the port to 8081 a minute ago.",
        'note: the traceback is below\nTraceback (most recent call last):\n  File "a.py", line 3',
        "I prefer the shorter name, call it fetch.",
        "Make sure the function always returns a list.",
        "Don't ever do that again, you deleted my whole branch!",
        'The README says "from now on, use the v2 endpoint" - update the client accordingly.',
        "fyi I'm out for lunch, keep going with the refactor.",
        "Use pytest -k test_login instead of running everything.",
        "No, use the variable from line 10 instead of recomputing it.",
        "Use a dict here instead of the list.",
        "Always drop the first week of data in this analysis, the tracking was broken then.",
        "note that the test output above was truncated",
        "Note: the stack trace below is from the second run.",
        "Always check line 12 first, that's where it fails.",
        # a reminder of one step, a remark of one moment, a rule for one file (every writer
        # of the capture corpus labels these as not lasting; more4.jsonl)
        "remember to drain the node from the LB before you reboot it",
        "Remember to bump versionCode before you tag the release",
        "dont forget to run php artisan storage:link on the new server",
        "Remember to update the 'last reviewed' date on the page when you're done.",
        "remember to update the CHANGELOG when you finish this change",
        "Keep in mind the link checker flagged 12 links yesterday, and some were wrong.",
        "keep in mind ams1-db03 was reimaged yesterday so its cached facts are stale",
        "keep in mind the staging test I ran earlier timed out",
        "from now on in site.yml put tags on every import_playbook line",
        "From now on in TransferViewModel use viewModelScope.launch, not Dispatchers.IO.",
        "From now on in the migration guide, call it 'v2' and not 'version 2'.",
        "from now on in the star_align module use --outSAMtype BAM Unsorted",
        # …and what a red team of that change wrote to slip through it (helper-65)
        "remember to check every file in the diff for stray prints",
        "remember to ping Jake when you finish.",
        "remember to keep the feature flag on until the release is out",
        "keep in mind the worker was restarted an hour ago",
        "note that the cache was cleared over the weekend",
        "from now on in the helpers folder use named exports",
        "from now on in the payments service log the request id",
        "keep in mind the prod database got restored from a backup on Monday",
        "remember that I reverted the auth change before lunch",
        # a fact of the setup for a while only, and what follows from one (a red team of the
        # ", so" change, helper-69)
        "Our Postgres connection pool is maxed out at the moment.",
        "Our trial license runs out next week.",
        "Our Redis cluster is at 95% memory this week, so evictions are happening.",
        "Our Postgres connection pool is maxed out, so requests are timing out.",
        "Our Postgres connection pool is maxed out, so now requests are timing out.",
        "Our trial license runs out tomorrow.",
        "Our staging cluster runs on k8s 1.28 until the end of the month.",
    ],
)
def test_the_rules_leave_questions_code_and_tasks_alone(prompt):
    assert statements(prompt) == []


def test_a_command_that_failed_then_worked_is_a_candidate_with_its_error_as_keyword():
    watch = CommandWatch()
    out = "Traceback...\nModuleNotFoundError: No module named 'yaml'"
    assert watch.saw("s", "python -m app", False, out, at=0) is None
    assert watch.saw("s", "pip install pyyaml", True, "", at=5) is None  # the fix
    found = watch.saw("s", "python -m app", True, "ok", at=9)
    assert found is not None and found.keywords == ("ModuleNotFoundError",)
    assert "`pip install pyyaml`" in found.text and found.rule == "fixed-command"
    # the same command failing and passing with nothing between is a flaky one, not a fix
    watch.saw("s", "pytest", False, "E   AssertionError", at=20)
    assert watch.saw("s", "pytest", True, "1 passed", at=25) is None
    # and a fix long after is not linked to the failure
    watch.saw("s", "cargo build", False, "error[E0432]: unresolved import", at=30)
    assert watch.saw("s", "cargo build --offline", True, "", at=30 + 3600) is None
    assert error_id("npm ERR! code ERESOLVE") == "ERESOLVE"
    assert error_id("error TS2307: Cannot find module") == "TS2307"


# ---- through the real hook, helper and database ----------------------------------------
def _run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MNEMO), *args], input=input, capture_output=True, text=True, timeout=120, cwd=REPO
    )


def _prompt(text: str, session: str = "s1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(REPO),
            "hook_event_name": "UserPromptSubmit",
            "prompt": text,
        }
    )


def _inbox() -> list[dict]:
    done = _run("inbox", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def helper(mnemo_home):
    assert _run("remember", "We deploy the billing service with Helm on Fridays").returncode == 0
    # the session's start starts the helper, as in an agent (a cold prompt gets 2 s at most)
    start = {"session_id": "s0", "cwd": str(REPO), "hook_event_name": "SessionStart"}
    assert _run("hook", "session-start", input=json.dumps(start)).returncode == 0
    yield mnemo_home
    _run("hook", "stop")


def test_a_prompts_statements_wait_in_the_inbox_and_become_memories_when_accepted(helper):
    # WHEN the user tells their agent two lasting things inside a task
    said = "Remember that the staging database lives on db2.internal. Also, fix the login bug."
    assert _run("hook", "prompt", input=_prompt(said)).returncode == 0
    assert _run("hook", "prompt", input=_prompt("No, use ruff instead of flake8.")).returncode == 0
    # THEN both wait for review, with the rule that found them and the project
    waiting = wait(lambda: len(_inbox()) == 2 and _inbox())
    assert {c["rule"] for c in waiting} == {"remember", "correction"}
    staging = next(c for c in waiting if c["rule"] == "remember")
    assert staging["text"] == "The staging database lives on db2.internal."
    assert staging["project"] == REPO.name and staging["agent"] == "claude"
    assert said in staging["said"]
    # AND nothing became a memory yet
    assert "staging" not in _run("list").stdout
    # WHEN one is accepted as edited, the other rejected
    edited = "Staging database: db2.internal (not db1)"
    assert _run("inbox", "accept", staging["id"][:6], "--text", edited).returncode == 0
    ruff = next(c for c in waiting if c["rule"] == "correction")
    assert _run("inbox", "reject", ruff["id"]).returncode == 0
    # THEN the accepted one is a memory, tagged as captured, found by search
    found = json.loads(_run("recall", "which host is the staging database", "--json").stdout)
    top = found["results"][0]
    assert top["text"] == edited and {"captured", "remember"} <= set(top["tags"])
    assert _inbox() == []
    # AND `mnemo show` dates who said it, not the acceptance (a new user read the time of
    # the prompt, after "accepted by you", as the time they accepted it)
    shown = _run("show", top["id"]).stdout
    origin_line = next(line for line in shown.splitlines() if line.startswith("origin:"))
    assert re.search(
        r"session s1 \(\d{4}-\d\d-\d\d [\d:]+ UTC, [^)]*\), accepted by you$", origin_line
    )
    # AND the rejected words are not proposed again
    _run("hook", "prompt", input=_prompt("No, use ruff instead of flake8.", "s2"))
    _run("hook", "prompt", input=_prompt("remember that the CI runs on Tuesdays", "s2"))
    assert wait(lambda: [c["text"] for c in _inbox()]) == ["The CI runs on Tuesdays."]


def test_a_fact_said_plainly_waits_in_the_inbox_found_by_its_meaning(helper):
    # WHEN the user states a fact of their setup without any words the rules look for
    said = "Prod runs on Kubernetes 1.29 in eu-west-1. Fix the login bug."
    assert _run("hook", "prompt", input=_prompt(said)).returncode == 0
    # THEN the helper, which has the model loaded, proposes it by its meaning
    waiting = wait(_inbox)
    assert [(c["rule"], c["text"]) for c in waiting] == [
        ("plain", "Prod runs on Kubernetes 1.29 in eu-west-1.")
    ]


def test_a_statement_known_already_counts_as_an_observation_not_a_candidate(helper):
    before = json.loads(_run("recall", "billing deploy helm", "--json").stdout)["results"][0]
    _run("hook", "prompt", input=_prompt("remember that we deploy billing with Helm on Fridays"))

    def counted():
        got = json.loads(_run("show", before["id"], "--json").stdout)
        return got["observation_count"] == before["observation_count"] + 1

    assert wait(counted)
    assert _inbox() == []


def test_a_secret_in_a_statement_is_kept_nowhere(helper):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    _run("hook", "prompt", input=_prompt(f"Remember that my GitHub token is {token}"))
    _run("hook", "prompt", input=_prompt("remember that the CI runs on Tuesdays"))
    assert wait(lambda: len(_inbox()) == 1)  # the next one arrived: the first was handled
    everything = b"".join(p.read_bytes() for p in Path(helper).rglob("*") if p.is_file())
    assert token.encode() not in everything


def test_a_rule_let_in_without_review_stores_at_once(helper):
    assert _run("settings", "capture_auto_accept", "prefer,remember").returncode == 0
    _run("hook", "prompt", input=_prompt("I prefer tabs over spaces in Go files"))
    assert wait(lambda: "tabs over spaces" in _run("list").stdout)
    assert _inbox() == []
    assert _run("settings", "capture_auto_accept", "sometimes").returncode == 1  # not a rule


def test_capture_off_proposes_nothing(helper):
    assert _run("settings", "capture", "false").returncode == 0
    _run("hook", "prompt", input=_prompt("remember that the CI runs on Tuesdays"))
    _run("hook", "prompt", input=_prompt("billing deploy?"))  # served after the first
    assert _inbox() == []


def test_claude_code_post_tool_use_events_make_a_fixed_command_candidate(helper):
    def tool(command: str, event: str, response: dict | None, error: str | None = None):
        data = {
            "session_id": "t1",
            "cwd": str(REPO),
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "run it"},
        }
        if response is not None:
            data["tool_response"] = response
        if error is not None:
            data["error"] = error
        done = _run("hook", "tool", input=json.dumps(data))
        assert done.returncode == 0 and done.stdout == "", done.stdout

    failure = "Exit code 1\nModuleNotFoundError: No module named 'yaml'"
    tool("python -m tool", "PostToolUseFailure", None, failure)
    tool("pip install pyyaml", "PostToolUse", {"stdout": "ok", "stderr": "", "interrupted": False})
    tool("python -m tool", "PostToolUse", {"stdout": "done", "stderr": "", "interrupted": False})
    waiting = wait(_inbox)
    assert len(waiting) == 1 and waiting[0]["rule"] == "fixed-command"
    assert waiting[0]["keywords"] == ["ModuleNotFoundError"]
    assert "`pip install pyyaml`" in waiting[0]["text"]


def test_inbox_commands_say_what_is_wrong(helper):
    assert "empty" in _run("inbox").stdout
    nothing = _run("inbox", "accept")
    assert nothing.returncode == 1 and "or --all" in nothing.stderr
    unknown = _run("inbox", "accept", "feedbeef")
    assert unknown.returncode == 1 and "not waiting in the inbox: 'feedbeef'" in unknown.stderr


def test_gemini_after_tool_events_make_a_fixed_command_candidate(helper):
    def tool(command: str, content: str):
        data = {
            "session_id": "g1",
            "cwd": str(REPO),
            "hook_event_name": "AfterTool",
            "timestamp": "2026-11-26T08:00:00Z",
            "tool_name": "run_shell_command",
            "tool_input": {"command": command},
            "tool_response": {"llmContent": content, "returnDisplay": content, "error": None},
        }
        done = _run("hook", "tool", "--agent", "gemini", input=json.dumps(data))
        assert done.returncode == 0 and json.loads(done.stdout) == {}

    tool("npm test", "Output: npm ERR! code ERESOLVE\nExit Code: 1")
    tool("npm install --legacy-peer-deps", "Output: added 12 packages")
    tool("npm test", "Output: 3 passing")
    waiting = wait(_inbox)
    assert [c["keywords"] for c in waiting] == [["ERESOLVE"]]
    assert waiting[0]["agent"] == "gemini"


# ---- found by the red team (issue 25) --------------------------------------------------
def test_a_secret_elsewhere_in_the_prompt_is_not_kept_in_the_excerpt(helper):
    key, secret = "AKIAJ4K7Q2M9ZP3XW6TR", "q8Vt3Lw0ZbRk5Hn2Yc7Jd4Mf9Xs1Pa6Ge0Ui3Ko8"
    said = (
        "Remember that the staging database lives on pg-staging.internal port 5432. "
        f"Here is my AWS key {key} with secret {secret}, use it."
    )
    _run("hook", "prompt", input=_prompt(said))
    waiting = wait(_inbox)
    assert waiting and waiting[0]["text"].startswith("The staging database lives")
    assert key not in waiting[0]["said"] and "REDACTED" in waiting[0]["said"]
    everything = b"".join(p.read_bytes() for p in Path(helper).rglob("*") if p.is_file())
    assert key.encode() not in everything and secret.encode() not in everything


def test_a_statement_near_a_memory_but_saying_more_waits_and_is_stored_beside_it(helper):
    # web-02 is not web-01 seen again, however close their meanings
    _run(
        "hook", "prompt", input=_prompt("Remember that server web-01 has the IP address 10.0.0.11")
    )
    first = wait(_inbox)[0]
    assert _run("inbox", "accept", first["id"]).returncode == 0
    _run(
        "hook",
        "prompt",
        input=_prompt("Remember that server web-02 has the IP address 10.0.0.12", "s2"),
    )
    waiting = wait(_inbox)
    assert [c["text"] for c in waiting] == ["Server web-02 has the IP address 10.0.0.12."]
    assert waiting[0]["similar"]  # named, for the review
    done = _run("inbox", "accept", waiting[0]["id"])
    assert done.returncode == 0 and "Stored" in done.stdout, done.stdout
    listed = _run("list").stdout
    assert "web-01" in listed and "web-02" in listed


def test_words_once_rejected_are_not_stored_by_auto_accept_nor_proposed_in_other_punctuation(
    helper,
):
    _run("hook", "prompt", input=_prompt("Remember that the API runs on port 8080 in dev."))
    assert _run("inbox", "reject", wait(_inbox)[0]["id"]).returncode == 0
    assert _run("settings", "capture_auto_accept", "remember").returncode == 0
    _run("hook", "prompt", input=_prompt("remember that the API runs on port 8080 in dev!", "s2"))
    _run("hook", "prompt", input=_prompt("remember that the CI runs on Tuesdays", "s3"))
    assert wait(lambda: "Tuesdays" in _run("list").stdout)  # the later one was handled
    assert "8080" not in _run("list").stdout and _inbox() == []


def test_inbox_ids_ambiguous_or_repeated(helper):
    for n, text in enumerate(("the CI runs on Tuesdays", "the VPN config is in ops/vpn")):
        _run("hook", "prompt", input=_prompt(f"remember that {text}", f"s{n}"))
    waiting = wait(lambda: len(_inbox()) == 2 and _inbox())
    one = waiting[0]["id"]
    twice = _run("inbox", "accept", one, one[:6])
    assert twice.returncode == 0 and twice.stdout.count("Stored") == 1, twice.stdout
    empty = _run("inbox", "accept", "")
    assert empty.returncode == 1 and "not waiting in the inbox: ''" in empty.stderr


# ---- issue 42, item 1 --------------------------------------------------------------------
RULES_STORED = (
    "Always run ruff before committing.",
    "Never push directly to the main branch.",
    "We always squash merge pull requests.",
    "Remember that the CI runs on Tuesdays.",
)


def _observed() -> dict[str, int]:
    listed = json.loads(_run("list", "--json", "--limit", "100").stdout)
    return {m["text"]: m["observation_count"] for m in listed}


def test_gemini_first_prompt_is_searched_and_read_without_the_session_block_it_carries(
    helper, tmp_path
):
    # GIVEN memories stated like rules, handed to Gemini CLI by the session-start hook (in a
    # folder that is no repository: the block holds what is most prominent)
    for text in RULES_STORED:
        assert _run("remember", text).returncode == 0, text
    start = {
        "session_id": "g1",
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "timestamp": "2026-11-28T08:00:00Z",
        "source": "startup",
    }
    started = _run("hook", "session-start", "--agent", "gemini", input=json.dumps(start))
    block = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert all(text in block for text in RULES_STORED), block
    # AND a memory stored meanwhile (another agent wrote it), so the block does not hold it
    lasagne = "Grandma's lasagne needs three layers of béchamel"
    assert _run("remember", lasagne).returncode == 0
    before = _observed()
    # WHEN the first prompt comes as Gemini CLI sends it: the block before the person's words
    said = (
        "From now on, write all new scripts in TypeScript. "
        "How many layers of béchamel does grandma's lasagne need?"
    )
    event = {**start, "hook_event_name": "BeforeAgent"}
    event["prompt"] = f"<hook_context>{block}</hook_context>\n\n{said}"
    done = _run("hook", "prompt", "--agent", "gemini", input=json.dumps(event))
    # THEN the memory the question is about is handed over
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout).get("hookSpecificOutput", {}).get("additionalContext", "")
    assert "béchamel" in added, done.stdout
    # AND the person's statement waits for review, none of the block's
    waiting = wait(lambda: [c for c in _inbox() if "TypeScript" in c["text"]] and _inbox())
    assert [c["text"] for c in waiting] == ["From now on, write all new scripts in TypeScript."]
    assert "<hook_context>" not in waiting[0]["said"] and "ruff" not in waiting[0]["said"]
    # AND the block's memories were not counted as observed again
    assert _observed() == before


@pytest.mark.parametrize(
    ("prompt", "own"),
    [
        # Gemini CLI's first prompt: the session-start context, then the person's words
        ("<hook_context>## Memories\n\nAlways run ruff.</hook_context>\n\nfix it", "fix it"),
        ("<session_context>\nThis is the Gemini CLI.\n</session_context>\nhi there", "hi there"),
        # what Claude Code marks as its own, wherever it is
        ("deploy it <system-reminder>Always x.</system-reminder> now", "deploy it  now"),
        ("a<user-prompt-submit-hook>b</user-prompt-submit-hook>", "a"),
        # a block cut off (a prompt longer than what is read) runs to the end
        ("ask <hook_context>Always run ruff before committing.", "ask"),
        ("<hook_context>" * 3, ""),
        # a person's own text is left exactly as typed
        ("  why does <div> break?  ", "  why does <div> break?  "),
    ],
)
def test_what_an_agent_injected_into_a_prompt_is_not_the_persons_words(prompt, own):
    assert own_words(prompt) == own
    assert statements(own_words(prompt)) == statements(own)


def test_a_clause_after_no_worries_is_not_glued_to_it():
    # "no worries" forbids nothing: what follows stays a sentence of its own (helper-59)
    got = rules.sentences("No worries; use the staging database for all integration tests.")
    assert got == ["No worries;", "use the staging database for all integration tests."]
