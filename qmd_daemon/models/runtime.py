"""llama-cpp-python runtime: lazy import, device and threads, one lock and lazy load per model.

OMP_WAIT_POLICY=PASSIVE is set before llama_cpp is first imported: with other load on a small
box, spinning OpenMP threads made 2 threads 3-5x slower than 1.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from qmd_daemon.models import ModelError
from qmd_daemon.models.abort import DECODE_ABORTED, Aborted, AbortFlag
from qmd_daemon.models.gguf_info import GGUFInfo, read_gguf_info
from qmd_daemon.settings import Settings

BERT_ARCHS = frozenset({"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3",
                        "modern-bert", "neo-bert", "eurobert", "t5encoder"})


_log = logging.getLogger("qmd_daemon.llama")
_log_callback: Any = None
# The abort flag of the decode running on this thread (decode_pooled): llama.cpp logs an aborted
# decode as three error lines, which are no error when the flag asked for it.
_decoding = threading.local()


def llama_module() -> ModuleType:
    """Import llama_cpp on first use, with the OpenMP policy set first and its logs quieted.

    Call it before anything imports numpy: with numpy (2.5.2, scipy-openblas) imported first, a
    CUDA build of llama.cpp crashed with SIGSEGV at the first model load, on the CPU too; with
    llama.cpp first, both worked (bench/device_check.py on an H200). tests/models/test_import_order.py
    keeps our own imports in that order.
    """
    global _log_callback
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "llama_cpp" not in sys.modules and Settings.from_env().force_cpu:
        # a CUDA build makes a CUDA context at import, offloading or not (~527 MiB of an H200's
        # memory held by every QMD_FORCE_CPU process, 2026-12-04): hide the GPUs from it first
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import llama_cpp

    if _log_callback is None:
        # llama.cpp prints some notices at level NONE, which verbose=False lets through to stderr;
        # route everything to Python logging instead (errors stay visible at ERROR level).
        @llama_cpp.llama_log_callback
        def _forward(level: int, text: bytes, user_data: Any) -> None:
            # ggml levels: 1 debug, 2 info, 3 warn, 4 error, 5 continuation.
            message = text.decode("utf-8", "replace").rstrip()
            flag = getattr(_decoding, "abort", None)
            asked = flag is not None and flag.is_set()  # an abort we asked for: said at DEBUG
            _log.log(logging.ERROR if level == 4 and not asked else logging.DEBUG, "%s", message)

        _log_callback = _forward
        llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
    return llama_cpp


def load_llama_first() -> None:
    """Load llama.cpp's libraries now, before a daemon imports its web stack (aiohttp and the
    rest of qmd_daemon.daemon.server): with those imported first, a CUDA build crashed (SIGSEGV)
    at the daemon's first model load, on the GPU and the CPU alike (an H200, 2026-12-04), as it
    did after numpy (llama_module). A llama_cpp that cannot be imported is left for the model
    roles to report, as they do without this."""
    with suppress(ImportError, OSError):
        llama_module()


def gpu_available() -> bool:
    """Whether this llama.cpp build can offload layers to a GPU."""
    try:
        return bool(llama_module().llama_supports_gpu_offload())
    except (ImportError, OSError, AttributeError):
        return False


def select_device(configured: str | None = None) -> str:
    """`cpu` or `gpu`: QMD_FORCE_CPU wins, then QMD_LLAMA_GPU, then `device` from index.yml, then auto."""
    settings = Settings.from_env()
    if settings.force_cpu:
        return "cpu"
    wanted = (settings.llama_gpu or configured or "auto").strip().lower()
    if wanted in ("0", "off", "false", "no", "cpu"):
        return "cpu"
    return "gpu" if gpu_available() else "cpu"


def default_threads() -> int:
    """QMD_THREADS, else min(4, cores): more threads than cores only adds contention."""
    return Settings.from_env().threads or max(1, min(4, os.cpu_count() or 1))


def is_encoder(info: GGUFInfo) -> bool:
    """BERT-like (non-causal) encoders need the whole input in one ubatch."""
    return info.architecture in BERT_ARCHS or info.arch_value("attention.causal") is False


@dataclass
class ModelHandle:
    """One GGUF model: loaded on first `acquire()`, used under its own lock, freed by `unload()`."""

    path: Path
    embedding: bool = False
    n_ctx: int = 2048
    pooling_type: int | None = None
    device: str | None = None
    threads: int | None = None
    # set: a decode on this instance stops at its next graph node (models/abort.py); only for an
    # instance of its own (the background embedder's), never the one searches use
    abort: AbortFlag | None = None
    info: GGUFInfo = field(init=False)
    _llm: Any = field(default=None, init=False, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    # Searches waiting for the model, and the thread holding it: background work (embedding the
    # index) lets a waiting search go first between its steps.
    _turns: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _urgent: int = field(default=0, init=False, repr=False)
    _holder: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.info = read_gguf_info(self.path)  # checks the file before llama.cpp sees it
        train_ctx = self.info.arch_value("context_length")
        if isinstance(train_ctx, int) and train_ctx > 0:
            self.n_ctx = min(self.n_ctx, train_ctx)
        if is_encoder(self.info):
            self.n_ctx = min(self.n_ctx, 512)

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def _load(self) -> Any:
        llama_cpp = llama_module()
        device = self.device if self.device in ("cpu", "gpu") else select_device(self.device)
        threads = self.threads or default_threads()
        kwargs: dict[str, Any] = dict(
            model_path=str(self.path), n_ctx=self.n_ctx, n_threads=threads, n_threads_batch=threads,
            n_gpu_layers=-1 if device == "gpu" else 0, embedding=self.embedding, verbose=False,
        )
        if self.embedding:
            # Every sequence must fit one ubatch: a pooled (or encoder) sequence split across
            # ubatches aborts the whole process ("encoder requires n_ubatch >= n_tokens").
            kwargs.update(n_batch=self.n_ctx, n_ubatch=self.n_ctx)
        else:
            kwargs.update(n_batch=min(512, self.n_ctx), n_ubatch=min(512, self.n_ctx))
        if self.pooling_type is not None:
            kwargs["pooling_type"] = self.pooling_type
        try:
            llm = llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"llama.cpp could not load {self.path.name}: {exc}") from None
        if self.abort is not None:
            self.abort.attach(llama_cpp, llm.ctx)
        return llm

    @contextmanager
    def acquire(self, *, urgent: bool = False) -> Iterator[Any]:
        """The loaded `llama_cpp.Llama`, held under this model's lock for the `with` block.
        `urgent` (a search): taken before any background user waiting for it; a background
        user (urgent False) waits while a search does, so it should hold the model for short
        steps (Embedder embeds one decode per acquire)."""
        me = threading.get_ident()
        with self._turns:
            if urgent:
                self._urgent += 1
            elif self._holder != me:  # a thread holding the model never waits for it
                self._turns.wait_for(lambda: self._urgent == 0)
        try:
            with self._lock:
                outer, self._holder = self._holder, me
                try:
                    if self._llm is None:
                        self._llm = self._load()
                    yield self._llm
                finally:
                    self._holder = outer
        finally:
            if urgent:
                with self._turns:
                    self._urgent -= 1
                    self._turns.notify_all()

    def can_serve(self, other: ModelHandle) -> bool:
        """Whether this handle, its context widened to other's if need be, does other's job:
        the same file, loaded the same way (a role that reads only its tokens and outputs)."""
        return (self.path.resolve() == other.path.resolve() and self.embedding == other.embedding
                and self.pooling_type == other.pooling_type and self.device == other.device
                and self.threads == other.threads)

    def widen(self, n_ctx: int) -> None:
        """Give the context at least `n_ctx` tokens (reloaded on next use if already loaded), so
        every role sharing this handle gets the context it asked for, in whatever order."""
        with self._lock:
            if n_ctx > self.n_ctx:
                self.n_ctx = n_ctx
                self.unload()

    def unload(self) -> None:
        """Free the model's memory; the next `acquire()` loads it again."""
        with self._lock:
            llm, self._llm = self._llm, None
            if llm is not None:
                llm.close()


