"""Stop a llama.cpp decode in the middle, from another thread, without the GIL.

Why: the daemon's long embed job runs niced on a second model instance (daemon/priority.py). On a
machine busy with the user's build one niced decode gets a fraction of a core, and the refresh an
edit's search waits for runs on the writer only after the job's current batch: 5.7-40 s at nice 19
against ~2 s at off (docs/scale.md "The embed job's CPU priority"). With this flag the writer's
queue stops that batch as soon as other work queues: the decode under way is lost (redone later),
the texts embedded before it are kept (Aborted.done).

How: llama.cpp's abort callback (`llama_set_abort_callback`), which ggml's CPU backend calls on
the decoding thread between graph nodes; the decode then returns 2 ("aborted"). A Python
callback would take the GIL on every node, from a niced thread: a busy machine could leave that
thread unscheduled while it holds the GIL, and every thread of the daemon would wait on it (the
priority inversion the niced thread must not cause). So the callback is libc's own `strlen`,
called on a 2-byte buffer: b"" -> 0 (go on), b"x" -> 1 (stop). The callback's type is
`bool (*)(void *)`; a bool return is the low byte of the integer return register on x86-64 (al)
and arm64 (w0), and strlen's 0 or 1 fits it, so the call is sound on those ABIs. Elsewhere (or
without a libc strlen) no callback is set, and the flag is still read between decodes
(Embedder.embed_documents), so a batch stops after its current decode instead.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from typing import Any

from qmd_daemon.models import ModelError

# the integer-register return convention the strlen-as-bool callback relies on
_ABIS = frozenset({"x86_64", "amd64", "aarch64", "arm64"})
# llama_decode's return code when the abort callback said stop (llama.h)
DECODE_ABORTED = 2


class Aborted(ModelError):
    """A decode stopped because its instance's AbortFlag was set. `done`: the vectors of the
    texts embedded before it, in order (Embedder.embed_documents), so a caller keeps them and
    loses one decode's work, not a whole batch's."""

    done: list[list[float]]

    def __init__(self, message: str, done: list[list[float]] | None = None) -> None:
        super().__init__(message)
        self.done = done or []


def _strlen_address() -> int | None:
    """libc's strlen as a raw C function address (no Python thunk, so no GIL when called)."""
    if platform.machine().lower() not in _ABIS:
        return None
    try:
        libc = ctypes.cdll.msvcrt if sys.platform == "win32" else ctypes.CDLL(None)  # None: this process
        return ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


class AbortFlag:
    """One byte that a decode on an instance it is attached to reads between graph nodes."""

    def __init__(self) -> None:
        self._byte = ctypes.create_string_buffer(2)  # b"\0\0": strlen 0, go on
        self._callback: Any = None  # kept alive as long as a context points at it

    def set(self) -> None:
        """Stop the decode in progress at its next graph node, and every later one until clear()."""
        self._byte.value = b"x"

    def clear(self) -> None:
        self._byte.value = b""

    def is_set(self) -> bool:
        return self._byte.value != b""

    def attach(self, llama_cpp: Any, ctx: Any) -> bool:
        """Point the llama.cpp context `ctx` at this flag; False where the GIL-free callback is not
        available here (the flag is then only read between decodes)."""
        address = _strlen_address()
        if address is None:
            return False
        if self._callback is None:
            # a foreign function at a C address: ctypes passes the address through, never a thunk
            self._callback = llama_cpp.ggml_abort_callback(address)
        llama_cpp.llama_set_abort_callback(ctx, self._callback, ctypes.addressof(self._byte))
        return True
