"""Embedding models: the interface Mnemo uses, and the local GGUF model through llama.cpp.

`EmbeddingModel` turns text into token sequences (queries truncated, memories chunked into
overlapping windows) and pools what its one abstract method, `decode`, gives for them. The
`Embedder` implements it with llama.cpp's bindings (`llama.Model`); tests of ranking and
storage use a small deterministic model instead (tests/word_model.py), and the real one where
meaning is tested.

llama.cpp aborts the whole process on a sequence longer than the context, so every input
is tokenized, truncated (queries) or chunked (memories) here before llama.cpp decodes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.core import paths
from app.core.errors import ModelError
from app.core.model import facts, llama
from app.core.model.gguf_meta import read_metadata

log = logging.getLogger(__name__)

MAX_CONTEXT = 8192  # never allocate more context than this, whatever the model was trained on
MAX_CHUNKS = 1024  # a memory's text past this many windows is found by keywords only
CHUNK_OVERLAP = 32  # tokens shared by neighbouring chunks
LABEL_CHUNKS = 4  # a memory's labels come from the token vectors of its first chunks

# A memory's sentence vector is pooled here from the token vectors llama.cpp returns (the
# context runs without pooling), so the one forward pass gives labels their phrases too.
# The model's own pooling is read from its metadata, as llama.cpp would.
POOLING_MEAN, POOLING_CLS, POOLING_LAST = 1, 2, 3

# (pattern on "architecture name", query prefix, document prefix), first match wins.
FAMILY_PREFIXES: tuple[tuple[str, str, str], ...] = (
    (r"nomic", "search_query: ", "search_document: "),
    (r"(^|[^a-z])e5([^a-z]|$)", "query: ", "passage: "),
    (
        r"embeddinggemma|gemma-embedding|gemma3",
        "task: search result | query: ",
        "title: none | text: ",
    ),
    (
        r"qwen3",
        "Instruct: Given a web search query, retrieve relevant passages that answer "
        "the query\nQuery:",
        "",
    ),
    (r"bge-m3", "", ""),
    (r"bge|mxbai|arctic", "Represent this sentence for searching relevant passages: ", ""),
)


def family_prefixes(arch: str, name: str) -> tuple[str, str]:
    """The (query, document) prefixes a model family was trained with."""
    key = f"{arch} {name}".lower()
    for pattern, query, document in FAMILY_PREFIXES:
        if re.search(pattern, key):
            return query, document
    return "", ""


def file_sha256(path: Path, kept: dict | None = None) -> str:
    """The file's SHA-256, kept while the file stays as it is (`facts`; `kept`: what
    `facts.known` said of it already)."""
    path = Path(path).resolve()
    digest = (facts.known(path) if kept is None else kept).get("sha256")
    if digest:
        return digest
    before = facts.identity(path)
    sha = hashlib.sha256()
    with paths.open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    facts.remember(path, before, sha256=sha.hexdigest())  # not if it changed meanwhile
    return sha.hexdigest()


def model_metadata(path: Path, kept: dict | None = None) -> dict:
    """The metadata scalars `inspect_model` reads, kept while the file stays as it is
    (`facts`; `kept`: what `facts.known` said of it already); ModelError if the file is not
    a usable GGUF file."""
    meta = (facts.known(path) if kept is None else kept).get("metadata")
    if meta is not None:
        return meta
    before = facts.identity(Path(path).resolve())
    meta = read_metadata(path)
    arch = str(meta.get("general.architecture", ""))
    wanted = ("general.architecture", "general.name", "mnemo.max_seq_length")
    wanted += tuple(f"{arch}.{k}" for k in ("context_length", "embedding_length", "pooling_type"))
    meta = {k: meta[k] for k in wanted if type(meta.get(k)) in (int, str)}
    facts.remember(path, before, metadata=meta)
    return meta


def model_identity(info: ModelInfo) -> str | None:
    """The model file's identity now (take it before loading the model)."""
    return facts.identity(info.path.resolve())


def checked(info: ModelInfo) -> bool:
    """Whether this model file's vectors passed `EmbeddingModel.check` as the file is now."""
    return facts.known(info.path).get("checked") == info.sha256


def remember_checked(info: ModelInfo, identity: str | None) -> None:
    """Keep that the file, as it was when `identity` was taken, passed the self-check."""
    if identity is not None:
        facts.remember(info.path, identity, checked=info.sha256)


