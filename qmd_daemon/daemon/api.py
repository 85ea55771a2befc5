"""Request parsing and the engine calls behind the endpoints, shared by the server and the
in-process fallback (`python -m qmd_daemon.daemon search`), so both answer in one shape."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qmd_daemon.config import CollectionConfig
from qmd_daemon.engine import Engine
from qmd_daemon.errors import RequestError
from qmd_daemon.ingest.root_policy import check_readable
from qmd_daemon.search.limits import (
    DEFAULTS,
    MAX_BUDGET_MS,
    MAX_LIMIT,
    MAX_PER_FILE,
    MAX_RERANK_CANDIDATES,
    MAX_TOKENS_CAP,
)
from qmd_daemon.search.path_filter import path_spec
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace


def _int(body: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or int(value) != value):
        raise RequestError(400, "bad_request", f"'{key}' must be an integer")
    if not low <= int(value) <= high:
        raise RequestError(400, "bad_request", f"'{key}' must be between {low} and {high}")
    return int(value)


def _float(body: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= float(value) <= high:
        raise RequestError(400, "bad_request", f"'{key}' must be a number between {low} and {high}")
    return float(value)


def _flag(body: dict[str, Any], key: str) -> bool | None:
    """A JSON true/false (absent or null: None). Not Python truthiness: "false" is a string, and
    reading it as true would turn on what the caller meant to turn off."""
    value = body.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise RequestError(400, "bad_request", f"'{key}' must be true or false")


def _names(body: dict[str, Any]) -> list[str] | None:
    names: list[str] = []
    one = body.get("collection")
    many = body.get("collections")
    if one is not None:
        if not isinstance(one, str) or not one:
            raise RequestError(400, "bad_request", "'collection' must be a name")
        names.append(one)
    if many is not None:
        if not isinstance(many, list) or not all(isinstance(n, str) and n for n in many):
            raise RequestError(400, "bad_request", "'collections' must be a list of names")
        names.extend(many)
    return list(dict.fromkeys(names)) or None


def _patterns(body: dict[str, Any]) -> tuple[str, ...]:
    """The request's `paths` (search/path_filter.py), each checked before any search work."""
    patterns = body.get("paths")
    if patterns is None:
        return ()
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise RequestError(400, "bad_request", "'paths' must be a list of path patterns")
    path_spec(patterns)
    return tuple(patterns)


def _path(body: dict[str, Any]) -> Path | None:
    """The request's folder, or a 400 for anything the filesystem cannot even look up (a NUL, an
    unknown `~user`, a name too long, text that is not a file name): never a 500."""
    value = body.get("path")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise RequestError(400, "bad_request", "'path' must be a folder path")
    if "\0" in value:
        raise RequestError(400, "bad_request", "'path' contains a NUL character")
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~nosuchuser
        raise RequestError(400, "bad_request", f"'path': no such user {value.split('/', 1)[0]!r}") from None
    if not path.is_absolute():
        raise RequestError(400, "bad_request", "'path' must be absolute")
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass  # answered later: a path inside a collection, or 404
    except (OSError, ValueError) as exc:  # too long, a loop, unencodable text
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RequestError(400, "bad_request", f"'path' cannot be used: {reason}") from None
    return path


@dataclass
class SearchRequest:
    query: str
    names: list[str] | None
    path: Path | None
    limit: int
    options: SearchOptions
    explain: bool
    refresh: bool
    wait: float
    auto: bool = False  # refresh "auto": the daemon decides (see server.search)


