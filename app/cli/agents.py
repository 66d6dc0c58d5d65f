"""How `mnemo agents status` prints: one line per agent, its server and every hook Mnemo
wires there, then its config's path."""

from __future__ import annotations

# A hook's state (`app.agents.hooks.states`) in the status line, in the order said
HOOK_WORDS = {"wired": "wired", "another install": "another install's", "absent": "missing"}


def hook_labels(hooks: list[dict]) -> dict[str, list[str]]:
    """The hooks of one agent by state, in a user's words: "session-start", "prompt", or the
    tool a capture hook watches ("Bash"); the agent's event beside it when the events of one
    hook differ (Claude Code's Bash hook is two: after a command worked, after one failed)."""
    by_label: dict[str, list[dict]] = {}
    for hook in hooks:
        by_label.setdefault(hook["matcher"] or hook["runs"], []).append(hook)
    out: dict[str, list[str]] = {}
    for label, group in by_label.items():
        alike = len({hook["state"] for hook in group}) == 1
        for hook in group[:1] if alike else group:
            said = label if alike else f"{label} ({hook['event']})"
            out.setdefault(hook["state"], []).append(said)
    return out


def hooks_said(row: dict) -> str:
    """`hooks wired: session-start, prompt, Bash`, what is not wired in brackets after
    (`(missing: prompt)`); `hooks absent` when none is there."""
    labels = hook_labels(row["hooks"])
    if set(labels) == {"absent"}:
        return "hooks absent"
    states = [state for state in HOOK_WORDS if state in labels]
    first = row["hook"] if states == ["wired"] else HOOK_WORDS[states[0]]  # (Codex: trusted?)
    rest = "; ".join(f"{HOOK_WORDS[s]}: {', '.join(labels[s])}" for s in states[1:])
    return f"hooks {first}: {', '.join(labels[states[0]])}" + (f" ({rest})" if rest else "")


def print_status(rows: list[dict]) -> None:
    """Per agent: found or not, its server (and whether it answers), its hooks, its config."""
    for row in rows:
        found = "found" if row["present"] else "not found"
        line = f"{row['name']} ({found}): server {row['server']}"
        if row.get("answers") is not None:
            line += ", answers" if row["answers"] else f", does not answer ({row['problem']})"
        if row["hook"] is not None:
            line += f"; {hooks_said(row)}"
        if row["problem"] and row.get("answers") is None:
            line += f"; {row['problem']}"
        print(f"{line}\n    {row['config'] or 'no config for this scope'}")
        if row["notes"] and row["server"] != "absent":
            print(f"    ({row['notes']})")
