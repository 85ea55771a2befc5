"""`qmd-daemon`: the command line. Every user error is one line on stderr and a non-zero exit."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import click

from clients._qmd_client import (
    CRASH_BACKOFF_S,
    STDIN_QUERY,
    backing_off,
    backoff_line,
    prepare_stdout,
    query_from_stdin,
    results_made_of,
)
from qmd_daemon import __version__, secret_mask
from qmd_daemon.config import PROFILES, CollectionConfig
from qmd_daemon.engine import Engine, folder_there
from qmd_daemon.errors import QmdError, os_error_line
from qmd_daemon.file_types import is_notebook
from qmd_daemon.search.calibration import ANSWER_THRESHOLD
from qmd_daemon.search.context_report import detect_stack, render_context
from qmd_daemon.search.hit import Hit
from qmd_daemon.search.limits import (
    CONTEXT_LIMIT,
    CONTEXT_MAX_LIMIT,
    CONTEXT_MAX_TOKENS,
    DEFAULTS,
    MAX_BUDGET_MS,
    MAX_LIMIT,
    MAX_PER_FILE,
    MAX_TOKENS_CAP,
)
from qmd_daemon.search.path_filter import NO_PATH_MATCH
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import mask_configured, storage_error
from qmd_daemon.store.protocols import STALE_DAYS, HomeListing, Release


class _FloatRange(click.FloatRange):
    """click's FloatRange with 'nan' refused: every comparison with it is false, so it passed
    each bound (`--min-score nan` kept every hit, `--idle-minutes nan` stopped the daemon at once)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


def _engine(ctx: click.Context) -> Engine:
    engine = ctx.obj.get("engine") if ctx.obj else None
    if engine is None:
        engine = Engine()
        ctx.ensure_object(dict)["engine"] = engine
        ctx.call_on_close(engine.close)
        # an index.yml entry an upgrade made unusable: one line each, and the rest works on
        for refused in engine.refused_collections().values():
            click.echo(f"qmd-daemon: {refused.message}", err=True)
    return engine


def _searchable(ctx: click.Context, names: tuple[str, ...]) -> Engine:
    """The engine, once there is a collection to search: on a fresh index `search` answered
    "no results" (exit 0), as if the words were missing from code it had never indexed. Named
    collections are checked by the search itself (`no collection named ...`)."""
    engine = _engine(ctx)
    if not names and not engine.collections():
        raise QmdError(
            "no collections to search: add one with `qmd-daemon collection add PATH` "
            "(ai-search registers the git repository it runs in by itself)"
        )
    if not names and not engine.on_disk():
        raise QmdError(
            "no collection to search: the folder of every one is gone (moved or deleted?); "
            "add the folder where it is now, or search a collection by name (-c NAME)"
        )
    return engine


def _working_collection(engine: Engine) -> CollectionConfig | None:
    """The collection covering the working folder (embedded first, marked in `status`); None
    when there is none, or the shell's folder was deleted or moved away beneath it."""
    try:
        cwd = Path.cwd()
    except FileNotFoundError:
        return None
    return engine.collection_at(cwd)


def _scope(engine: Engine, names: tuple[str, ...]) -> list[str]:
    """What a search made from the shell covers: named collections, else the working folder's
    collection with those included by default (as `ai-search` and the daemon answer), else the
    default ones, else all. Before, a search inside one repository listed every other one's hits."""
    return engine.search_scope(list(names) or None, None if names else _working_collection(engine))


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _print_hits(query: str, hits: list[Hit], fmt: str, explain: bool) -> None:
    if fmt == "md":
        click.echo(render_context(query, hits, [], []), nl=False)
    elif fmt == "json":
        _emit_json([h.to_dict(explain=explain) for h in hits])
    elif fmt == "files":
        for path in dict.fromkeys(f"{h.collection}:{h.path}" for h in hits):
            click.echo(path)
    else:
        if not hits:
            click.echo("no results")
        elif hits[0].score < ANSWER_THRESHOLD:
            click.echo(f"no strong match: the best score is under {ANSWER_THRESHOLD} (likely nothing here)")
        for hit in hits:
            click.echo(
                f"{hit.score:.2f}  {hit.collection}:{hit.path}:{hit.line}-{hit.end_line}  {hit.symbol}"
            )
            for offset, line in enumerate(hit.snippet.split("\n")[:6]):
                click.echo(f"      {_snippet_line_number(hit.path, hit.line, offset):>5} | {line}")
            if explain and hit.explain:
                click.echo(f"      explain: {json.dumps(hit.explain)}")


