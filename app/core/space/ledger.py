"""What this device took of the other devices' lines in a space (issue 45, ADR 0026
addendum "what a device took, it keeps"): per author and number, the line's hash and its
sealed text (table `space_taken`, m021).

A device's file is written by that device alone, but anyone who can write the folder can
put back an older copy of it, and a removed member still holds the keys of the epochs it
was in and may sign a new line with an old number (at or under its removal's `upto`). So
what a device took stays what it takes: a line whose number it took with another hash is
refused and the kept one used, and the lines a file lost (put back older, cut short or
deleted) are used from here, each said once (`lines.read`). A member's own dropping of its
lines (compaction: numbers below its last, never reused) keeps only their hashes here.
"""

from __future__ import annotations

from pathlib import Path

from app.core.space import lines
from app.core.space.membership import Members
from app.core.storage.db import Database


class Ledger:
    """The lines this device took in its spaces, by author and number."""

    def __init__(self, db: Database):
        self._db = db

    def kept(self, space: str) -> lines.Kept:
        """What this device took in `space`: hashes by author and number, the text on ask."""
        hashes: dict[str, dict[int, str]] = {}
        with_text: set[tuple[str, int]] = set()
        for author, seq, digest, has in self._db.query(
            "SELECT author, seq, hash, line IS NOT NULL FROM space_taken WHERE space = ?",
            (space,),
        ):
            hashes.setdefault(author, {})[int(seq)] = digest
            if has:
                with_text.add((author, int(seq)))

        def text(author: str, seq: int) -> str | None:
            rows = self._db.query(
                "SELECT line FROM space_taken WHERE space = ? AND author = ? AND seq = ?",
                (space, author, seq),
            )
            return rows[0][0] if rows else None

        return lines.Kept(hashes, with_text, text)

    def read(self, entry: dict, state: Members, held: dict[str, bytes], me: str) -> lines.Reading:
        """The space's lines (`lines.read`) with what this device took before, and the
        lines it takes for the first time kept (not its own: `space_lines` holds them)."""
        reading = lines.read(
            Path(entry["folder"]), entry["id"], state, held, self.kept(entry["id"])
        )
        fresh = [(entry["id"], *one) for one in reading.fresh if one[0] != me]
        if fresh or reading.dropped:
            with self._db.write() as conn:
                conn.executemany(
                    "INSERT OR IGNORE INTO space_taken(space, author, seq, hash, line) "
                    "VALUES (?, ?, ?, ?, ?)",
                    fresh,
                )
                conn.executemany(
                    "UPDATE space_taken SET line = NULL WHERE space = ? AND author = ? AND seq = ?",
                    [(entry["id"], a, s) for a, s in reading.dropped],
                )
        return reading