SELF_CHECK = (  # a sentence, a paraphrase of it, and one about something else
    "The cat is sleeping on the warm windowsill.",
    "A cat naps on the sunny window ledge.",
    "Quarterly revenue rose by three percent.",
)


@dataclass
class TokenChunk:
    """One chunk of a memory as the model read it: token ids and each token's vector."""

    ids: list[int]
    vectors: np.ndarray  # (len(ids), dim), not normalized


# A memory's chunk vectors (normalized) and its first chunks' token vectors.
Embedded = tuple[np.ndarray, list[TokenChunk]]


@dataclass(frozen=True)
class ModelInfo:
    """What Mnemo knows about a GGUF embedding model without loading its weights."""

    path: Path
    name: str
    architecture: str
    dimension: int
    trained_context: int
    window: int
    sha256: str
    query_prefix: str
    document_prefix: str
    pooling: int = POOLING_MEAN

    @property
    def model_id(self) -> str:
        """Identifies the vector space: vectors from another id are never compared."""
        return f"{self.name}@{self.sha256[:12]}"


def inspect_model(
    path: Path, query_prefix: str = "auto", document_prefix: str = "auto"
) -> ModelInfo:
    """Read a model's metadata and choose its window and prefixes; ModelError if unusable."""
    path = Path(path).expanduser()
    kept = facts.known(path)  # one read of the facts file for both below
    meta = model_metadata(path, kept)
    arch = str(meta.get("general.architecture", ""))
    if not arch:
        raise ModelError(f"{path} has no architecture in its metadata")
    trained = int(meta.get(f"{arch}.context_length", 512))
    dimension = int(meta.get(f"{arch}.embedding_length", 0))
    max_seq = int(meta.get("mnemo.max_seq_length", 0)) or trained
    window = max(8, min(max_seq, trained, MAX_CONTEXT))
    name = str(meta.get("general.name") or path.stem)
    pooling = int(meta.get(f"{arch}.pooling_type", 0))
    if pooling not in (POOLING_MEAN, POOLING_CLS, POOLING_LAST):
        raise ModelError(f"{path} has no pooling: it is not a sentence-embedding model")
    auto_query, auto_document = family_prefixes(arch, f"{name} {path.name}")
    return ModelInfo(
        path=path,
        name=name,
        architecture=arch,
        dimension=dimension,
        trained_context=trained,
        window=window,
        sha256=file_sha256(path, kept),
        query_prefix=auto_query if query_prefix == "auto" else query_prefix,
        document_prefix=auto_document if document_prefix == "auto" else document_prefix,
        pooling=pooling,
    )


class FreeCores:
    """How many cores other processes leave free, from /proc/stat between two looks.

    llama.cpp's threads wait for each other at every layer: with one of two cores held by
    another process, two threads made a query 5-20x slower than one (issue 10). So queries
    run on one thread, and each batch takes the cores that were actually idle (plus the ones
    we ourselves kept busy) since the previous batch."""

    def __init__(self, cores: int | None = None):
        self.cores = cores or os.cpu_count() or 1
        self._last: tuple[float, float, float] | None = self._sample()
        self._answer = self.cores

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        """(wall seconds, busy core-seconds of the whole machine, our own CPU seconds)."""
        try:
            with open("/proc/stat", "rb") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None  # not Linux: assume every core is free
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        own = os.times()
        return time.monotonic(), (sum(fields[:8]) - idle) / tick, own.user + own.system

    def free(self) -> int:
        """Cores not used by other processes since the last look (at least 1); looks less
        than 50 ms apart keep the last answer, which too short a window cannot refine."""
        now = self._sample()
        if now is None or self._last is None:
            return self.cores
        wall = now[0] - self._last[0]
        if wall < 0.05:
            return self._answer
        others = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / wall
        self._last = now
        self._answer = max(1, min(self.cores, round(self.cores - others)))
        return self._answer


class Interrupted(Exception):
    """A batch decode gave way to waiting work (`EmbeddingModel.giving_way`): nothing it
    computed is returned; the caller runs it again later."""


