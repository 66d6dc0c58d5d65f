"""The capture inbox: what agents' hooks found a user stating as lasting ("remember that
…", "from now on …", a command that failed and then worked), held for review before it
becomes a memory (issue 25, item 3).

A candidate proposed again while it waits counts once more (`seen`). One the user rejected
keeps only its text's hash, so the same words are not proposed again; its text is gone.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field

from app.core.errors import InputError, NotFoundError
from app.core.memory import content_hash
from app.core.storage.db import Database, now

SAID_CHARS = 500  # of the prompt a candidate came from, shown beside it for review


@dataclass
class Candidate:
    """A statement waiting in the inbox."""

    text: str
    rule: str  # which rule found it (`app.agents.rules.RULES`)
    keywords: list[str] = field(default_factory=list)  # tags it gets (an error's identifier)
    agent: str = ""  # claude, codex, gemini, cursor
    project: str | None = None
    session: str = ""
    said: str = ""  # what the user wrote it in (an excerpt, secrets redacted)
    similar: str | None = None  # a memory it nearly duplicates (saying something more)
    id: str = ""
    created_at: str = ""
    seen: int = 1
    source: str = ""  # the agent's file it was imported from ('' for a hook's capture)
    said_at: str = ""  # when it was said there, if known

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "text": self.text,
            "rule": self.rule,
            "keywords": self.keywords,
            "agent": self.agent,
            "project": self.project,
            "said": self.said,
            "created_at": self.created_at,
            "seen": self.seen,
            "similar": self.similar,
            "session": self.session,
            "source": self.source,
            "said_at": self.said_at,
        }


_COLUMNS = (
    "id, text, rule, keywords, agent, project, session, said, created_at, seen, similar, "
    "source, said_at"
)
_PUNCTUATION = re.compile(r"[^\w]+")


def words_hash(text: str) -> str:
    """The hash that says two candidates are the same words (case, spacing and
    punctuation aside: "…in dev." and "…in dev!" are one)."""
    return content_hash(_PUNCTUATION.sub(" ", text))


SUPERSEDES = "supersedes"  # the rule of a proposal that a memory supersedes another


def _digest(text: str, rule: str = "", similar: str | None = None) -> str:
    """What a candidate is known by: its words; a proposal to supersede, its words and the
    memory it would supersede (refused, that pair is never proposed again)."""
    return words_hash(f"{SUPERSEDES} {similar} {text}" if rule == SUPERSEDES else text)


def _candidate(row: tuple) -> Candidate:
    id_, text, rule, keywords, agent, project, session, said, created_at, seen, similar = row[:11]
    try:
        words = [str(w) for w in json.loads(keywords or "[]")]
    except ValueError:
        words = []
    return Candidate(
        text, rule, words, agent, project, session, said, similar, id_, created_at, seen,
        row[11], row[12],
    )  # fmt: skip


class Inbox:
    """The `inbox` table (migration 11): pending candidates and rejected hashes."""

    def __init__(self, db: Database):
        self.db = db

    def propose(self, candidate: Candidate) -> str:
        """Put a candidate in: "proposed", "again" (it waits already: counted once more) or
        "rejected" (the user said no to these words before: nothing kept)."""
        digest = _digest(candidate.text, candidate.rule, candidate.similar)
        with self.db.write() as conn:
            rows = conn.execute(
                "SELECT id, status FROM inbox WHERE text_hash = ?", (digest,)
            ).fetchall()
            if rows and rows[0][1] == "rejected":
                return "rejected"
            if rows:
                conn.execute("UPDATE inbox SET seen = seen + 1 WHERE id = ?", (rows[0][0],))
                candidate.id = rows[0][0]
                return "again"
            candidate.id = secrets.token_hex(8)
            candidate.created_at = now()
            conn.execute(
                "INSERT INTO inbox (id, text_hash, status, text, rule, keywords, agent, "
                "project, session, said, created_at, seen, similar, source, said_at) "
                "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (
                    candidate.id,
                    digest,
                    candidate.text,
                    candidate.rule,
                    json.dumps(candidate.keywords),
                    candidate.agent,
                    candidate.project,
                    candidate.session,
                    candidate.said[:SAID_CHARS],
                    candidate.created_at,
                    candidate.similar,
                    candidate.source,
                    candidate.said_at,
                ),
            )
        return "proposed"

    def from_source(self, source: str) -> list[Candidate]:
        """The candidates waiting that were imported from the file `source`."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM inbox WHERE status = 'pending' AND source = ? ORDER BY rowid",
            (source,),
        )
        return [_candidate(r) for r in rows]

    def imported(self, source: str, text: str) -> bool:
        """Whether these words were taken from the file `source` before (`mnemo agents
        import` run again adds nothing and counts nothing twice)."""
        rows = self.db.query(
            "SELECT 1 FROM agent_imports WHERE source = ? AND text_hash = ?",
            (source, words_hash(text)),
        )
        return bool(rows)

    def record_import(self, source: str, text: str) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO agent_imports (source, text_hash, at) VALUES (?, ?, ?)",
                (source, words_hash(text), now()),
            )

    def rejected(self, text: str, superseding: str | None = None) -> bool:
        """Whether the user said no to these words before (as superseding that memory)."""
        digest = _digest(text, SUPERSEDES, superseding) if superseding else words_hash(text)
        rows = self.db.query(
            "SELECT 1 FROM inbox WHERE text_hash = ? AND status = 'rejected'", (digest,)
        )
        return bool(rows)

    def pending(self, limit: int = 200, offset: int = 0) -> list[Candidate]:
        """Candidates waiting for review, newest first."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM inbox WHERE status = 'pending' "
            "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [_candidate(r) for r in rows]

    def count(self) -> int:
        return int(self.db.query("SELECT count(*) FROM inbox WHERE status = 'pending'")[0][0])

    def get(self, ids: list[str]) -> list[Candidate]:
        """The pending candidates with these ids (or unique id prefixes, as `Store.get`
        reads a memory's), each once, in that order; NotFoundError naming those not
        waiting, InputError for a prefix that fits several."""
        found: list[Candidate] = []
        missing = []
        for given in dict.fromkeys(ids):
            start = given.strip().lower()
            rows = (
                self.db.query(
                    f"SELECT {_COLUMNS} FROM inbox WHERE status = 'pending' "
                    "AND id >= ? AND id < ? LIMIT 2",
                    (start, start + "\uffff"),
                )
                if start.isalnum()
                else []
            )
            if len(rows) > 1:
                raise InputError(f"{given!r} is the start of several candidates: give more")
            if not rows:
                missing.append(repr(given))
            elif all(c.id != rows[0][0] for c in found):
                found.append(_candidate(rows[0]))
        if missing:
            raise NotFoundError(f"not waiting in the inbox: {', '.join(missing)}")
        return found

    def remove(self, ids: list[str]) -> None:
        """Take candidates out (accepted: they are memories now)."""
        with self.db.write() as conn:
            for id_ in ids:
                conn.execute("DELETE FROM inbox WHERE id = ?", (id_,))

    def reject(self, ids: list[str]) -> None:
        """Say no to candidates: their text goes, their hash stays (not proposed again)."""
        with self.db.write() as conn:
            for id_ in ids:
                conn.execute(
                    "UPDATE inbox SET status = 'rejected', text = '', said = '', keywords = '[]' "
                    "WHERE id = ?",
                    (id_,),
                )
