"""Finds secrets in text so Mnemo never stores them: keys, tokens, passwords in URLs.

Used by every way in (CLI, MCP, clipboard): the caller either refuses the text or stores
`redact(text)`, where each secret is replaced by `[REDACTED:kind]`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, flags))
    for kind, pattern, flags in (
        (
            "private key",
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            0,
        ),
        ("AWS access key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA)[A-Z0-9]{16}\b", 0),
        ("AWS secret key", r"(?i)aws_?secret_?access_?key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}", 0),
        (
            "GitHub token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
            0,
        ),
        ("GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b", 0),
        ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b", 0),
        ("Slack webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+", 0),
        ("Stripe key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b", 0),
        ("OpenAI/Anthropic key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{32,}\b", 0),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b", 0),
        ("JWT", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
        ("password in URL", r"\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:[^\s@/]{3,}@[^\s/]+", re.I),
    )
)
# key = value where the key names a secret and the value looks random.
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Za-z0-9_.\-]*(?:secret|passw(?:or)?d|pwd|token|api[_\-]?key|access[_\-]?key|"
    r"private[_\-]?key|auth|credential)[A-Za-z0-9_.\-]*)\s*[:=]\s*['\"]?([^\s'\"]{8,})"
)


@dataclass(frozen=True)
class Finding:
    """One secret: what kind, and where in the text."""

    kind: str
    start: int
    end: int


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


def _looks_random(value: str) -> bool:
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    return len(value) >= 8 and entropy(value) >= 3.0 and classes >= 2


def scan(text: str) -> list[Finding]:
    """Every secret found, in order, without overlaps."""
    found: list[Finding] = []
    for kind, pattern in _PATTERNS:
        found += [Finding(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    for m in _ASSIGNMENT.finditer(text):
        if _looks_random(m.group(2)):
            found.append(Finding(f"value of {m.group(1)}", m.start(2), m.end(2)))
    found.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for f in found:
        if merged and f.start < merged[-1].end:
            continue
        merged.append(f)
    return merged


def redact(text: str, findings: list[Finding] | None = None) -> str:
    """The text with every secret replaced by `[REDACTED:kind]`."""
    findings = scan(text) if findings is None else findings
    out, last = [], 0
    for f in findings:
        out += [text[last : f.start], f"[REDACTED:{f.kind}]"]
        last = f.end
    out.append(text[last:])
    return "".join(out)


def describe(findings: list[Finding]) -> str:
    """'an AWS access key and a JWT' style summary."""
    kinds = list(dict.fromkeys(f.kind for f in findings))
    return ", ".join(kinds)
