"""Read a GGUF header (metadata and tensor table) without loading the model.

Why: a model file is checked before llama.cpp sees it (llama.cpp answers a bad file with a vague
error or worse), and the model family (architecture, pooling, chat template, a `cls.output`
rank head) is chosen from the header. Arrays such as the vocabulary are skipped, not decoded.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from qmd_daemon.models import ModelError

GGUF_MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class ArrayValue:
    """Stand-in for a metadata array: its element type and length only."""

    item_type: int
    length: int


@dataclass
class GGUFInfo:
    """What the header says: scalar metadata, tensor names, and where the tensor data must end."""

    path: Path
    metadata: dict[str, object] = field(default_factory=dict)
    tensors: dict[str, tuple[int, ...]] = field(default_factory=dict)
    data_end: int = 0

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_value(self, key: str, default: object = None) -> object:
        """A `<arch>.<key>` metadata value, e.g. `pooling_type` or `context_length`."""
        return self.metadata.get(f"{self.architecture}.{key}", default)

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) else None


class _Reader:
    def __init__(self, buf: mmap.mmap) -> None:
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str) -> object:
        value = struct.unpack_from("<" + fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def count(self, fmt: str) -> int:
        """An unsigned integer field (`I`, `Q`): a length, a type id, an offset."""
        value = self.unpack(fmt)
        if not isinstance(value, int):
            raise ValueError(f"GGUF field {fmt!r} is not an integer")
        return value

    def string(self, keep: bool = True) -> str:
        n = self.count("Q")
        start, self.pos = self.pos, self.pos + n
        if self.pos > len(self.buf):
            raise EOFError
        return bytes(self.buf[start : self.pos]).decode("utf-8", "replace") if keep else ""

    def value(self, vtype: int) -> object:
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, n = self.count("I"), self.count("Q")
            if item_type == _STRING:
                for _ in range(n):
                    self.string(keep=False)
            elif item_type in _SCALARS:
                self.pos += n * struct.calcsize(_SCALARS[item_type])
            else:
                raise ValueError(f"nested array type {item_type}")
            return ArrayValue(item_type, n)
        if vtype not in _SCALARS:
            raise ValueError(f"unknown metadata type {vtype}")
        return self.unpack(_SCALARS[vtype])


def read_gguf_info(path: Path | str) -> GGUFInfo:
    """Parse the header of `path`; any defect becomes a one-line ModelError.

    Memoised on (path, size, mtime): a 262k-token vocabulary takes ~0.5 s to skip over.
    """
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    return _read_cached(path.resolve(), st.st_size, st.st_mtime_ns)


def import_gguf() -> ModuleType:
    """The `gguf` package, imported after llama.cpp: gguf imports numpy, and numpy must come
    after llama.cpp's library (see runtime.llama_module). A missing or broken llama.cpp is
    reported where a model is loaded, not here."""
    from qmd_daemon.models.runtime import llama_module

    with contextlib.suppress(ImportError, OSError):
        llama_module()
    import gguf

    return gguf


@functools.lru_cache(maxsize=16)
def _read_cached(path: Path, size: int, mtime_ns: int) -> GGUFInfo:
    gguf = import_gguf()
    GGML_QUANT_SIZES, GGMLQuantizationType = gguf.GGML_QUANT_SIZES, gguf.GGMLQuantizationType  # noqa: N806

    try:
        with path.open("rb") as f:
            head = f.read(4)
            if head != GGUF_MAGIC:
                what = "an HTML page" if head.lstrip()[:1] == b"<" else f"starts with {head!r}"
                raise ModelError(f"{path} is not a GGUF model file ({what})")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except IsADirectoryError:
        raise ModelError(f"model path is a folder, not a GGUF file: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    info = GGUFInfo(path)
    try:
        r = _Reader(buf)
        r.pos = 4
        version = r.unpack("I")
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        n_tensors, n_kv = r.count("Q"), r.count("Q")
        for _ in range(n_kv):
            key = r.string()
            info.metadata[key] = r.value(r.count("I"))
        ends = []
        for _ in range(n_tensors):
            name = r.string()
            dims = tuple(r.count("Q") for _ in range(r.count("I")))
            ttype, offset = r.count("I"), r.count("Q")
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
            n_elems = 1
            for d in dims:
                n_elems *= d
            info.tensors[name] = dims
            ends.append(offset + n_elems // block * type_size)
        align = int(info.metadata.get("general.alignment", 32))  # type: ignore[call-overload]
        data_start = -(-r.pos // align) * align
        info.data_end = data_start + max(ends, default=0)
    except (struct.error, EOFError, ValueError, KeyError) as exc:
        raise ModelError(f"{path} is a damaged GGUF file (bad header: {exc or 'truncated'})") from None
    finally:
        buf.close()
    if info.data_end > size:
        raise ModelError(
            f"{path} is truncated ({size} of {info.data_end} bytes)"
        )
    return info


def check_gguf(path: Path | str) -> Path:
    """Return `path` when it is a complete GGUF file, else raise a one-line ModelError."""
    read_gguf_info(path)
    return Path(path)
