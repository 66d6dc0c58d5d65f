"""llama.cpp through llama-cpp-python's ctypes bindings, without its high-level layer.

`import llama_cpp` runs the package's `__init__`, which imports `Llama` and with it chat
formats, jinja2, a disk cache and a grammar engine, then `Llama()` reads every metadata key
and builds chat handlers: about 45 ms of a cold start that Mnemo never uses (an agent's first
prompt waits for it). Mnemo needs the bindings (`llama_cpp.llama_cpp`) and the thin
model/context/batch wrappers under `Llama` (`llama_cpp._internals`). `bindings()` imports
those with the package's `__init__` put off until something asks the package for a name it
does not have yet (`llama_cpp.Llama`, `__version__`): then it runs, and all works as usual.

`Model` is what `Embedder` holds: one model, one context in embedding mode, one batch.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading

ABORTED = 2  # what llama_decode returns when the abort callback said so
_lock = threading.RLock()
_backend: list[bool] = []  # llama_backend_init ran (once a process)
_log_callback: list = []  # ours, kept alive for as long as llama.cpp may call it


def _quiet(native) -> None:
    """llama.cpp's own messages go to our log at debug level, not to the terminal: a
    command's output stays its own (llama-cpp-python's logger, set when its package
    `__init__` runs, prints them to stderr)."""
    if not _log_callback:
        log = logging.getLogger("llama.cpp")

        @native.llama_log_callback
        def to_log(level: int, text: bytes, user_data) -> None:
            log.debug("%s", text.decode("utf-8", errors="replace").rstrip())

        _log_callback.append(to_log)
    native.llama_log_set(_log_callback[0], None)


class _DeferredPackage:
    """The `__getattr__` (PEP 562) of a `llama_cpp` package made without running its
    `__init__`: a name of the bindings comes from them (the `__init__` would star-import
    it: `llama_cpp._logger`, imported by `llama_cpp.llama`, asks the package for
    `llama_log_set` while `llama.py` is half loaded), a submodule's from `sys.modules` (or
    none while it loads: `import llama_cpp.llama as llama` in its chat formats); any other
    name it exports runs the real `__init__` once, then is looked up. Probes for private
    names (`inspect` and PySide's import hook ask any module for `__wrapped__`) run
    nothing."""

    def __init__(self, package, spec) -> None:
        self.package, self.spec = package, spec
        self.running: int | None = None  # the thread running `__init__`
        self.done = False

    def __call__(self, name: str):
        native = sys.modules.get("llama_cpp.llama_cpp")
        if native is not None and not name.startswith("_") and name in native.__dict__:
            return native.__dict__[name]
        if name.startswith("_") and name != "__version__":
            raise AttributeError(f"module 'llama_cpp' has no attribute {name!r}")
        if f"llama_cpp.{name}" in sys.modules:  # a submodule, asked for while it loads
            return sys.modules[f"llama_cpp.{name}"]
        if importlib.util.find_spec(f"llama_cpp.{name}") is not None:
            raise AttributeError(f"module 'llama_cpp' has no attribute {name!r}")  # not yet
        with _lock:
            if not self.done:
                if self.running == threading.get_ident():  # asked again while it runs
                    raise AttributeError(f"module 'llama_cpp' has no attribute {name!r}")
                self.running = threading.get_ident()
                try:
                    self.spec.loader.exec_module(self.package)
                finally:
                    self.running = None
                self.done = True
                self.package.__dict__.pop("__getattr__", None)
                _quiet(self.package.llama_cpp)  # its logger replaced ours
        return object.__getattribute__(self.package, name)


def bindings():
    """(`llama_cpp.llama_cpp`, `llama_cpp._internals`), imported without the package's
    `__init__` when nothing imported the package before; ImportError when not installed or
    its library does not load (then nothing of it stays imported)."""
    with _lock:
        made = None
        if sys.modules.get("llama_cpp") is None:
            spec = importlib.util.find_spec("llama_cpp")
            if spec is None or spec.loader is None or not spec.submodule_search_locations:
                raise ImportError("No module named 'llama_cpp'", name="llama_cpp")
            made = importlib.util.module_from_spec(spec)
            made.__getattr__ = _DeferredPackage(made, spec)
            sys.modules["llama_cpp"] = made
        try:
            import llama_cpp._internals as internals
            import llama_cpp.llama_cpp as native
        except BaseException:
            if made is not None and sys.modules.get("llama_cpp") is made:
                for name in [n for n in sys.modules if n.split(".")[0] == "llama_cpp"]:
                    del sys.modules[name]
            raise
        if not _backend:
            _quiet(native)
            native.llama_backend_init()
            _backend.append(True)
    return native, internals


class Model:
    """A GGUF model loaded for embeddings: its context (no pooling: token vectors out; one
    thread until told otherwise) and a batch of `n_ctx` tokens. ValueError when llama.cpp
    cannot load the file or make the context."""

    def __init__(self, path: str, n_ctx: int, gpu_layers: int = 0):
        native, internals = bindings()
        self.native = native
        _quiet(native)  # llama_cpp._logger, if something imported it since, put its own
        params = native.llama_model_default_params()
        params.n_gpu_layers = gpu_layers
        params.load_mode = native.LLAMA_LOAD_MODE_MMAP  # as Llama() does
        # verbose=True: quiet would point the whole process's stdout and stderr at /dev/null
        # while the model loads, and every line other threads wrote meanwhile was lost (the
        # app's log, a command's output); llama.cpp's messages go to our log (_quiet) anyway.
        self.model = internals.LlamaModel(path_model=path, params=params, verbose=True)
        try:
            context = native.llama_context_default_params()
            context.n_ctx = context.n_batch = context.n_ubatch = n_ctx
            context.n_threads = context.n_threads_batch = 1
            context.embeddings = True
            context.pooling_type = native.LLAMA_POOLING_TYPE_NONE
            context.n_seq_max = min(n_ctx, native.llama_max_parallel_sequences())
            context.kv_unified = True
            # what Llama() sets where llama.cpp's defaults differ (RoPE models' vectors)
            context.yarn_attn_factor, context.yarn_beta_fast = 1.0, 32.0
            context.yarn_beta_slow, context.no_perf = 1.0, False
            # Flash attention embeds 2.6x faster on this CPU with identical vectors (checked
            # against sentence-transformers); a model that cannot use it runs without.
            for flash in (True, False):
                context.flash_attn_type = (
                    native.LLAMA_FLASH_ATTN_TYPE_ENABLED
                    if flash
                    else native.LLAMA_FLASH_ATTN_TYPE_DISABLED
                )
                try:
                    self.ctx = internals.LlamaContext(
                        model=self.model, params=context, verbose=False
                    )
                    break
                except ValueError:
                    if not flash:
                        raise
            self.batch = internals.LlamaBatch(
                n_tokens=n_ctx, embd=0, n_seq_max=n_ctx, verbose=False
            )
        except BaseException:
            self.model.close()  # the context, if made, goes with it
            raise
        self.n_batch = n_ctx
        self.n_seq_max = context.n_seq_max
        self.n_embd = native.llama_model_n_embd(self.model.model)
        self._asked = None  # what a decode under way asks whether to go on (or None)
        self._raised: BaseException | None = None  # what that question raised (Ctrl+C)

        @native.ggml_abort_callback
        def callback(_data) -> bool:
            try:
                return bool(self._asked())
            except BaseException as exc:  # noqa: BLE001 - kept, raised once the decode ends
                self._raised = exc
                return True

        self._abort = callback  # (kept alive as long as llama.cpp may call it)
        self._no_abort = native.ggml_abort_callback()  # NULL: llama.cpp asks nothing

    def decode(self, asked=None) -> int:
        """Run the batch; llama.cpp's answer: 0, or `ABORTED` when `asked()` said to stop
        (it is called between two steps of the graph, about 150 times in a 60 ms decode, only
        during this decode: another decode runs no Python); another failure is raised."""
        native = self.native
        if asked is not None:
            self._asked, self._raised = asked, None
            native.llama_set_abort_callback(self.ctx.ctx, self._abort, None)
        try:
            code = native.llama_decode(self.ctx.ctx, self.batch.batch)
        finally:
            if asked is not None:
                native.llama_set_abort_callback(self.ctx.ctx, self._no_abort, None)
                self._asked = None
        if self._raised is not None:
            raised, self._raised = self._raised, None
            raise raised
        if code not in (0, ABORTED):
            raise RuntimeError(f"llama_decode returned {code}")
        return code

    def tokenize(self, text: bytes, add_bos: bool) -> list[int]:
        return self.model.tokenize(text, add_bos, False)

    def set_threads(self, threads: int) -> None:
        self.native.llama_set_n_threads(self.ctx.ctx, threads, threads)

    def embeddings(self):
        """The pointer to the last decode's token vectors."""
        return self.native.llama_get_embeddings(self.ctx.ctx)

    def close(self) -> None:
        """Free the batch, the context and the model (in that order)."""
        self.batch.close()
        self.model.close()
