"""Keyword labels made locally (no LLM): the memory's own words and phrases that best
carry its meaning, chosen by embedding similarity to the whole memory and kept diverse by
maximal marginal relevance (the KeyBERT method).

A phrase's vector is the mean of its tokens' vectors in the memory's own forward pass (the
one that gives the memory its sentence vector), not a forward pass of its own: embedding
30 candidate phrases separately cost three times a short note's vectors (issue 10).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from app.core.storage.fts import STOP_WORDS

if TYPE_CHECKING:
    from app.core.model.embedder import Embedder, TokenChunk

METHOD = "token-vectors-3"  # how labels are made: benchmarks keep a database per method
MAX_LABELS = 10
MAX_CANDIDATES = 30
DIVERSITY = 0.5  # 0 = most relevant only, 1 = most diverse only
# Tokens in context all lean towards the memory's own vector: a phrase needs this cosine
# to it to be kept (kept 7.0 labels a memory on SciFact, 7.2 with phrases embedded alone
# and their threshold of 0.2).
MIN_RELEVANCE = 0.5
GENERIC = frozenset(
    "code development software system application implementation feature project function "
    "method file data error bug fix update change".split()
)
# A word starts with a letter of any script ("café", "straße", "α-synuclein"), may hold
# digits and `+#.-_` inside ("c++", "upload.py", "e_conn_reset") and ends with a letter,
# digit, + or #.
_TOKEN = re.compile(r"[^\W\d_](?:[\w+#.\-]*[^\W_]|[\w+#.\-]*[+#])?")


def _ok(word: str) -> bool:
    w = word.lower()
    return len(w) >= 3 and w not in STOP_WORDS and w not in GENERIC and not w.isdigit()


def candidates(text: str) -> list[str]:
    """Words and 2-3 word phrases from the text, most frequent first, no generic words."""
    return list(_candidates(text))


def _candidates(text: str) -> dict[str, str]:
    """candidates(), each with the words as the text first spelled them."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    spelled: dict[str, str] = {}
    # Sentence ends need a space after the stop, so `upload.py` and `v1.2` stay whole.
    for sentence in re.split(r"[.!?;:](?:\s|$)|[\n()\[\]{},\"]", text):
        found = list(_TOKEN.finditer(sentence))
        words = [m.group() for m in found]
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if not all(_ok(w) for w in gram):  # phrases never span a stop word
                    continue
                phrase = " ".join(w.lower() if not w.isupper() else w for w in gram)
                counts[phrase] += 1
                first_seen.setdefault(phrase, len(first_seen))
                # As the text has it ("client/server", two spaces): the tokens to look for
                spelled.setdefault(phrase, sentence[found[i].start() : found[i + n - 1].end()])
    ranked = sorted(counts, key=lambda p: (-counts[p] * (1 + 0.3 * p.count(" ")), first_seen[p]))
    return {phrase: spelled[phrase] for phrase in ranked[:MAX_CANDIDATES]}


def _occurrences(haystack: list[int], needle: list[int], start: int = 0) -> list[int]:
    """Where a token sequence occurs in another, from `start` on."""
    n, first = len(needle), needle[0]
    return [
        i
        for i in range(start, len(haystack) - n + 1)
        if haystack[i] == first and haystack[i : i + n] == needle
    ]


def phrase_vectors(
    embedder: Embedder, phrases: dict[str, str], chunks: list[TokenChunk]
) -> tuple[list[str], np.ndarray]:
    """The phrases found among the chunks' tokens, and for each the mean of its tokens'
    vectors over every place it occurs (normalized)."""
    found, vectors = [], []
    for phrase, spelling in phrases.items():
        forms = embedder.phrase_tokens(spelling)
        if phrase != spelling:
            forms += [f for f in embedder.phrase_tokens(phrase) if f not in forms]
        places = [
            chunk.vectors[i : i + len(form)].mean(axis=0)
            for chunk in chunks
            for form in forms
            for i in _occurrences(chunk.ids, form, embedder.body_start)
        ]
        if places:
            vector = np.mean(places, axis=0)
            found.append(phrase)
            vectors.append(vector / max(float(np.linalg.norm(vector)), 1e-12))
    if not found:  # one token repeated past the window's start: no phrase lies in it whole
        width = chunks[0].vectors.shape[1] if chunks else 0
        return [], np.zeros((0, width), dtype=np.float32)
    return found, np.array(vectors, dtype=np.float32)


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
    embedder: Embedder,
    text: str,
    chunks: list[TokenChunk],
    doc_vector: np.ndarray,
    k: int = MAX_LABELS,
) -> list[str]:
    """Up to k labels for a memory's text, best first: its phrases closest to its meaning
    (`doc_vector`), read from the token vectors of its first chunks
    (`Embedder.embed_documents_with_tokens` or `token_chunks`)."""
    cands = _candidates(text)
    if not cands or not chunks:
        return []
    found, vectors = phrase_vectors(embedder, cands, chunks)
    if not found:
        return []
    doc = doc_vector / max(float(np.linalg.norm(doc_vector)), 1e-12)
    picked = mmr(doc, vectors, k)
    # Keep only labels that carry much of the memory's meaning, but never fewer than 3.
    relevance = vectors @ doc
    kept = [i for i in picked if relevance[i] >= MIN_RELEVANCE] or picked
    if len(kept) < 3:
        kept = picked[:3]
    return [found[i] for i in kept]
