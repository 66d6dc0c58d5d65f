"""The bundled model: our converter reproduces it, and the embedder never lets llama.cpp abort."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from app.core import paths
from app.core.errors import InputError, ModelError
from app.core.model.converter import convert
from app.core.model.embedder import Embedder, family_prefixes, inspect_model
from app.core.model.gguf_meta import read_metadata

BUNDLED_SHA256 = "a5ec65c2783c25b6c4f60d03fd831007c767667faed6695aa12377bf890555ee"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bundled_model_is_the_recorded_file():
    assert _sha(paths.DEFAULT_MODEL) == BUNDLED_SHA256
    assert (paths.DEFAULT_MODEL.parent / "LICENSE-all-MiniLM-L6-v2").is_file()


def test_converter_reproduces_the_bundled_model_byte_for_byte(minilm_source, tmp_path):
    out = convert(minilm_source, tmp_path / "again.gguf", "f16", name="all-MiniLM-L6-v2")
    assert _sha(out) == BUNDLED_SHA256


def test_converted_metadata_matches_sentence_transformers_config():
    meta = read_metadata(paths.DEFAULT_MODEL)
    assert meta["general.architecture"] == "bert"
    assert meta["general.name"] == "all-MiniLM-L6-v2"
    assert meta["general.license"] == "apache-2.0"
    assert meta["bert.context_length"] == 512
    assert meta["bert.embedding_length"] == 384
    assert meta["bert.pooling_type"] == 1  # mean
    assert meta["tokenizer.ggml.model"] == "bert"
    assert meta["mnemo.max_seq_length"] == 256
    assert meta["tokenizer.ggml.seperator_token_id"] == 102


def test_q8_conversion_is_smaller_and_close_to_f16(q8_model, embedder):
    assert q8_model.stat().st_size < paths.DEFAULT_MODEL.stat().st_size * 0.6
    q8 = Embedder.load(q8_model)
    assert q8.info.model_id != embedder.info.model_id
    texts = ["parsing CSV files with error handling", "deploying to kubernetes"]
    for a, b in zip(embedder.embed_documents(texts), q8.embed_documents(texts), strict=True):
        assert float(a[0] @ b[0]) > 0.99
    q8.close()


def test_converter_refuses_non_bert_and_incomplete_folders(tmp_path, minilm_source):
    with pytest.raises(InputError, match="no config.json"):
        convert(tmp_path, tmp_path / "x.gguf")
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(InputError, match="BERT only"):
        convert(other, tmp_path / "x.gguf")
    partial = tmp_path / "partial"
    shutil.copytree(minilm_source, partial, ignore=shutil.ignore_patterns("*.safetensors"))
    with pytest.raises(InputError, match="model.safetensors"):
        convert(partial, tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()


@pytest.mark.parametrize(
    "content", [b"", b"GGUF", b"not a model at all" * 50, b"GGUF\x03\x00\x00\x00" + b"\xff" * 64]
)
def test_corrupt_model_files_raise_model_error(tmp_path, content):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(content)
    with pytest.raises(ModelError):
        Embedder.load(bad)


def test_truncated_model_file_raises_model_error(tmp_path):
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(paths.DEFAULT_MODEL.read_bytes()[:20_000_000])
    with pytest.raises(ModelError, match="cannot load"):
        Embedder.load(bad)


def test_missing_model_file_raises_model_error(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        inspect_model(tmp_path / "nope.gguf")


def test_vectors_are_normalized_float32_and_meaningful(embedder):
    q = embedder.embed_query("kubernetes troubleshooting")
    docs = embedder.embed_documents(["k8s pod restart debugging", "banana bread recipe"])
    assert q.dtype == np.float32 and q.shape == (384,)
    assert abs(float(np.linalg.norm(q)) - 1) < 1e-5
    assert float(docs[0][0] @ q) > 0.4 > float(docs[1][0] @ q)


def test_long_text_is_chunked_within_the_window(embedder):
    text = " ".join(f"word{i}" for i in range(3000))
    sequences = embedder.document_sequences(text)
    assert len(sequences) > 5
    assert all(len(s) <= embedder.info.window for s in sequences)
    assert all(s[0] == 101 and s[-1] == 102 for s in sequences)  # [CLS] ... [SEP]
    vectors = embedder.embed_documents([text])[0]
    assert vectors.shape == (len(sequences), 384)


def test_hostile_queries_are_truncated_never_abort(embedder):
    for text in [
        "x" * 10_000,
        "a\x00b\x00" * 3000,
        "🙂" * 5000,
        "مرحبا بالعالم " * 900,
        "\u202e\u200f" * 4000,
        "",
    ]:
        seq = embedder.query_sequence(text)
        assert len(seq) <= embedder.info.window
        vec = embedder.embed_query(text)
        assert np.isfinite(vec).all()


def test_family_prefixes_follow_the_model_family():
    assert family_prefixes("nomic-bert", "nomic-embed-text-v1.5") == (
        "search_query: ",
        "search_document: ",
    )
    assert family_prefixes("bert", "multilingual-e5-small") == ("query: ", "passage: ")
    assert family_prefixes("bert", "all-MiniLM-L6-v2") == ("", "")
    assert family_prefixes("qwen3", "Qwen3-Embedding-0.6B")[0].startswith("Instruct:")
    assert family_prefixes("gemma-embedding", "embeddinggemma-300m")[1] == "title: none | text: "


def test_prefix_override_from_settings(tmp_path):
    info = inspect_model(paths.DEFAULT_MODEL, query_prefix="Q: ", document_prefix="")
    assert (info.query_prefix, info.document_prefix) == ("Q: ", "")


def test_embeddings_match_sentence_transformers_reference(embedder):
    data = Path(__file__).parent / "data"
    texts = json.loads((data / "st_reference_texts.json").read_text())
    reference = np.load(data / "st_reference_vectors.npy")
    ours = np.vstack([v[0] for v in embedder.embed_documents(texts)])
    assert ((ours * reference).sum(axis=1) > 0.9999).all()


def test_gpu_layers_on_a_cpu_only_build_run_the_model_on_the_cpu(embedder):
    # GIVEN the default setting (-1: every layer on the GPU when llama.cpp has one)
    import llama_cpp

    model = Embedder.load(paths.DEFAULT_MODEL, gpu_layers=-1)
    try:
        # THEN a build without GPU offload loads on the CPU and embeds the same vectors
        assert model.on_gpu == bool(llama_cpp.llama_supports_gpu_offload())
        same = model.embed_query("liveness probe restarts")
        assert np.allclose(same, embedder.embed_query("liveness probe restarts"), atol=1e-5)
    finally:
        model.close()


def test_a_query_runs_on_one_thread_and_a_batch_on_the_free_cores(tmp_path):
    # GIVEN another process keeping one core busy (users' laptops are never idle)
    import subprocess
    import sys
    import time

    model = Embedder.load(paths.DEFAULT_MODEL)
    try:
        model.embed_query("warm up")
        assert model.threads == 1  # a query never waits on a busy core
        if (os.cpu_count() or 1) < 2:
            pytest.skip("one core: nothing to choose")
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            model.free_cores.free()  # start the interval
            time.sleep(0.6)
            # THEN a batch leaves the busy core alone
            assert model.free_cores.free() <= model.free_cores.cores - 1
            model.embed_documents(["a note about the busy core"])
            assert 1 <= model.threads <= model.free_cores.cores - 1
        finally:
            spinner.kill()
            spinner.wait()
        model.embed_query("and queries stay on one thread")
        assert model.threads == 1
    finally:
        model.close()


def test_free_cores_counts_other_processes_not_our_own_work():
    import time

    from app.core.model.embedder import FreeCores

    free = FreeCores()
    free.free()
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:  # we keep one core busy ourselves
        pass
    # our own work is not someone else's: at most the machine's other load is taken off
    assert free.free() >= 1
    fake = FreeCores(cores=4)
    fake._last = (0.0, 0.0, 0.0)
    fake._sample = lambda: (1.0, 2.0, 1.0)  # 2 busy core-seconds in 1 s, 1 of them ours
    assert fake.free() == 3


def test_a_text_gets_the_same_vector_alone_and_packed_with_others(embedder):
    # The sentence vector is pooled from llama.cpp's token vectors (for labels, issue 10):
    # each text must get its own tokens' mean however the batch was packed.
    texts = ["liveness probe restarts", "banana bread recipe " * 40, "E_CONN_RESET retries"]
    packed = embedder.embed_documents(texts * 20)
    alone = [embedder.embed_documents([text])[0] for text in texts]
    for n, vectors in enumerate(packed):
        # (packing changes the float sums, not the vector: cosine 0.99999)
        for i, own in enumerate(alone):
            cosine = (vectors * own).sum(axis=1).min() if len(vectors) == len(own) else 0
            assert (cosine > 0.99999) == (i == n % 3), (n, i, cosine)


def test_one_forward_pass_gives_vectors_and_the_token_vectors_labels_read(embedder):
    text = "Zero-downtime deploys need SIGTERM handling before Kubernetes kills the pod"
    ((vectors, chunks),) = embedder.embed_documents_with_tokens([text])
    assert np.allclose(vectors, embedder.embed_documents([text])[0], atol=1e-6)
    (chunk,) = chunks
    assert chunk.ids == embedder.document_sequences(text)[0]
    assert chunk.vectors.shape == (len(chunk.ids), 384)
    pooled = chunk.vectors.mean(axis=0)  # the model pools by the mean
    assert np.allclose(pooled / np.linalg.norm(pooled), vectors[0], atol=1e-5)
    # AND a long text keeps the token vectors of its first LABEL_CHUNKS chunks only
    from app.core.model.embedder import LABEL_CHUNKS

    ((long_vectors, long_chunks),) = embedder.embed_documents_with_tokens([text * 100])
    assert len(long_vectors) > LABEL_CHUNKS and len(long_chunks) == LABEL_CHUNKS


def test_a_model_without_pooling_is_refused(tmp_path):
    import gguf

    path = tmp_path / "token-model.gguf"
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_context_length(512)
    writer.add_embedding_length(384)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelError, match="no pooling: it is not a sentence-embedding model"):
        inspect_model(path)


def _python(code: str, home: Path):
    """`code` run by this Python in a fresh process from the checkout, MNEMO_HOME=home."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        env={**os.environ, "MNEMO_HOME": str(home)},
        timeout=120,
    )


