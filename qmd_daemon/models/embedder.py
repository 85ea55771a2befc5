"""Text embeddings for chunks and queries, with the conventions of each model family.

Families (from the GGUF header): BERT-like encoders use their declared pooling (mean for MiniLM)
and no prefix; decoder embedders (Qwen3-Embedding) use last-token pooling, an EOS appended to
every input, and an instruction prefix on queries only. Inputs are truncated by tokens so a
sequence always fits one ubatch. Vectors are L2-normalised.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qmd_daemon.models.abort import Aborted, AbortFlag
from qmd_daemon.models.gguf_info import read_gguf_info
from qmd_daemon.models.runtime import ModelHandle, decode_pooled, is_encoder

QUERY_INSTRUCTION = "Given a code search query, retrieve relevant code snippets that answer it"
_POOLING_MEAN, _POOLING_LAST = 1, 3
ENCODER_TOKENS, DECODER_TOKENS = 256, 512


def file_fingerprint(path: Path) -> str:
    """Model identity for cache keys and vector rows: name, size and a hash of the first MiB."""
    with path.open("rb") as f:
        head = hashlib.sha256(f.read(1 << 20)).hexdigest()[:16]
    return f"{path.name}:{path.stat().st_size}:{head}"


def _normalise(vec: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec] if norm > 0 else list(vec)


class Embedder:
    """Embeds documents and queries with one GGUF model; thread-safe through the model lock."""

    def __init__(self, path: Path | str, *, device: str | None = None, threads: int | None = None,
                 n_ctx: int | None = None, query_instruction: str = QUERY_INSTRUCTION,
                 seqs_per_decode: int = 1, abort: AbortFlag | None = None) -> None:
        info = read_gguf_info(path)
        self.encoder = is_encoder(info)
        self.family = "bert" if self.encoder else "decoder"
        declared = info.arch_value("pooling_type")
        pooling = None if self.encoder and declared else (_POOLING_MEAN if self.encoder else _POOLING_LAST)
        if n_ctx is None:
            # BERT-style encoders were trained on 256-token windows, and 512 cost 2.5x the time
            # here (bench: 5.6 vs 13.1 chunks/s on 2 threads); decoders get a longer window.
            n_ctx = ENCODER_TOKENS if self.encoder else DECODER_TOKENS
        self.handle = ModelHandle(Path(path), embedding=True, n_ctx=n_ctx, pooling_type=pooling,
                                  device=device, threads=threads, abort=abort)
        dim = info.arch_value("embedding_length")
        self.dim: int = int(dim) if isinstance(dim, int) else 0
        # The window is part of the identity: another truncation means other vectors.
        self.fingerprint = f"{file_fingerprint(self.handle.path)}:ctx{self.handle.n_ctx}"
        self.query_instruction = query_instruction
        # Measured on 2 cores: one sequence per decode was as fast or faster than packing several.
        self.seqs_per_decode = max(1, seqs_per_decode)
        self._batch: Any = None

    def twin(self, abort: AbortFlag | None = None) -> Embedder:
        """A second instance of this model, with its own llama.cpp context and lock (loaded on
        first use; on the CPU the weights are the same mmap'd pages): for background embedding at
        a lowered CPU priority, so a search's query never waits on the model lock for a decode
        that a busy machine runs slowly (26 s of a query's wait, bench/embed_nice.py). `abort`:
        set, the twin's decode in progress stops at its next graph node and embed_documents
        raises Aborted (models/abort.py), so other work on the writer need not wait for it."""
        handle = self.handle
        twin = Embedder(handle.path, device=handle.device, threads=handle.threads, n_ctx=handle.n_ctx,
                        query_instruction=self.query_instruction, seqs_per_decode=self.seqs_per_decode,
                        abort=abort)
        twin.dim = self.dim
        return twin

    def query_text(self, query: str) -> str:
        """What is embedded for a query: decoder embedders get the instruction prefix."""
        if self.encoder:
            return query
        return f"Instruct: {self.query_instruction}\nQuery: {query}"

    def embed_documents(self, texts: Sequence[str], *, urgent: bool = False) -> list[list[float]]:
        """One normalised vector per text, in order. The model is taken for one decode at a time,
        so a search waits for one decode of a background batch, not for all of it (searches in
        the daemon took 2.5-8.4 s while it embedded the index). Aborted: this instance's abort
        flag is set (before or during a decode); its `done` holds the vectors of the texts
        embedded before that decode."""
        out: list[list[float]] = []
        abort = self.handle.abort
        try:
            for i in range(0, len(texts), self.seqs_per_decode):
                if abort is not None and abort.is_set():
                    raise Aborted(f"embedding with {self.handle.path.name} was stopped for other work")
                with self.handle.acquire(urgent=urgent) as llm:
                    token_lists = [self.framed_tokens(llm, t) for t in texts[i : i + self.seqs_per_decode]]
                    out.extend(self._decode(llm, token_lists))
        except Aborted as exc:
            exc.done = out
            raise
        return out

    def embed_query(self, text: str) -> list[float]:
        """The normalised vector of a search query, ahead of any background embedding."""
        return self.embed_documents([self.query_text(text)], urgent=True)[0]

    def unload(self) -> None:
        self.handle.unload()
        self._batch = None

    def framed_tokens(self, llm: Any, text: str) -> list[int]:
        """`text` as this model embeds it: its own BOS/[CLS] and one closing EOS/[SEP], cut to the
        context. The static tier frames each vocabulary token the same way (models/static_table.py)."""
        tokens = llm.tokenize(text.encode("utf-8", "replace"), add_bos=True, special=False)
        limit = self.handle.n_ctx
        if self.encoder:  # keep the closing [SEP]
            return tokens if len(tokens) <= limit else tokens[: limit - 1] + tokens[-1:]
        eos = llm.token_eos()
        if tokens and tokens[-1] == eos:
            tokens = tokens[:-1]
        return tokens[: limit - 1] + [eos]

    def _decode(self, llm: Any, token_lists: list[list[int]]) -> list[list[float]]:
        if self.dim == 0:
            self.dim = llm.n_embd()
        if self._batch is None:
            from llama_cpp._internals import LlamaBatch

            self._batch = LlamaBatch(n_tokens=self.handle.n_ctx, embd=0, n_seq_max=1, verbose=False)
        pooled = decode_pooled(llm, self._batch, token_lists, self.handle.n_ctx, self.dim,
                               abort=self.handle.abort)
        return [_normalise(vec) for vec in pooled]
