"""How `mnemo agents status` prints: one line per agent, its server and every hook Mnemo
wires there, then its config's path."""

from __future__ import annotations

from app.agents.hooks import said


def print_status(rows: list[dict]) -> None:
    """Per agent: found or not, its server (and whether it answers), its hooks, its config."""
    for row in rows:
        found = "found" if row["present"] else "not found"
        line = f"{row['name']} ({found}): server {row['server']}"
        if row.get("answers") is not None:
            line += ", answers" if row["answers"] else f", does not answer ({row['problem']})"
        if row["hook"] is not None:
            line += f"; hooks {said(row)}"
        if row["problem"] and row.get("answers") is None:
            line += f"; {row['problem']}"
        print(f"{line}\n    {row['config'] or 'no config for this scope'}")
        if row["notes"] and row["server"] != "absent":
            print(f"    ({row['notes']})")
