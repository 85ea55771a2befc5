"""`qmd-daemon mcp`: the tools `search` and `get` over MCP (stdio), for clients that prefer MCP to
the skill (the skill stays the default path).

Built on the official MCP Python SDK (`mcp` 2.x, its `MCPServer`), an optional dependency:
`pip install 'qmd-daemon[mcp]'`. Without it the command fails with that one line (see
`load_sdk`).

`search` goes through the daemon exactly as `ai-search` does (clients/_qmd_client.py: the same
request body, scope, freshness check, daemon start and one-off in-process fallback), so an MCP
session's searches are fresh (the daemon refreshes before it answers), warm (the daemon's models,
none loaded here) and counted (hit counts, the embed job's order), and keep the daemon alive. An
earlier server searched with an Engine of its own: a second copy of the models, and an index
nothing refreshed once the daemon had idled out.

`get` reads locally: only files that are indexed in a registered collection, read from inside
that collection's root, never an arbitrary path. It opens the index without models, and sees a
file the daemon indexed a moment ago (index.yml is re-read when it changes, SQLite's WAL shows
the last commit).
"""

# No `from __future__ import annotations` here: the SDK reads the tools' annotations at
# registration, and the pydantic constraints in them live in `build_server`'s scope.

import json
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

from clients import _qmd_client as qc
from qmd_daemon import __version__, secret_mask
from qmd_daemon.errors import QmdError, UnknownCollectionError
from qmd_daemon.file_types import byte_cap
from qmd_daemon.ingest.source_text import OutsideRoot, TooLarge, decode_source, read_inside
from qmd_daemon.search.limits import DEFAULTS, MAX_LIMIT, MAX_TOKENS_CAP

INSTALL_COMMAND = "pip install 'qmd-daemon[mcp]'"
PROG = "qmd-daemon mcp"
# ai-search's default --wait: how long a search waits for the daemon's refresh before it answers
# from the index as it is (the tool has no argument for it: an agent would not know what to pass)
REFRESH_WAIT_S = 60.0