def _snippet_line_number(path: str, line: int, offset: int) -> str:
    """The file's line of a snippet's line; a notebook's snippet lines after its first are not
    consecutive file lines (search/snippets.py `blank_runs_as_one`), so they go unnumbered."""
    if offset and is_notebook(path):
        return ""
    return str(line + offset)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="qmd-daemon")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Private, local code search for AI coding agents."""
    ctx.ensure_object(dict)
    mask_configured(Settings.from_env())  # what any command logs keeps the database password out


@cli.group()
def collection() -> None:
    """Register, list and remove collections."""


@collection.command("add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--name", help="Collection name (default: repo-<folder> for a git repository).")
@click.option("--mask", help="Glob of files to index, e.g. '**/*.{py,md}'.")
@click.option("--ignore", multiple=True, help="Gitignore-style pattern to skip (repeatable).")
@click.option(
    "--default/--no-default",
    "include_by_default",
    default=None,
    help="Search this collection together with every repository.",
)
@click.option("--update/--no-update", "run_update", default=True, help="Index it right away.")
@click.pass_context
def collection_add(
    ctx: click.Context,
    path: Path,
    name: str | None,
    mask: str | None,
    ignore: tuple[str, ...],
    include_by_default: bool | None,
    run_update: bool,
) -> None:
    """Register PATH as a collection and index it."""
    engine = _engine(ctx)
    added = engine.add_collection(
        path, name, mask=mask, ignore=list(ignore) or None, include_by_default=include_by_default
    )
    click.echo(f"collection {added.name} -> {added.path}")
    # a second name for a registered folder indexes it again, and a search of both (outside every
    # repository, `-c` both) returns each hit twice: meant for another mask, else a slip
    others = {n: c for n, c in engine.collections().items() if n != added.name}
    same = [n for n, c in others.items() if c.path == added.path]
    if same:
        click.echo(f"note: {added.path} is also collection {', '.join(same)}: it is indexed once for each "
                   f"(`qmd-daemon collection remove {added.name}` undoes this add)", err=True)
    # the same for a folder inside another collection's (or holding one): the outer one's walk
    # lists the inner one's files too, unless the inner folder is a repository of its own
    for other, config in others.items():
        outer, inner = ((config.path, added.path) if added.path.is_relative_to(config.path)
                        else (added.path, config.path))
        if inner != outer and inner.is_relative_to(outer) and not (inner / ".git").exists():
            where = "inside" if inner == added.path else "around"
            click.echo(f"note: {added.path} lies {where} collection {other} ({config.path}): the files both "
                       f"select are indexed once for each (`qmd-daemon collection remove {added.name}` "
                       "undoes this add)", err=True)
    if run_update:
        for report in engine.update([added.name]):
            click.echo(report.forgotten or _summary(report.as_dict()))


@collection.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def collection_list(ctx: click.Context, as_json: bool) -> None:
    """List collections with their file and chunk counts."""
    engine = _engine(ctx)
    stats = {s["name"]: s for s in engine.store.collection_stats()}
    rows = []
    for name, cfg in engine.collections().items():
        s = stats.get(name, {})
        rows.append(
            {
                "name": name,
                "path": str(cfg.path),
                "includeByDefault": cfg.include_by_default,
                "files": s.get("files", 0),
                "chunks": s.get("chunks", 0),
                "updated_at": s.get("updated_at"),
                # moved or deleted: status said so, the list showed it as any other
                "folder_gone": not folder_there(cfg.path),
            }
        )
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        click.echo("no collections; add one with `qmd-daemon collection add PATH`")
    for row in rows:
        flag = " (default)" if row["includeByDefault"] else ""
        gone = f"  (folder gone: `qmd-daemon collection remove {row['name']}`)" if row["folder_gone"] else ""
        click.echo(f"{row['name']}{flag}  {row['path']}  files={row['files']} chunks={row['chunks']}{gone}")


@collection.command("remove")
@click.argument("name")
@click.option(
    "--purge",
    is_flag=True,
    help="On a shared (PostgreSQL) index: delete its rows for every home, even those still listing it.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def collection_remove(ctx: click.Context, name: str, purge: bool, as_json: bool) -> None:
    """Forget a collection and drop its documents from the index. On a shared (PostgreSQL) index
    it leaves this home's index.yml, and its documents stay while another home lists it."""
    engine = _engine(ctx)
    shared = engine.backend.homes is not None
    done = engine.remove_collection(name, purge=purge)
    if as_json:
        _emit_json({"name": name, "shared": shared, **_removal_json(done)})
    else:
        click.echo(_removal_line(done, shared))


