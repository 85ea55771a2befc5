"""Code-aware score adjustments, each a small rule with its own weight (all in ScoringWeights).

Ideas from semble and gsd-qdrant-knowledge; every weight was kept only where the dev eval showed
it helping (bench/retrieval.py runs the ablations).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from qmd_daemon.file_types import STYLESHEET_LANGUAGES, TEMPLATE_LANGUAGES
from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.folder_roles import DOC_WORDS, VENDORED, folder_roles, vendored_project
from qmd_daemon.search.header_chunks import is_preamble_only
from qmd_daemon.search.platform_ports import (
    COMMON_SOURCE_SETS,
    names_a_platform,
    port_places,
    source_set_places,
)
from qmd_daemon.search.query import ParsedQuery, content_words
from qmd_daemon.search.test_paths import HARDWARE_LANGUAGES, is_test_path
from qmd_daemon.search.translations import TRANSLATION_WORDS, is_translation
from qmd_daemon.search.word_match import WordsMatching, initialisms, name_parts, stem_forms
from qmd_daemon.text.identifiers import split_identifier


@dataclass(frozen=True)
class ScoringWeights:
    definition: float = 3.0  # x top score, for chunks defining a queried symbol
    definition_spread: float = 0.5  # definition / chunks defining the name ** this (not symbol queries)
    definition_stem: float = 1.5  # extra factor when the file stem is the symbol
    definition_case: float = 0.3  # factor for a definition matching a queried name only without case
    path_words: float = 1.0  # x top score x fraction of query words in the file stem/folder
    # a file whose name says a question word: its path-words boost x (1 - this + this x the share
    # of the name's words the question says): `ToStringBuilder.java` over
    # `ReflectionToStringBuilder.java` for "toString builder"; 0: off
    name_share: float = 0.5
    initials: bool = True  # a file named by the initials of question words says them (`fs.c`: "file system")
    name_words: float = 1.0  # x top score x share of the question a defined compound name says
    coherence: float = 0.4  # x top score x the file's share of candidate score
    test_penalty: float = 0.3
    # files of the folders beside the source (search/folder_roles.py), unless the question asks for them
    example_penalty: float = 0.3  # example apps, samples, demos, playgrounds
    benchmark_penalty: float = 0.3
    docs_site_penalty: float = 0.3  # the docs site's pages and code (x doc_penalty for its prose)
    scripts_penalty: float = 0.3  # build, release and maintenance scripts
    translation_penalty: float = 0.3  # one language's messages under a locale folder (search/translations.py)
    vendored_penalty: float = 0.3  # other projects' code copied in (`vendor/`, `third_party/`, `deps/`)
    compat_penalty: float = 0.3
    superseded_only: bool = True  # a `v1/` folder is compat code only beside its replacement
    platform_penalty: float = 0.3  # one operating system's port, unless the question names a platform
    deprecated_penalty: float = 0.5  # a chunk whose definitions are all marked deprecated
    ci_penalty: float = 0.3  # CI pipeline definitions, unless the question is about CI or releases
    init_penalty: float = 0.5
    dts_penalty: float = 0.7
    saturation: float = 0.5  # each further chunk of an already-ranked file
    doc_penalty: float = 0.5  # prose (markdown, rst, txt) when the question is not about docs
    data_file_penalty: float = 0.5  # YAML/JSON/TOML/XML unless the question is about configuration or data
    markup_penalty: float = 0.5  # templates and stylesheets unless the question is about pages or styles
    config_module_penalty: float = 0.5  # code named config, settings, defaults unless the question says so
    changelog_penalty: float = 0.3  # CHANGES / CHANGELOG / HISTORY / NEWS mention everything
    preamble_penalty: float = 0.5  # code chunks that are only imports / package lines / header
    frame_file: float = 1.0  # x top score, for a file a quoted stack frame names (innermost most)
    frame_decay: float = 0.7  # each further frame file from the innermost
    error_message: float = 1.0  # x top score, for a code chunk holding a quoted error message's words
    sibling_terms: float = 1.0  # x top score x the question's idf share only sibling windows say
    # x top score x exp(-(MinDist - 1) / proximity_scale), search/proximity.py; 0: off (docs/ranking.md
    # "Term proximity and pseudo-relevance feedback")
    proximity: float = 0.0
    proximity_scale: float = 5.0  # code words


PREAMBLE_CHECKED = 50  # candidates read for the preamble rule: those that could reach the page
DEPRECATED_CHECKED = 50  # candidates read for deprecation marks (~2 ms a search for all 300)
SIBLING_CHECKED = 50  # leading candidates whose definitions' windows are read (each term a lookup)
SIBLING_QUESTION_TERMS = 10  # a question's distinct terms (dev questions: 13 at most, bug reports ~40)

# Files that mostly gather a package's modules for its importers. Not Rust's `mod.rs`: by the
# language's convention it is the module's own body (`foo/mod.rs` is `foo.rs`), where its traits
# and types are defined (serde's `de/mod.rs` defines `Deserialize`).
_PACKAGE_ENTRY_FILES = frozenset({"__init__.py", "package-info.java", "index.js", "index.ts"})
_CHANGELOG_NAME = re.compile(r"(^|/)(changes|changelog|history|news|release[-_]?notes)(\.\w+)?$")
# A question asks for the tests themselves when it names them as what it is after: "tests for the
# router", "the parser's tests", "parse cookie tests", "how is parse_args tested", "unit tests",
# "test fixtures", "conftest". Not when "test" is the product's own noun: a test framework's
# questions say it about its code ("how skip aborts a test", "how a test file is preprocessed"),
# and a bug report says it in passing ("causing test failures"); there the penalty stays, or
# bats-core's own `.bats` suite fills the page (docs/ranking.md, "Questions that say test"). Not
# "spec": it names the product as often (lazy.nvim's plugin specs, an OpenAPI spec).
_ASKS_FOR_TESTS = re.compile(
    r"\btests\s+(?:for|of|on|covering)\b"
    r"|\b(?!(?:in|for|of|by|with|during|across|between|to|from|on|and|or)\b)\w+\s+tests\W*$"
    r"|\w's\s+(?:unit\s+)?tests\b"
    r"|\b(?:unit|integration|e2e|end-to-end|regression|snapshot|property)[\s-]tests?\b"
    r"|\b(?:tested|untested|conftest|test\s+fixtures?|test\s+coverage)\b",
    re.IGNORECASE,
)
# What marks a definition deprecated, by language: Swift `@available(*, deprecated`, Java/Kotlin
# `@Deprecated`, Scala/Elixir/Python 3.13 and the doc comments of JS/TS/PHP/Java/Lua `@deprecated`,
# C# `[Obsolete`, Rust `#[deprecated`, Go `// Deprecated:`, Haskell `{-# DEPRECATED`, C/C++
# `[[deprecated` and `__attribute__((deprecated`.
_DEPRECATION_MARK = re.compile(
    r"@available\([^)]*\bdeprecated\b|@[Dd]eprecated\b|\[Obsolete\b|#\[deprecated\b|//\s*Deprecated:"
    r"|\{-#\s*DEPRECATED\b|\[\[deprecated\b|__attribute__\s*\(\(deprecated\b"
)
# Lines that do not open a definition: attributes, comments, closing brackets.
_NOT_A_HEAD = re.compile(r"\s*(?:[@#\[*})\]]|//|/\*|--|\{-|end\b)")
# CI pipelines: GitHub Actions, GitLab, CircleCI, Travis, Azure Pipelines, Buildkite, AppVeyor. They
# name every tool and test of a project (bats-core's `.github/workflows/tests.yml` came 2nd for
# questions about its test functions); no dev question's answer is one.
_CI_PATH = re.compile(
    r"(^|/)(\.github/workflows|\.circleci|\.buildkite)/|(^|/)(\.gitlab-ci|\.travis|azure-pipelines|appveyor)\.ya?ml$"
)
_CI_WORDS = frozenset({"ci", "workflow", "workflows", "pipeline", "pipelines", "github", "gitlab", "travis",
                       "circleci", "release", "releases", "publish", "publishing", "deploy", "deployment"})
# Data and configuration files: manifests, compose files, tool settings, fixtures' records. They
# list a project's names and topics (trpc's `_artifacts/domain_map.yaml` maps every feature to its
# files) without the code; no dev question's answer is one.
_DATA_LANGUAGES = frozenset({"yaml", "json", "toml", "xml", "properties", "ini", "dotenv"})
_DATA_WORDS = frozenset({"config", "configuration", "configure", "configured", "configs", "settings", "yaml",
                         "yml", "json", "toml", "xml", "manifest", "docker", "compose", "dependencies",
                         "dependency", "package", "packages", "properties", "ini"})
# Templates and stylesheets (file_types: a web app's views and styles). A page's template says
# what the page shows and a stylesheet names every widget, where the code that does it is elsewhere;
# a question about a page, a template or a style asks for them (not "view", "form", "email":
# code's words as often: Django's views, a form's validation).
_MARKUP_LANGUAGES = TEMPLATE_LANGUAGES | STYLESHEET_LANGUAGES
_MARKUP_WORDS = frozenset({
    "template", "templates", "templating", "page", "pages", "html", "markup", "partial", "partials", "layout",
    "layouts", "css", "scss", "sass", "style", "styles", "stylesheet", "stylesheets", "styling", "styled",
    "theme", "themes", "theming", "color", "colors", "colour", "colours", "font", "fonts",
})
# A project's configuration module in code: xmonad's `Config.hs` binds every key to the operation it
# runs, telescope's `config.lua` documents every option by the feature it sets; they name each
# feature without doing it. Every dev answer that is one is for a question that says configuration.
_CONFIG_MODULE_STEMS = frozenset({"config", "configuration", "settings", "defaults", "conf"})
# (environment variables are configuration: a settings module is where a project reads them)
_CONFIG_WORDS = _DATA_WORDS | frozenset({"configurable", "setting", "default", "defaults", "option",
                                         "options", "customize", "customise", "customization", "preferences",
                                         "env", "environment"})
_COMPAT_PATH = re.compile(r"(^|/)(compat|legacy|deprecated|single_include)/|(^|/)[^/]*compat[^/]*\.\w+$")
# A first version's folder is old code only beside what replaced it: pydantic keeps its v1 API in
# `pydantic/v1/` beside the current `pydantic/main.py`, an API `api/v1/` beside `api/v2/`. Alone in
# its folder it is the code's own namespace: Exposed's packages are all `org.jetbrains.exposed.v1.*`,
# a protobuf API's `temporal/api/workflowservice/v1/` (Google's API versioning).
_FIRST_VERSION = re.compile(r"(^|/)v1/")
# A later version's folder is old code beside a still later one: zod's `src/v3/` beside `src/v4/`.
_VERSION_FOLDER = re.compile(r"(^|/)v(\d+)/")
_VERSION_NAME = re.compile(r"v(\d+)")
# A PostgreSQL extension's update scripts, named `extension--from--to.sql` as CREATE/ALTER EXTENSION
# requires: each re-creates the objects its release changed, older copies of what the source (or
# the install script, `extension--version.sql`) defines; pg_partman keeps 88 of them in `updates/`
_EXTENSION_UPDATE_SCRIPT = re.compile(r"(?:^|/)[^/]+--[^/]+--[^/]+\.sql$")
_UPGRADE_WORDS = frozenset({"upgrade", "upgrades", "upgrading", "migration", "migrations", "migrate",
                            "version", "versions"})


def _names_project(project: str, asked: set[str]) -> bool:
    """Whether a question's words name a vendored project: `hiredis`, `lua` of `deps/lua/`, both
    words of `third_party/nlohmann-json/` (one of them, `json`, is any question's word)."""
    parts = set(split_identifier(project))
    return bool(project) and (project in asked or bool(parts) and parts <= asked)


def asks_for_docs(parsed: ParsedQuery) -> bool:
    return any(t.lower() in DOC_WORDS for t in parsed.terms)


def asks_for_tests(parsed: ParsedQuery) -> bool:
    return bool(_ASKS_FOR_TESTS.search(parsed.text))


def _name_and_parent(path: str) -> tuple[str, str]:
    parts = path.rsplit("/", 2)
    return parts[-1], parts[-2] if len(parts) > 1 else ""


@lru_cache(maxsize=65_536)
def _path_words(path: str) -> frozenset[str]:
    """The words of a file's name (without its extension) and of its folder, lowercased: the
    whole names and their identifier parts."""
    name, parent = _name_and_parent(path)
    stem = name.split(".")[0]
    words = {stem.lower(), *split_identifier(stem)}
    if parent:
        words |= {parent.lower(), *split_identifier(parent)}
    return frozenset(w for w in words if w)


@lru_cache(maxsize=65_536)
def _private_names(path: str) -> frozenset[str]:
    """A file's name and folder without the leading underscores that mark them private or
    internal: Python's `_base.py`, telescope's `builtin/__git.lua` (the name is `git`), pydantic's
    `_internal/` (`__init__` stays `init__`: the language's name, not the module's)."""
    name, parent = _name_and_parent(path)
    names = (name.split(".")[0], parent)
    return frozenset(n.lstrip("_").lower() for n in names if n.startswith("_") and n.strip("_"))


def path_word_boost(cands: list[Candidate], parsed: ParsedQuery, top: float, weights: ScoringWeights) -> None:
    """Query words in the file's name or folder, matched by stem on both sides: code names a
    module after what it does (`checker.lua` for "checks for updates", `compose.ts` for "function
    composition", `impls.rs` for "implementations"); a prefix of the words as written misses
    each (docs/ranking.md, "File names by their stems"). A private module's name says its words
    (`__git.lua`), and a file named by the initials of words the question runs together says those
    words (`TH.hs` for "Template Haskell")."""
    words = content_words(parsed)
    if not words or weights.path_words == 0:
        return
    forms = stem_forms(words)
    matching = WordsMatching(forms)
    # a private module's name says its words, unless it is the one behind a public module of
    # that name in its own collection (pydantic's `_internal/_fields.py` behind `fields.py`: the
    # question means that one; a docs page `fields.md` is no module); keyed by collection, as two
    # repositories searched together share paths and names
    public: dict[str, set[str]] = {}
    for cand in cands:
        if cand.chunk.kind == "code" and cand.chunk.language not in _DATA_LANGUAGES:
            public.setdefault(cand.chunk.collection, set()).add(_stem(cand.chunk.path))
    names_of = {(c.chunk.collection, c.chunk.path): _path_words(c.chunk.path)
                | (_private_names(c.chunk.path) - public.get(c.chunk.collection, set())) for c in cands}
    every_name = sorted(set().union(*names_of.values()))
    name_forms = dict(zip(every_name, stem_forms(every_name), strict=True))  # one tokenizer pass
    # a file named by the initials of words the question runs together says them: code shortens
    # a module's subject so (`fs.c`, "file system"); questions only (a report's runs are many)
    short = weights.initials and len({t.lower() for t in parsed.terms}) <= SIBLING_QUESTION_TERMS
    abbreviated = {initials: {forms[words.index(w)] for w in run if w in words}
                   for initials, run in initialisms(parsed.text).items()} if short else {}
    fractions: dict[tuple[str, str], float] = {}
    for key, names in names_of.items():
        matched = matching.matched(names | {name_forms[name] for name in names})
        matched |= abbreviated.get(_stem(key[1]).lstrip("_"), set())
        fraction = sum(1 for form in forms if form in matched) / len(words)
        said = _name_said(key[1], matching) if fraction and weights.name_share else 0.0
        if said:  # a name that says none of the question's words got its boost from its folder
            fraction *= 1 - weights.name_share + weights.name_share * said
        fractions[key] = fraction
    for cand in cands:
        cand.add("path_words", weights.path_words * top * fractions[(cand.chunk.collection, cand.chunk.path)])


@lru_cache(maxsize=65_536)
def _name_parts(path: str) -> tuple[tuple[str, str], ...]:
    """A file name's words of 3 letters or more, each with its stem (`ReflectionToStringBuilder.java`:
    reflection, string, builder)."""
    stem = _name_and_parent(path)[0].split(".")[0].lstrip("_")
    parts = [part for part in split_identifier(stem) if len(part) >= 3 and part.isalpha()]
    return tuple(zip(parts, stem_forms(parts), strict=True)) if parts else ()


def _name_said(path: str, matching: WordsMatching) -> float:
    """The share of a file name's words that the question says: a name narrower than the
    question (`ReflectionToStringBuilder` for "toString builder", `QueryParser` for "query
    parameters") names a variant of what it asks (docs/ranking.md, "Names the question says
    whole")."""
    parts = _name_parts(path)
    if not parts:
        return 1.0
    return sum(matching.says(part) or matching.says(form) for part, form in parts) / len(parts)


def name_words_boost(
    cands: list[Candidate],
    parsed: ParsedQuery,
    top: float,
    weights: ScoringWeights,
    names_of: Callable[[list[int]], dict[int, list[tuple[str, int]]]],
    defined: dict[int, set[str]],
) -> None:
    """A chunk that defines a compound name whose every part the question says answers it by
    name (`split_identifier` for "split camelCase identifiers into words"). `names_of`: chunk ids
    -> (name, line) of each definition (asked only when the rule applies); chunks in `defined` already have
    the definition boost."""
    if parsed.is_symbol_query or weights.name_words == 0 or asks_for_docs(parsed):
        return
    words = set(content_words(parsed))
    asked = len({t.lower() for t in parsed.terms})
    if not words or not asked:
        return
    names = names_of([c.chunk.id for c in cands])
    matching = WordsMatching(list(words))
    for cand in cands:
        if cand.chunk.id in defined or cand.chunk.kind == "doc":  # headings are not names
            continue
        said = 0
        for name, _line in names.get(cand.chunk.id, ()):
            parts = name_parts(name)
            if len(parts) >= 2 and all(matching.says(part) for part in parts):
                said = max(said, len(parts))
        if said:
            cand.add("name_words", weights.name_words * top * min(1.0, said / asked))


def _stem(path: str) -> str:
    return _name_and_parent(path)[0].split(".")[0].lower()


def definition_boost(
    cands: list[Candidate],
    parsed: ParsedQuery,
    top: float,
    weights: ScoringWeights,
    defined: dict[int, set[str]],
    exact: set[int] | None = None,
    spread: dict[str, int] | None = None,
) -> None:
    """`defined`: chunk id -> lowercased query symbols that chunk defines; `exact`: those of
    them that define one as the question spells it (None: all do). `Deserialize` asks for the
    trait, not the `deserialize` method every implementation of it defines. `spread`: lowercased
    name -> chunks defining it (None: counted in `defined`, which then holds every definition)."""
    if not parsed.symbols or weights.definition == 0:
        return
    factor = 1.0 if parsed.is_symbol_query else 0.5
    # A name many chunks define (`kind`, `__init__`, a sentence's first word) says little about
    # which one is meant: in a question naming several, each counts by how rare its definition is.
    if spread is None:
        spread = {}
        for defined_names in defined.values():
            for name in defined_names:
                spread[name] = spread.get(name, 0) + 1
    for cand in cands:
        names = defined.get(cand.chunk.id)
        if not names:
            continue
        common = 1 if parsed.is_symbol_query else min(spread[n] for n in names)
        rarity = common ** -weights.definition_spread
        amount = weights.definition * top * factor * rarity
        stem = _stem(cand.chunk.path)
        if any(stem in (n, n.replace("_", ""), n.rstrip("s")) for n in names):
            amount *= weights.definition_stem
        if exact is not None and cand.chunk.id not in exact:
            amount *= weights.definition_case
        cand.add("definition", amount)


def coherence_boost(cands: list[Candidate], top: float, weights: ScoringWeights) -> None:
    """A deprecated chunk counts for its file at its score before that penalty: it is on its
    file's topic (commons-lang's StringUtils holds dozens of deprecated string methods)."""
    sums: dict[str, float] = {}
    best: dict[str, Candidate] = {}
    for cand in cands:
        key = cand.chunk.collection + "/" + cand.chunk.path
        sums[key] = sums.get(key, 0.0) + max(cand.score / cand.boosts.get("deprecated", 1.0), 0.0)
        if key not in best or cand.score > best[key].score:
            best[key] = cand
    largest = max(sums.values(), default=0.0)
    if largest <= 0:
        return
    for key, cand in best.items():
        cand.add("coherence", weights.coherence * top * sums[key] / largest)


# Files that declare what another file implements: TypeScript's declarations (ESM, CommonJS),
# OCaml's interfaces (`angstrom.mli` beside `angstrom.ml`); and an Objective-C header (by its
# content, `file_types.language_of_text`: a C header is often all there is of a C API).
_DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".mli")
# A Terraform module's interface, by the convention every module follows: its inputs
# (`variables.tf`, each with an English `description`) and outputs; `main.tf` and the like use them.
_TERRAFORM_INTERFACE = ("variables.tf", "outputs.tf")
_INTERFACE_WORDS = frozenset({"variable", "variables", "input", "inputs", "output", "outputs"})
# Solidity's interfaces, by the style guide's name: `IAccessManager.sol`, `IERC20.sol`
_SOLIDITY_INTERFACE = re.compile(r"(?:^|/)I[A-Z]\w*\.sol$")


