"""Encryption at rest and snapshots (ADR 0014): where the key lives (keys), opening and
replacing the database whole (cipher), asking every process to let go meanwhile (handoff),
and snapshots that restore (snapshot)."""
