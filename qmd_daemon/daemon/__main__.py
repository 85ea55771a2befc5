"""`python -m qmd_daemon.daemon serve|search`: what the stdlib clients run, with the Python that
has qmd_daemon installed, so they never need the console scripts on PATH.

`search` is the clients' in-process fallback: one process that resolves (or registers) the
repository's collection, refreshes it when asked and prints the same JSON body as POST /search.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def _search(raw: str) -> int:
    from qmd_daemon import secret_mask
    from qmd_daemon.daemon import api
    from qmd_daemon.engine import Engine
    from qmd_daemon.errors import QmdError, RequestError, internal_line
    from qmd_daemon.search.pipeline import SearchTrace
    from qmd_daemon.store.backends import mask_configured
    from qmd_daemon.store.connection import index_error

    def failed(error: dict[str, Any], code: int) -> int:
        """The error body the client prints, masked as the daemon's (secret_mask)."""
        print(json.dumps(secret_mask.mask_json(error)))
        return code

    def fail(code: str, message: str) -> int:
        return failed({"error": {"code": code, "message": message}}, 1)

    started = time.perf_counter()
    engine = Engine()  # the index opens on first use, inside the handlers below
    mask_configured(engine.settings)  # what this process logs keeps the database password out
    try:
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise RequestError(400, "bad_request", "the request must be a JSON object")
            req = api.parse_search(body)
            home, created = (None, False)
            if req.path is not None and not req.names:
                home, created = api.resolve_path(engine, req.path, create=True)
            refreshed = None
            # nothing watches for this one-off process
            if created or req.refresh or req.auto or api.never_indexed(engine, home):
                engine.update([home.name] if home is not None else req.names, progress=False)
                refreshed = True
            # after the update: a new checkout's first records its root commits, which the scope
            # reads (a clone of a repository included by default is not searched twice)
            scope = api.search_scope(engine, req.names, home)
            trace = SearchTrace()
            hits, search_ms = api.run_search(engine, req, scope, trace)
            out: dict[str, Any] = {
                "hits": hits,
                "stale": bool(trace.stale),
                **api.trace_fields(trace),
                "collection": home.name if home is not None else None,
                "collections": scope,
                "roots": api.roots_of(engine, scope),
                "created": created,
                "refreshed": refreshed,
                "search_ms": round(search_ms, 3),
                "took_ms": round((time.perf_counter() - started) * 1000, 3),
                "in_process": True,
            }
        except QmdError as exc:  # the code the daemon would answer; the type's exit code
            return failed(exc.as_dict(), exc.exit_code)
        except ValueError as exc:
            return fail("engine_error", str(exc))
        except Exception as exc:  # SQLite's disk-full and damaged-page errors name their fix
            readable = index_error(exc, engine.settings.index_path)
            if readable is None:  # one line for the client to print, not a traceback on its stderr
                return fail("internal", internal_line(exc))
            return failed(readable.as_dict(), readable.exit_code)
        print(json.dumps(out))
        return 0
    finally:
        engine.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qmd_daemon.daemon")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the daemon (a no-op when one is healthy)")
    serve.add_argument("--idle-minutes", type=float, default=None)
    search = sub.add_parser("search", help="one in-process search; prints the /search JSON body")
    search.add_argument("--request", required=True,
                        help="the /search request body, as JSON; - reads it from stdin (a long query)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        from qmd_daemon.models.runtime import load_llama_first

        load_llama_first()  # before the server's imports: a CUDA build crashed otherwise
        from qmd_daemon.daemon.server import serve_forever
        from qmd_daemon.errors import os_error_line

        try:
            return serve_forever(idle_minutes=args.idle_minutes)
        except OSError as exc:  # a placement folder out of reach (EACCES): one line, as the CLI's
            print(f"qmd-daemon: error: {os_error_line(exc)}", file=sys.stderr)
            return 1
    # `-`: stdin, as fallback_search sends a body too long for one argument (E2BIG)
    return _search(sys.stdin.read() if args.request == "-" else args.request)


if __name__ == "__main__":
    sys.exit(main())