# C++ headers whose bodies another file holds, by the conventions that split them: Google's and
# spdlog's `logger-inl.h`, `_inl.h`, Boost's `.ipp`, templates' `.tpp`/`.tcc`/`.inl`, `_impl.h`
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx")
_BODY_FORMS = ("{}-inl.h", "{}_inl.h", "{}-inl.hpp", "{}.inl", "{}.ipp", "{}.tpp", "{}.tcc", "{}_impl.h",
               "{}-impl.h", "{}_impl.hpp")
_BODY_SUFFIXES = tuple(form.format("") for form in _BODY_FORMS)  # a body file is no header of its own


def _headers_with_bodies(cands: list[Candidate]) -> set[tuple[str, str]]:
    """The (collection, lowercased path) of candidate headers whose bodies a file beside them
    among the candidates holds (`logger.h` beside `logger-inl.h`): the header declares, the body
    answers how it is done."""
    paths = {(c.chunk.collection, c.chunk.path.lower()) for c in cands}
    found = set()
    for collection, path in paths:
        if not path.endswith(_HEADER_SUFFIXES) or path.endswith(_BODY_SUFFIXES):
            continue
        folder, _, name = path.rpartition("/")
        stem = name.rsplit(".", 1)[0]
        prefix = folder + "/" if folder else ""
        if any((collection, prefix + form.format(stem)) in paths for form in _BODY_FORMS):
            found.add((collection, path))
    return found


