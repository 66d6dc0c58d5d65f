"""Capture by meaning (issue 42): a lasting statement said plainly, without the words the
rules look for, is proposed when the bundled model's vectors say it lasts; without that
model (another one, none, a failure), capture is the rules alone. How well it does on the
corpus: test_capture_corpus.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.agents import history, meaning, rules
from tests.word_model import WordModel

_SECOND_LANGUAGE = "English is not my first language, if my question is unclear just ask back."


@pytest.mark.parametrize(
    ("prompt", "found"),
    [
        # GIVEN a fact of the setup said plainly, before or after the task at hand
        (
            "Prod runs on Kubernetes 1.29 in eu-west-1. Fix the login bug.",
            [("plain", "Prod runs on Kubernetes 1.29 in eu-west-1.")],
        ),
        ("The staging DB is on port 5433.", [("plain", "The staging DB is on port 5433.")]),
        # AND with a rule's statement: both, in the order they were said
        (
            "Integration tests need the docker compose stack up. "
            "Remember that the CI runs on Tuesdays.",
            [
                ("plain", "Integration tests need the docker compose stack up."),
                ("remember", "The CI runs on Tuesdays."),
            ],
        ),
        # AND a noun after a comma that reads like a task verb ("read replicas", "read-only"),
        # and a "just" of a habit, not of a moment (a third writer's corpus, more.jsonl)
        (
            "prod db is aurora postgres, read replicas are behind the -ro endpoint. "
            "write the monthly revenue query",
            [("plain", "Prod db is aurora postgres, read replicas are behind the -ro endpoint.")],
        ),
        (_SECOND_LANGUAGE.lower(), [("plain", _SECOND_LANGUAGE)]),
        # AND a fact with a request after it, a contrast, a reason, a "when …, do …" habit:
        # the wording rules read these as the work of now; meaning judges them
        (
            "I mostly write Go, so explain Rust code in terms of Go.",
            [("plain", "I mostly write Go, so explain Rust code in terms of Go.")],
        ),
        (
            "I know SQL well but Python only a little.",
            [("plain", "I know SQL well but Python only a little.")],
        ),
        (
            "When you write SQL for me, put the keywords in capitals.",
            [("plain", "When you write SQL for me, put the keywords in capitals.")],
        ),
        # AND without the lead that frames it, two statements joined by ", and" apart
        (
            "Context about me: I'm a data engineer at a bank, and we deploy everything "
            "with Terraform.",
            [
                ("plain", "I'm a data engineer at a bank."),
                ("plain", "We deploy everything with Terraform."),
            ],
        ),
        (
            "Quick reminder that the staging database is read-only for the app user.",
            [("plain", "The staging database is read-only for the app user.")],
        ),
        # (a part of the setup named before a colon is no framing lead)
        (
            "Backend: Laravel 11 on Forge, MySQL 8.",
            [("plain", "Backend: Laravel 11 on Forge, MySQL 8.")],
        ),
        # AND under a lead of the moment, or in a sentence of the moment as a whole: nothing
        # (a red team's, helper-56)
        ("The rules for this PR: no new dependencies and no schema changes.", []),
        ("Conventions for this spike: we skip tests and we hardcode the config.", []),
        ("The demo is tomorrow, and the slides live in docs/demo.", []),
        # AND what looks like it but is of this moment, asked or guessed: nothing
        ("I just pushed the fix to main, the staging DB is on port 5433.", []),
        ("haha I always forget that, my bad", []),  # (a new user's walkthrough, helper-54)
        ("npm install fails with:\nnpm ERR! code ERESOLVE\nFound: react@18.2.0", []),
        ("The test DB is on port 5433 in this log.", []),
        ("Is the staging DB on port 5433 or 5432?", []),
        ("Maybe we should move the logs to Loki at some point.", []),
        ("The README says the staging DB is on port 5433.", []),
        ("ERROR 10:14:02 worker-2 ConnectionRefusedError: port 5433", []),
        # GIVEN a standing fact, then ", so" and a request of the task at hand: the fact
        # alone; a request that is a habit too stays with its reason (two more writers)
        (
            "every client project uses Pest, not PHPUnit directly, so write the tests in Pest "
            "syntax",
            [("plain", "Every client project uses Pest, not PHPUnit directly.")],
        ),
        (
            "I work from 8 to 16 Italian time (CET), so check the job I launched at 15.",
            [("plain", "I work from 8 to 16 Italian time (CET).")],
        ),
        # AND what follows from it in passing, not a request: the fact alone; "so that" is a
        # purpose, no consequence (thirteen writers, each left out in turn)
        (
            "I'm on call every other week, so the pager might interrupt our session.",
            [("plain", "I'm on call every other week.")],
        ),
        (
            "The API gateway strips the auth header on internal routes so you won't see it in "
            "the logs.",
            [("plain", "The API gateway strips the auth header on internal routes.")],
        ),
        (
            "We pin every dependency so that builds are reproducible.",
            [("plain", "We pin every dependency so that builds are reproducible.")],
        ),
        (
            "I review everything on a small laptop screen, so keep lines under 100 characters",
            [
                (
                    "plain",
                    "I review everything on a small laptop screen, so keep lines under 100 "
                    "characters.",
                )
            ],
        ),
        (  # (a general request after ", so" stays with the rules too; a review, helper-66)
            "Our backend is Django 4.2, so use class-based views for new endpoints.",
            [("plain", "Our backend is Django 4.2, so use class-based views for new endpoints.")],
        ),
        (  # ("embed" is no verb in the past: nothing was done, the request lasts with it)
            "We embed the docs with MiniLM, so keep chunks under 512 tokens.",
            [("plain", "We embed the docs with MiniLM, so keep chunks under 512 tokens.")],
        ),
        # AND what a time word is taken to mean is no time of the moment
        (
            "im in CET, so when i say tonight for cron stuff that means CET not UTC",
            [("plain", "Im in CET, so when i say tonight for cron stuff that means CET not UTC.")],
        ),
    ],
)
def test_a_plain_statement_is_proposed_by_its_meaning(prompt, found, embedder):
    got = meaning.statements(prompt, embedder)
    assert [(s.rule, s.text) for s in got] == found


class _Failing(WordModel):
    def decode(self, sequences, interactive=False, keep=0):
        raise RuntimeError("llama_decode returned -3")


SAID = "We pin every dependency to an exact version. Fix the login bug. Always run ruff."


def test_without_the_model_it_was_fitted_for_capture_is_the_rules_alone(word_model, caplog):
    rules_alone = rules.statements(SAID)
    assert [s.rule for s in rules_alone] == ["always-never"]
    # no model loaded, or another model than the classifier's (its vectors mean other things)
    assert meaning.statements(SAID, None) == rules_alone
    assert meaning.statements(SAID, word_model) == rules_alone
    # AND a model that fails while embedding: the rules' statements, and nothing alarming
    failing = _Failing()
    sure = meaning.Classifier(failing.info.model_id, np.zeros(64, np.float32), 10.0, 0.5)
    assert meaning.statements(SAID, failing, sure) == rules_alone
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]


def test_a_missing_or_damaged_weights_file_turns_meaning_off(tmp_path):
    assert meaning.Classifier.load(tmp_path / "none.json") is None
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"model_id": "x", "weights": [0.1, ')
    assert meaning.Classifier.load(damaged) is None
    assert meaning.Classifier.load() is not None  # the shipped one


def test_meaning_adds_to_the_rules_in_the_prompts_order_and_at_most_three(word_model):
    # GIVEN a classifier for this model that finds every plain sentence lasting
    sure = meaning.Classifier(word_model.info.model_id, np.zeros(64, np.float32), 10.0, 0.5)
    said = (
        "Our logs go to Loki. Fix the login bug. Always run ruff. Secrets live in Vault. "
        "Is prod on Kubernetes? The queue is Kafka. Emails go through Postmark."
    )
    got = meaning.statements(said, word_model, sure)
    # THEN the plain statements and the rule's, as said, never the task or the question
    assert [(s.rule, s.text) for s in got] == [
        ("plain", "Our logs go to Loki."),
        ("always-never", "Always run ruff."),
        ("plain", "Secrets live in Vault."),
    ]
    # AND a slash command is no prompt
    assert meaning.statements("/compact Our logs go to Loki.", word_model, sure) == []


def test_a_rules_statement_is_never_crowded_out_by_meanings_parts(word_model):
    # GIVEN three plain parts in one sentence before a rule's statement (a review, helper-59)
    sure = meaning.Classifier(word_model.info.model_id, np.zeros(64, np.float32), 10.0, 0.5)
    said = (
        "Context about me: I'm a PhD student in chemistry, and I run everything on the HPC "
        "cluster, and we deploy from main every night. Always run ruff before committing."
    )
    got = [(s.rule, s.text) for s in meaning.statements(said, word_model, sure)]
    # THEN the rule's statement is kept, and meaning fills what room is left, as said
    assert len(got) == rules.MOST_PER_PROMPT
    assert got[-1] == ("always-never", "Always run ruff before committing.")
    assert got[0] == ("plain", "I'm a PhD student in chemistry.")


@pytest.mark.parametrize(
    ("sentence", "judged"),
    [
        # two clauses with a subject each, apart; a list joined by "and" stays whole
        (
            "I'm a PhD student in chemistry, and I run everything on the HPC cluster.",
            ["I'm a PhD student in chemistry", "I run everything on the HPC cluster."],
        ),
        ("I run pytest with coverage and all warnings as errors.", None),
        ("We choose between Postgres and the managed MySQL instance for new services.", None),
        # a framing lead goes; a subject that starts like one stays
        ("Context about me: I'm a backend developer.", ["I'm a backend developer."]),
        ("Reminder emails go out at 9 UTC from the cron box.", None),
        ("Release notes go in docs/changes: one line per change, newest first.", None),
        # a reason before the request, a second thought after a dash: apart
        (
            "since the client host is shared cPanel hosting, give me the steps for its UI",
            ["the client host is shared cPanel hosting", "give me the steps for its UI"],
        ),
        (
            "we're on Kotlin 2.0 with the K2 compiler - why does this smart cast fail now",
            ["we're on Kotlin 2.0 with the K2 compiler", "why does this smart cast fail now"],
        ),
        ("Use ruff - it is fast and strict.", None),  # (a part under four words)
    ],
)
def test_parts_take_off_a_framing_lead_and_split_clauses_with_their_own_subject(sentence, judged):
    assert meaning.parts(sentence) == (judged or [sentence])


@pytest.mark.parametrize(
    "sentence",
    [
        "Is the worker on systemd?",
        "who owns the billing service these days",
        "The build was slow yesterday.",
        "If we moved to Kubernetes, the cron jobs would break.",
        "Anna wrote in the review that we use tabs.",
        "FAILED tests/test_api.py::test_create - AssertionError",
        "Deploy the branch to staging.",
        "Switch to the payments branch and run the tests.",
        "Update the changelog for the release.",
        # a request after what just arrived, a reason that is an event, an order after "but",
        # a step of the work, "prefer" of one case (a red team, helper-56)
        "Prod has the new config, so restart the worker pods.",
        "Since the refactor landed, the import paths in the CLI need updating.",
        "The design team wants rounded corners but keep the current colors.",
        "When you get to the auth module, skip the legacy handlers.",
        "When the build finishes, deploy it to staging.",
        "Prefer smaller commits in this refactor.",
        "Prefer small modules in this reporting service.",
        "When does the nightly build run, I forget",
        "Default to the staging URL in the new script.",
        "The repo has two copies of utils.py, merge them.",
        "The importer is slow, fix pls",
        "the docs folder is out of date, update it",
        "the staging cluster is down again",
        "when does the nightly job run",
        "Fix it.",
        # a reminder of one step, a rule for one screen, someone else's words, a stack frame,
        # a task after "so" (two more writers' corpora, more4.jsonl)
        "Don't forget to run it with --check first on fra2.",
        "Remember to set the layer on the new prefab before you wire it up.",
        "For this screen always show the light theme.",
        "The PM wants us to call them workspaces instead of projects.",
        "Flutter docs say impeller is the default on iOS now.",
        "at org.apache.spark.sql.execution.joins.HashedRelation.apply(HashedRelation.scala:426)",
        "So just edit the file in docs/, not in versioned_docs/.",
        "Please check the wording of the new tutorial against those rules.",
        # another's view, a thank-you or a sigh, a question inside, an error line, this chat
        "A teammate insists we never use git rebase.",
        "My colleague say we should migrate to KMP for the shared code.",
        "I read in a blog that Flutter is better than native for a small team.",
        "Ok that makes sense now, thx.",
        "I hate R factors so much.",
        "Every time i run `make test` it asks for my sudo password, why.",
        "Snowflake credits are over budget, which queries are expensive, how do i find out.",
        "Error: Unable to find Node version '22.x' for platform linux.",
        "/bin/bash^M: bad interpreter: No such file or directory.",
        "For the rest of this chat just give me code, no explanations.",
        # an order whose reason is the work at hand, "it's <doing>", a service's state, a
        # past "when", what just arrived (a red team, helper-65)
        "write it in plain JS, we can port it to TypeScript later",
        "turn off the cache, it's hiding my changes",
        "it's only happening for users in the EU region",
        "Jenkins is offline.",
        "were not on the release branch when you ran that command",
        "staging has the new schema from the migration",
        # (a review, helper-66)
        "Don't push to main, we're in the middle of a release.",
        "Keep the answer short, I'm between meetings.",
        "Ignore the warnings, they are harmless here.",
        "I'm on mobile.",
        "I don't know why the tests hang on CI.",
        "We were on call all night.",
        "We are migrating off Heroku this quarter.",
    ],
)
def test_questions_one_offs_guesses_quotes_logs_and_tasks_are_not_plain(sentence):
    assert not meaning.plain(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Commit messages follow Conventional Commits.",
        "I'm on a MacBook with an M2.",
        "Explain regexes when you write them.",
        "We pin Node 20 since the build image ships it.",
        "When you add a migration, include a rollback step.",
        "I'm on an old laptop, so keep the docker setups small.",
        # a habit's own verb, a noun that reads like an order, a word set off before it
        "Prefer dataclasses over dicts for config objects.",
        "Default to UTC for every timestamp you store.",
        "Test fixtures always live under tests/data.",
        "Wait, we moved every service to Postgres last year.",
        "Update: the mobile app plan is dropped, we are web-only.",
        "When you add a dependency, pin it to an exact version.",
        "Prefer libraries that have type hints.",
        "We release on Tuesdays since the ops team is on call then.",
        "Secrets live in Vault under kv/platform.",
        # an order with its reason, "it's" of the setup, "CI is X", "were not" for "we're
        # not", a time word of what a word means (two more writers' corpora)
        "don't touch anything under vendor/, another team owns it",
        "keep answers short, I read them on my phone",
        "it's actually postgres 15 on RDS, not 13",
        "CI is Buildkite.",
        "were not on CentOS 7 anymore, everything is Rocky 9",
        "my timezone is CET, so when I say 'tonight' I mean 20:00 Berlin time",
        "In this repo we never use any in TypeScript.",
        "the dbt project runs in dbt Cloud, the prod job is daily at 05:00 UTC.",
        "Prod runs Kubernetes.",
        "In this workspace we use uv, not pip.",
        "when I say prod I mean the eu-west-1 cluster",
        # (a review, helper-66: gates wider than they meant)
        "Our team wants PRs kept under 400 lines.",
        "Releases are tagged on the release/x.y branch only.",
        "Thanks to the SOC2 audit, every secret lives in Vault.",
        "Our mobile app must work offline.",
        "Keep SQL in the repository layer, this keeps the handlers thin.",
        "In this repository, tests live next to the code.",
        "It is Postgres 15 on RDS, not 13.",
        "explain shell commands before running them, I'm still learning bash",
    ],
)
def test_statements_and_habits_are_plain(sentence):
    assert meaning.plain(sentence)


def test_an_imported_transcript_proposes_its_plain_statements_with_the_model(tmp_path, embedder):
    # GIVEN a Claude Code transcript in which a fact of the setup was said plainly
    path = tmp_path / "c1.jsonl"
    line = {"type": "user", "cwd": "/home/u/shop", "sessionId": "c1",
            "timestamp": "2026-11-20T09:00:00Z",
            "message": {"role": "user", "content": "Secrets live in Vault under kv/platform. "
                        "Add the Stripe key to the worker."}}  # fmt: skip
    path.write_text(json.dumps(line) + "\n")
    source = history.Source("claude", path, "claude")
    # WHEN it is read with the model THEN the fact is proposed; without it, nothing
    said, bad = history.read(source, embedder)
    assert [(s.rule, s.text) for s in said] == [
        ("plain", "Secrets live in Vault under kv/platform.")
    ]
    assert bad == 0 and said[0].session == "c1"
    assert history.read(source)[0] == []


@pytest.mark.parametrize(
    ("clause", "apart"),
    [
        # a request after ", so", and (thirteen writers, each left out in turn) what follows
        # in passing: the reason and what follows, each judged
        (
            "every client project uses Pest, so write the tests in Pest syntax",
            ("every client project uses Pest", "write the tests in Pest syntax"),
        ),
        (
            "Our database is Postgres 15 on RDS, so concurrent index builds are fine.",
            ("Our database is Postgres 15 on RDS", "concurrent index builds are fine."),
        ),
        (
            "I'm on call every other week so the pager might interrupt us",
            ("I'm on call every other week", "the pager might interrupt us"),
        ),
        # a purpose, a degree, "or so", "and so", "even so", "if so": no consequence (the
        # first form of the change cut "every hour or so"; a red team, helper-69)
        ("We pin every dependency, so that builds are reproducible.", None),
        ("Releases go out every hour or so and the cache warms in between.", None),
        ("We cut a release every week or so and the changelog goes with it.", None),
        ("We write the tests first and so every PR includes them.", None),
        ("The API is slow, even so the dashboard polls it every minute.", None),
        ("Nothing has been decided yet, so far we only have a draft.", None),
        # a "so" of degree, and the "so" after it that leads a request (a review, helper-70)
        ("The staging database is so small that every query is fast.", None),
        ("We deploy so often that nobody tags anything by hand.", None),
        (
            "Our public API is not so stable, so retry every call to it",
            ("Our public API is not so stable", "retry every call to it"),
        ),
    ],
)
def test_what_follows_so_is_judged_apart_from_its_reason(clause, apart):
    assert meaning.so_apart(clause) == apart
