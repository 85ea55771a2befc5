"""Relevance of a document to a query, as P(yes) of a yes/no judge, in [0, 1].

Two ways, chosen from the GGUF's tensors:
- `head`: the GGUF carries a `cls.output` rank head (llama.cpp's converter builds it for
  Qwen3-Reranker from the "yes"/"no" rows); rank pooling returns the score per sequence.
- `logits`: a plain causal LM (or a reranker converted without the head); the judge prompt is
  evaluated and P(yes) = softmax over the last-token logits of the "yes" and "no" tokens.
The query part of the prompt is evaluated once per query and reused for each document.
Greedy, no sampling: the same inputs give the same scores. Scores are cached by
(model fingerprint, instruction, query, document hash).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qmd_daemon.models import ModelError
from qmd_daemon.models.cache import LLMCache, cache_key
from qmd_daemon.models.embedder import file_fingerprint
from qmd_daemon.models.gguf_info import read_gguf_info
from qmd_daemon.models.runtime import ModelHandle, decode_pooled, llama_module

PACE_DECAY = 0.9  # Reranker.no_room

JUDGE_SYSTEM = (
    'Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
    'Note that the answer can only be "yes" or "no".'
)
RERANK_INSTRUCTION = "Given a code search query, retrieve relevant code snippets that answer it"
_POOLING_RANK = 4


@dataclass(frozen=True)
class JudgePrompt:
    """The judge prompt cut around the document: prefix, document lead, suffix, answer words."""

    prefix: str
    doc_lead: str
    suffix: str
    yes: str
    no: str
    special: bool


def judge_prompt(query: str, instruction: str, chatml: bool) -> JudgePrompt:
    """Qwen3-Reranker's template (ChatML, empty think block), or its plain-text twin for base LMs."""
    task = f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>:"
    if chatml:
        return JudgePrompt(
            prefix=f"<|im_start|>system\n{JUDGE_SYSTEM}<|im_end|>\n<|im_start|>user\n{task}",
            doc_lead=" ",
            suffix="<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
            yes="yes", no="no", special=True,
        )
    return JudgePrompt(prefix=f"{JUDGE_SYSTEM}\n\n{task}", doc_lead=" ", suffix="\n\nAnswer:",
                       yes=" yes", no=" no", special=False)