class _CodeNeighbours:
    """(collection, lowercased folder: "" for the root, else ending in /) -> the names of the
    entries in it that hold code among the candidates: what a folder stands beside. Prose and data
    (the root's README) are beside everything; another repository is beside nothing. Read the
    first time a rule asks: most searches meet no `v1/` or system folder, and building it for
    every search's ~250 candidates was the costliest step of these penalties."""

    def __init__(self, cands: list[Candidate]):
        self._cands = cands

    @cached_property
    def _entries(self) -> dict[tuple[str, str], set[str]]:
        entries: dict[tuple[str, str], set[str]] = {}
        for cand in self._cands:
            if cand.chunk.kind != "code" or cand.chunk.language in _DATA_LANGUAGES:
                continue
            parts = cand.chunk.path.lower().split("/")
            for depth in range(len(parts)):
                folder = "/".join(parts[:depth]) + ("/" if depth else "")
                entries.setdefault((cand.chunk.collection, folder), set()).add(parts[depth])
        return entries

    def _beside(self, collection: str, folder: str) -> tuple[str, set[str]]:
        """FOLDER's (lowercased, ending in /) name and the other code entries of its parent."""
        parent, _, name = folder[:-1].rpartition("/")
        parent_key = parent + "/" if parent else ""
        return name, self._entries.get((collection, parent_key), set()) - {name}

    def beside_other_code(self, collection: str, folder: str) -> bool:
        """Whether FOLDER (lowercased, ending in /) has code beside it in its parent folder."""
        return bool(self._beside(collection, folder)[1])

    def beside_common_source_set(self, collection: str, folder: str) -> bool:
        """Whether FOLDER (`jvm/`) has a Kotlin Multiplatform common source set with code beside it."""
        return bool(COMMON_SOURCE_SETS & self._beside(collection, folder)[1])

    def beside_later_version(self, collection: str, folder: str, version: int) -> bool:
        """Whether FOLDER (`v2/`) has a later version's folder (`v3/`) with code beside it."""
        return any((m := _VERSION_NAME.fullmatch(entry)) and int(m.group(1)) > version
                   for entry in self._beside(collection, folder)[1])


