"""`mnemo model list|get`: the catalog, and a download that resumes, verifies and never
leaves half a model in use. No model hub is reachable here: a local HTTP server plays
Hugging Face (a redirect carrying X-Linked-Size and X-Linked-Etag, then the file with
Range support), serving the bundled model's bytes."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.core import paths
from app.core.errors import ModelError
from app.core.model import catalog
from tests.conftest import run_cli

MODEL = paths.DEFAULT_MODEL.read_bytes()
SHA = hashlib.sha256(MODEL).hexdigest()


class Hub:
    """A stand-in for the hub on 127.0.0.1: what it serves and how it misbehaves."""

    def __init__(self):
        self.body = MODEL
        self.linked_sha = SHA  # sent as X-Linked-Etag (None: not sent)
        self.cut_after: int | None = None  # drop the connection after this many bytes
        self.ranges: list[str] = []  # the Range headers received
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server API
                if "/resolve/main/" in self.path:  # the hub redirects to its storage
                    self.send_response(302)
                    self.send_header("Location", "/storage/" + self.path.rsplit("/", 1)[1])
                    self.send_header("X-Linked-Size", str(len(hub.body)))
                    if hub.linked_sha:
                        self.send_header("X-Linked-Etag", f'"{hub.linked_sha}"')
                    self.end_headers()
                    return
                start = 0
                if self.headers.get("Range"):
                    hub.ranges.append(self.headers["Range"])
                    start = int(self.headers["Range"].split("=")[1].rstrip("-"))
                    if start >= len(hub.body):
                        self.send_response(416)
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(hub.body) - 1}/*")
                else:
                    self.send_response(200)
                body = hub.body[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if hub.cut_after is not None and start == 0:
                    self.wfile.write(body[: hub.cut_after])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # the line drops mid-file
                    return
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hub(monkeypatch):
    server = Hub()
    monkeypatch.setenv("MNEMO_MODEL_MIRROR", server.url)
    yield server
    server.server.shutdown()


def entry(**changes) -> catalog.CatalogModel:
    """A catalog entry for the bundled model's bytes (nothing pinned unless given)."""
    values = dict(
        name="test-minilm",
        repo="test/minilm-gguf",
        file="minilm.gguf",
        size=None,
        sha256=None,
        dimension=384,
        layers=6,
        width=384,
        languages="English",
        license="Apache-2.0",
        retrieval="41.95",
    )
    return catalog.CatalogModel(**{**values, **changes})


def test_the_catalog_offers_verifiable_models_with_their_figures():
    names = [m.name for m in catalog.CATALOG]
    assert len(names) == len(set(names)) >= 5
    for m in catalog.CATALOG:
        assert m.url.startswith("https://huggingface.co/") and m.url.endswith(".gguf")
        assert m.sha256 is None or len(m.sha256) == 64
        assert m.retrieval and m.license and m.cost >= 1
    assert {"bge-small-en-v1.5", "embeddinggemma-300m"} <= set(names)
    assert any("100" in m.languages for m in catalog.CATALOG)  # multilingual ones
    assert catalog.find("bge-small").name == "bge-small-en-v1.5"
    with pytest.raises(Exception, match="no model called"):
        catalog.find("gpt-5")


def test_a_download_is_verified_and_installed_whole(hub):
    seen = []
    path = catalog.download(entry(size=len(MODEL)), progress=lambda d, t: seen.append((d, t)))
    assert path.read_bytes() == MODEL and path.parent == catalog.models_dir()
    assert not list(path.parent.glob("*.part"))  # nothing half-written is left
    assert path.stat().st_mode & 0o077 == 0
    assert seen[-1] == (len(MODEL), len(MODEL)) and seen == sorted(seen)
    # Asked again: already there, nothing fetched
    hub.body = b"not asked for"
    assert catalog.download(entry(size=len(MODEL))) == path


def test_a_stopped_download_resumes_where_it_stopped(hub):
    hub.cut_after = 10_000_000
    with pytest.raises(ModelError, match="run the same command again"):
        catalog.download(entry())
    part = catalog.models_dir() / "minilm.gguf.part"
    assert part.is_file() and 0 < part.stat().st_size < len(MODEL)
    assert not (catalog.models_dir() / "minilm.gguf").exists()  # never half a model in use
    kept = part.stat().st_size
    hub.cut_after = None
    path = catalog.download(entry())
    assert hub.ranges == [f"bytes={kept}-"]  # only the rest was asked for
    assert path.read_bytes() == MODEL and not part.exists()


def test_a_damaged_download_is_deleted_not_installed(hub):
    hub.body = MODEL[:-1] + bytes([MODEL[-1] ^ 0xFF])  # one flipped byte, the hub's sha
    with pytest.raises(ModelError, match="damaged"):
        catalog.download(entry())
    assert not list(catalog.models_dir().iterdir())


def test_a_file_other_than_the_pinned_one_is_refused_before_downloading(hub):
    with pytest.raises(ModelError, match="another file than the catalog"):
        catalog.download(entry(sha256="0" * 64))
    assert not list(catalog.models_dir().iterdir())


def test_a_file_nobody_vouches_for_is_not_downloaded(hub):
    hub.linked_sha = None
    with pytest.raises(ModelError, match="no checksum"):
        catalog.download(entry())
    assert not list(catalog.models_dir().iterdir())


def test_something_that_is_not_a_model_is_not_installed(hub):
    hub.body = b"<html>rate limited</html>"
    hub.linked_sha = hashlib.sha256(hub.body).hexdigest()
    with pytest.raises(ModelError, match="not a usable model"):
        catalog.download(entry())
    assert not list(catalog.models_dir().iterdir())


def test_no_hub_is_one_line_and_keeps_what_was_fetched(monkeypatch):
    monkeypatch.setenv("MNEMO_MODEL_MIRROR", "http://127.0.0.1:9")  # nothing listens
    with pytest.raises(ModelError, match="cannot reach"):
        catalog.download(entry())


def test_model_get_then_use_from_the_command_line(hub, tmp_path, mnemo_home):
    listed = tmp_path / "catalog.json"
    listed.write_text(json.dumps([entry(size=len(MODEL), sha256=SHA).__dict__]))
    env = {"MNEMO_MODEL_CATALOG": str(listed), "MNEMO_MODEL_MIRROR": hub.url}
    shown = run_cli("model", "list", env=env)
    assert shown.returncode == 0 and b"test-minilm" in shown.stdout
    assert b"nothing is downloaded otherwise" in shown.stdout
    got = run_cli("model", "get", "test-minilm", "--use", env=env)
    assert got.returncode == 0, got.stderr
    assert b"size and SHA-256 verified" in got.stdout and b"Now using" in got.stdout
    listed_after = json.loads(run_cli("model", "list", "--json", env=env).stdout)
    assert listed_after[0]["downloaded"].endswith("minilm.gguf")
    unknown = run_cli("model", "get", "nope", env=env)
    assert unknown.returncode == 1 and b"Traceback" not in unknown.stderr


def test_a_file_of_another_size_is_deleted_not_resumed_forever(hub):
    # Found by a tester: a server that sends a whole file of the wrong size made every run
    # say "stopped at 46.2 of 67.3 MB; run the same command again"
    with pytest.raises(ModelError, match="another file"):
        catalog.download(entry(size=len(MODEL) + 1_000))
    assert not list(catalog.models_dir().iterdir())
