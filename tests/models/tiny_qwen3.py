"""Random-weight GGUFs of the `qwen3` architecture, a few hundred KB each.

Why: the production models (Qwen3-Embedding, Qwen3-Reranker) cannot be downloaded here, yet their
code paths (last-token pooling with EOS, ChatML judge prompt, the `cls.output` rank head) must
run end to end. Scores from random weights mean nothing; shapes, ranges and determinism do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-unicode table: byte-level BPE needs one token per byte."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs, strict=True))]


def write_tiny_qwen3(path: Path, *, rank_head: bool = False, pooling_last: bool = False,
                     add_eos: bool = False, seed: int = 0) -> Path:
    """Write a 2-layer, 64-dim qwen3 GGUF; `rank_head` adds a 2-row `cls.output` (yes, no);
    `add_eos` sets `tokenizer.ggml.add_eos_token`, as some Qwen3-Embedding conversions do (the
    tokenizer then appends the EOS its last-token pooling reads)."""
    from qmd_daemon.models.gguf_info import import_gguf

    gguf = import_gguf()
    rng = np.random.default_rng(seed)
    tokens = _byte_chars() + ["ye", "yes", "no"] + SPECIALS
    types = [1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS)
    n_vocab, d, n_head, n_kv, hd, ff = len(tokens), 64, 4, 2, 16, 128
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_name("tiny-qwen3")
    w.add_context_length(512)
    w.add_embedding_length(d)
    w.add_block_count(2)
    w.add_feed_forward_length(ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    if pooling_last:
        w.add_pooling_type(gguf.PoolingType.LAST)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(["y e", "ye s", "n o"])
    w.add_eos_token_id(tokens.index("<|endoftext|>"))
    w.add_pad_token_id(tokens.index("<|endoftext|>"))
    w.add_add_bos_token(False)
    if add_eos:
        w.add_add_eos_token(True)
    w.add_chat_template(CHATML_TEMPLATE)

    def t(name: str, *shape: int, scale: float = 0.2) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    t("token_embd.weight", n_vocab, d)
    w.add_tensor("output_norm.weight", np.ones(d, dtype=np.float32))
    for i in range(2):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(d, dtype=np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(d, dtype=np.float32))
        w.add_tensor(p + "attn_q_norm.weight", np.ones(hd, dtype=np.float32))
        w.add_tensor(p + "attn_k_norm.weight", np.ones(hd, dtype=np.float32))
        t(p + "attn_q.weight", n_head * hd, d)
        t(p + "attn_k.weight", n_kv * hd, d)
        t(p + "attn_v.weight", n_kv * hd, d)
        t(p + "attn_output.weight", d, n_head * hd)
        t(p + "ffn_gate.weight", ff, d)
        t(p + "ffn_up.weight", ff, d)
        t(p + "ffn_down.weight", d, ff)
    if rank_head:
        w.add_classifier_output_labels(["yes", "no"])
        t("cls.output.weight", 2, d, scale=1.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
