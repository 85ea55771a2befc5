"""Ingest timing on a generated 10,000-file tree: full index, no-change refresh, small changes.

    python bench/ingest.py [--files 10000] [--seed 7] [--no-git] [--dir DIR] [--keep] [--json OUT]

The tree is deterministic for a seed: python / javascript / go / markdown files of 40-200 lines with
realistic functions, nested folders, a .gitignore (with ignored files present), and, unless --no-git,
a git repository with everything committed so the scanner takes its `git ls-files` path. One run
measures, in a fresh QMD_DAEMON_HOME:

  full       first `update` of the collection
  refresh    `update` with nothing changed (median of --repeat runs); target <= 10% of full
  touch-10   `update` after bumping the mtime of 10 files (content unchanged)
  edit-10    `update` after appending a function to 10 files

With --baseline CHECKOUT it measures the full index only, of one generated tree, with this
checkout's code and the other's alternately (--rounds pairs, each update in a process of its own
and a fresh home), and prints the CPU ratio of each pair and their median: the figure to compare
code versions by on a shared machine.

    python bench/ingest.py --files 2000 --baseline /path/to/other/checkout [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

NOUNS = [
    "user", "account", "session", "token", "cache", "request", "response", "order", "invoice",
    "payment", "customer", "product", "inventory", "shipment", "address", "config", "settings",
    "logger", "metric", "event", "queue", "worker", "job", "schedule", "report", "page", "route",
    "handler", "client", "server", "connection", "pool", "buffer", "stream", "record", "index", "query",
    "document", "chunk", "vector", "embedding", "model", "policy", "permission", "role", "group",
    "tenant", "file", "folder", "upload", "image", "thumbnail", "message", "channel", "notification",
    "email", "template", "invite", "audit"
]
VERBS = [
    "get", "load", "fetch", "save", "store", "update", "delete", "create", "build", "parse", "render",
    "validate", "normalize", "compute", "resolve", "register", "dispatch", "handle", "process", "sync",
    "merge", "split", "encode", "decode", "compress", "refresh", "expire", "retry", "schedule",
    "publish", "subscribe", "notify", "format", "serialize", "open", "close"
]
ADJS = [
    "active", "pending", "stale", "cached", "remote", "local", "default", "primary", "internal",
    "public", "secure", "raw", "batched", "partial", "retryable", "expired", "signed"
]
TOP_DIRS = ("services", "pkg", "internal", "web", "api", "core", "tools", "lib", "apps", "plugins")
LANG_WEIGHTS = (("py", 0.4), ("js", 0.25), ("go", 0.2), ("md", 0.15))


def _snake(rng: random.Random, n: int = 2) -> str:
    return "_".join([rng.choice(VERBS)] + [rng.choice(NOUNS) for _ in range(n - 1)])


def _camel(rng: random.Random) -> str:
    return rng.choice(VERBS) + "".join(w.capitalize() for w in (rng.choice(ADJS), rng.choice(NOUNS)))


def _pascal(rng: random.Random) -> str:
    return rng.choice(ADJS).capitalize() + rng.choice(NOUNS).capitalize() + rng.choice(
        ("Manager", "Service", "Store", "Client", "Handler", "Builder", "Cache", "Registry"))


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(VERBS), "the", rng.choice(ADJS), rng.choice(NOUNS), rng.choice(("for", "from", "into",
             "with")), "the", rng.choice(NOUNS)]
    return " ".join(words).capitalize() + "."


def _py_function(rng: random.Random, indent: str = "") -> list[str]:
    name, a, b = _snake(rng, 2), rng.choice(NOUNS), rng.choice(NOUNS)
    body = [f"{indent}def {name}({'self, ' if indent else ''}{a}, {b}_id: int, *, limit: int = 10):",
            f'{indent}    """{_sentence(rng)}"""',
            f"{indent}    result = []"]
    for _ in range(rng.randint(3, 9)):
        kind = rng.random()
        if kind < 0.3:
            body.append(f"{indent}    if {a} is None or {b}_id < 0:")
            body.append(f"{indent}        raise ValueError('invalid {a} for {b} %s' % {b}_id)")
        elif kind < 0.6:
            body.append(f"{indent}    for item in {a}.{rng.choice(NOUNS)}s[:limit]:")
            body.append(f"{indent}        result.append({_snake(rng, 2)}(item, {b}_id))")
        else:
            body.append(f"{indent}    {rng.choice(NOUNS)}_{rng.choice(NOUNS)} = {a}.{_snake(rng, 2)}({b}_id)")
    body += [f"{indent}    return result", ""]
    return body


def gen_python(rng: random.Random, target: int) -> str:
    lines = ['"""' + _sentence(rng) + '"""', "", "from __future__ import annotations", "",
             f"import {rng.choice(('os', 'json', 'logging', 're', 'time'))}",
             f"from .{rng.choice(NOUNS)} import {_pascal(rng)}", "", ""]
    while len(lines) < target:
        if rng.random() < 0.3:
            cls = _pascal(rng)
            lines += [f"class {cls}:", f'    """{_sentence(rng)}"""', "",
                      "    def __init__(self, store, ttl: float = 30.0):",
                      "        self.store = store", "        self.ttl = ttl", ""]
            for _ in range(rng.randint(1, 3)):
                lines += _py_function(rng, "    ")
            lines.append("")
        else:
            lines += _py_function(rng) + [""]
    return "\n".join(lines) + "\n"


def gen_js(rng: random.Random, target: int) -> str:
    lines = [f"// {_sentence(rng)}", "'use strict';", "",
             f"const {{ {_camel(rng)} }} = require('./{rng.choice(NOUNS)}');", ""]
    exports = []
    while len(lines) < target:
        name = _camel(rng)
        exports.append(name)
        a, b = rng.choice(NOUNS), rng.choice(NOUNS)
        lines += ["/**", f" * {_sentence(rng)}", f" * @param {{object}} {a}", " */",
                  f"async function {name}({a}, {b}Id, options = {{}}) {{", "  const out = [];"]
        for _ in range(rng.randint(3, 8)):
            if rng.random() < 0.5:
                lines += [f"  if (!{a} || {b}Id < 0) {{",
                          f"    throw new Error('invalid {a}: ' + {b}Id);", "  }"]
            else:
                lines += [f"  for (const item of {a}.{rng.choice(NOUNS)}s) {{",
                          f"    out.push(await {_camel(rng)}(item, {b}Id, options));", "  }"]
        lines += ["  return out;", "}", ""]
    lines.append(f"module.exports = {{ {', '.join(exports)} }};")
    return "\n".join(lines) + "\n"


def gen_go(rng: random.Random, target: int, package: str) -> str:
    lines = [f"// Package {package} {_sentence(rng).lower()}", f"package {package}", "",
             'import (', '\t"errors"', '\t"fmt"', ')', ""]
    while len(lines) < target:
        typ = _pascal(rng)
        lines += [f"// {typ} {_sentence(rng).lower()}", f"type {typ} struct {{",
                  f"\t{rng.choice(NOUNS).capitalize()}ID int",
                  f"\t{rng.choice(NOUNS).capitalize()} string", "}", ""]
        for _ in range(rng.randint(1, 3)):
            fn = _pascal(rng).replace("Manager", "").replace("Service", "") + rng.choice(VERBS).capitalize()
            a = rng.choice(NOUNS)
            lines += [f"// {fn} {_sentence(rng).lower()}",
                      f"func (x *{typ}) {fn}({a} string, limit int) ([]string, error) {{",
                      "\tout := make([]string, 0, limit)"]
            for _ in range(rng.randint(2, 6)):
                lines += [f"\tif {a} == \"\" {{", f"\t\treturn nil, errors.New(\"empty {a}\")", "\t}",
                          f"\tout = append(out, fmt.Sprintf(\"%s-%d\", {a}, limit))"]
            lines += ["\treturn out, nil", "}", ""]
    return "\n".join(lines) + "\n"


def gen_markdown(rng: random.Random, target: int) -> str:
    lines = [f"# {_pascal(rng)}", "", _sentence(rng) + " " + _sentence(rng), ""]
    while len(lines) < target:
        lines += [f"## {rng.choice(VERBS).capitalize()} {rng.choice(ADJS)} {rng.choice(NOUNS)}s", ""]
        lines += [" ".join(_sentence(rng) for _ in range(rng.randint(2, 5))), ""]
        if rng.random() < 0.5:
            lines += ["```python", f"{_snake(rng)}({rng.choice(NOUNS)}, limit=5)", "```", ""]
        else:
            lines += [f"- `{_camel(rng)}`: {_sentence(rng)}" for _ in range(rng.randint(2, 5))] + [""]
    return "\n".join(lines) + "\n"


GITIGNORE = "build/\n*.log\ngenerated/\n.env\n"


def generate_tree(root: Path, n_files: int = 10_000, seed: int = 7) -> list[str]:
    """Write n_files indexable files (plus some ignored ones) under root; returns their paths."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text(GITIGNORE)
    folders: list[str] = []
    for top in TOP_DIRS:
        for _ in range(rng.randint(4, 10)):
            depth = rng.randint(1, 3)
            folders.append("/".join([top] + [rng.choice(NOUNS) + rng.choice(("", "s", "_v2", "_util"))
                                             for _ in range(depth)]))
    folders = sorted(set(folders)) + ["docs", "docs/guides", "docs/reference"]
    exts, weights = zip(*LANG_WEIGHTS, strict=True)
    written: set[str] = set()
    paths: list[str] = []
    while len(paths) < n_files:
        ext = rng.choices(exts, weights)[0]
        folder = rng.choice(folders[-3:] if ext == "md" and rng.random() < 0.5 else folders)
        stem = _snake(rng, rng.randint(1, 2)) if ext != "js" else _camel(rng)
        rel = f"{folder}/{stem}.{ext}"
        if rel in written:
            rel = f"{folder}/{stem}_{len(paths)}.{ext}"
        written.add(rel)
        lines = rng.randint(40, 170)  # generators stop at the first whole unit past this
        if ext == "py":
            text = gen_python(rng, lines)
        elif ext == "js":
            text = gen_js(rng, lines)
        elif ext == "go":
            text = gen_go(rng, lines, folder.rsplit("/", 1)[-1].replace("_", "").replace("v2", "") or "main")
        else:
            text = gen_markdown(rng, lines)
        full = root / rel
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        paths.append(rel)
    # ignored content the scanner must skip
    for i in range(50):
        for rel in (f"build/out/bundle_{i}.js", f"services/generated/model_{i}.py", f"logs/run_{i}.log"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"// generated {i}\n" * 40)
    return paths


