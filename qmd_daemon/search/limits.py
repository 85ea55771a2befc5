"""The bounds every search entry point accepts (CLI, HTTP API, MCP), in one place.

Defaults live in `SearchOptions` (search/pipeline.py); `DEFAULTS` is that one instance, which the
CLI's options, the API's parser and the MCP tool schema read, so the three never drift apart
(tests/search/test_search_defaults.py asks each of them).
"""

from __future__ import annotations

from qmd_daemon.search.pipeline import SearchOptions

DEFAULTS = SearchOptions()
MAX_LIMIT = 200  # hits per search
MAX_PER_FILE = 100
MAX_TOKENS_CAP = 1_000_000  # the highest `max_tokens` accepted (0: no limit)
MAX_RERANK_CANDIDATES = MAX_LIMIT
MAX_BUDGET_MS = 600_000.0
# `qmd-daemon context`: a briefing pasted into an agent's context, so fewer hits and tokens
CONTEXT_LIMIT = 8
CONTEXT_MAX_LIMIT = 50
CONTEXT_MAX_TOKENS = 4000
