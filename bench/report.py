"""Writes benchmark tables into docs/benchmarks.md: a section per benchmark, machine, date."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\nNumbers printed by the scripts in `bench/` and written here by them; "
    "each section says when and on what machine it was measured.\n"
)


def machine() -> str:
    """CPU model, core count, memory and Python, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    python = platform.python_version()
    return f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()}, Python {python}"


def _earlier_rows(text: str, pattern: re.Pattern, new_rows: list[tuple]) -> list[str]:
    """The rows of the section now in the file whose first cell no new row has (a run of
    some sizes keeps the others), each marked with the date it was measured."""
    found = pattern.search(text)
    if not found:
        return []
    section = found.group(0)
    when = re.search(r"Measured (\d{4}-\d{2}-\d{2})", section)
    mine = {str(row[0]) for row in new_rows}
    kept = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or set(line) <= set("|-") or cells[0] in mine:
            continue
        first = (
            cells[0]
            if "(run of " in cells[0] or not when
            else f"{cells[0]} (run of {when.group(1)})"
        )
        kept.append("| " + " | ".join([first, *cells[1:]]) + " |")
    return kept[1:]  # the header row went first


def _size_first(row: str) -> tuple[int, float]:
    """Rows whose first cell starts with a number (a size) in its order, the others last."""
    found = re.match(r"\|\s*([\d,]+)", row)
    return (0, float(found.group(1).replace(",", ""))) if found else (1, 0.0)


def record(
    title: str, columns: list[str], rows: list[tuple], note: str = "", keep_others: bool = False
) -> None:
    """Replace (or add) the section `title` in docs/benchmarks.md with this table; with
    `keep_others`, the rows of an earlier run whose first cell (a size) this run did not
    measure stay, marked with their date."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## {title}", "", f"Measured {stamp} on {machine()}.", ""]
    if note:
        lines += [note, ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    table = ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    text = DOC.read_text() if DOC.exists() else HEADER
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if keep_others:
        table = sorted(table + _earlier_rows(text, pattern, rows), key=_size_first)
    section = "\n".join(lines + table) + "\n"
    text = (
        pattern.sub(lambda _: section + "\n", text)
        if pattern.search(text)
        else (text.rstrip("\n") + "\n\n" + section)
    )
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text.rstrip("\n") + "\n")
    print(f"(written to {DOC.relative_to(DOC.parent.parent)})")


@contextlib.contextmanager
def busy_core():
    """Another process keeping one core busy for the duration (users' laptops are never
    idle): a Python busy loop, stopped on exit."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def run_child(code: Path, home: Path, script: str, *args: str):
    """Run `script` (python -c) in a new process on the code at `code` and the data folder
    `home`; the JSON of its last line of output."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=code,
        env={**os.environ, "MNEMO_HOME": str(home), "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def code_sides(before: str | None):
    """[("now", this checkout)] and, with a git revision, ("before (REV)", that revision
    checked out into a temporary worktree, registered in .git until the end)."""
    root = DOC.parent.parent
    if before is None:
        yield [("now", root)]
        return
    worktree = Path(tempfile.mkdtemp(prefix="mnemo-before-")) / "code"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(worktree), before],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield [("now", root), (f"before ({before})", worktree)]
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=root)