def decode_pooled(llm: Any, batch: Any, token_lists: list[list[int]], n_ctx: int, n_out: int,
                  max_seqs: int = 64, abort: AbortFlag | None = None) -> list[list[float]]:
    """The pooled output (first `n_out` floats) of each token list, in order, packing as many
    sequences into one decode as fit `n_ctx` (embeddings, and the reranker's rank head).
    `abort`: the flag attached to `llm` (ModelHandle.abort); a decode it stopped raises Aborted."""
    llama_cpp = llama_module()
    out: list[list[float]] = []
    pending = list(token_lists)
    while pending:
        batch.reset()
        used, seqs = 0, 0
        while pending and (seqs == 0 or used + len(pending[0]) <= n_ctx) and seqs < max_seqs:
            toks = pending.pop(0)
            batch.add_sequence(toks, seqs, True)
            used, seqs = used + len(toks), seqs + 1
        memory = llama_cpp.llama_get_memory(llm.ctx)
        if memory:
            llama_cpp.llama_memory_clear(memory, True)
        _decoding.abort = abort
        try:
            rc = llama_cpp.llama_decode(llm.ctx, batch.batch)
        finally:
            _decoding.abort = None
        if rc == DECODE_ABORTED and abort is not None:
            raise Aborted(f"a decode with {Path(llm.model_path).name} was stopped for other work")
        if rc != 0:
            raise ModelError(f"llama.cpp could not decode with {Path(llm.model_path).name} (returned {rc})")
        for seq in range(seqs):
            ptr = llama_cpp.llama_get_embeddings_seq(llm.ctx, seq)
            if not ptr:
                raise ModelError("the model returned no pooled output (a GGUF without a pooling type?)")
            out.append(list(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))[:n_out]))
    return out