def git_commit(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "bench tree"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed_update(engine: Any, name: str) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one update (CPU: this process, all threads; the update runs here,
    and on a loaded machine wall time measures the queue for a core)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    reports = engine.update([name])
    secs, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    rep = reports[0].as_dict() if reports else {}
    return secs, cpu, rep


_FULL_INDEX = """
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
os.environ["QMD_DAEMON_HOME"] = sys.argv[3]
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
engine = Engine(Settings.from_env())
name = engine.add_collection(Path(sys.argv[2]), name="ingest-bench").name
wall, cpu = time.perf_counter(), time.process_time()
engine.update([name])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
engine.close()
print(json.dumps({"wall": wall, "cpu": cpu}))
"""


def full_index_with(checkout: Path, tree: Path) -> dict[str, float]:
    """Wall and CPU seconds of a first index of `tree` by `checkout`'s code, in a fresh home."""
    with tempfile.TemporaryDirectory(prefix="qmd-ingest-home-") as home:
        out = subprocess.run(
            [sys.executable, "-c", _FULL_INDEX, str(checkout), str(tree), home],
            check=True, capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"},
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare_full_index(tree: Path, baseline: Path, rounds: int) -> None:
    """Full-index CPU of this checkout over `baseline`'s, alternating (baseline first) per round."""
    ratios = []
    print(f"\n##### full index, this checkout / {baseline} (CPU s; load before each pair)")
    for n in range(1, rounds + 1):
        with open("/proc/loadavg", encoding="ascii") as fh:
            load = fh.read().split()[0]
        base, this = full_index_with(baseline, tree), full_index_with(REPO_ROOT, tree)
        ratios.append(this["cpu"] / base["cpu"])
        print(f"round {n}: baseline {base['cpu']:.2f}, this {this['cpu']:.2f}, ratio {ratios[-1]:.2f} "
              f"(wall {base['wall']:.2f} / {this['wall']:.2f}, load {load})")
    print(f"median CPU ratio this / baseline = {statistics.median(ratios):.2f} over {rounds} rounds")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-git", action="store_true",
                   help="plain folder: the scanner walks it (.gitignore applied)")
    p.add_argument("--dir", type=Path, default=None, help="work folder (default: a fresh temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--repeat", type=int, default=3, help="no-change refreshes to take the median of")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--baseline", type=Path, default=None,
                   help="another checkout: compare full-index CPU with it (no other step is run)")
    p.add_argument("--rounds", type=int, default=5, help="alternating pairs with --baseline")
    args = p.parse_args(argv)
    if args.baseline is not None and not (args.baseline / "qmd_daemon" / "engine.py").is_file():
        log(f"{args.baseline} is not a qmd-daemon checkout")
        return 2

    work = args.dir or Path(tempfile.mkdtemp(prefix="qmd-ingest-"))
    if work.exists() and any(work.iterdir()):
        log(f"{work} is not empty; pass an empty or new --dir")
        return 2
    tree, home = work / "tree", work / "home"
    try:
        start = time.perf_counter()
        paths = generate_tree(tree, args.files, args.seed)
        gen_s = time.perf_counter() - start
        if not args.no_git:
            git_commit(tree)
        log(f"[ingest] generated {len(paths)} files in {gen_s:.1f}s at {tree} (git={not args.no_git})")
        if args.baseline is not None:
            compare_full_index(tree, args.baseline.resolve(), max(1, args.rounds))
            return 0

        os.environ["QMD_DAEMON_HOME"] = str(home)
        from qmd_daemon.engine import Engine
        from qmd_daemon.settings import Settings

        engine = Engine(Settings.from_env())
        try:
            name = engine.add_collection(tree, name="ingest-bench").name
            rows: list[tuple[str, float, float, dict]] = []
            log("[ingest] full index ...")
            rows.append(("full", *timed_update(engine, name)))
            refreshes = [timed_update(engine, name) for _ in range(max(1, args.repeat))]
            med = statistics.median(s for s, _, _ in refreshes)
            med_cpu = statistics.median(c for _, c, _ in refreshes)
            rows.append((f"refresh (median of {len(refreshes)})", med, med_cpu, refreshes[-1][2]))

            rng = random.Random(args.seed + 1)
            sample = rng.sample(paths, 20)
            for rel in sample[:10]:
                st = (tree / rel).stat()
                os.utime(tree / rel, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
            rows.append(("touch 10 (mtime only)", *timed_update(engine, name)))
            for i, rel in enumerate(sample[10:]):
                with open(tree / rel, "a", encoding="utf-8") as fh:
                    fh.write(f"\n# bench edit {i}: refresh_bench_marker_{i}\n")
            rows.append(("edit 10", *timed_update(engine, name)))
            indexed = len(engine.indexed_paths(name))
        finally:
            engine.close()
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)

    full_s = rows[0][1]
    cols = ("files", "added", "changed", "unchanged", "removed", "chunks_added")
    head = f"{'step':<24}{'seconds':>9}{'cpu s':>9}{'% full':>8}" + "".join(f"{c:>13}" for c in cols)
    print(f"\n##### ingest: {len(paths)} generated files, {indexed} indexed, git={not args.no_git}, "
          f"seed={args.seed}")
    print(head)
    print("-" * len(head))
    for step, secs, cpu, rep in rows:
        counts = "".join(f"{rep.get(c, ''):>13}" for c in cols)
        print(f"{step:<24}{secs:>9.3f}{cpu:>9.3f}{100 * secs / full_s:>7.1f}%{counts}")
    ratio = rows[1][1] / full_s
    print(f"\nrefresh / full = {ratio:.1%} (target <= 10%: {'PASS' if ratio <= 0.10 else 'FAIL'}); "
          f"touch-10 / full = {rows[2][1] / full_s:.1%}; edit-10 / full = {rows[3][1] / full_s:.1%}; "
          f"full throughput = {indexed / full_s:.0f} files/s")
    if args.json:
        steps = [{"step": s, "seconds": t, "cpu_seconds": c, "report": r} for s, t, c, r in rows]
        args.json.write_text(json.dumps({"files": len(paths), "indexed": indexed, "git": not args.no_git,
                                         "steps": steps, "refresh_ratio": ratio}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