def test_llama_cpp_messages_stay_out_of_the_terminal(tmp_path):
    # The context runs without pooling (we pool), and llama.cpp warns about it on stderr;
    # a `mnemo recall` must print its results and nothing else.

    run = _python(
        "from app.core import paths; from app.core.model.embedder import Embedder; "
        "e = Embedder.load(paths.DEFAULT_MODEL); e.embed_documents(['a note']); "
        "e.embed_query('a query'); e.close(); print('done')",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert (run.stdout, run.stderr) == ("done\n", "")


def test_a_closed_model_raises_model_error_instead_of_crashing_the_process(tmp_path):
    # A thread that still held a model its owner had freed (the engine closed, or the model
    # switched) tokenized or decoded on freed memory: the whole process died (SIGSEGV).
    run = _python(
        "import threading\n"
        "from app.core import paths\n"
        "from app.core.errors import ModelError\n"
        "from app.core.model.embedder import Embedder\n"
        "e = Embedder.load(paths.DEFAULT_MODEL)\n"
        "results = []\n"
        "def use():\n"
        "    for _ in range(2000):\n"
        "        try:\n"
        "            e.embed_query('a query asked while the model closes')\n"
        "        except ModelError as exc:\n"
        "            results.append(str(exc)); return\n"
        "user = threading.Thread(target=use); user.start()\n"
        "e.embed_query('warm'); e.close(); e.close()\n"
        "user.join()\n"
        "for ask in (lambda: e.query_sequence('hello'), lambda: e.embed_documents(['a'])):\n"
        "    try:\n"
        "        ask()\n"
        "    except ModelError as exc:\n"
        "        results.append(str(exc))\n"
        "print(len(results), results[-1], flush=True)\n",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("3 ") and "the model was closed" in run.stdout


def test_what_other_threads_print_while_a_model_loads_is_not_lost(tmp_path):
    # llama-cpp-python pointed the whole process's stdout and stderr at /dev/null while a
    # model loaded: the desktop app's log lines written meanwhile (the hotkeys bound through
    # the portal, in CI under load) never reached the terminal or the journal.
    run = _python(
        "import sys, threading, time\n"
        "from app.core import paths\n"
        "from app.core.model.embedder import Embedder\n"
        "done, n = threading.Event(), [0]\n"
        "def write():\n"
        "    while not done.is_set():\n"
        "        print(f'out {n[0]}', flush=True)\n"
        "        print(f'err {n[0]}', file=sys.stderr, flush=True)\n"
        "        n[0] += 1; time.sleep(0.0005)\n"
        "writer = threading.Thread(target=write); writer.start()\n"
        "during = []\n"
        "for _ in range(3):\n"
        "    before = n[0]\n"
        "    Embedder.load(paths.DEFAULT_MODEL).close()\n"
        "    during.append(n[0] - before)\n"
        "done.set(); writer.join()\n"
        "print(f'written {n[0]} during {max(during)}', flush=True)\n",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    last = run.stdout.splitlines()[-1].split()
    written, during = int(last[1]), int(last[3])
    assert during > 0  # the writer wrote while a model loaded
    assert run.stdout.splitlines()[:-1] == [f"out {n}" for n in range(written)]
    assert run.stderr.splitlines() == [f"err {n}" for n in range(written)]


def test_a_model_with_flipped_bytes_is_refused_not_used(tmp_path, mnemo_home):
    # The red team (issue 21): a model with 200k bytes flipped still loaded and gave NaN
    # vectors silently; `model use` took it, and doctor's "FAIL model: … loads and embeds"
    # read like success
    from app.core import paths
    from tests.conftest import run_cli

    data = bytearray(paths.DEFAULT_MODEL.read_bytes())
    for i in range(len(data) // 2, len(data), len(data) // 2 // 200_000):
        data[i] ^= 0xFF
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(bytes(data))
    use = run_cli("model", "use", str(damaged))
    err = use.stderr.decode()
    assert use.returncode == 1 and "Traceback" not in err and "not usable" in err, err
    # Forced through the environment: nothing is stored with its vectors, and doctor says
    # plainly what is wrong
    env = {"MNEMO_MODEL": str(damaged)}
    stored = run_cli("remember", "A note while the model is damaged", env=env)
    assert stored.returncode == 0 and b"without embedding" in stored.stderr + stored.stdout
    doctor = run_cli("doctor", env=env).stdout.decode()
    assert "not usable" in doctor and "loads and embeds" not in doctor
    assert run_cli("stats", "--json").returncode == 0


ASK_FOR_LLAMA = {  # ways other code may ask for llama-cpp-python's Llama afterwards
    "the package": "import llama_cpp; names = [llama_cpp.Llama.__name__]",
    # llama.py's logger module asks the package for a binding while llama.py is half loaded
    "its module first": "from llama_cpp.llama import Llama; import llama_cpp; "
    "names = [llama_cpp.Llama.__name__]",
    "two threads at once": "import threading, llama_cpp; names = []\n"
    "ts = [threading.Thread(target=lambda: names.append(llama_cpp.Llama.__name__)) "
    "for _ in range(2)]\n[t.start() for t in ts]; [t.join() for t in ts]",
}


@pytest.mark.parametrize("asking", list(ASK_FOR_LLAMA))
def test_the_model_loads_without_llama_cpp_pythons_high_level_layer(tmp_path, asking):
    # A hook's first answer waits for the model: `import llama_cpp` brought chat formats,
    # jinja2 and a disk cache (45 ms of a cold start) that embedding never uses

    code = (
        "import sys; from app.core import paths; from app.core.model.embedder import Embedder\n"
        "e = Embedder.load(paths.DEFAULT_MODEL); e.embed_query('a query')\n"
        "print(sorted(m for m in ('llama_cpp.llama', 'jinja2', 'diskcache') if m in sys.modules))\n"
        f"{ASK_FOR_LLAMA[asking]}\n"  # the package still works whole for whoever asks
        "import llama_cpp; print(llama_cpp.__version__.count('.') == 2, names)\n"
        "e.close(); Embedder.load(paths.DEFAULT_MODEL).close()"
    )
    run = _python(code, tmp_path)
    assert run.returncode == 0, run.stderr
    names = ["Llama", "Llama"] if asking == "two threads at once" else ["Llama"]
    assert run.stdout.splitlines() == ["[]", f"True {names}"], run.stdout
    # its logger (set when llama-cpp-python's modules load) does not bring llama.cpp's
    # messages back to the terminal
    assert run.stderr == "", run.stderr


def test_a_model_is_self_checked_once_and_again_when_its_file_changes(
    tmp_path, mnemo_home, monkeypatch
):
    from app.core.engine import Engine

    model = tmp_path / "model.gguf"
    shutil.copyfile(paths.DEFAULT_MODEL, model)
    monkeypatch.setenv("MNEMO_MODEL", str(model))
    checks = []
    real_check = Embedder.check
    monkeypatch.setattr(Embedder, "check", lambda self: checks.append(1) or real_check(self))

    def load() -> Engine:
        engine = Engine()
        assert engine.embedder is not None or engine.model_error
        return engine

    first = load()
    assert first.embedder is not None and len(checks) == 1
    first.close()
    # WHEN the same file is loaded again (a hook helper's cold start): no second check
    again = load()
    assert again.embedder is not None and len(checks) == 1
    again.close()
    # WHEN the file is damaged in place (same size, same path): checked again, and refused
    data = bytearray(model.read_bytes())
    for i in range(len(data) // 2, len(data), len(data) // 2 // 200_000):
        data[i] ^= 0xFF
    stat = model.stat()
    model.write_bytes(bytes(data))
    # and its modification time put back, as `cp -p` or a restored backup would
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    damaged = load()
    assert len(checks) == 2
    assert damaged.embedder is None and "not usable" in (damaged.model_error or "")
    damaged.close()


@pytest.mark.parametrize(
    "cache",
    [
        b"[1, 2]",
        b"[" * 100_000 + b"]" * 100_000,  # nested too deep for json
        b'{"x": 5}',
        b"{" + b'"k": "' + b"x" * (2 << 20) + b'"}',  # larger than any cache Mnemo writes
        "wrong types",
    ],
)
def test_a_damaged_model_facts_file_only_means_reading_the_model_again(
    mnemo_home, cache, tmp_path, monkeypatch
):
    from app.core.engine import Engine
    from app.core.model import facts

    model = tmp_path / "model.gguf"
    shutil.copyfile(paths.DEFAULT_MODEL, model)
    monkeypatch.setenv("MNEMO_MODEL", str(model))
    target = paths.cache_dir() / facts.CACHE_NAME
    if cache == "wrong types":
        key = facts.identity(model.resolve())
        entry = {"sha256": 7, "checked": ["x"], "metadata": {"bert.embedding_length": [1]}}
        cache = json.dumps({key: entry}).encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(cache)
    engine = Engine()
    try:
        assert engine.embedder is not None, engine.model_error
        assert engine.embedder.info.dimension == 384
        assert engine.embedder.info.sha256 == BUNDLED_SHA256
    finally:
        engine.close()
