"""Query expansion into extra searches: `lex` (keywords for BM25), `vec` (a rephrasing to embed),
`hyde` (a short hypothetical answer to embed).

The production fine-tune (QMD's) answers `/no_think Expand this search query: {q}` through its chat
template with `lex:`/`vec:`/`hyde:` lines; a base model (no chat template) gets a few-shot
completion prompt producing the same lines. No GBNF grammar: over a 262k vocabulary it cost 29 s.
Decoding is greedy with a token cap, so output is deterministic and latency bounded; lines are
parsed, deduplicated, capped per kind, and lex/vec lines sharing no term with the query dropped.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from qmd_daemon.models import ModelError
from qmd_daemon.models.cache import LLMCache, cache_key
from qmd_daemon.models.embedder import file_fingerprint
from qmd_daemon.models.gguf_info import read_gguf_info
from qmd_daemon.models.runtime import ModelHandle

Kind = Literal["lex", "vec", "hyde"]
KINDS: tuple[Kind, ...] = ("lex", "vec", "hyde")
DEFAULT_LIMITS: dict[str, int] = {"lex": 2, "vec": 2, "hyde": 1}
BASE_SLOTS: tuple[Kind, ...] = ("lex", "vec", "lex", "hyde")
CHAT_PROMPT = "/no_think Expand this search query: {query}"
FEW_SHOT_HEADER = """Search query expansions. After each query: keyword lines (lex), the query rephrased as a
question (vec), and one line of code that answers it (hyde).

Query: parse yaml config file
lex: yaml config parse
vec: how is the yaml configuration file loaded and parsed
lex: load configuration yaml
hyde: def load_config(path): return yaml.safe_load(open(path))

Query: retry http request on timeout
lex: http retry timeout
vec: where are http requests retried after a timeout
lex: request retry backoff
hyde: for attempt in range(retries): response = session.get(url, timeout=timeout)

"""
_LINE = re.compile(r"^\s*[-*]?\s*(lex|vec|hyde)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is", "it", "of",
    "on", "or", "the", "to", "what", "where", "which", "with",
})


@dataclass(frozen=True)
class Expansion:
    """One extra search: `kind` is lex, vec or hyde."""

    kind: Kind
    text: str


def terms(text: str) -> set[str]:
    """Lower-case word stems of `text`, identifiers split (parseConfig -> pars, config)."""
    parts: list[str] = []
    for word in _WORD.findall(text):
        parts.extend(re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word) or [word])
    return {p.lower()[:5] for p in parts if len(p) > 1 and p.lower() not in _STOP}


def parse_expansions(output: str, query: str, limits: dict[str, int] | None = None) -> list[Expansion]:
    """Model output -> deduplicated, capped expansions that still relate to the query."""
    limits = limits or DEFAULT_LIMITS
    query_terms = terms(query)
    seen = {" ".join(query.lower().split())}
    counts = dict.fromkeys(KINDS, 0)
    out: list[Expansion] = []
    for line in _THINK.sub("", output).splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        kind: Kind = m.group(1).lower()  # type: ignore[assignment]
        text = m.group(2).strip().strip("\"'`")
        norm = " ".join(text.lower().split())
        if not text or norm in seen or counts[kind] >= limits.get(kind, 0):
            continue
        if kind != "hyde" and query_terms and not (terms(text) & query_terms):
            continue
        seen.add(norm)
        counts[kind] += 1
        out.append(Expansion(kind, text))
    return out


class Expander:
    """Expands queries with one GGUF model; results cached by (model fingerprint, query)."""

    def __init__(self, path: Path | str, *, cache: LLMCache | None = None, max_tokens: int = 96,
                 limits: dict[str, int] | None = None, n_ctx: int = 1024, device: str | None = None,
                 threads: int | None = None) -> None:
        info = read_gguf_info(path)
        self.chat = bool(info.chat_template)
        self.handle = ModelHandle(Path(path), n_ctx=n_ctx, device=device, threads=threads)
        self.fingerprint = file_fingerprint(self.handle.path)
        self.cache = cache
        self.max_tokens = max_tokens
        self.limits = dict(limits or DEFAULT_LIMITS)
        self.token_seconds = 0.0  # running estimate of one generated token's cost (deadline checks)

    def expand(self, query: str) -> list[Expansion]:
        """Expansions of `query` (possibly empty); never includes the query itself."""
        return self.expand_until(query, None)[0]

    def expand_until(self, query: str, deadline: float | None) -> tuple[list[Expansion], bool]:
        """Expansions, and whether they are complete.

        `deadline` (a `time.perf_counter()` value): a base model writes no further line once the
        next one, at the pace measured so far, would end past it. A cut result is not cached, so
        a later search without time pressure gets the whole expansion.
        """
        query = " ".join(query.split())
        if not query:
            return [], True
        key = cache_key("expand", self.fingerprint, str(self.max_tokens), json.dumps(self.limits), query)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return [Expansion(k, t) for k, t in json.loads(hit)], True
        if deadline is not None and time.perf_counter() >= deadline:
            return [], False
        with self.handle.acquire() as llm:
            raw, complete = self._generate(llm, query, deadline)
        result = parse_expansions(raw, query, self.limits)
        if self.cache is not None and complete:
            self.cache.put(key, json.dumps([[e.kind, e.text] for e in result]))
        return result, complete

    def unload(self) -> None:
        self.handle.unload()

    def _generate_slots(self, llm: Any, query: str, deadline: float | None) -> tuple[str, bool]:
        """Base models: force each line's kind, then let the model write that one line.

        Free generation from a base model repeats its first line until the token cap; forcing
        `lex:`, `vec:`, `hyde:` in turn costs one short line each. The few-shot header is
        evaluated once and every query continues from exactly that state, so the same query
        always takes the same arithmetic path (greedy output is then reproducible).
        """
        header = llm.tokenize(FEW_SHOT_HEADER.encode(), add_bos=True, special=False)
        if list(llm.input_ids[: len(header)]) != header or llm.n_tokens < len(header):
            llm.reset()
            llm.eval(header)
        llm.n_tokens = len(header)
        text = FEW_SHOT_HEADER + f"Query: {query}\n"
        start, budget = len(text), self.max_tokens
        for kind in BASE_SLOTS:
            if budget <= 0:
                break
            cap = min(budget, 48 if kind == "hyde" else 24)
            if deadline is not None and time.perf_counter() + self.token_seconds * cap > deadline:
                return text[start:], False
            t0 = time.perf_counter()
            resp = llm.create_completion(text + f"{kind}:", temperature=0.0, max_tokens=cap, stop=["\n"])
            line = str(resp["choices"][0]["text"] or "")
            used = max(1, int(resp["usage"]["completion_tokens"]))
            budget -= used
            self.token_seconds = 0.5 * self.token_seconds + 0.5 * (time.perf_counter() - t0) / used
            text += f"{kind}:{line}\n"
        return text[start:], True

    def _generate(self, llm: Any, query: str, deadline: float | None) -> tuple[str, bool]:
        """The model's raw lines, and whether they are complete (not cut by the deadline)."""
        try:
            if self.chat:
                llm.reset()  # evaluate the short prompt from scratch: same arithmetic, same output
                resp = llm.create_chat_completion(
                    messages=[{"role": "user", "content": CHAT_PROMPT.format(query=query)}],
                    temperature=0.0, max_tokens=self.max_tokens,
                )
                return str(resp["choices"][0]["message"]["content"] or ""), True
            return self._generate_slots(llm, query, deadline)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"query expansion failed: {exc}") from None
