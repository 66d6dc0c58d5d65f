"""Detection quality of `app.core.secrets` on a corpus of fake secrets and risky-looking texts.

Issue 8: at least 95 % of secrets caught, at most 2 % of benign texts flagged, and a redacted
text keeps everything but the secrets. The corpus and how it was made: data/secrets/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.secrets import Finding, describe, redact, scan

DATA = Path(__file__).parent / "data" / "secrets"


def _load(*names: str) -> list[dict]:
    return [json.loads(line) for name in names for line in (DATA / name).open(encoding="utf-8")]


SECRETS = _load("secrets.jsonl", "holdout_secrets.jsonl")
BENIGN = _load("benign.jsonl", "holdout_benign.jsonl")
# Issue 21: written after those rules, by someone who had not seen them (first run: 74.9 %
# caught, 1.68 % flagged; data/secrets/README.md), then the rules were extended against it
# A second and a third, each written after the rules had been extended (first runs: 91.6 %
# caught and 1.21 % flagged; 92.3 % and 3.33 %), then the rules were extended again
FRESH_SECRETS = _load("fresh_secrets.jsonl", "holdout2_secrets.jsonl", "holdout3_secrets.jsonl")
FRESH_BENIGN = _load("fresh_benign.jsonl", "holdout2_benign.jsonl", "holdout3_benign.jsonl")


def test_the_corpus_is_as_big_and_varied_as_the_issue_asks():
    assert len(SECRETS) >= 80 and len({s["kind"] for s in SECRETS}) >= 40
    assert len(BENIGN) >= 250
    assert all(s["secret"] in s["text"] for s in SECRETS)


def test_at_least_95_percent_of_secrets_are_caught():
    missed = [f"{s['kind']}: {s['text'][:80]}" for s in SECRETS if not scan(s["text"])]
    assert len(missed) <= 0.05 * len(SECRETS), "\n".join(missed)


def test_at_most_2_percent_of_benign_texts_are_flagged():
    flagged = [f"{describe(scan(b['text']))}: {b['text'][:80]}" for b in BENIGN if scan(b["text"])]
    assert len(flagged) <= 0.02 * len(BENIGN), "\n".join(flagged)


def test_the_fresh_corpora_are_caught_at_97_percent_with_at_most_1_percent_flagged():
    assert len(FRESH_SECRETS) >= 1000 and len({s["kind"] for s in FRESH_SECRETS}) >= 500
    missed = [f"{s['kind']}: {s['text'][:80]}" for s in FRESH_SECRETS if not scan(s["text"])]
    flagged = [b["text"][:80] for b in FRESH_BENIGN if scan(b["text"])]
    assert len(missed) <= 0.03 * len(FRESH_SECRETS), "\n".join(missed)
    assert len(flagged) <= 0.01 * len(FRESH_BENIGN), "\n".join(flagged)


def test_redact_removes_every_caught_secret_and_the_result_scans_clean():
    for s in SECRETS + FRESH_SECRETS:
        if not scan(s["text"]):
            continue  # counted by the rate above
        redacted = redact(s["text"])
        assert s["secret"] not in redacted, redacted
        assert "[REDACTED:" in redacted
        assert scan(redacted) == [], redacted


def test_redact_keeps_the_text_around_each_secret():
    # GIVEN a line with two secrets and prose around them
    text = (
        "DB_PASSWORD=Tq7#mZp2!vLx9 and the bot uses ghp_"
        + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        + "."
    )
    # WHEN it is redacted
    redacted = redact(text)
    # THEN only the values are replaced, each by its kind
    assert redacted == ("DB_PASSWORD=[REDACTED:password] and the bot uses [REDACTED:GitHub token].")


@pytest.mark.parametrize(
    "text",
    [
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
        'password = os.environ["DB_PASSWORD"]',
        "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
        "api_key = '<your-api-key>'",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "mysql -u root -p",
        "postgres://localhost/db",
        "The office wifi password is on the fridge",
        "Fixed in commit 3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c.",
    ],
)
def test_examples_placeholders_and_ordinary_code_are_not_secrets(text):
    assert scan(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("mysql -u root -pS3cr3t", "S3cr3t"),
        ("sshpass -p 'S3cr3t!' ssh deploy@10.0.0.5", "S3cr3t!"),
        ("curl -u user:pass-W0rd-91 https://ci.acme.io", "pass-W0rd-91"),
        ("my password is hunter2-Correct!", "hunter2-Correct!"),
        ("REDIS_URL=redis://:SEHIymArvrzPcYhB9z@cache:6379/0", "SEHIymArvrzPcYhB9z"),
    ],
)
def test_passwords_on_command_lines_in_urls_and_in_prose_are_found(text, value):
    found = scan(text)
    assert [text[f.start : f.end] for f in found] == [value]


def test_findings_are_ordered_and_never_overlap():
    text = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1XzEifQ.c2lnbmF0dXJlX3JhbmRvbQ"
    found = scan(text)
    assert len(found) == 1 and isinstance(found[0], Finding)
    assert describe(found) == "a " + found[0].kind  # "a JWT", read in a sentence
    assert all(a.end <= b.start for a, b in zip(found, found[1:], strict=False))


def test_a_description_reads_as_words_with_their_articles():
    token = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
    assert describe(scan(f"deploy {token}")) == "a GitHub token"
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1XzEifQ.c2lnbmF0dXJlX3JhbmRvbQ"
    assert describe(scan(f"{token} and Bearer {jwt}")) == "a GitHub token and a JWT"


@pytest.mark.parametrize("length", [40, 199, 200, 201, 313, 2_000])
@pytest.mark.parametrize(
    "template",
    [
        "AWS_SESSION_TOKEN={}",
        'export API_TOKEN="{}"',
        "password: {}",
        "Authorization: Bearer {}",
        "postgres://app:{}@db.internal:5432/orders",
    ],
)
def test_redaction_covers_the_whole_secret_whatever_its_length(template, length):
    # The red team (issue 21): rules stopped at 200 characters, so a 313-character session
    # token kept its last 113 in the "redacted" copy
    import base64
    import random

    rng = random.Random(length)
    token = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(length))).decode()
    token = token.replace("+", "x").replace("/", "y").rstrip("=")[:length]
    text = f"deploy notes: {template.format(token)} (rotate monthly)"
    redacted = redact(text)
    assert "[REDACTED:" in redacted, text[:80]
    assert token[-12:] not in redacted and token[:12] not in redacted
    assert redacted.endswith("(rotate monthly)")