def load_sdk() -> None:
    """Import the SDK's server, or raise a one-line QmdError that names the install command."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:  # absent, a 1.x SDK (no mcp.server.mcpserver), or a broken install
        why = "is not installed" if exc.name == "mcp" else f"cannot be imported ({exc})"
        raise QmdError(
            f"`qmd-daemon mcp` needs the optional MCP SDK (mcp>=2), which {why}; "
            f"install it with: {sys.executable} -m {INSTALL_COMMAND}"
        ) from None


def _working(engine: Any) -> Any:
    """The collection of the folder the client started the server in (its project), as the
    command line and ai-search scope a search; None outside every one or when it is gone."""
    try:
        return engine.collection_at(Path.cwd())
    except FileNotFoundError:
        return None


def search_root(engine: Any) -> tuple[str | None, bool]:
    """The folder a search without `collections` is made from, as ai-search picks it (the git top
    level of the server's folder, registered by the daemon on first use; else the folder itself),
    and whether it is a git repository. None, and the daemon's default scope, outside git and
    every collection (or when the folder is gone): ai-search refuses such a folder, a server
    started there still answers from the collections included by default."""
    start = qc.start_folder(None)
    if start is None:
        return None, False
    root, is_git = qc.repo_root(start)
    if not is_git and engine.collection_at(Path(root)) is None:
        return None, False
    return root, is_git


class DaemonSearch:
    """The `search` tool's way to an answer: the daemon (started when absent), else a one-off
    in-process search, with why said once on stderr (a session's every search would repeat it)."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def _unavailable(self, why: str) -> None:
        with self._lock:
            if why in self._said:
                return
            self._said.add(why)
        print(f"{PROG}: daemon unavailable ({why}); searching in-process", file=sys.stderr, flush=True)

    def __call__(
        self, root: str | None, is_git: bool, query: str, **fields: Any
    ) -> tuple[list[Any], list[str]]:
        """The hits, and the lines ai-search would print on stderr beside them (a refresh that did
        not finish, a first index not done yet, vectors pending, patterns that match nothing)."""
        named = bool(fields.get("collections"))
        if root is None:  # no folder of its own to keep fresh: the daemon watches every root
            refresh: bool | str = False
            signature: str | None = None
            stamp: dict[str, Any] = {}
        else:
            refresh, signature, stamp = qc.freshness(root, is_git, named)
        body = qc.search_body(query, refresh=refresh, wait=REFRESH_WAIT_S, root=root, **fields)
        response = qc.daemon_or_fallback(
            body, REFRESH_WAIT_S + 60, daemon=qc.daemon_allowed(), unavailable=self._unavailable
        )
        if root is not None and not named:
            qc.record_freshness(root, stamp, refresh, signature, response)
        hits = response.get("hits")
        return (hits if isinstance(hits, list) else []), qc.answer_notices(response, root, patterns="`paths`")


def build_server(engine: Any) -> Any:
    """The MCPServer with both tools: `search` through the daemon, `get` on `engine` (its calls
    serialised: one engine, which never loads a model here)."""
    load_sdk()
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    server = MCPServer(
        "qmd-daemon",
        version=__version__,
        instructions="Local semantic code search over the indexed repositories: `search` with a full "
        "behavioural question first, then `get` the hits' lines to verify them.",
        log_level="WARNING",
    )
    lock = threading.Lock()  # the SDK runs sync tools in worker threads; the engine is one object
    through_daemon = DaemonSearch()
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only, structured_output=False)
    def search(
        query: Annotated[
            str,
            Field(
                min_length=1,
                # ai-search's bound: a longer one reached the daemon and came back as its HTTP
                # layer's bare "Request Entity Too Large"
                max_length=qc.MAX_STDIN_QUERY,
                description="A full behavioural question ('where are retries backed off?') or identifiers.",
            ),
        ],
        collections: Annotated[
            list[str] | None,
            Field(
                description="Collection names to search (default: the collection of the folder the "
                "server runs in, with those included by default; outside every collection: the "
                "default ones, else all)."
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Most hits to return.")] = DEFAULTS.limit,
        min_score: Annotated[
            float, Field(ge=0.0, le=1.0, description="Drop hits scored below this (0..1).")
        ] = DEFAULTS.min_score,
        max_tokens: Annotated[
            int,
            Field(
                ge=0, le=MAX_TOKENS_CAP, description="Stop adding hits past this many tokens (0: no limit)."
            ),
        ] = DEFAULTS.max_tokens or 0,
        paths: Annotated[
            list[str] | None,
            Field(
                description="Only files matching these gitignore patterns, relative to the collection root "
                "('src/', '*.py'; '!tests/' leaves out)."
            ),
        ] = None,
    ) -> str | list[str]:
        """Search the indexed repositories (code-aware BM25 plus vectors once embedded).

        Returns a JSON list of hits, best first: {path, line, end_line, score, snippet, collection,
        symbol, kind, related}; `path` is relative to the collection's root, `related` (when
        present) lists the files that cite the hit's file or that it cites (docs <-> code). Open a
        hit with `get`. `score` is about how likely the hit answers (0..1, the same in every
        repository): when the best is under 0.25 the repository most likely has no answer in those
        words; rephrase once, then use exact search. A second text block, when present, holds
        `note:` lines to read before trusting the hits: results that lag the latest edits (a
        refresh that failed or is unfinished, a first index not done yet), chunks still without
        deep vectors, `paths` that match no indexed file.
        """
        if not query.strip():
            raise ToolError("query is empty")
        try:
            with lock:
                root, is_git = search_root(engine)
            hits, notices = through_daemon(
                root, is_git, query, limit=limit, collections=collections, paths=paths,
                min_score=min_score, max_tokens=max_tokens,
            )
        except QmdError as exc:
            raise ToolError(secret_mask.mask(str(exc))) from None
        except (qc.DaemonError, qc.DaemonUnavailable) as exc:  # the daemon's, or the fallback's, line
            raise ToolError(secret_mask.mask(str(exc))) from None
        found = json.dumps(hits, ensure_ascii=False)
        # a second text block: the model reads the tool's result, never the server's stderr
        return [found, "\n".join(f"note: {line}" for line in notices)] if notices else found

    @server.tool(annotations=read_only, structured_output=False)
    def get(
        path: Annotated[
            str,
            Field(
                min_length=1,
                description="A hit's path (relative to its collection's root), or an absolute path "
                "inside a collection.",
            ),
        ],
        collection: Annotated[
            str | None,
            Field(
                description="The hit's collection (default: the server's project when the path is "
                "indexed there; needed when a relative path is in several other collections)."
            ),
        ] = None,
        start_line: Annotated[int | None, Field(ge=1, description="First line (1-based).")] = None,
        end_line: Annotated[int | None, Field(ge=1, description="Last line, inclusive.")] = None,
    ) -> str:
        """Read an indexed file, or lines start_line..end_line of it (a hit's line/end_line).

        Only files indexed in a registered collection can be read.
        """
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ToolError(f"end_line {end_line} is before start_line {start_line}")
        try:
            with lock:
                name, root, rel = resolve_indexed(engine, collection, path, _working(engine))
        except QmdError as exc:
            raise ToolError(secret_mask.mask(str(exc))) from None
        try:
            # what the index read, from where it read it, within the index's size cap
            cap = byte_cap(rel, engine.settings.max_file_bytes)
            text = decode_source(read_inside(root, rel, cap))
        except OutsideRoot:
            raise ToolError(f"'{path}' now leads outside its collection's root") from None
        except TooLarge:
            raise ToolError(
                f"'{path}' is now over the index's size cap ({cap} bytes); "
                "run `qmd-daemon update`"
            ) from None
        except OSError as exc:
            if not root.is_dir():  # `update` leaves such a collection as it was: it cannot help
                raise ToolError(
                    f"'{path}' is indexed, but the folder of collection {name} ({root}) is gone "
                    f"(moved or deleted?): `qmd-daemon collection remove {name}` forgets it"
                ) from None
            raise ToolError(
                f"'{path}' is indexed but cannot be read now ({exc.strerror or exc}); "
                "run `qmd-daemon update`"
            ) from None
        if start_line is None and end_line is None:
            return text
        try:
            return line_range(text, start_line or 1, end_line)
        except QmdError as exc:
            raise ToolError(secret_mask.mask(str(exc))) from None

    return server


def resolve_indexed(
    engine: Any, collection: str | None, path: str, home: Any = None
) -> tuple[str, Path, str]:
    """The collection, its root (resolved) and the root-relative path of `path`, which must be indexed in a
    registered collection; anything else is a QmdError. Whether the file still lies inside the root
    is checked when it is read (`read_inside`), on the opened file. `home`: the collection of the
    server's folder, which a search without `collections` puts first: a relative path indexed
    there and elsewhere too (README.md, setup.py) is read there, not refused as ambiguous."""
    known = engine.collections()
    if collection is not None and collection not in known:
        raise UnknownCollectionError.named(collection)
    candidates = [known[collection]] if collection is not None else list(known.values())
    given = Path(path).expanduser()
    matches: list[tuple[str, Path, str]] = []
    for config in candidates:
        root = Path(config.path).resolve()
        if given.is_absolute():
            try:
                rel = given.resolve().relative_to(root).as_posix()
            except ValueError:
                continue
        else:
            rel = given.as_posix()
        if rel in set(engine.indexed_paths(config.name)):
            matches.append((config.name, root, rel))
    if not matches:
        where = f"collection '{collection}'" if collection else "any collection"
        raise QmdError(f"'{path}' is not a file indexed in {where}")
    if len(matches) > 1 and home is not None:
        matches = [m for m in matches if m[0] == home.name] or matches
    if len(matches) > 1:
        names = ", ".join(m[0] for m in matches)
        raise QmdError(f"'{path}' is indexed in several collections ({names}); name one with `collection`")
    return matches[0]


def line_range(text: str, start: int, end: int | None) -> str:
    """Lines start..end (1-based, inclusive; end None: to the end), numbered as the indexer does."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if start > len(lines):
        raise QmdError(f"start_line {start} is past the end of the file ({len(lines)} lines)")
    picked = lines[start - 1 : end]
    return "\n".join(picked) + ("\n" if picked else "")


def serve(engine: Any) -> None:
    """Serve both tools on stdin/stdout until the client closes them."""
    build_server(engine).run("stdio")
