"""Keyword labels made locally (no LLM): the memory's own words and phrases that best
carry its meaning, chosen by embedding similarity to the whole memory and kept diverse by
maximal marginal relevance (the KeyBERT method).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from app.core.fts import STOP_WORDS

if TYPE_CHECKING:
    from app.core.embedder import Embedder

MAX_LABELS = 10
MAX_CANDIDATES = 30
DIVERSITY = 0.5  # 0 = most relevant only, 1 = most diverse only
GENERIC = frozenset(
    "code development software system application implementation feature project function "
    "method file data error bug fix update change".split()
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-_]*[A-Za-z0-9+#]|[A-Za-z]")


def _ok(word: str) -> bool:
    w = word.lower()
    return len(w) >= 3 and w not in STOP_WORDS and w not in GENERIC and not w.isdigit()


def candidates(text: str) -> list[str]:
    """Words and 2-3 word phrases from the text, most frequent first, no generic words."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    # Sentence ends need a space after the stop, so `upload.py` and `v1.2` stay whole.
    for sentence in re.split(r"[.!?;:](?:\s|$)|[\n()\[\]{},\"]", text):
        words = _TOKEN.findall(sentence)
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if not all(_ok(w) for w in gram):  # phrases never span a stop word
                    continue
                phrase = " ".join(w.lower() if not w.isupper() else w for w in gram)
                counts[phrase] += 1
                first_seen.setdefault(phrase, len(first_seen))
    ranked = sorted(counts, key=lambda p: (-counts[p] * (1 + 0.3 * p.count(" ")), first_seen[p]))
    return ranked[:MAX_CANDIDATES]


def mmr(doc: np.ndarray, cands: np.ndarray, k: int, diversity: float = DIVERSITY) -> list[int]:
    """Indices of k candidates balancing similarity to `doc` against similarity to each other."""
    relevance = cands @ doc
    chosen = [int(np.argmax(relevance))]
    pairwise = cands @ cands.T
    while len(chosen) < min(k, len(cands)):
        rest = [i for i in range(len(cands)) if i not in chosen]
        redundancy = pairwise[np.ix_(rest, chosen)].max(axis=1)
        scores = (1 - diversity) * relevance[rest] - diversity * redundancy
        chosen.append(rest[int(np.argmax(scores))])
    return chosen


def make_labels(
    embedder: Embedder, text: str, doc_vector: np.ndarray | None = None, k: int = MAX_LABELS
) -> list[str]:
    """Up to k labels for a memory's text, best first."""
    cands = candidates(text)
    if not cands:
        return []
    if doc_vector is None:
        doc_vector = embedder.embed_documents([text])[0].mean(axis=0)
        doc_vector /= max(float(np.linalg.norm(doc_vector)), 1e-12)
    vectors = np.vstack([v[0] for v in embedder.embed_documents(cands)])
    picked = mmr(doc_vector, vectors, k)
    # Keep only labels that carry some of the memory's meaning, but never fewer than 3.
    relevance = vectors @ doc_vector
    kept = [i for i in picked if relevance[i] >= 0.2] or picked
    if len(kept) < 3:
        kept = picked[:3]
    return [cands[i] for i in kept]
