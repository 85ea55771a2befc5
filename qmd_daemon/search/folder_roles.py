"""What a checkout's folders hold besides the source, by layout conventions many ecosystems share
(issue 11, the whole tree).

A user's collection is the whole checkout: beside the source sit example apps, benchmarks, the
docs site (its pages, generated API pages and code snippets) and the project's own scripts (tests
are test_paths.py's). Their files say a question's words as the source does (an example app calls
the API it shows, a docs snippet repeats it), so without a rule they take the source's places.
Each role is a set of folder names used across ecosystems, never one repository's, and the words
by which a question asks for those files themselves (as "tests for" asks for tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

# Words by which a question asks for documentation (prose anywhere, and the docs site).
DOC_WORDS = frozenset(
    {"doc", "docs", "documentation", "documented", "guide", "tutorial", "readme", "example", "examples",
     "usage"}
)


@dataclass(frozen=True)
class FolderRole:
    name: str  # the penalty's name in a hit's boosts
    folders: frozenset[str]  # folder names, lower-cased
    patterns: tuple[str, ...]  # folder-name patterns, lower-cased (`*.playground`)
    subject: frozenset[str]  # question words that ask for these files


EXAMPLES = FolderRole(
    "example_path",
    # sample apps and snippets: npm/cargo/go `examples/`, .NET `samples/`, FastAPI's `docs_src/`,
    # Xcode's `*.playground` bundles and `Example-iOS/` apps, web projects' `playground/`
    frozenset({"example", "examples", "sample", "samples", "demo", "demos", "docs_src", "playground",
               "playgrounds"}),
    ("*.playground", "example-*", "examples-*", "*-example", "*-examples", "*_example", "*_examples"),
    frozenset({"example", "examples", "sample", "samples", "demo", "demos", "tutorial", "playground"}),
)
BENCHMARKS = FolderRole(
    "benchmark_path",
    # `benchmarks/` in most languages, Cargo's `benches/`, `bench/` (Haskell, Go, C), JMH's `jmh/`,
    # airspeed velocity's `asv_bench/` (Python)
    frozenset({"benchmark", "benchmarks", "bench", "benches", "jmh", "asv_bench"}),
    (),
    frozenset({"benchmark", "benchmarks", "bench", "benches", "benchmarking", "performance", "perf"}),
)
DOCS_SITE = FolderRole(
    "docs_site_path",
    # the documentation site: `docs/` (GitHub Pages, MkDocs, Sphinx, Docusaurus), `website/` and
    # `www/` (Docusaurus, Jekyll), `documentation/`, `*-docs` / `docs-*` / `*-website` sites, and
    # Unix `man/` pages with what they show (xmonad's `man/xmonad.hs`, the sample config), and an
    # R package's `vignettes/` (its long-form docs, R Markdown: the pkgdown site's articles).
    # Not `doc/`: it is as often a package (Go's `go/doc`, a CLI's doc generator) or Vim help.
    frozenset({"docs", "documentation", "website", "www", "man", "vignettes"}),
    ("*-docs", "docs-*", "*_docs", "*-documentation", "documentation-*", "*-website"),
    DOC_WORDS | {"website", "site"},
)
SCRIPTS = FolderRole(
    "scripts_path",
    # a project's build, release and maintenance scripts (npm/yarn/pnpm `scripts/`, GitHub's
    # `script/` "scripts to rule them all"); `bin/` and `tools/` are too often the product itself
    frozenset({"scripts", "script"}),
    (),
    frozenset({"script", "scripts", "build", "release", "publish", "tooling", "maintenance"}),
)
VENDORED = FolderRole(
    "vendored_path",
    # other projects' code copied in: Go's and PHP's `vendor/`, C and C++ `third_party/`,
    # `thirdparty/`, `3rdparty/`, `bundled/` (spdlog's `fmt/bundled/`), a C project's `deps/`
    # (redis's jemalloc, lua, hiredis), Python's `_vendor/` and `vendored/`, npm's and bower's
    # install folders when committed. Not `vendors/`
    # (Exposed's database vendors, its own dialects), `external/` or `extern/` (as often the
    # project's own bindings: sympy's `external/` imports optional libraries). A question that
    # names the copied project asks for it (vendored_project).
    frozenset({"vendor", "_vendor", "vendored", "bundled", "third_party", "third-party", "thirdparty",
               "3rdparty", "deps", "node_modules", "bower_components"}),
    (),
    frozenset({"vendor", "vendored", "vendoring", "bundled", "thirdparty", "deps"}),
)
FOLDER_ROLES = (EXAMPLES, BENCHMARKS, DOCS_SITE, SCRIPTS, VENDORED)


@lru_cache(maxsize=65_536)
def folder_roles(path: str) -> tuple[FolderRole, ...]:
    """The roles of the folders above a file (a file's own name says nothing here). Kept per path:
    every search asks it of each of its candidates."""
    folders = [part.lower() for part in path.split("/")[:-1] if part not in ("", ".")]
    return tuple(
        role for role in FOLDER_ROLES
        if any(f in role.folders or any(fnmatchcase(f, p) for p in role.patterns) for f in folders)
    )


def vendored_project(path: str) -> str:
    """The lowercased name of the copied project a vendored file belongs to (`hiredis` of
    `deps/hiredis/read.c`, `""` when the file lies in the vendored folder itself)."""
    parts = [part.lower() for part in path.split("/")[:-1]]
    for at, part in enumerate(parts):
        if part in VENDORED.folders:
            return parts[at + 1] if at + 1 < len(parts) else ""
    return ""