def parse_search(body: dict[str, Any]) -> SearchRequest:
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise RequestError(400, "bad_request", "'query' must be a non-empty string")
    limit = _int(body, "limit", DEFAULTS.limit, 1, MAX_LIMIT)
    explain = bool(_flag(body, "explain"))
    wanted: dict[str, Any] = {
        "per_file": _int(body, "per_file", DEFAULTS.per_file, 0, MAX_PER_FILE),
        "max_tokens": _int(body, "max_tokens", DEFAULTS.max_tokens or 0, 0, MAX_TOKENS_CAP) or None,
        "min_score": _float(body, "min_score", DEFAULTS.min_score, 0.0, 1.0),
        "explain": explain,
        "paths": _patterns(body),
    }
    if body.get("rerank_candidates") is not None:
        wanted["rerank_candidates"] = _int(
            body, "rerank_candidates", DEFAULTS.rerank_candidates, 0, MAX_RERANK_CANDIDATES
        )
    if "budget_ms" in body:  # 0 or null: no latency budget
        wanted["budget_ms"] = _float(body, "budget_ms", 0.0, 0.0, MAX_BUDGET_MS) or None
    for flag in ("rerank", "expand", "vectors"):
        if (value := _flag(body, flag)) is not None:
            wanted[flag] = value
    options = SearchOptions(**wanted)
    auto = body.get("refresh") == "auto"
    refresh = False if auto else bool(_flag(body, "refresh"))
    return SearchRequest(
        query=query,
        names=_names(body),
        path=_path(body),
        limit=limit,
        options=options,
        explain=explain,
        refresh=refresh,
        wait=_float(body, "wait", 30.0, 0.0, 3600.0),
        auto=auto,
    )


def parse_targets(body: dict[str, Any]) -> tuple[list[str] | None, Path | None]:
    return _names(body), _path(body)


def resolve_path(engine: Engine, path: Path, *, create: bool) -> tuple[CollectionConfig | None, bool]:
    """The collection for `path`: the one rooted there, else the deepest one containing it, else
    (with `create`) a new one for the folder (`repo-<name>` for a git top level). Returns it and
    whether it was created."""
    resolved = path.resolve()
    found = engine.collection_at(resolved)
    if found is not None or not create:
        return found, False
    if not resolved.is_dir():
        raise RequestError(404, "not_found", f"folder {resolved} does not exist")
    return engine.add_collection(resolved, on_demand=True), True


def never_indexed(engine: Engine, home: CollectionConfig | None) -> bool:
    """A registered collection that no update of this index has finished: its first index was cut
    short (Ctrl-C in `collection add`), or the index was deleted since. A search reads it first,
    as a new one: the client's git check saw no file change and asked for no refresh, so every
    search there answered [] until a file changed."""
    return home is not None and engine.index_stamp(home.name)[1] == ""


def search_scope(engine: Engine, names: list[str] | None, home: CollectionConfig | None) -> list[str]:
    """Named collections; else the path's collection plus those included by default; else the
    engine's default scope."""
    # a folder this user can no longer read: refused with its update's line by the daemon as by
    # the in-process search (whose refresh says it), not answered from what the index kept
    if names:
        known = engine.collections()
        for name in names:
            if name in known:
                check_readable(known[name].path)
        return names
    if home is not None:
        check_readable(home.path)
    return engine.search_scope(None, home)


def run_search(
    engine: Engine, req: SearchRequest, scope: list[str], trace: SearchTrace | None = None
) -> tuple[list[dict[str, Any]], float]:
    started = time.perf_counter()
    hits = engine.search(req.query, scope, limit=req.limit, options=req.options, trace=trace)
    took_ms = (time.perf_counter() - started) * 1000
    return [h.to_dict(explain=req.explain) for h in hits], took_ms


def trace_fields(trace: SearchTrace) -> dict[str, Any]:
    """What a search answer says about how it was searched: the daemon's and the one-off
    process's answers must say the same, the client prints a line for each."""
    return {
        "mode": trace.mode,  # lexical: keyword-only (no vectors yet, or none configured)
        "pending_vectors": trace.pending_vectors,
        "deep_off": trace.deep_off or None,  # models: {deep: off}: the static vectors stand in
        "static_rescored": "static" in trace.lists,  # lexical's hits re-scored by static vectors
        "deep_vectors": "vec" in trace.lists,  # the deep vector list found chunks (mode counts static too)
        "path_files": trace.path_files,  # files the --path patterns allow; 0: none (null: no patterns)
    }


def roots_of(engine: Engine, names: list[str]) -> dict[str, str]:
    known = engine.collections()
    return {n: str(known[n].path) for n in names if n in known}
