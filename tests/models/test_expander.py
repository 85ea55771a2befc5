"""Query expansion: output parsing, and a real (capped) run of the small profile's Gemma."""

from __future__ import annotations

import time
from pathlib import Path

from qmd_daemon.models.expander import Expander, Expansion, parse_expansions, terms
from tests.models.memory_cache import MemoryCache


def test_parse_dedupe_cap_and_relevance() -> None:
    out = """<think>
lex: hidden</think>
lex: yaml config parse
LEX: yaml config parse
- lex: load yaml settings
lex: yaml loader third
vec: how is the yaml configuration parsed
vec: completely unrelated words here
hyde: def load(p): return safe_load(open(p))
hyde: second hyde
junk line
lex: parse yaml config file
"""
    got = parse_expansions(out, "parse yaml config file")
    assert got == [
        Expansion("lex", "yaml config parse"),
        Expansion("lex", "load yaml settings"),
        Expansion("vec", "how is the yaml configuration parsed"),
        Expansion("hyde", "def load(p): return safe_load(open(p))"),
    ]


def test_terms_split_identifiers() -> None:
    assert {"parse", "confi"} <= terms("parseConfig")
    assert "confi" in terms("load_configuration")
    assert "the" not in terms("the file")


def test_expand_real_model_cached(small_models: dict[str, Path]) -> None:
    cache = MemoryCache()
    exp = Expander(small_models["expand"], cache=cache, threads=2, max_tokens=64)
    assert not exp.chat
    first = exp.expand("tokenize camelCase identifiers")
    assert all(e.kind in {"lex", "vec", "hyde"} and e.text for e in first)
    assert sum(e.kind == "lex" for e in first) <= 2 and sum(e.kind == "hyde" for e in first) <= 1
    assert all(e.text.lower() != "tokenize camelcase identifiers" for e in first)
    assert len(cache.data) == 1 and cache.hits == 0
    # the cached answer never touches the model: unloaded, it stays unloaded (not a timing, which
    # a loaded box turns either way)
    exp.unload()
    assert exp.expand("  tokenize  camelCase identifiers ") == first
    assert cache.hits == 1 and not exp.handle.loaded
    # greedy and from the same cached header state: same output without the cache
    exp.cache = None
    assert exp.expand("tokenize camelCase identifiers") == first
    assert exp.expand("   ") == []
    exp.unload()


def test_deadline_cuts_expansion_and_skips_the_cache(small_models: dict[str, Path]) -> None:
    cache = MemoryCache()
    exp = Expander(small_models["expand"], cache=cache, threads=2, max_tokens=64)
    assert exp.expand_until("retry http requests", time.perf_counter() - 1) == ([], False)
    assert not cache.data, "a cut expansion must not be cached"
    full, complete = exp.expand_until("retry http requests", None)
    assert complete and len(cache.data) == 1 and exp.token_seconds > 0
    # At the measured pace no slot fits in 50 ms (a slot is up to 24 tokens): cut, not cached.
    lines, complete = exp.expand_until("parse yaml settings", time.perf_counter() + 0.05)
    assert (lines, complete) == ([], False) and len(cache.data) == 1
    assert exp.expand_until("retry http requests", time.perf_counter() - 1) == (full, True), "cache first"
    exp.unload()
