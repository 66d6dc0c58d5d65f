"""Query embedding against ONNX Runtime (issue 24, item 6).

    .venv/bin/python -m bench.embedding [--runs 10]

Mnemo embeds a query with llama.cpp on one thread (`Embedder.embed_query`). The peer is
ONNX Runtime (the peers' venv, bench/peers.py) running the same model, written from the
bundled GGUF's own weights by bench/peer_onnx.py (no ONNX file can be downloaded here):
float32, and the same quantized dynamically to int8 by ONNX Runtime, each on one thread
with its WordPiece tokenizer (`tokenizers`). Both embed bench.load's 13 queries (1 to 15
words) `--runs` times, quiet and with one core busy; CPU ms of each process per query
(tokenizing included), and how close each peer's vectors are to Mnemo's (cosine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import peers
from bench.load import QUERY_TEXTS
from bench.report import busy_core, record
from bench.speed import pct

HERE = Path(__file__).resolve().parent


def _onnx_dir(model_path: Path, model_id: str) -> Path:
    """The ONNX files of the model, written once into bench/.cache."""
    out = HERE / ".cache" / f"onnx-{model_id.replace('@', '-')}"
    if not (out / "meta.json").exists():
        subprocess.run(
            [str(peers.python()), str(HERE / "peer_onnx.py"), "build", str(model_path), str(out)],
            check=True,
        )
    return out


def _peer(out: Path, runs: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(QUERY_TEXTS, f)
    try:
        done = subprocess.run(
            [str(peers.python()), str(HERE / "peer_onnx.py"), "time", str(out), f.name, str(runs)],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        Path(f.name).unlink()
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mnemo(embedder, runs: int) -> tuple[list[np.ndarray], list[float]]:
    vectors = [embedder.embed_query(q) for q in QUERY_TEXTS]
    cpu = []
    for _ in range(runs):
        for q in QUERY_TEXTS:
            started = time.process_time()
            embedder.embed_query(q)
            cpu.append((time.process_time() - started) * 1000)
    return vectors, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    from app.core import paths
    from app.core.model.embedder import Embedder

    embedder = Embedder.load(paths.DEFAULT_MODEL)
    embedder.query_threads = 1  # as shipped
    out = _onnx_dir(paths.DEFAULT_MODEL, embedder.info.model_id)
    rows = []
    for load in ("quiet", "one core busy"):
        with busy_core() if load != "quiet" else contextlib.nullcontext():
            time.sleep(0.5)
            vectors, cpu = _mnemo(embedder, args.runs)
            mnemo_p50 = pct(cpu, 50)
            sides = [("Mnemo (llama.cpp, float16 weights, 1 thread)", cpu, None)]
            got = _peer(out, args.runs)
            for kind, label in (
                ("model.onnx", "ONNX Runtime float32, 1 thread"),
                ("model.int8.onnx", "ONNX Runtime int8 (dynamic), 1 thread"),
            ):
                theirs = [np.asarray(v, dtype=np.float32) for v in got[kind]["vectors"]]
                cosines = [float(a @ b) for a, b in zip(vectors, theirs, strict=True)]
                sides.append((label, got[kind]["cpu_ms"], cosines))
            for label, times, cosines in sides:
                rows.append(
                    (
                        load,
                        label,
                        f"{pct(times, 50):.2f} / {pct(times, 95):.2f}",
                        f"{pct(times, 50) / mnemo_p50:.2f}x",
                        ""
                        if cosines is None
                        else f"{min(cosines):.6f} / {statistics.mean(cosines):.6f}",
                    )
                )
                print(" | ".join(rows[-1]), flush=True)
    record(
        "Query embedding: against ONNX Runtime",
        [
            "load",
            "side",
            "CPU ms a query p50 / p95",
            "p50 / Mnemo's",
            "cosine to Mnemo's vector, min / mean",
        ],
        rows,
        note=f"bench.load's {len(QUERY_TEXTS)} queries, {args.runs} rounds; CPU ms of each "
        "process, tokenizing included. The ONNX model is written from the bundled GGUF's own "
        "weights (bench/peer_onnx.py: no ONNX file can be downloaded here); its int8 variant "
        "is ONNX Runtime's `quantize_dynamic` (QInt8 weights, per tensor).",
    )


if __name__ == "__main__":
    main()
