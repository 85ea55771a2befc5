"""numpy for the store, imported on first use and after llama.cpp's library.

Why: a CUDA build of llama.cpp crashed (SIGSEGV) at the first model load when numpy was imported
before it (models/runtime.llama_module). The store needs numpy for the vector codes
(store/binary_codes.py) and opens long before a model loads, so it may not import numpy at module
level: `np` here is a stand-in that imports llama.cpp (when installed), then numpy, the first time
an attribute is used. A lexical-only process never pays for either.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import ModuleType
from typing import Any


def numpy_module() -> ModuleType:
    if "numpy" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as runtime.llama_module sets it
        with contextlib.suppress(ImportError):
            import llama_cpp  # noqa: F401 - the library first; runtime.llama_module configures it later
    import numpy

    return numpy


class _LazyNumpy:
    def __getattr__(self, name: str) -> Any:
        return getattr(numpy_module(), name)


np: Any = _LazyNumpy()