def _superseded_versions(cands: list[Candidate], neighbours: _CodeNeighbours) -> set[tuple[str, str]]:
    """The (collection, lowercased path) of candidates under an older version's folder: a `v1/`
    beside other code (the current code, `pydantic/main.py` beside `pydantic/v1/`, or a later
    version, `api/v2/`), any `vN/` beside a later `vM/` (zod's `v3/` beside `v4/`)."""
    found = set()
    for cand in cands:
        path = cand.chunk.path.lower()
        for m in _VERSION_FOLDER.finditer(path):
            folder, version = path[:m.end()], int(m.group(2))
            if (version == 1 and neighbours.beside_other_code(cand.chunk.collection, folder)) or \
                    neighbours.beside_later_version(cand.chunk.collection, folder, version):
                found.add((cand.chunk.collection, path))
                break
    return found


def _platform_port(cand: Candidate, neighbours: _CodeNeighbours) -> bool:
    """Whether the candidate is one system's port: its file name names one, or a folder that
    names one stands beside other code (libuv's `src/win/` beside `src/unix/`, Flutter's `android/`
    beside `lib/`); alone such a folder is the code (ExoPlayer's Java package `com/google/android/`).
    A Kotlin target's source set beside the common one holds one target's `actual` code
    (kotlinx-coroutines' `jvm/src/CoroutineContext.kt` beside `common/src/CoroutineContext.common.kt`)."""
    folders, file_named = port_places(cand.chunk.path)
    if file_named or any(neighbours.beside_other_code(cand.chunk.collection, f.lower()) for f in folders):
        return True
    sets = source_set_places(cand.chunk.path) if cand.chunk.language == "kotlin" else ()
    return any(neighbours.beside_common_source_set(cand.chunk.collection, f) for f in sets)


