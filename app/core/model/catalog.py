"""Stronger embedding models on request: a curated catalog, and a download that resumes,
shows progress, verifies the file and never leaves half a model in use.

`mnemo model list` shows the catalog; `mnemo model get NAME` fetches one into the models
folder (nothing is ever downloaded without that command). The bytes go to `NAME.part`
beside the final file; a stopped download resumes from there with an HTTP Range request.
The file is installed (renamed into place) only when its size and SHA-256 match: the
values pinned here, or the ones Hugging Face sends with a file (`X-Linked-Size`,
`X-Linked-Etag`, the SHA-256 of an LFS file), and only when it reads as a sentence-embedding
GGUF. `MNEMO_MODEL_MIRROR` replaces the hub's address (a mirror inside a company, tests),
`MNEMO_MODEL_CATALOG` names a JSON file of entries to offer instead of these.

The figures are each model's published MTEB retrieval score (nDCG@10, higher is better;
all-MiniLM-L6-v2, the bundled model, scores 41.95 on the same 15 BEIR datasets); `cost` is
its compute per token against MiniLM's (layers × width², an estimate, not a measurement:
no hub is reachable where Mnemo is built). Sources: ADR 0009 (docs/adr/).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from app import __version__
from app.core import paths
from app.core.errors import InputError, ModelError

HUB = "https://huggingface.co"
CHUNK = 1 << 20
_SHA = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CatalogModel:
    """One model the catalog offers."""

    name: str
    repo: str  # on the hub
    file: str  # in the repo
    size: int | None  # bytes, pinned where published
    sha256: str | None  # pinned where published; else the hub's header is required
    dimension: int
    layers: int
    width: int
    languages: str
    license: str
    retrieval: str  # the published MTEB retrieval figure, and which leaderboard
    note: str = ""

    @property
    def url(self) -> str:
        """Where the file is fetched from (`MNEMO_MODEL_MIRROR` replaces the hub)."""
        base = os.environ.get("MNEMO_MODEL_MIRROR", HUB).rstrip("/")
        return f"{base}/{self.repo}/resolve/main/{self.file}"

    @property
    def cost(self) -> float:
        """Compute per token against the bundled MiniLM (6 layers of 384): an estimate."""
        return self.layers * self.width**2 / (6 * 384**2)

    @property
    def filename(self) -> str:
        """The file's name in the models folder."""
        return Path(self.file).name


CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel(
        name="bge-small-en-v1.5",
        repo="CompendiumLabs/bge-small-en-v1.5-gguf",
        file="bge-small-en-v1.5-f16.gguf",
        size=67_308_128,
        sha256="f0b2fef971e8366438bfd2d9aefea1b0115919389448806d290237f638bae999",
        dimension=384,
        layers=12,
        width=384,
        languages="English",
        license="MIT",
        retrieval="51.68 (MTEB English v1, 15 BEIR datasets)",
        note="MiniLM's size class, about ten retrieval points better",
    ),
    CatalogModel(
        name="snowflake-arctic-embed-m-v1.5",
        repo="Snowflake/snowflake-arctic-embed-m-v1.5",
        file="gguf/snowflake-arctic-embed-m-v1.5-q8_0.gguf",
        size=117_852_672,
        sha256=None,
        dimension=768,
        layers=12,
        width=768,
        languages="English",
        license="Apache-2.0",
        retrieval="55.14 (BEIR, 15 datasets; self-reported)",
        note="the strongest English model of its size with an official GGUF",
    ),
    CatalogModel(
        name="nomic-embed-text-v1.5",
        repo="nomic-ai/nomic-embed-text-v1.5-GGUF",
        file="nomic-embed-text-v1.5.f16.gguf",
        size=274_290_560,
        sha256=None,
        dimension=768,
        layers=12,
        width=768,
        languages="English",
        license="Apache-2.0",
        retrieval="53.01 (BEIR, 15 datasets; quoted by a third party)",
        note="reads 2,048 tokens at once: long notes in fewer pieces",
    ),
    CatalogModel(
        name="multilingual-e5-base",
        repo="yixuan-chia/multilingual-e5-base-gguf",
        file="multilingual-e5-base-Q8_0.gguf",
        size=None,
        sha256=None,
        dimension=768,
        layers=12,
        width=768,
        languages="about 100",
        license="MIT",
        retrieval="Mr. TyDi MRR@10 65.9 (multilingual; model card)",
        note="a community conversion: try it on a few notes before switching for good",
    ),
    CatalogModel(
        name="embeddinggemma-300m",
        repo="ggml-org/embeddinggemma-300M-GGUF",
        file="embeddinggemma-300M-Q8_0.gguf",
        size=333_590_944,
        sha256="b5ce9d77a3fc4b3b39ccb5643c36777911cc4eb46a66962eadfa3f5f60490d63",
        dimension=768,
        layers=24,
        width=768,
        languages="100+",
        license="Gemma Terms of Use",
        retrieval="55.69 (MTEB English v2, 10 tasks); multilingual v2 mean 61.15",
        note="multilingual; its licence is Google's Gemma terms, not an open-source one",
    ),
    CatalogModel(
        name="qwen3-embedding-0.6b",
        repo="Qwen/Qwen3-Embedding-0.6B-GGUF",
        file="Qwen3-Embedding-0.6B-Q8_0.gguf",
        size=639_150_592,
        sha256="06507c7b42688469c4e7298b0a1e16deff06caf291cf0a5b278c308249c3e439",
        dimension=1024,
        layers=28,
        width=1024,
        languages="100+",
        license="Apache-2.0",
        retrieval="61.83 (MTEB English v2, 10 tasks); multilingual retrieval 64.64",
        note="the strongest here, and the slowest: for a fast machine or a GPU",
    ),
)


def catalog() -> tuple[CatalogModel, ...]:
    """The models offered: these, or those of the JSON file `MNEMO_MODEL_CATALOG` names."""
    override = os.environ.get("MNEMO_MODEL_CATALOG")
    if not override:
        return CATALOG
    try:
        entries = json.loads(paths.read_regular(Path(override)).decode("utf-8"))
        return tuple(CatalogModel(**entry) for entry in entries)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"MNEMO_MODEL_CATALOG={override} is not a usable catalog: {exc}") from None


