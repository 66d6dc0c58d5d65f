"""Capture by meaning with a fine-tuned judge (issue 42): an experiment, not wired into the app.

The shipped judge is a line through the bundled MiniLM's sentence vectors
(`meaning.Classifier`, fitted by `bench/capture.py`). Here the whole encoder is fine-tuned on
the same sentences, starting from the same GGUF file, and measured the same way, with the
writers of tests/cli/data/capture left out in groups:

    python3 -m venv --system-site-packages /tmp/ftvenv && /tmp/ftvenv/bin/pip install torch
    PYTHONPATH=.:.venv/lib/python3.11/site-packages /tmp/ftvenv/bin/python \\
        -m bench.capture_finetune check-model    # the encoder here gives llama.cpp's vectors
    ... -m bench.capture_finetune cv             # four folds of writers, ~10 min on 2 cores
    ... -m bench.capture_finetune held-out       # fit on every writer, measure check6/check7

torch (PyPI's wheel, with its CUDA libraries, about 3 GB; run on the CPU) is not a dependency
of Mnemo: the app runs llama.cpp only. Shipping such a judge means writing the tuned encoder
back to a GGUF file beside the search model (see tests/cli/data/capture/README.md).
"""

from __future__ import annotations

import argparse
import json
import time

import gguf
import numpy as np
import torch

from app.agents import meaning, rules
from app.core import paths
from app.core.model.embedder import Embedder
from bench import capture

FOLDS = (
    ("tune", "more3", "more6"),
    ("plain-tune", "more4", "check", "check4"),
    ("more", "more5", "check2"),
    ("more2", "check3", "check5"),
)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
WIDTH, HEADS, LAYERS = 384, 12, 6