def _homes(listings: list[HomeListing]) -> str:
    """Homes as `label (seen YYYY-MM-DD)`, a few named."""
    named = [f"{h.label} (seen {time.strftime('%Y-%m-%d', time.localtime(h.seen_at))})" for h in listings[:3]]
    return ", ".join(named) + (f" and {len(listings) - 3} more" if len(listings) > 3 else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _removal_json(done: Release) -> dict[str, Any]:
    def homes(listings: list[HomeListing]) -> list[dict[str, Any]]:
        return [{"label": h.label, "seen_at": h.seen_at} for h in listings]

    return {"deleted": done.deleted, "others": homes(done.others), "stale": homes(done.stale)}


def _removal_line(done: Release, shared: bool) -> str:
    """What `collection remove` did, in one line: on a shared index whether the rows went, and
    for whom."""
    if not shared:
        return f"removed {done.name}"
    others = len(done.others)
    homes_word, lists = ("home", "lists") if others == 1 else ("homes", "list")
    if not done.deleted and not done.existed:
        return f"removed {done.name} from this home's index.yml (the server no longer held it)"
    if not done.deleted:
        return (
            f"removed {done.name} from this home's index.yml; {others} other {homes_word} "
            f"still {lists} it ({_homes(done.others)}), rows kept"
        )
    if others:  # --purge
        return (
            f"purged {done.name}: deleted its rows for every home, {others} other {homes_word} still "
            f"listing it ({_homes(done.others)}): their next update indexes it again"
        )
    stale = f"; listings not renewed for {STALE_DAYS} days not counted: {_homes(done.stale)}"
    stale = stale if done.stale else ""
    return f"removed {done.name}: deleted its rows, no other home lists it{stale}"


def _shared_note(row: dict[str, Any], shared: bool) -> str:
    """Who else lists a collection (status): on a shared index `remove` keeps rows others list,
    and one nobody renewed a listing of is left for `--purge`."""
    others = sum(not h["this_home"] and not h["stale"] for h in row["homes"])
    if row["listed"]:
        return f" (also listed by {_count(others, 'other home')})" if others else ""
    if row["removing"]:
        return " (being removed: a `collection remove` was cut short; the next update finishes it)"
    if not shared:  # one index file that two index.yml name (QMD_INDEX_PATH), or an entry edited out
        return (f" (not in this index.yml: another index.yml's, or edited out of this one; "
                f"`qmd-daemon collection remove --purge {row['name']}` deletes it)")
    if others:
        return " (not in this index.yml: another home's)"
    return (
        f" (not in this index.yml: no home renewed a listing of it in {STALE_DAYS} days; "
        f"`qmd-daemon collection remove --purge {row['name']}` deletes it)"
    )


def _summary(report: dict[str, Any]) -> str:
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(report["skipped"].items()))
    return (
        f"{report['collection']}: {report['files']} files ({report['added']} added, "
        f"{report['changed']} changed, "
        f"{report['removed']} removed), +{report['chunks_added']}/-{report['chunks_removed']} chunks"
        f"{'; skipped ' + skipped if skipped else ''} in {report['seconds']:.2f}s"
    )