def find(name: str) -> CatalogModel:
    """The catalog entry called `name` (or the one it uniquely starts), else InputError."""
    models = catalog()
    wanted = name.strip().lower()
    exact = [m for m in models if m.name.lower() == wanted]
    matches = exact or [m for m in models if m.name.lower().startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(m.name for m in models)
    if not matches:
        raise InputError(f"no model called {name!r} in the catalog; choose one of: {names}")
    raise InputError(f"{name!r} matches several models: {', '.join(m.name for m in matches)}")


def models_dir() -> Path:
    """Where downloaded models are kept (private to the user)."""
    return paths.private_dir(paths.data_dir() / "models")


def installed(model: CatalogModel) -> Path | None:
    """The model's file if it was downloaded (and not since damaged: its size matches)."""
    path = models_dir() / model.filename
    if not path.is_file():
        return None
    return path if model.size is None or path.stat().st_size == model.size else None


class _Headers(urllib.request.HTTPRedirectHandler):
    """Follows redirects and keeps what the hub says of the file on the way (its answer to
    the first request is a redirect to the file's storage, with its size and SHA-256)."""

    def __init__(self):
        super().__init__()
        self.seen: dict[str, str] = {}

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        for key in ("X-Linked-Size", "X-Linked-Etag"):
            if headers.get(key):
                self.seen[key] = headers[key]
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _sha_from(value: str | None) -> str | None:
    text = (value or "").strip().strip('"').lower()
    text = text.removeprefix("w/").strip('"')
    return text if _SHA.fullmatch(text) else None


def _hash_of(path: Path) -> hashlib._Hash:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest


def download(
    model: CatalogModel,
    progress: Callable[[int, int | None], None] | None = None,
    timeout: float = 30.0,
) -> Path:
    """Fetch `model` into the models folder (resuming an earlier partial download) and
    return its path; ModelError in words when it cannot be fetched or verified."""
    folder = models_dir()
    final = folder / model.filename
    if installed(model) is not None and (
        model.sha256 is None or _hash_of(final).hexdigest() == model.sha256
    ):
        return final
    part = folder / (model.filename + ".part")
    have = part.stat().st_size if part.is_file() else 0
    handler = _Headers()
    opener = urllib.request.build_opener(handler)
    request = urllib.request.Request(model.url, headers={"User-Agent": f"mnemo/{__version__}"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    kept = f"{have / 1e6:.1f} MB"
    try:
        response = opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing after what we have: it may be complete
            response = None
        else:
            raise ModelError(f"{model.url} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        again = f"it resumes from the {kept} kept" if have else "nothing was downloaded"
        raise ModelError(
            f"cannot reach {model.url}: {reason}; run the same command again ({again})"
        ) from None
    headers = {**handler.seen, **(dict(response.headers) if response is not None else {})}
    served_sha = _sha_from(handler.seen.get("X-Linked-Etag")) or _sha_from(headers.get("ETag"))
    if model.sha256 and served_sha and served_sha != model.sha256:
        if response is not None:
            response.close()
        raise ModelError(
            f"the server offers another file than the catalog's {model.name} "
            f"(sha256 {served_sha[:12]}…, expected {model.sha256[:12]}…): not downloaded"
        )
    expected_sha = model.sha256 or served_sha
    if expected_sha is None:
        if response is not None:
            response.close()
        raise ModelError(
            f"no checksum is published for {model.url}: it cannot be verified, so it is "
            "not downloaded"
        )
    if response is not None and response.status == 200 and have:
        have = 0  # the server does not resume: start again
    total = model.size
    if total is None and handler.seen.get("X-Linked-Size", "").isdigit():
        total = int(handler.seen["X-Linked-Size"])
    if total is None and response is not None and response.headers.get("Content-Length"):
        total = have + int(response.headers["Content-Length"])
    if response is not None:
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        flags |= os.O_APPEND if have else os.O_TRUNC
        done = have
        announced = response.headers.get("Content-Length", "")
        try:
            with response, os.fdopen(paths.private_file(part, flags), "ab" if have else "wb") as f:
                while block := response.read(CHUNK):
                    f.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, total)
            if announced.isdigit() and done - have < int(announced):
                raise ConnectionError("the connection closed early")
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
            raise ModelError(
                f"the download of {model.name} stopped at {done / 1e6:.1f} MB "
                f"({getattr(exc, 'reason', exc)}); run the same command again to resume"
            ) from None
    size = part.stat().st_size if part.is_file() else 0
    if total is not None and size != total and response is not None:
        # The server sent all it has (no error while reading): not the file the catalog or
        # the hub names, and asking again would fetch the same
        part.unlink(missing_ok=True)
        raise ModelError(
            f"the server sent {size / 1e6:.1f} MB for {model.name}, whose file is "
            f"{total / 1e6:.1f} MB: another file; deleted, nothing installed"
        )
    digest = _hash_of(part).hexdigest()
    if (total is not None and size != total) or digest != expected_sha:
        part.unlink(missing_ok=True)
        raise ModelError(
            f"the downloaded {model.name} is damaged (size {size:,}, sha256 {digest[:12]}…, "
            f"expected {expected_sha[:12]}…) and was deleted; run the command again"
        )
    from app.core.model.embedder import inspect_model  # a GGUF with pooling, or ModelError

    try:
        inspect_model(part)
    except ModelError as exc:
        part.unlink(missing_ok=True)
        raise ModelError(f"the downloaded {model.name} is not a usable model: {exc}") from None
    os.replace(part, final)  # only a whole, verified file ever has the model's name
    return final


def describe(model: CatalogModel) -> dict:
    """A catalog entry as `mnemo model list --json` prints it."""
    path = installed(model)
    return {**asdict(model), "cost": round(model.cost, 1), "downloaded": str(path or "")}