def path_penalties(cands: list[Candidate], parsed: ParsedQuery, weights: ScoringWeights) -> None:
    asked = {w.lower() for w in parsed.terms}
    wants_tests = asks_for_tests(parsed)
    role_penalties = {
        "example_path": weights.example_penalty,
        "benchmark_path": weights.benchmark_penalty,
        "docs_site_path": weights.docs_site_penalty,
        "scripts_path": weights.scripts_penalty,
        "vendored_path": weights.vendored_penalty,
    }
    wants_docs = asks_for_docs(parsed)
    wants_ci = bool(asked & _CI_WORDS)
    wants_data = bool(asked & _DATA_WORDS)
    words = content_words(parsed)
    wants_platform = names_a_platform(words)
    wants_config = bool(_CONFIG_WORDS.intersection(words))
    wants_translations = bool(asked & TRANSLATION_WORDS)
    wants_markup = bool(asked & _MARKUP_WORDS)
    # a collection whose candidates hold hardware descriptions is a hardware tree: the question's
    # candidates say it at no cost (a Verilog repository's questions meet its `.sv` files)
    hardware = {c.chunk.collection for c in cands if c.chunk.language in HARDWARE_LANGUAGES}
    neighbours = _CodeNeighbours(cands)
    superseded = _superseded_versions(cands, neighbours) if weights.superseded_only else {
        (c.chunk.collection, p) for c in cands if _FIRST_VERSION.search(p := c.chunk.path.lower())}
    declared_only = _headers_with_bodies(cands)
    for cand in cands:
        path = cand.chunk.path.lower()
        if _CHANGELOG_NAME.search(path):
            cand.scale("changelog", weights.changelog_penalty)
        elif cand.chunk.kind == "doc" and not wants_docs:
            cand.scale("doc_for_code_question", weights.doc_penalty)
        # with case: `FooTest.java`
        if not wants_tests and is_test_path(cand.chunk.path, cand.chunk.collection in hardware):
            cand.scale("test_path", weights.test_penalty)
        for role in folder_roles(cand.chunk.path):
            named = role is VENDORED and _names_project(vendored_project(path), asked)
            if not asked & role.subject and not named:
                cand.scale(role.name, role_penalties[role.name])
        if not wants_translations and is_translation(cand.chunk.path):
            cand.scale("translation", weights.translation_penalty)
        if not wants_data and cand.chunk.language in _DATA_LANGUAGES:
            cand.scale("data_file", weights.data_file_penalty)
        elif not wants_markup and cand.chunk.language in _MARKUP_LANGUAGES:
            cand.scale("markup", weights.markup_penalty)
        elif not wants_config and cand.chunk.kind == "code" and _stem(path) in _CONFIG_MODULE_STEMS:
            cand.scale("config_module", weights.config_module_penalty)
        if not wants_ci and _CI_PATH.search(path):
            cand.scale("ci_path", weights.ci_penalty)
        if not wants_platform and _platform_port(cand, neighbours):
            cand.scale("platform_port", weights.platform_penalty)
        if _COMPAT_PATH.search(path) or (cand.chunk.collection, path) in superseded:
            cand.scale("compat_path", weights.compat_penalty)
        elif _EXTENSION_UPDATE_SCRIPT.search(path) and not asked & _UPGRADE_WORDS:
            cand.scale("extension_update_script", weights.compat_penalty)
        name = _name_and_parent(path)[0]
        if name in _PACKAGE_ENTRY_FILES:
            cand.scale("package_init", weights.init_penalty)
        objc_header = name.endswith(".h") and cand.chunk.language == "objc"
        declares = name.endswith(_DECLARATION_SUFFIXES) or objc_header
        declares = declares or bool(_SOLIDITY_INTERFACE.search(cand.chunk.path))
        declares = declares or (cand.chunk.collection, path) in declared_only
        if declares or (name in _TERRAFORM_INTERFACE and not asked & _INTERFACE_WORDS):
            cand.scale("type_declarations", weights.dts_penalty)


