"""A decode on an instance with an abort flag stops mid-graph when another thread sets the flag,
without the GIL, and the instance embeds correctly afterwards (models/abort.py).

Why: the daemon's niced background embedding held an edit's refresh for its whole batch, 5.7-40 s
on a busy machine (docs/scale.md). Real llama.cpp, real models: Gemma 3 270M loaded as an
embedder stands in for a decoder embedder (one 512-token decode takes seconds here, long enough to
stop in the middle), MiniLM for the encoder path.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.embed_abort import stop_after  # set a flag from another thread after a delay
from qmd_daemon.models.abort import Aborted, AbortFlag, _strlen_address
from qmd_daemon.models.embedder import Embedder

LONG = "def parse_datetime(value):\n    return value.split('T')\n" * 60  # past 512 tokens: cut to the context
OTHER = "class Session:\n    def close(self):\n        self.pool.release()\n"


@pytest.fixture(scope="module")
def decoder_pair(small_models: dict[str, Path]) -> Iterator[tuple[Embedder, Embedder, AbortFlag]]:
    """Gemma as an embedder, and its twin with an abort flag (the background instance's shape)."""
    plain = Embedder(small_models["expand"], threads=2)
    flag = AbortFlag()
    twin = plain.twin(flag)
    yield plain, twin, flag
    twin.unload()
    plain.unload()


def test_the_callback_is_a_c_function_not_a_python_thunk() -> None:
    flag = AbortFlag()
    assert not flag.is_set()
    flag.set()
    assert flag.is_set() and flag._byte.raw == b"x\0"
    flag.clear()
    assert flag._byte.raw[:1] == b"\0"
    address = _strlen_address()
    assert address is not None, "x86-64 / arm64 Linux: libc's strlen is the callback"
    libc_strlen = ctypes.CDLL(None).strlen
    libc_strlen.restype = ctypes.c_size_t
    assert libc_strlen(flag._byte) == 0
    flag.set()
    assert libc_strlen(flag._byte) == 1, "the callback's answer: 1 (true, stop) when set"


def test_a_decode_stops_soon_after_the_flag_is_set_and_the_instance_stays_sound(
    decoder_pair: tuple[Embedder, Embedder, AbortFlag], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="qmd_daemon.llama")
    plain, twin, flag = decoder_pair
    reference = plain.embed_documents([LONG, OTHER])
    started = time.perf_counter()
    assert twin.embed_documents([LONG]) == reference[:1], "the twin embeds as the shared instance does"
    full = time.perf_counter() - started
    thread, when = stop_after(flag, full * 0.2)
    started = time.perf_counter()
    with pytest.raises(Aborted):
        twin.embed_documents([LONG, OTHER])
    returned = time.perf_counter()
    thread.join()
    # stopped between graph nodes, early in the graph: far sooner than the decode would have ended
    assert returned - when[0] < full * 0.4, (returned - when[0], full)
    assert returned - started < full * 0.7, (returned - started, full)
    # llama.cpp logs a stopped decode as failed: asked for, it is no error in daemon.log
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "qmd_daemon.llama"]
    assert any("decode" in m for _, m in said) and all(level == logging.DEBUG for level, _ in said), said
    with pytest.raises(Aborted):  # still set: the next batch does not even begin
        twin.embed_documents([OTHER])
    flag.clear()
    # nothing leaked into the next decodes: the same vectors, bit for bit, as the shared instance's
    assert twin.embed_documents([LONG, OTHER]) == reference


def test_the_callback_runs_without_the_gil(decoder_pair: tuple[Embedder, Embedder, AbortFlag]) -> None:
    """While the main thread holds the GIL (a C call through PyDLL keeps it), the decode on another
    thread keeps computing: a Python callback would wait for the GIL at the first graph node."""
    _plain, twin, flag = decoder_pair
    flag.clear()
    twin.embed_documents([OTHER])  # loaded, warm
    done = threading.Event()
    thread = threading.Thread(target=lambda: (twin.embed_documents([LONG]), done.set()))
    thread.start()
    time.sleep(0.3)  # in the decode (seconds long), past the Python steps that take the GIL
    before = os.times()
    ctypes.PyDLL(None).usleep(1_500_000)  # holds the GIL for 1.5 s
    after = os.times()
    thread.join()
    cpu = (after.user - before.user) + (after.system - before.system)
    # the decode's threads computed through the hold (this thread slept): at least a third of one core
    assert cpu > 0.5, cpu
    assert done.is_set()


def test_an_encoders_batch_stops_and_keeps_what_it_embedded(embedder: Any) -> None:
    flag = AbortFlag()
    twin = embedder.twin(flag)
    try:
        texts = [f"{LONG} {i}" for i in range(40)]  # 40 decodes: seconds in all
        twin.embed_documents([OTHER])  # loaded: the decodes below are all there is to time
        thread, _when = stop_after(flag, 0.3)
        started = time.perf_counter()
        with pytest.raises(Aborted) as stopped:
            twin.embed_documents(texts)
        thread.join()
        assert time.perf_counter() - started < 2.0
        flag.clear()
        # the texts embedded before the stopped decode come with it, right: the caller keeps them
        done = stopped.value.done
        assert 0 < len(done) < len(texts)
        assert done == embedder.embed_documents(texts[: len(done)])
        assert twin.embed_documents([OTHER]) == embedder.embed_documents([OTHER])
    finally:
        twin.unload()
