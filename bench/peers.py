"""Peers run on Mnemo's own texts, in a venv of their own (issue 24, item 6).

    .venv/bin/python -m bench.peers --venv    # make bench/.cache/peers-venv and say what is in it

The peers are installed from PyPI at the versions below into bench/.cache/peers-venv (made
once; nothing of theirs is imported by Mnemo's own process). Each is run in a child process
of that venv on the very database the Mnemo side of the same bench reads, and reports CPU
milliseconds of its own process, so a busy core weighs on both sides alike.

So far: tantivy, the keyword floor reference of bench/keywords.py (block-max WAND over
BM25, English stemming as FTS5's porter tokenizer does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".cache" / "peers-venv"
PEERS = ("tantivy==0.27.0",)

TANTIVY = r"""
import json, os, sqlite3, statistics, sys, time
import tantivy

db, where, k, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
queries = json.loads(sys.stdin.read())
schema = tantivy.SchemaBuilder().add_text_field("text", tokenizer_name="en_stem").build()
built = 0.0
if not os.path.exists(os.path.join(where, "done")):
    os.makedirs(where, exist_ok=True)
    started = time.perf_counter()
    index = tantivy.Index(schema, path=where, reuse=False)
    writer = index.writer(heap_size=500_000_000, num_threads=1)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for (text,) in conn.execute("SELECT title || ' ' || text FROM memories ORDER BY seq"):
        writer.add_document(tantivy.Document(text=text))
    writer.commit()
    writer.wait_merging_threads()
    built = time.perf_counter() - started
    open(os.path.join(where, "done"), "w").write("ok")
index = tantivy.Index.open(where)
index.reload()
searcher = index.searcher()
parsed = {q: index.parse_query(q, ["text"]) for q in queries}
for q in queries:  # warm
    searcher.search(parsed[q], k, count=False)
times = {q: [] for q in queries}
for _ in range(rounds):
    for q in queries:
        started = time.process_time()
        searcher.search(parsed[q], k, count=False)
        times[q].append((time.process_time() - started) * 1000)
print(json.dumps({"built_s": built, "ms": {q: statistics.median(v) for q, v in times.items()}}))
"""


def python() -> Path:
    """The peers' venv interpreter, made once from PyPI."""
    interpreter = VENV / "bin" / "python"
    if not interpreter.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    missing = subprocess.run(
        [str(interpreter), "-c", "import tantivy"], capture_output=True
    ).returncode
    if missing:
        subprocess.run([str(interpreter), "-m", "pip", "install", "-q", *PEERS], check=True)
    return interpreter


def tantivy(db: Path, index: Path, queries: list[str], k: int, rounds: int) -> dict:
    """{"built_s": seconds to index the database's texts (0 when already indexed),
    "ms": {query: median CPU ms of the best k}}, from tantivy in the peers' venv."""
    out = subprocess.run(
        [str(python()), "-c", TANTIVY, str(db), str(index), str(k), str(rounds)],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", action="store_true", help="make the peers' venv and list it")
    args = parser.parse_args()
    if args.venv:
        listing = subprocess.run(
            [str(python()), "-m", "pip", "list", "--format=freeze"],
            capture_output=True,
            text=True,
            check=True,
        )
        print(listing.stdout)


if __name__ == "__main__":
    main()