def _is_deprecated(text: str) -> bool:
    """Every definition at the level of the outermost one a mark precedes is marked deprecated.
    Definitions are read from the text, not the index: it does not name every one (a Swift `var`
    beside deprecated functions is the live API)."""
    if not _DEPRECATION_MARK.search(text):
        return False
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.strip() and not _NOT_A_HEAD.match(line)]
    marked = set()
    for i, line in enumerate(lines):
        if _DEPRECATION_MARK.search(line):
            following = next((h for h in heads if h > i), None)
            if following is not None:
                marked.add(following)
    if not marked:
        return False
    level = min(_indent(lines[h]) for h in marked)
    return all(h in marked for h in heads if _indent(lines[h]) == level)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def deprecated_penalty(cands: list[Candidate], weights: ScoringWeights) -> None:
    """A chunk whose definitions are all marked deprecated holds the old names that forward to the
    new ones (SnapKit's `snp_makeConstraints` calls `snp.makeConstraints`): it says the question's
    words, the code that does it is elsewhere. Only the leading candidates are read (a penalty
    only lowers; coherence counts a deprecated chunk unlowered)."""
    for cand in sorted(cands, key=lambda c: -c.score)[:DEPRECATED_CHECKED]:
        if cand.chunk.kind == "code" and _is_deprecated(cand.chunk.text):
            cand.scale("deprecated", weights.deprecated_penalty)