@cli.command()
@click.option("-c", "--collection", "names", multiple=True, help="Collection to update (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.pass_context
def update(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Bring the index up to date with the files on disk (incremental). A collection whose folder
    is gone, or whose mask today's rules refuse, is reported and left as it was; the others are
    updated all the same (exit 1)."""
    engine = _engine(ctx)  # says each refused collection's line on stderr
    reports = engine.update(list(names) or None, keep_going=True)
    if as_json:
        _emit_json([r.as_dict() for r in reports])
    else:
        for report in reports:
            if report.error is None:
                click.echo(report.forgotten or _summary(report.as_dict()))
    failed = [report.error for report in reports if report.error is not None]
    for error in failed:
        click.echo(f"qmd-daemon: error: {error}", err=True)
    if failed or (not names and engine.refused_collections()):
        sys.exit(1)


def _query_text(query: str) -> str:
    """QUERY, or stdin's text for `-`; a usage error (exit 2) when there is none."""
    if query == STDIN_QUERY:
        try:
            query = query_from_stdin()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    if not query.strip():
        raise click.UsageError("empty query")
    return query


@cli.command()
@click.argument("query")
@click.option("-c", "--collection", "names", multiple=True, help="Collection(s) to search.")
@click.option("-n", "--limit", default=DEFAULTS.limit, show_default=True, type=click.IntRange(1, MAX_LIMIT))
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md", "files"]), default="text")
@click.option(
    "--per-file", default=DEFAULTS.per_file, show_default=True, type=click.IntRange(0, MAX_PER_FILE)
)
@click.option(
    "--max-tokens",
    default=DEFAULTS.max_tokens or 0,
    show_default=True,
    type=click.IntRange(0, MAX_TOKENS_CAP),
    help="Stop adding results past this many tokens (0: no limit).",
)
@click.option(
    "--min-score",
    default=DEFAULTS.min_score,
    show_default=True,
    type=_FloatRange(0, 1),
    help="Leave out hits scoring below this.",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    help="Search only files matching this gitignore pattern ('src/', '*.py'; '!tests/' leaves out).",
)
@click.option("--explain", is_flag=True, help="Show each hit's ranks and boosts.")
@click.option("--vectors/--no-vectors", default=DEFAULTS.vectors, help="Use vector search when embedded.")
@click.option(
    "--expand/--no-expand", default=DEFAULTS.expand, help="Expand the query with the expansion model."
)
@click.option("--rerank/--no-rerank", default=DEFAULTS.rerank, help="Rerank the top candidates.")
@click.option(
    "--budget-ms",
    default=DEFAULTS.budget_ms or 0.0,
    show_default=True,
    type=_FloatRange(0, MAX_BUDGET_MS),
    help="Latency budget for expansion and reranking; they do less rather than run over (0: none).",
)
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    names: tuple[str, ...],
    limit: int,
    as_json: bool,
    fmt: str,
    per_file: int,
    max_tokens: int,
    min_score: float,
    explain: bool,
    vectors: bool,
    expand: bool,
    rerank: bool,
    budget_ms: float,
    paths: tuple[str, ...],
) -> None:
    """Search the index: code-aware BM25, plus vectors once embedded. QUERY `-`: read it from
    stdin (a bug report, a traceback)."""
    query = _query_text(query)
    options = SearchOptions(
        per_file=per_file,
        max_tokens=max_tokens or None,
        min_score=min_score,
        explain=explain,
        vectors=vectors,
        expand=expand,
        rerank=rerank,
        budget_ms=budget_ms or None,
        paths=paths,
    )
    trace = SearchTrace()
    engine = _searchable(ctx, names)
    hits = engine.search(query, _scope(engine, names), limit=limit, options=options, trace=trace)
    _print_hits(query, hits, "json" if as_json else fmt, explain)
    if trace.path_files == 0:
        click.echo(NO_PATH_MATCH, err=True)
    if trace.pending_vectors:
        click.echo(_vectors_line(trace), err=True)
    if explain:
        steps = {"mode": trace.mode, "pending_vectors": trace.pending_vectors,
                 "lists": trace.lists, "expanded": trace.expanded, "reranked": trace.reranked,
                 "budget_cuts": trace.budget_cuts, "timings_ms": trace.timings_ms}
        click.echo(f"pipeline: {json.dumps(steps)}", err=True)


def _vectors_line(trace: SearchTrace) -> str:
    """What the results are made of while chunks wait for deep vectors, and what gives them those
    (ai-search words the daemon's answer the same way, clients/ai_search.vectors_line)."""
    what = results_made_of(trace.pending_vectors, "vec" in trace.lists, "static" in trace.lists)
    return f"{what}; `qmd-daemon embed` gives them deep vectors (a running daemon does it in the background)"


@cli.command()
@click.argument("query")
@click.option("-c", "--collection", "names", multiple=True, help="Collection(s) to search.")
@click.option(
    "-n", "--limit", default=CONTEXT_LIMIT, show_default=True, type=click.IntRange(1, CONTEXT_MAX_LIMIT)
)
@click.option(
    "--max-tokens", default=CONTEXT_MAX_TOKENS, show_default=True, type=click.IntRange(0, MAX_TOKENS_CAP)
)
@click.pass_context
def context(ctx: click.Context, query: str, names: tuple[str, ...], limit: int, max_tokens: int) -> None:
    """Markdown for an agent's context: hits, languages and frameworks, related docs. QUERY `-`:
    read it from stdin."""
    query = _query_text(query)
    engine = _searchable(ctx, names)
    scope = _scope(engine, names)
    hits = engine.search(query, scope, limit=limit, options=SearchOptions(max_tokens=max_tokens or None))
    languages, frameworks = detect_stack(engine.store, engine.collection_ids(scope))
    click.echo(render_context(query, hits, languages, frameworks), nl=False)


@cli.command()
@click.option("-c", "--collection", "names", multiple=True, help="Collection to embed (default: all).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def embed(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Embed every chunk that has no vector yet (resumable; one run at a time). The working
    folder's collection first, then recent edits and the files the daemon's searches return."""
    from qmd_daemon.daemon.hit_counts import HitCounts
    from qmd_daemon.vectorize import EmbedHint

    engine = _engine(ctx)
    here = _working_collection(engine)
    hint = EmbedHint(here.name if here is not None else None, HitCounts(engine.settings.state_dir).returned())
    try:
        report = engine.embed(list(names) or None, hint=lambda: hint).as_dict()
    except KeyboardInterrupt:  # vectors are committed batch by batch: a bare "aborted" left that unsaid
        click.echo("interrupted: the vectors embedded so far are kept; `qmd-daemon embed` goes on from there",
                   err=True)
        sys.exit(130)
    if report["deep_off"] and report["static"] is None:
        why = engine.static_status().get("reason", "not built")
        raise QmdError(f"cannot embed: deep vectors {report['deep_off']} and static vectors unavailable "
                       f"({why})")
    if not report["model"] and not report["deep_off"]:
        raise QmdError(f"cannot embed: {engine.why_no_embedding()}")
    if as_json:
        _emit_json(report)
    else:
        static = report["static"]
        if static is not None:
            click.echo(
                f"static vectors: {static['embedded']} pooled ({static['distilled']} token rows distilled) "
                f"in {static['seconds']:.1f}s; {static['pending']} pending"
            )
        if report["deep_off"]:
            click.echo(f"deep vectors: {report['deep_off']}; search uses the static vectors")
            return
        click.echo(
            f"embedded {report['embedded']} chunks (+{report['copied']} identical copied) in "
            f"{report['seconds']:.1f}s; {report['pending']} pending; model {report['model']}"
        )


@cli.command()
@click.option(
    "--to", "target", type=click.Choice(["postgres"]), required=True, help="The backend to copy to."
)
@click.option(
    "--database-url",
    help="postgresql://user@host/dbname of the server (default: index.yml database_url, else "
    "QMD_DATABASE_URL).",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def migrate(ctx: click.Context, target: str, database_url: str | None, as_json: bool) -> None:
    """Copy the local index (chunks, vectors, LLM cache) into PostgreSQL, so nobody re-embeds.
    Each collection lands whole or not at all; run it again to finish an interrupted copy."""
    report = _engine(ctx).migrate_to_postgres(database_url)
    if as_json:
        _emit_json(report)
        return
    click.echo(
        f"copied {len(report['copied'])} collections ({report['chunks']} chunks, {report['vectors']} "
        f"vectors, {report['kept_vectors']} kept for deleted chunks, {report['static_vectors']} static "
        f"vectors, {report['cache_entries']} cached results) "
        f"to {target}; {len(report['skipped'])} already there"
    )
    if report["vectors_left"]:
        click.echo(f"vectors not copied: {report['vectors_left']}")
    if report["static_left"]:
        click.echo(f"static vectors not copied: {report['static_left']}")
    for name in report["conflicts"]:
        click.echo(
            f"not copied: {name}: the server's collection of that name holds other files (another "
            f"repository); rename yours under `collections:` in index.yml before it searches the "
            f"server (its next update indexes it there), or both will replace each other's files"
        )


@cli.command()
@click.option(
    "--profile", type=click.Choice(PROFILES),
    help="Pull this profile's models, then store it in index.yml (not when the pull fails).",
)
@click.option("--role", type=click.Choice(["all", "embed", "rerank", "expand"]), default="all")
@click.option("--refresh", is_flag=True, help="Download again even when cached.")
@click.pass_context
def pull(ctx: click.Context, profile: str | None, role: str, refresh: bool) -> None:
    """Download (hf:) or build (small profile) the models, with progress."""
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.models.profiles import profile_uris
    from qmd_daemon.models.uris import pull as pull_models

    engine = _engine(ctx)
    models = engine.config().models()
    if profile:
        models = {**models, "profile": profile}
    uris = profile_uris(str(models.get("profile") or "qwen3"), engine.settings.models_dir)
    pulled = pull_models(role, models, refresh=refresh, progress=True, profile_uris=uris)
    if profile:  # only now: a pull that failed (offline) switched search to models it lacks
        with IndexConfig.editing(engine.settings.config_file) as config:
            config.set_models({"profile": profile})
    for name, path in pulled.items():
        click.echo(f"{name}: {path}")


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show the index, its collections, vectors and which models search can use."""
    from qmd_daemon.daemon.stop import daemon_jobs, running_daemon

    engine = _engine(ctx)
    engine.models.embedder()
    daemon = running_daemon(engine.settings.state_dir)
    jobs = daemon_jobs(daemon) if daemon is not None else None
    crashed = backing_off()  # the clients start no daemon meanwhile
    here = _working_collection(engine)
    info = {
        "version": __version__,
        **engine.status(),
        # the collection covering the working folder: the daemon embeds its chunks first
        "current_collection": here.name if here is not None else None,
        "daemon": {"running": daemon is not None, "pid": daemon.pid if daemon else None,
                   # an embed the daemon skipped while another process held a pass's lock: owed
                   "embed_retry": jobs.get("embed_retry") if jobs else None,
                   "crash_backoff": _backoff_json(crashed)},
    }
    if as_json:
        _emit_json(info)
        return
    click.echo(f"qmd-daemon {info['version']}\nindex:  {info['index']}\nconfig: {info['config']}")
    # the model states below are this process's; the daemon keeps its own models loaded
    if daemon:
        click.echo(f"daemon: running (pid {daemon.pid}, port {daemon.port})")
    elif crashed:
        click.echo(f"daemon: not running: {backoff_line(crashed)}")
    else:
        click.echo("daemon: not running (ai-search, qmd-warm or the SessionStart hook starts one)")
    vectors, static = info["vectors"], info["static_vectors"]
    if vectors["off"]:
        click.echo(f"deep vectors: {vectors['off']}: the static tier stands in")
    elif not info["sqlite_vec"]:
        click.echo(f"deep vectors: unavailable: {info['no_vectors']}")
    elif vectors["model"]:
        click.echo(
            f"deep vectors: {vectors['embedded']}/{vectors['chunks']} chunks, "
            f"{vectors['model']} ({vectors['dim']} dims)"
        )
    elif info["models"]["roles"]["embed"]["state"] == "unavailable":  # `embed` would only say so
        click.echo("deep vectors: none yet (no embedding model: run `qmd-daemon pull`, then "
                   "`qmd-daemon embed`)")
    else:
        click.echo("deep vectors: none yet (run `qmd-daemon embed`)")
    if vectors["kept"]:
        kept = vectors["kept"]
        click.echo(f"  kept: {kept:,} vector{'' if kept == 1 else 's'} of deleted chunks, taken back by "
                   "identical chunks that return (a branch switched back to), never searched")
    if vectors["running"] is not None:  # a daemon's embed job meanwhile skips: this run does the work
        by = "the daemon" if daemon is not None and daemon.pid == vectors["running"] else "`qmd-daemon embed`"
        click.echo(f"  embedding now: {by} (pid {vectors['running']})")
    if retry := info["daemon"]["embed_retry"]:
        _echo_embed_owed(retry)
    if static["available"] and static["chunks"] and not static["vectors"]:  # no pass has pooled any yet
        click.echo(f"static vectors: not built yet, {static['chunks']} chunks waiting (the daemon's embed "
                   f"job or `qmd-daemon embed` pools them)")
    elif static["available"]:
        where = "" if vectors["off"] else " where chunks lack deep vectors"
        click.echo(f"static vectors: {static['vectors']}/{static['chunks']} chunks (lexical's candidates "
                   f"re-scored{where})")
    else:
        click.echo(f"static vectors: unavailable, {static['reason']}")
    models = info["models"]
    click.echo(f"models: profile {models['profile']}, device {models['device']}")
    if models.get("auto"):
        click.echo(f"  chosen by the installer's Auto: {models['auto']}")
    for role, state in models["roles"].items():
        detail = state.get("model") or state.get("reason") or ""
        click.echo(f"  {role}: {state['state']}{'  ' + detail if detail else ''}")
    click.echo(f"llm cache: {info['llm_cache']['entries']} stored rerank scores and expansions")
    if info["server"] is not None:  # the totals above are this home's collections
        server = info["server"]
        click.echo(
            f"server: {_count(server['collections'], 'collection')}, {server['chunks']} chunks in all "
            f"({_count(server['others'], 'collection')} not in this index.yml)"
        )
    for row in info["collections"]:
        pending = f", {row['pending_vectors']} waiting for vectors" if row["pending_vectors"] else ""
        older = "" if row["index_current"] else "; indexed by another version: the next update re-reads it"
        if row["refused"]:
            older = f"; {row['refused']}"
        if row["folder_gone"]:
            older += f"; its folder is gone (moved or deleted?): `qmd-daemon collection remove {row['name']}`"
        name = f"{row['name']}{_shared_note(row, info['server'] is not None)}"
        if row["name"] == info["current_collection"]:
            name += " (this repository)"
            if row["with_vectors"] is not None and row["chunks"]:
                share = 100 * row["with_vectors"] // row["chunks"]
                pending = f", {row['with_vectors']} with vectors ({share}%){pending}"
        if not row["indexed"]:  # listed, nothing of it in the index yet
            update = f"`qmd-daemon update -c {row['name']}`"
            older = older or f" (an add or a search may be indexing it now; else {update})"
            click.echo(f"  {name}: not indexed yet{older}")
            continue
        click.echo(f"  {name}: {row['files']} files, {row['chunks']} chunks{pending}{older}")
        if row["skipped"]:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(row["skipped"].items()))
            total = sum(row["skipped"].values())
            click.echo(f"    not indexed: {total} file{'s' if total != 1 else ''} ({reasons})")


def _backoff_json(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The clients' crash back-off for `status --json`: how many daemons crashed in a row, the
    last one's pid and reason, and until when (epoch seconds) no daemon is started."""
    if record is None:
        return None
    return {"crashes": record["crashes"], "pid": record.get("pid"), "reason": record.get("reason"),
            "at": record["at"], "until": record["at"] + CRASH_BACKOFF_S}


def _echo_embed_owed(retry: dict[str, Any]) -> None:
    """The daemon's skipped embed job (daemon/jobs.py EmbedRetry), one line: which pass, for which
    collections, and the process whose lock it waits for."""
    which = " and ".join(f"{p} pass" for p in retry.get("passes") or ["deep"])
    scope = ", ".join(retry["collections"]) if retry.get("collections") else "every collection"
    holder = retry.get("waiting_for_pid")
    by = f"pid {holder}" if holder else "another process"
    click.echo(f"  embedding owed: the daemon skipped the {which} of {scope} while {by} held its lock; "
               f"it runs once that lets go (checked every {retry.get('recheck_seconds', 3):g} s)")


@cli.command()
@click.option(
    "--idle-minutes",
    type=_FloatRange(0, min_open=True),
    default=None,
    help="Exit after this long without a request (default: QMD_IDLE_MINUTES, 30).",
)
def serve(idle_minutes: float | None) -> None:
    """Run the search daemon on 127.0.0.1 (a no-op when one is already healthy)."""
    from qmd_daemon.models.runtime import load_llama_first

    load_llama_first()  # before the server's imports: a CUDA build crashed otherwise
    from qmd_daemon.daemon.server import serve_forever

    code = serve_forever(idle_minutes=idle_minutes, out=click.echo)
    if code:
        sys.exit(code)


@cli.command()
@click.option("--timeout", default=30.0, show_default=True, type=_FloatRange(1), help="Seconds to wait.")
def stop(timeout: float) -> None:
    """Stop the running daemon: ask it to shut down, then wait until it has let go of the index."""
    from qmd_daemon.daemon.stop import stop_daemon
    from qmd_daemon.settings import Settings

    pid = stop_daemon(Settings.from_env().state_dir, timeout)
    click.echo("no daemon running" if pid is None else f"stopped the daemon (pid {pid})")


@cli.command()
@click.option("--auto", "auto_mode", is_flag=True,
              help="The install-time speed check (docs/install.md); its limits: "
              "QMD_BENCHMARK_MAX_STATIC_MINUTES (10), QMD_BENCHMARK_MAX_EMBED_MINUTES (60, the deep "
              "pass), QMD_BENCHMARK_MAX_QUERY_SECONDS (5).")
@click.option("--profile", type=click.Choice(PROFILES), default="qwen3", show_default=True)
@click.option("--device", "devices", multiple=True, type=click.Choice(["gpu", "cpu"]), help="Repeatable.")
@click.option("--fixtures", type=click.Path(path_type=Path), help="Default: benchmark_fixtures/.")
@click.option("--index-chunks", type=click.IntRange(min=1), help="Chunks to embed (default: 20,000).")
@click.option("--repo", "repos", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Count the chunks of this repository instead (repeatable).")
@click.option("--json", "as_json", is_flag=True)
def bench(
    auto_mode: bool,
    profile: str,
    devices: tuple[str, ...],
    fixtures: Path | None,
    index_chunks: int | None,
    repos: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Time search per device and role set on benchmark_fixtures/ in a temporary index."""
    from qmd_daemon.setup.bench import auto

    if not auto_mode:
        raise click.UsageError("only `bench --auto` is built in; retrieval benchmarks live in bench/")
    summary = auto(profile, list(devices) or None, fixtures, echo=lambda s: click.echo(s, err=True),
                   index_chunks=index_chunks, repos=list(repos) or None)
    if as_json:
        _emit_json(summary)
    else:
        click.echo(f"passed: {summary['passed']}: {summary['decision']}")
    sys.exit(0 if summary["passed"] else 1)


@cli.command()
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve `search` and `get` over MCP (stdio) for clients that prefer MCP to the skill.

    Needs the optional MCP SDK: pip install 'qmd-daemon[mcp]'.
    """
    from qmd_daemon.mcp_server import load_sdk, serve

    load_sdk()  # before touching the index: without the SDK, one line and exit 1
    serve(_engine(ctx))


@cli.command()
def demo() -> None:
    """Index qmd-daemon's own source in a throwaway index and answer a few questions."""
    from qmd_daemon.demo import run_demo

    run_demo(click.echo)


def main() -> None:
    prepare_stdout()  # the clients' rule: UTF-8 to a pipe whatever the locale, a terminal its own
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except QmdError as exc:
        click.echo(f"qmd-daemon: error: {secret_mask.mask(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:
        click.echo(f"qmd-daemon: error: {os_error_line(exc)}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a storage driver's error no layer below mapped: one line, not a traceback
        readable = storage_error(exc)
        if readable is None:
            raise
        click.echo(f"qmd-daemon: error: {readable}", err=True)
        sys.exit(readable.exit_code)


if __name__ == "__main__":  # `python -m qmd_daemon.cli` ran nothing and exited 0
    main()