class EmbeddingModel(ABC):
    """What Mnemo needs of an embedding model: L2-normalized float32 vectors for queries and
    for memories (one per chunk), and the token vectors keyword labels are read from.

    A model implements `decode` and calls `_windows` once its tokenizer works; `_tokens`
    (words to ids), `spare_core` and `close` have defaults a model may replace. A model that
    can stop a batch half way (`Embedder`) asks `give_way` while it decodes one.
    """

    info: ModelInfo
    give_way: Callable[[], bool] | None = None
    given_way = 0  # batch decodes given up so far

    @contextlib.contextmanager
    def giving_way(self, check: Callable[[], bool] | None) -> Iterator[None]:
        """While inside: a batch decode (never a query) stops as soon as `check()` says
        something waits, raising `Interrupted` (a prompt then waits for no memory's pass)."""
        self.give_way = check
        try:
            yield
        finally:
            self.give_way = None

    @abstractmethod
    def decode(
        self, sequences: list[list[int]], interactive: bool = False, keep: int | set[int] = 0
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The pooled, normalized vector of each token sequence, shape (len, dimension), and
        the token vectors (one row per token, not normalized) of the sequences whose index
        is below `keep` (or in it, when it is a set). `interactive`: a query someone waits
        for, not a batch."""

    def _windows(self, head: list[int], tail: list[int]) -> None:
        """Set up chunking from the tokens the model puts around every sequence."""
        info = self.info
        self._head, self._tail = head, tail
        self._budget = info.window - len(head) - len(tail)
        self._query_prefix = self._tokens(info.query_prefix)
        self._document_prefix = self._tokens(info.document_prefix)
        # Where a memory's own tokens start in each of its sequences (after the start token
        # and the document prefix, "passage: " or "search_document: ").
        self.body_start = len(head) + len(self._document_prefix)
        if self._budget - max(len(self._query_prefix), len(self._document_prefix)) < 8:
            raise ModelError(f"{info.path}: the window of {info.window} tokens is too small")

    def _tokens(self, text: str) -> list[int]:
        """A text's token ids: by default one per word, a stable hash of it."""
        return [
            int.from_bytes(hashlib.blake2b(w.encode(), digest_size=3).digest(), "big") + 16
            for w in re.findall(r"\w+", text.lower())
        ]

    def query_sequence(self, text: str) -> list[int]:
        """The token sequence for a query: prefixed and truncated to the window."""
        room = self._budget - len(self._query_prefix)
        return self._head + self._query_prefix + self._tokens(text)[:room] + self._tail

    def document_sequences(self, text: str) -> list[list[int]]:
        """The token sequences for a memory: overlapping windows over its text."""
        body = self._tokens(text)
        room = self._budget - len(self._document_prefix)
        overlap = min(CHUNK_OVERLAP, room // 4)
        starts = range(0, max(len(body) - overlap, 1), room - overlap)
        return [
            self._head + self._document_prefix + body[s : s + room] + self._tail
            for s in list(starts)[:MAX_CHUNKS]
        ]

    def embed_query(self, text: str) -> np.ndarray:
        """One normalized vector for a search query."""
        return self.decode([self.query_sequence(text)], interactive=True)[0][0]

    def embed_sequences(
        self, sequences: list[list[int]], keep_tokens: int = 0
    ) -> tuple[np.ndarray, list[TokenChunk]]:
        """Normalized vectors of document token sequences (from `document_sequences`), and
        the token vectors of the first `keep_tokens` of them."""
        vectors, kept = self.decode(sequences, keep=keep_tokens)
        return vectors, [TokenChunk(sequences[i], kept[i]) for i in sorted(kept)]

    def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        """For each memory text, its chunk vectors as an (n_chunks, dim) array."""
        return [vectors for vectors, _ in self.embed_documents_with_tokens(texts, 0)]

    def embed_documents_with_tokens(
        self, texts: list[str], keep_chunks: int = LABEL_CHUNKS
    ) -> list[Embedded]:
        """For each memory text, its chunk vectors and the token vectors of its first
        `keep_chunks` chunks (what `labels.make_labels` reads), from one forward pass."""
        sequences, owners, keep = [], [], set()
        for i, text in enumerate(texts):
            for n, seq in enumerate(self.document_sequences(text)):
                if n < keep_chunks:
                    keep.add(len(sequences))
                sequences.append(seq)
                owners.append(i)
        if sequences:
            vectors, kept = self.decode(sequences, keep=keep)
        else:
            vectors, kept = np.empty((0, self.info.dimension), dtype=np.float32), {}
        out: list[Embedded] = [
            (np.empty((0, self.info.dimension), dtype=np.float32), []) for _ in texts
        ]
        owners_arr = np.asarray(owners, dtype=np.int64)
        for i in range(len(texts)):
            rows = np.flatnonzero(owners_arr == i)
            chunks = [TokenChunk(sequences[r], kept[r]) for r in rows if r in kept]
            out[i] = (vectors[rows], chunks)
        return out

    def token_chunks(self, text: str, keep_chunks: int = LABEL_CHUNKS) -> list[TokenChunk]:
        """The token vectors of a memory's first chunks, for labels when its sentence
        vectors are stored already."""
        sequences = self.document_sequences(text)[:keep_chunks]
        return self.embed_sequences(sequences, keep_tokens=len(sequences))[1]

    def phrase_tokens(self, phrase: str) -> list[list[int]]:
        """The token ids a phrase can have inside a text: alone and after a space (tokenizers
        that mark word starts), without the model's start and end tokens."""
        forms = []
        for form in (phrase, " " + phrase):
            ids = self._tokens(form)
            if ids and ids not in forms:
                forms.append(ids)
        return forms

    def check(self) -> str | None:
        """What is wrong with the vectors this model gives, or None: each must be finite and
        of unit length, and a paraphrase must be closer than an unrelated sentence (a model
        file with bytes flipped still loaded and gave NaN or noise)."""
        try:
            a, b, c = (self.embed_query(text) for text in SELF_CHECK)
        except Exception as exc:  # noqa: BLE001 - any failure to embed is the answer
            return f"it cannot embed ({type(exc).__name__}: {exc})"
        for v in (a, b, c):
            if not np.isfinite(v).all():
                return "it gives vectors that are not numbers (the file may be damaged)"
            if abs(float(v @ v) - 1.0) > 1e-2:
                return "it gives vectors that are not of unit length (the file may be damaged)"
        if float(a @ b) <= float(a @ c) + 0.05:
            return (
                "it finds a paraphrase no closer than an unrelated sentence (the file may be "
                "damaged, or it is no sentence-embedding model)"
            )
        return None

    def spare_core(self) -> bool:
        """Whether a query can be embedded on a core of its own while the caller goes on."""
        return False

    def close(self) -> None:  # noqa: B027 - a model holding nothing has nothing to free
        """Free the model."""


class Embedder(EmbeddingModel):
    """Turns text into L2-normalized float32 vectors with a local GGUF model."""

    def __init__(self, info: ModelInfo, threads: int = 0, gpu_layers: int = 0):
        try:
            native, _ = llama.bindings()
        except ImportError as exc:
            raise ModelError(f"llama-cpp-python is not installed ({exc})") from None
        self.info = info
        self.on_gpu = False
        self._max_threads = threads  # 0: every core that is free
        self.query_threads = 1  # bench/load.py compares 2, the old way
        self._free = FreeCores()
        self._threads = 1  # what the context runs with now (it starts with one)
        self._lock = threading.Lock()
        # Tokenizing takes no turn behind a decode, but the model must not be freed under it
        self._vocab = threading.Lock()
        self._closed = False
        n_ctx = min(info.trained_context, MAX_CONTEXT)
        if gpu_layers and native.llama_supports_gpu_offload():
            try:
                self._llm = self._open(info, n_ctx, gpu_layers)
                self.on_gpu = True
            except ModelError as exc:  # a GPU out of memory or a broken driver: use the CPU
                log.warning("%s; running the model on the CPU instead", exc)
        if not self.on_gpu:
            self._llm = self._open(info, n_ctx, 0)
        if self._llm.n_embd != info.dimension:  # the metadata read (or kept) says otherwise
            self._llm.close()
            raise ModelError(
                f"{info.path}: the model gives {self._llm.n_embd} dimensions, its metadata "
                f"says {info.dimension}"
            )
        with_special = self._llm.tokenize(b"a", add_bos=True)
        bare = self._llm.tokenize(b"a", add_bos=False)
        start = next(i for i in range(len(with_special)) if with_special[i : i + len(bare)] == bare)
        self._windows(with_special[:start], with_special[start + len(bare) :])

    @staticmethod
    def _open(info: ModelInfo, n_ctx: int, gpu_layers: int) -> llama.Model:
        """llama.cpp's model, context and batch; ModelError when it cannot load them."""
        try:
            return llama.Model(str(info.path), n_ctx, gpu_layers)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load the model {info.path}: {exc}") from None

    @classmethod
    def load(
        cls,
        path: Path,
        query_prefix: str = "auto",
        document_prefix: str = "auto",
        threads: int = 0,
        gpu_layers: int = 0,
    ) -> Embedder:
        """Inspect and load a model in one step."""
        return cls(inspect_model(path, query_prefix, document_prefix), threads, gpu_layers)

    def _tokens(self, text: str) -> list[int]:
        if not text:
            return []
        # NUL and other C0 controls can end the C string early or confuse the tokenizer.
        clean = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", " ", text)
        with self._vocab:
            self._open_or_raise()
            return self._llm.tokenize(clean.encode("utf-8", errors="replace"), add_bos=False)

    def _open_or_raise(self) -> None:
        """ModelError when the model was closed: a thread still holding it after its owner
        freed it (a model switch, an engine closed) gets an error, not freed memory."""
        if self._closed:
            raise ModelError(f"{self.info.path.name}: the model was closed")

    @property
    def threads(self) -> int:
        """How many threads the model ran its last pass with (a query: one)."""
        return self._threads

    @property
    def free_cores(self) -> FreeCores:
        """What it asks how many cores are free before a batch."""
        return self._free

    def _use_threads(self, interactive: bool) -> None:
        """One thread for a query (never waits on a busy core); a batch takes the free cores
        (at most `model_threads` when set). Called with the lock held."""
        if interactive:
            wanted = self.query_threads
        else:
            wanted = self._free.free()
            if self._max_threads:
                wanted = min(wanted, self._max_threads)
        if wanted != self._threads:
            self._llm.set_threads(wanted)
            self._threads = wanted

    def decode(
        self, sequences: list[list[int]], interactive: bool = False, keep: int | set[int] = 0
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """Embed token sequences, packing several into each llama.cpp batch: their pooled,
        normalized vectors, and the token vectors of the sequences whose index is below
        `keep` (or in it, when it is a set)."""
        llm, dim, pooling = self._llm, self.info.dimension, self.info.pooling
        out = np.empty((len(sequences), dim), dtype=np.float32)
        kept: dict[int, np.ndarray] = {}
        wanted = keep if isinstance(keep, set) else range(keep)
        done = 0
        batch: list[list[int]] = []

        def flush() -> None:
            nonlocal done
            llm.ctx.kv_cache_clear()
            if llm.decode(asked) == llama.ABORTED:
                self.given_way += 1
                raise Interrupted
            n_tokens = sum(len(seq) for seq in batch)
            ptr = llm.embeddings()
            tokens = np.ctypeslib.as_array(ptr, shape=(n_tokens, dim))
            at = 0
            for i, seq in enumerate(batch):
                rows = tokens[at : at + len(seq)]
                if pooling == POOLING_CLS:
                    out[done + i] = rows[0]
                elif pooling == POOLING_LAST:
                    out[done + i] = rows[-1]
                else:
                    out[done + i] = rows.mean(axis=0)
                if done + i in wanted:
                    kept[done + i] = rows.copy()
                at += len(seq)
            done += len(batch)
            llm.batch.reset()
            batch.clear()

        asked = None if interactive else self.give_way  # (a query never gives way)
        with self._lock:
            self._open_or_raise()
            self._use_threads(interactive)
            llm.batch.reset()
            used = 0
            try:
                for seq in sequences:
                    if len(seq) > self._llm.n_batch:  # our chunking guarantees it never is
                        raise AssertionError(f"sequence of {len(seq)} tokens exceeds the batch")
                    if batch and (
                        used + len(seq) > self._llm.n_batch or len(batch) >= self._llm.n_seq_max
                    ):
                        flush()
                        used = 0
                    llm.batch.add_sequence(seq, len(batch), True)
                    batch.append(seq)
                    used += len(seq)
                if batch:
                    flush()
            finally:
                llm.ctx.kv_cache_clear()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12), kept

    def spare_core(self) -> bool:
        """Whether a core beside the caller's is free of other processes' work (a query can
        then be embedded on it while the caller does something else)."""
        return self._free.free() >= 2

    def close(self) -> None:
        """Free the model (once; what is asked of it after that raises ModelError)."""
        with self._lock, self._vocab:
            if not self._closed:
                self._closed = True
                self._llm.close()