def frame_file_boost(cands: list[Candidate], frame_ranks: dict[int, int], weights: ScoringWeights) -> None:
    """A stack trace in the question names where it went wrong; `frame_ranks`: file id -> 0 for
    the innermost frame file the trace names, 1 for the next one out, ..."""
    if not frame_ranks or weights.frame_file == 0:
        return
    for cand in cands:
        rank = frame_ranks.get(cand.chunk.file_id)
        if rank is not None:
            cand.add("frame_file", weights.frame_file * weights.frame_decay**rank)


def error_message_boost(cands: list[Candidate], holders: set[int], weights: ScoringWeights) -> None:
    """`holders`: code chunks that hold a quoted error message's fixed words, where it is raised."""
    if weights.error_message == 0:
        return
    for cand in cands:
        if cand.chunk.id in holders:
            cand.add("error_message", weights.error_message)


def preamble_penalty(
    cands: list[Candidate], weights: ScoringWeights, last_lines: Callable[[list[int]], dict[int, int]]
) -> None:
    """Imports and file headers name what a file uses, not what it does (header_chunks.py); the
    code that does it follows them. A file that is nothing but imports (a re-export module) is
    itself the answer, so only a preamble with more of its file after it is lowered.
    `last_lines`: file ids -> the last line their chunks cover."""
    if weights.preamble_penalty == 1.0:
        return
    leaders = sorted(cands, key=lambda c: -c.score)[:PREAMBLE_CHECKED]  # a penalty only lowers
    preambles = [c for c in leaders
                 if c.chunk.kind == "code" and not c.chunk.symbols
                 and is_preamble_only(c.chunk.text, c.chunk.language)]
    last = last_lines(list({c.chunk.file_id for c in preambles}))
    for cand in preambles:
        if cand.chunk.end_line < last.get(cand.chunk.file_id, 0):
            cand.scale("preamble_only", weights.preamble_penalty)