class Encoder(torch.nn.Module):
    """BERT as llama.cpp runs it for the bundled GGUF (mean pooling, normalized), and a head."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        super().__init__()

        def param(name: str) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.tensor(tensors[name], dtype=torch.float32))

        self.tok = param("token_embd.weight")
        self.pos = param("position_embd.weight")
        self.typ = param("token_types.weight")
        self.norm = torch.nn.ParameterList(
            [param("token_embd_norm.weight"), param("token_embd_norm.bias")]
        )
        names = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down")
        norms = ("attn_output_norm", "layer_output_norm")
        self.blocks = torch.nn.ModuleList()
        for i in range(LAYERS):
            block = torch.nn.ParameterDict()
            for name in names + norms:
                block[f"{name}_w"] = param(f"blk.{i}.{name}.weight")
                block[f"{name}_b"] = param(f"blk.{i}.{name}.bias")
            self.blocks.append(block)
        self.head_w = torch.nn.Parameter(torch.zeros(WIDTH))
        self.head_b = torch.nn.Parameter(torch.zeros(1))

    def embed(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The normalized mean of the last layer over each sequence's tokens."""
        size, length = ids.shape
        ln = torch.nn.functional.layer_norm
        x = self.tok[ids] + self.pos[:length][None] + self.typ[0][None, None]
        x = ln(x, (WIDTH,), self.norm[0], self.norm[1], 1e-12)
        masked = (1.0 - mask[:, None, None, :]) * -1e9
        for b in self.blocks:
            q, k, v = (
                (x @ b[f"{n}_w"].T + b[f"{n}_b"])
                .view(size, length, HEADS, WIDTH // HEADS)
                .transpose(1, 2)
                for n in ("attn_q", "attn_k", "attn_v")
            )
            att = torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(WIDTH // HEADS) + masked, -1)
            a = (att @ v).transpose(1, 2).reshape(size, length, WIDTH)
            a = a @ b["attn_output_w"].T + b["attn_output_b"]
            x = ln(x + a, (WIDTH,), b["attn_output_norm_w"], b["attn_output_norm_b"], 1e-12)
            f = torch.nn.functional.gelu(x @ b["ffn_up_w"].T + b["ffn_up_b"])
            f = f @ b["ffn_down_w"].T + b["ffn_down_b"]
            x = ln(x + f, (WIDTH,), b["layer_output_norm_w"], b["layer_output_norm_b"], 1e-12)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.embed(ids, mask) @ self.head_w + self.head_b


class Judge:
    """Tokens by the bundled model's own tokenizer; an encoder fine-tuned on sentences."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        reader = gguf.GGUFReader(str(paths.DEFAULT_MODEL))
        self.tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
        self.tokens: dict[str, list[int]] = {}

    def batch(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        for text in texts:
            if text not in self.tokens:
                self.tokens[text] = list(self.model.query_sequence(text))[:128]
        length = max(len(self.tokens[t]) for t in texts)
        ids = torch.zeros(len(texts), length, dtype=torch.long)
        mask = torch.zeros(len(texts), length)
        for i, text in enumerate(texts):
            seq = self.tokens[text]
            ids[i, : len(seq)] = torch.tensor(seq)
            mask[i, : len(seq)] = 1
        return ids, mask

    def line(self, said: list[dict]) -> tuple[np.ndarray, float]:
        """The shipped judge's fit on `said`: a line through the model's vectors."""
        vectors = self.model.decode(
            [self.model.query_sequence(s["text"]) for s in said], interactive=True
        )[0]
        return capture.fit_logistic(vectors, np.array([s["y"] for s in said], float), 0.3)

    def fit(self, said: list[dict], epochs: float, lr: float) -> Encoder:
        """Fine-tuned on `said` (texts and labels), the head started from the line."""
        w, b = self.line(said)
        net = Encoder(self.tensors)
        net.head_w.data = torch.tensor(w, dtype=torch.float32)
        net.head_b.data = torch.tensor([b], dtype=torch.float32)
        body = [p for n, p in net.named_parameters() if not n.startswith("head")]
        opt = torch.optim.AdamW(
            [{"params": body, "lr": lr}, {"params": [net.head_w, net.head_b], "lr": lr * 10}],
            weight_decay=0.01,
        )
        rng = np.random.default_rng(0)
        order = np.concatenate([rng.permutation(len(said)) for _ in range(int(epochs) + 2)])
        net.train()
        for step in range(int(epochs * len(said) / 32)):
            chosen = order[step * 32 : (step + 1) * 32]
            texts = [said[i]["text"] for i in chosen]
            labels = torch.tensor([float(said[i]["y"]) for i in chosen])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(*self.batch(texts)), labels
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        return net

    def chances(self, net: Encoder, texts: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        with torch.no_grad():
            for i in range(0, len(texts), 64):
                chunk = texts[i : i + 64]
                out.update(zip(chunk, torch.sigmoid(net(*self.batch(chunk))).tolist(), strict=True))
        return out


def _line(what: str, r: int, p: int, k: int, n: int) -> str:
    near = min(r / max(p, 1) / capture.GOAL[0], k / n / capture.GOAL[1])
    return f"{what}: {100 * r / p:.1f} % ({r}/{p}) / {100 * k / n:.1f} % ({k}/{n}) ({near:.3f})"


def cv(judge: Judge, epochs: float, lr: float) -> None:
    """Each fold's writers left out: the fine-tuned judge beside the linear one."""
    every = {name: capture._sentences(capture.corpus(name), name) for name in capture.FITTED}
    scores = {(kind, t): [0, 0, 0, 0] for kind in ("linear", "tuned") for t in THRESHOLDS}
    for fold in FOLDS:
        start = time.perf_counter()
        said = [s for name in capture.FITTED if name not in fold for s in every[name]]
        said = [s for s in said if not s["holds"]]
        w, b = judge.line(said)
        net = judge.fit(said, epochs, lr)
        for name in fold:
            texts = [s["text"] for s in every[name]]
            tuned = judge.chances(net, texts)
            flat = judge.model.decode(
                [judge.model.query_sequence(t) for t in texts], interactive=True
            )[0]
            linear = dict(zip(texts, (1 / (1 + np.exp(-(flat @ w + b)))).tolist(), strict=True))
            for kind, chance in (("linear", linear), ("tuned", tuned)):
                by_prompt = {(s["prompt"], s["text"]): chance[s["text"]] for s in every[name]}
                for t in THRESHOLDS:
                    got = capture._judged(capture.corpus(name), name, by_prompt, t)
                    scores[(kind, t)] = [a + g for a, g in zip(scores[(kind, t)], got, strict=True)]
        print(f"fold {'+'.join(fold)}: {time.perf_counter() - start:.0f} s", flush=True)
    for (kind, t), (r, p, k, n) in scores.items():
        print(_line(f"{kind} threshold {t}", r, p, k, n))


def held_out(judge: Judge, epochs: float, lr: float, threshold: float) -> None:
    """Fine-tuned on every fitted writer, measured on check6/check7 and plain's check half."""
    said = [
        s
        for name in capture.FITTED
        for s in capture._sentences(capture.corpus(name), name)
        if not s["holds"]
    ]
    net = judge.fit(said, epochs, lr)

    def propose(prompt: str) -> list[rules.Statement]:
        texts = meaning.judged(prompt)
        chance = judge.chances(net, texts) if texts else {}
        found = rules.statements(prompt)
        return meaning.chosen(prompt, found, lambda t: chance.get(t, 0.0), threshold)

    for name in (*capture.HELD_OUT, "plain-check"):
        scores = capture.measure(capture.corpus(name), propose)
        print(_line(f"{name} (threshold {threshold})", *scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["check-model", "cv", "held-out"])
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--threshold", type=float, default=0.6)
    args = parser.parse_args()
    torch.manual_seed(0)
    judge = Judge(Embedder.load(paths.DEFAULT_MODEL))
    if args.what == "check-model":
        texts = [json.loads(line)["prompt"][:200] for line in
                 (capture.DATA / "tune.jsonl").open(encoding="utf-8")][:16]  # fmt: skip
        ref = judge.model.decode([judge.model.query_sequence(t) for t in texts], True)[0]
        with torch.no_grad():
            ours = Encoder(judge.tensors).embed(*judge.batch(texts)).numpy()
        print("cosine to llama.cpp's vectors, 16 prompts: min", float((ours * ref).sum(1).min()))
    elif args.what == "cv":
        cv(judge, args.epochs, args.lr)
    else:
        held_out(judge, args.epochs, args.lr, args.threshold)


if __name__ == "__main__":
    main()
