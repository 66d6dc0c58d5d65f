"""Writes benchmark tables into docs/benchmarks.md: a section per benchmark, machine, date."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
import sys
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


def record(title: str, columns: list[str], rows: list[tuple], note: str = "") -> None:
    """Replace (or add) the section `title` in docs/benchmarks.md with this table."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## {title}", "", f"Measured {stamp} on {machine()}.", ""]
    if note:
        lines += [note, ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    section = "\n".join(lines) + "\n"
    text = DOC.read_text() if DOC.exists() else HEADER
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
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