def definition_windows(outline: dict[int, list[tuple[int, str]]]) -> dict[int, list[int]]:
    """Chunk id -> every window of the long definition it is a window of (itself included).
    `outline`: file id -> (chunk id, signature) in line order (the store's `signature_outline`).
    A window after the first opens its signature with the definition's (ingest's continuation
    windows), and the window before it holds that line: the first window, where the definition
    starts among others (its class, smaller definitions before it), or the previous continuation."""
    windows: dict[int, list[int]] = {}
    for chunks in outline.values():
        run: list[int] = []
        previous: list[str] = []
        for chunk_id, signature in chunks:
            lines = signature.split("\n") if signature else []
            if not (lines and lines[0] in previous):
                run = []
            run.append(chunk_id)
            if len(run) > 1:
                windows.update(dict.fromkeys(run, run))
            previous = lines
    return windows


def sibling_terms_boost(
    cands: list[Candidate],
    top: float,
    weights: ScoringWeights,
    idfs: dict[str, float],
    outline_of: Callable[[list[int]], dict[int, list[tuple[int, str]]]],
    holders_of: Callable[[str, list[int]], set[int]],
) -> None:
    """A long function answers as a whole: in psf/requests the window of `Session.send` that
    persists cookies does not say "redirect", the window after it resolves the redirects. The
    best window of a definition (small-to-big retrieval: the part shown, the whole scored) earns
    the share of the question's idf that only its other windows say. Only for a question (up to
    SIBLING_QUESTION_TERMS terms): a bug report's 40 terms are all over any long function.
    `idfs`: term -> idf; `outline_of`: the store's `signature_outline`; `holders_of(term, chunk
    ids)`: those holding the term."""
    total = sum(idfs.values())
    if weights.sibling_terms == 0 or total <= 0 or len(idfs) > SIBLING_QUESTION_TERMS:
        return
    leaders = sorted(cands, key=lambda c: -c.score)[:SIBLING_CHECKED]
    code = [c for c in leaders if c.chunk.kind == "code" and c.chunk.signature]
    windows = definition_windows(outline_of(list({c.chunk.file_id for c in code})))
    best: dict[int, Candidate] = {}  # first window's id -> the best candidate among its windows
    for cand in code:
        siblings = windows.get(cand.chunk.id)
        if siblings and (siblings[0] not in best or cand.score > best[siblings[0]].score):
            best[siblings[0]] = cand
    members = list({m for cand in best.values() for m in windows[cand.chunk.id]})
    if not members:
        return
    held = {term: holders_of(term, members) for term in idfs}
    for cand in best.values():
        siblings = windows[cand.chunk.id]
        gained = sum(
            idf for term, idf in idfs.items()
            if cand.chunk.id not in held[term] and any(s in held[term] for s in siblings)
        )
        cand.add("sibling_terms", weights.sibling_terms * top * gained / total)


def saturate(ranked: list[Candidate], weights: ScoringWeights) -> list[Candidate]:
    """Each further chunk of a file is worth less, so one file does not fill the page."""
    seen: dict[str, int] = {}
    for cand in ranked:
        key = cand.chunk.collection + "/" + cand.chunk.path
        count = seen.get(key, 0)
        if count:
            cand.scale("file_saturation", weights.saturation**count)
        seen[key] = count + 1
    return sorted(ranked, key=lambda c: -c.score)