class Reranker:
    """Scores (query, document) pairs with one GGUF model; thread-safe through the model lock."""

    def __init__(self, path: Path | str, *, cache: LLMCache | None = None,
                 instruction: str = RERANK_INSTRUCTION, n_ctx: int = 2048,
                 max_doc_tokens: int | None = None, device: str | None = None,
                 threads: int | None = None) -> None:
        info = read_gguf_info(path)
        self.mode = "head" if "cls.output.weight" in info.tensors else "logits"
        template = info.chat_template or ""
        self.chatml = "<|im_start|>" in template or info.architecture.startswith("qwen")
        self.handle = ModelHandle(Path(path), embedding=self.mode == "head", n_ctx=n_ctx,
                                  pooling_type=_POOLING_RANK if self.mode == "head" else None,
                                  device=device, threads=threads)
        self.fingerprint = file_fingerprint(self.handle.path)
        self.cache = cache
        self.instruction = instruction
        self.max_doc_tokens = max_doc_tokens
        self.pair_seconds: float | None = None  # running cost of one uncached pair (latency budgets)

    def no_room(self) -> None:
        """A search had no room for one pair at the measured pace. The pace drifts down (x
        PACE_DECAY a search), so after some such searches one pair runs and measures it anew:
        a pace taken during a load spike turned reranking off for the rest of the process, since
        only a pair that runs updates it."""
        if self.pair_seconds is not None:
            self.pair_seconds *= PACE_DECAY

    def score(self, query: str, docs: Sequence[str]) -> list[float]:
        """P(relevant) in [0, 1] for each document, in order."""
        scores: list[float | None] = [None] * len(docs)
        keys = [cache_key("rerank", self.fingerprint, self.instruction, query,
                          hashlib.sha256(d.encode("utf-8", "replace")).hexdigest()) for d in docs]
        if self.cache is not None:
            for i, key in enumerate(keys):
                hit = self.cache.get(key)
                if hit is not None:
                    scores[i] = float(hit)
        todo = [i for i, s in enumerate(scores) if s is None]
        if todo:
            with self.handle.acquire() as llm:
                t0 = time.perf_counter()
                fresh = self._score(llm, query, [docs[i] for i in todo])
                pace = (time.perf_counter() - t0) / len(todo)
                self.pair_seconds = pace if self.pair_seconds is None else 0.5 * (self.pair_seconds + pace)
            for i, value in zip(todo, fresh, strict=True):
                scores[i] = value
                if self.cache is not None:
                    self.cache.put(keys[i], repr(value))
        return [float(s) for s in scores]  # type: ignore[arg-type]

    def unload(self) -> None:
        self.handle.unload()

    def _parts(self, llm: Any, query: str) -> tuple[JudgePrompt, list[int], list[int], int]:
        p = judge_prompt(query, self.instruction, self.chatml)
        prefix = llm.tokenize(p.prefix.encode(), add_bos=True, special=p.special)
        suffix = llm.tokenize(p.suffix.encode(), add_bos=False, special=p.special)
        room = self.handle.n_ctx - len(prefix) - len(suffix) - 1
        if room < 16:
            raise ModelError("rerank query is too long for the model context")
        return p, prefix, suffix, min(room, self.max_doc_tokens or room)

    def _doc_tokens(self, llm: Any, p: JudgePrompt, doc: str, cap: int) -> list[int]:
        return llm.tokenize((p.doc_lead + doc).encode("utf-8", "replace"), add_bos=False, special=False)[:cap]

    def _score(self, llm: Any, query: str, docs: list[str]) -> list[float]:
        if self.mode == "head":
            return self._score_head(llm, query, docs)
        return self._score_logits(llm, query, docs)

    def _score_logits(self, llm: Any, query: str, docs: list[str]) -> list[float]:
        llama_cpp = llama_module()
        p, prefix, suffix, cap = self._parts(llm, query)
        yes = llm.tokenize(p.yes.encode(), add_bos=False, special=False)[0]
        no = llm.tokenize(p.no.encode(), add_bos=False, special=False)[0]
        llm.reset()
        llm.eval(prefix)
        out = []
        for doc in docs:
            memory = llama_cpp.llama_get_memory(llm.ctx)
            if memory and llama_cpp.llama_memory_seq_rm(memory, -1, len(prefix), -1):
                llm.n_tokens = len(prefix)  # reuse the evaluated query prefix
                llm.eval(self._doc_tokens(llm, p, doc, cap) + suffix)
            else:
                llm.reset()
                llm.eval(prefix + self._doc_tokens(llm, p, doc, cap) + suffix)
            logits = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
            out.append(_p_yes(float(logits[yes]), float(logits[no])))
        return out

    def _score_head(self, llm: Any, query: str, docs: list[str]) -> list[float]:
        llama_cpp = llama_module()
        from llama_cpp._internals import LlamaBatch

        p, prefix, suffix, cap = self._parts(llm, query)
        n_out = max(1, int(llama_cpp.llama_model_n_cls_out(llm.model)))
        batch = LlamaBatch(n_tokens=self.handle.n_ctx, embd=0, n_seq_max=1, verbose=False)
        pairs = [prefix + self._doc_tokens(llm, p, d, cap) + suffix for d in docs]
        return [_head_score(v) for v in decode_pooled(llm, batch, pairs, self.handle.n_ctx, n_out)]


def _p_yes(yes_logit: float, no_logit: float) -> float:
    """softmax([yes, no])[0], computed stably."""
    return 1.0 / (1.0 + math.exp(max(-60.0, min(60.0, no_logit - yes_logit))))


def _head_score(values: Sequence[float]) -> float:
    """A rank head's output as P(yes): 2 rows (yes, no) are softmaxed unless llama.cpp already did;
    a single row is a logit."""
    if len(values) >= 2:
        a, b = values[0], values[1]
        if 0.0 <= a <= 1.0 and 0.0 <= b <= 1.0 and abs(a + b - 1.0) < 1e-3:
            return float(a)
        return _p_yes(a, b)
    return _p_yes(float(values[0]), 0.0)  # one row: a relevance logit (sigmoid)
