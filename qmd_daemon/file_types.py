"""Which files hold source code, and in which language: the one table that the default mask
(`settings.DEFAULT_MASK`) and `language_of` below are both built from, so a language
added here is both scanned and labelled.

The extensions and file names are GitHub Linguist's (lib/linguist/languages.yml at b45dbe9b2),
for its programming languages and build files; data and markup formats are kept to the few the
index always had (JSON, YAML, TOML, XML, Vue, Svelte, Markdown, reST, text), and a web app's
templates and stylesheets (HTML only in a templates folder: `HTML_TEMPLATE_GLOBS`). Where Linguist gives
one extension to several languages, the one most repositories mean wins and the others keep only
their unambiguous extensions: `.m` Objective-C (not MATLAB, Mercury), `.pl`/`.pm`/`.t` Perl (not
Prolog, Raku), `.v` Verilog (not V, Coq), `.fs` F# (not GLSL, Forth), `.h` C, `.d` D; `.cl`,
`.inc`, `.pp`, `.re`, `.es`, `.cls`, `.spec`, `.cgi` are left out. CUDA, Arduino and C++
template/module files are C++ (one grammar). Suffixes match whatever their case (`.R`, `.F90`).

Shared suffixes are told apart by the file's own lines (`language_of_text`), as Linguist's
heuristics do: `.m` is MATLAB/Octave when it has MATLAB's marks (`function`, `classdef`, `%`
comments) and none of Objective-C's (`#import`, `@interface`, `@implementation`...); `.v` is Coq
when it has Coq's marks, V when V's, else Verilog; `.fs` is GLSL when it has a shader's
(`#version`, `gl_FragColor`), else F#; `.h` is Objective-C when it has Objective-C's marks, C++
when it has C++'s (`template <`, `namespace x`, `class X`, `public:`, `std::`, `#include
<vector>`...), else C (a C header has none of them).
"""

from __future__ import annotations

import hashlib
import re
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

# language -> its file suffixes (lower case, with the dot)
LANGUAGE_SUFFIXES: dict[str, tuple[str, ...]] = {
    # the languages with a tree-sitter grammar or indexed before this table
    "python": (".py", ".pyi", ".pyw"),
    "javascript": (".js", ".jsx", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp", ".txx", ".tcc",
            ".inl", ".cppm", ".ixx", ".ino", ".cu", ".cuh"),
    "ruby": (".rb", ".rake", ".gemspec", ".ru", ".podspec", ".rbi"),
    "php": (".php",),
    "csharp": (".cs", ".csx"),
    "kotlin": (".kt", ".kts"),
    "swift": (".swift",),
    "scala": (".scala", ".sbt"),
    "lua": (".lua",),
    "elixir": (".ex", ".exs"),
    "haskell": (".hs",),
    "zig": (".zig",),
    "dart": (".dart",),
    "vue": (".vue",),
    "svelte": (".svelte",),
    "r": (".r",),
    "julia": (".jl",),
    "perl": (".pl", ".pm", ".t", ".psgi"),
    "shell": (".sh", ".bash", ".bats", ".zsh", ".ksh"),
    "powershell": (".ps1", ".psm1", ".psd1"),
    "sql": (".sql",),
    "protobuf": (".proto",),
    "graphql": (".graphql", ".gql"),
    "terraform": (".tf", ".tfvars", ".hcl"),
    # languages chunked by the regex fallback unless a grammar is installed
    "objc": (".m", ".mm"),
    "ocaml": (".ml", ".mli", ".mll", ".mly"),
    "sml": (".sml",),
    "fsharp": (".fs", ".fsi", ".fsx"),
    "erlang": (".erl", ".hrl", ".escript"),
    "clojure": (".clj", ".cljs", ".cljc", ".bb"),
    "commonlisp": (".lisp", ".lsp", ".asd"),
    "scheme": (".scm", ".ss", ".sls", ".sld"),
    "racket": (".rkt",),
    "emacslisp": (".el",),
    "fennel": (".fnl",),
    "groovy": (".groovy", ".gvy", ".gradle"),
    "elm": (".elm",),
    "purescript": (".purs",),
    "idris": (".idr",),
    "agda": (".agda",),
    "lean": (".lean",),
    "rescript": (".res", ".resi"),
    "nim": (".nim", ".nims", ".nimble"),
    "crystal": (".cr",),
    "d": (".d", ".di"),
    "fortran": (".f90", ".f95", ".f03", ".f08", ".f", ".for", ".f77"),
    "ada": (".adb", ".ads", ".ada"),
    "pascal": (".pas", ".dpr", ".lpr"),
    "cobol": (".cob", ".cbl"),
    "tcl": (".tcl", ".tm"),
    "vb": (".vb", ".vbs", ".bas"),
    "solidity": (".sol",),
    "vyper": (".vy",),
    "move": (".move",),
    "cairo": (".cairo",),
    # `.v` files with Coq's or V's marks (`CONTENT_RULES`); their own suffixes otherwise
    "coq": (),
    "vlang": (".vsh",),
    "glsl": (".glsl", ".vert", ".frag", ".geom", ".tesc", ".tese"),
    "hlsl": (".hlsl", ".hlsli"),
    "wgsl": (".wgsl",),
    "haxe": (".hx",),
    "gleam": (".gleam",),
    "gdscript": (".gd",),
    "nix": (".nix",),
    "verilog": (".v", ".vh", ".sv", ".svh"),
    "vhdl": (".vhd", ".vhdl"),
    "coffeescript": (".coffee",),
    "cython": (".pyx", ".pxd", ".pxi"),
    "raku": (".raku", ".rakumod"),
    "vala": (".vala",),
    "odin": (".odin",),
    "mojo": (".mojo",),
    "assembly": (".asm", ".s", ".nasm"),
    "awk": (".awk",),
    "vim": (".vim",),
    "fish": (".fish",),
    "batch": (".bat", ".cmd"),
    "nushell": (".nu",),
    "jsonnet": (".jsonnet", ".libsonnet"),
    "dhall": (".dhall",),
    "bicep": (".bicep",),
    "chapel": (".chpl",),
    "nextflow": (".nf",),
    "qsharp": (".qs",),
    "luau": (".luau",),
    "processing": (".pde",),
    "tablegen": (".td",),  # LLVM's instruction and target descriptions
    # schemas: Thrift's services and structs, Prisma's data model (`model User { ... }`)
    "thrift": (".thrift",),
    "prisma": (".prisma",),
    # parser and scanner generators' sources: a C project's grammar (Ruby's `parse.y`, jq's
    # `parser.y`/`lexer.l`, PostgreSQL's `gram.y`); not `.ll` (LLVM IR as often as flex C++)
    "yacc": (".y", ".yy"),
    "lex": (".l", ".lex"),
    "jq": (".jq",),
    # a web app's views and styles: the page a question about a form, an email or a theme is about
    # (Rails' `users/new.html.erb`, Phoenix's `.heex`, Django's `templates/admin/base.html`, SCSS
    # variables); markup more than code, so ranked below code unless a question asks for them
    # (search/scoring.py MARKUP_LANGUAGES); Razor (`.razor` components, `.cshtml` pages) and
    # Astro components carry their code as Vue and Svelte do
    "erb": (".erb",),
    "haml": (".haml",),
    "slim": (".slim",),
    "eex": (".eex", ".heex", ".leex"),
    "jsp": (".jsp",),
    "ejs": (".ejs",),
    "pug": (".pug", ".jade"),
    "handlebars": (".hbs", ".handlebars", ".mustache"),
    "jinja": (".j2", ".jinja", ".jinja2", ".njk"),
    "twig": (".twig",),
    "liquid": (".liquid",),
    "gotemplate": (".tmpl", ".gotmpl", ".tpl"),  # Go's text/template, Helm's `_helpers.tpl`, Smarty
    "razor": (".cshtml", ".razor"),
    "astro": (".astro",),
    "css": (".css",),
    "scss": (".scss", ".sass"),
    "less": (".less",),
    "stylus": (".styl",),
    # build files with an extension
    "make": (".mk", ".mak", ".make"),
    "dockerfile": (".dockerfile", ".containerfile"),
    "cmake": (".cmake",),
    "starlark": (".bzl", ".star"),
    "just": (".just",),
    # data, configuration and documents
    "json": (".json",),
    "yaml": (".yml", ".yaml"),
    "toml": (".toml",),
    "xml": (".xml",),
    # Java's and Spring's `application.properties`, `setup.cfg`, `tox.ini`, `php.ini`
    "properties": (".properties",),
    "ini": (".ini", ".cfg"),
    # R Markdown and Quarto: Markdown whose fenced blocks are code (```{r}, ```{python})
    "markdown": (".md", ".mdx", ".rmd", ".qmd"),
    "asciidoc": (".adoc", ".asciidoc"),
    # Jupyter notebooks: JSON, indexed as their kernel's language (ingest/notebook.py)
    "jupyter": (".ipynb",),
    "rst": (".rst",),
    # Perl's documentation: a module's manual beside it (`Mojo/Guides/Routing.pod`), perlpod
    "pod": (".pod",),
    "text": (".txt",),
}

# Build and tool files known by their whole name (no telling suffix): name -> language. Matched
# whatever their case, like suffixes (Linguist lists `Makefile` and `makefile` alike). A mask
# pattern `**/NAME` also takes everything inside a folder of that name, so Bazel's bare `BUILD`,
# `WORKSPACE` and Buck's `BUCK` are left out: with case ignored they would take every `build/`.
BUILD_FILE_NAMES: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "bsdmakefile": "make",
    "makefile.am": "make",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "meson.build": "meson",
    "meson_options.txt": "meson",
    "justfile": "just",
    ".justfile": "just",
    "build.bazel": "starlark",
    "workspace.bazel": "starlark",
    "module.bazel": "starlark",
    "tiltfile": "starlark",
    "jenkinsfile": "groovy",
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "brewfile": "ruby",
    "fastfile": "ruby",
    "guardfile": "ruby",
    "sconstruct": "python",
    "sconscript": "python",
    "snakefile": "python",
    "makefile.pl": "perl",
    "cpanfile": "perl",
    "rebar.config": "erlang",
    "emakefile": "erlang",
    "pkgbuild": "shell",
}

# Files named by a pattern, not by a suffix or a whole name: Dockerfile variants
# (`Dockerfile.prod`, `Dockerfile-alpine`) and the committed example of a `.env` (never `.env`
# itself: it holds the secrets the example leaves blank). Matched whatever their case.
NAME_PATTERNS: dict[str, str] = {
    "dockerfile.*": "dockerfile",
    "dockerfile-*": "dockerfile",
    "containerfile.*": "dockerfile",
    ".env.example": "dotenv",
    ".env.sample": "dotenv",
    ".env.template": "dotenv",
    ".env.dist": "dotenv",
}

# Lines only one language writes, for the suffixes above that several share.
_OBJC_MARKS = re.compile(
    r"^[ \t]*(?:#import\b|@(?:interface|implementation|protocol|end|import|class)\b)", re.M
)
_MATLAB_MARKS = re.compile(r"^[ \t]*(?:function\b|classdef\b|%)", re.M)
# Coq's vernacular and V's code in a `.v` (Verilog's by default): no Verilog file writes them
_COQ_MARKS = re.compile(
    r"^[ \t]*(?:Require[ \t]+(?:Import|Export)|Theorem|Lemma|Proof\.|Qed\.|Inductive|Fixpoint)\b", re.M
)
_V_MARKS = re.compile(
    r"^(?:module[ \t]+\w+[ \t]*$|(?:pub[ \t]+)?fn[ \t]+(?:\([^)]*\)[ \t]*)?\w+[ \t]*\()", re.M
)
# GLSL's fragment shaders are `.fs` as often as F#'s modules: `#version`, `gl_FragColor`...
_GLSL_MARKS = re.compile(
    r"^[ \t]*#version[ \t]+\d+|\bgl_(?:FragColor|FragCoord|Position)\b|^[ \t]*uniform[ \t]+\w+[ \t]+\w+", re.M
)
# C++ in a `.h` (spdlog's `logger.h`, LLVM's, Abseil's headers): Linguist's marks, which no C
# header writes (a C header's `extern "C"` guard for C++ callers is not one of them)
_CPP_MARKS = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*<(?:cstdint|cstddef|string|vector|map|list|array|bitset|queue|stack|"
    r"forward_list|unordered_map|unordered_set|memory|functional|utility|algorithm|[io]?stream|iostream)>"
    r"|^[ \t]*template[ \t]*<|^[ \t]*class[ \t]+\w+(?:[ \t]+final)?[ \t]*(?:[:{][^;\n]*)?$"
    r"|^[ \t]*(?:using[ \t]+namespace[ \t]+[\w:]+[ \t]*;|namespace[ \t]+[\w:]+[ \t]*(?:\{[^\n]*)?$)"
    r"|^[ \t]*(?:private|public|protected):[ \t]*$|\bstd::\w+",
    re.M,
)
# suffix -> ((language, its marks), ...): the first language whose marks the text has wins; a file
# with none keeps the table's language. The marks are looked for in the file's head.
CONTENT_RULES: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    ".m": (("objc", _OBJC_MARKS), ("matlab", _MATLAB_MARKS)),
    ".h": (("objc", _OBJC_MARKS), ("cpp", _CPP_MARKS)),
    ".v": (("coq", _COQ_MARKS), ("vlang", _V_MARKS)),
    ".fs": (("glsl", _GLSL_MARKS),),
}
_CONTENT_HEAD_CHARS = 32_768

DOC_LANGUAGES = frozenset({"markdown", "rst", "asciidoc", "pod", "text"})

_BY_SUFFIX = {suffix: lang for lang, suffixes in LANGUAGE_SUFFIXES.items() for suffix in suffixes}


TEMPLATE_LANGUAGES = frozenset({"erb", "haml", "slim", "eex", "jsp", "ejs", "pug", "handlebars", "jinja",
                                "twig", "liquid", "gotemplate", "html"})
STYLESHEET_LANGUAGES = frozenset({"css", "scss", "less", "stylus"})
# HTML is a template where a framework keeps its templates (Django, Flask, Go's html/template,
# Sphinx themes: a `templates/` folder; Angular: `name.component.html` beside its `.ts`); elsewhere
# it is as often generated (API docs, coverage reports) and is left out.
HTML_TEMPLATE_GLOBS = ("**/templates/**/*.html", "**/templates/**/*.htm", "**/*.component.html")


# Executables without an extension where projects keep them (`bin/rails`, bats-core's
# `libexec/bats-core/bats-exec-test`, Rails' `script/`): their language is their shebang's. A name
# with a dot in these folders is the suffix table's to take (`bin/data.dat` is not a script).
SCRIPT_GLOBS = ("**/bin/*", "**/libexec/**/*", "**/script/*", "**/scripts/*")
_SHEBANG = re.compile(
    r"#![ \t]*(?:/usr/bin/env[ \t]+(?:-S[ \t]+)?)?(?:\S*/)?(?P<interpreter>[A-Za-z][\w.+-]*)"
)
_INTERPRETERS: dict[str, str] = {
    **dict.fromkeys(("sh", "bash", "dash", "ksh", "zsh", "ash", "mksh"), "shell"),
    **dict.fromkeys(("python", "python2", "python3", "pypy", "pypy3"), "python"),
    **dict.fromkeys(("node", "nodejs", "deno", "bun"), "javascript"),
    **dict.fromkeys(("ts-node", "tsx"), "typescript"),
    **dict.fromkeys(("ruby", "jruby"), "ruby"),
    **dict.fromkeys(("perl", "perl5"), "perl"),
    **dict.fromkeys(("runghc", "runhaskell"), "haskell"),
    **dict.fromkeys(("awk", "gawk", "mawk"), "awk"),
    "php": "php", "lua": "lua", "luajit": "lua", "rscript": "r", "julia": "julia", "tclsh": "tcl",
    "wish": "tcl", "pwsh": "powershell", "fish": "fish", "elixir": "elixir", "escript": "erlang",
    "swift": "swift", "raku": "raku", "nu": "nushell", "jq": "jq",
}


def language_of(path: str) -> str | None:
    """The language of a file by its name, then its suffix (either in any case); None: unknown."""
    pure = PurePosixPath(path.lower())
    found = BUILD_FILE_NAMES.get(pure.name) or _BY_SUFFIX.get(pure.suffix)
    if found is not None:
        return found
    if pure.suffix in (".html", ".htm"):
        return "html" if _is_html_template(pure) else None
    return next((lang for glob, lang in NAME_PATTERNS.items() if fnmatchcase(pure.name, glob)), None)


def _is_html_template(path: PurePosixPath) -> bool:
    return "templates" in path.parts[:-1] or path.name.endswith(".component.html")


def language_of_text(path: str, text: str) -> str | None:
    """The language of a file by its name, and for a suffix several languages share (`.m`, `.h`)
    by its content: MATLAB's `.m` files were parsed as Objective-C, Objective-C's headers as C."""
    language = language_of(path)
    if language is None:
        return _shebang_language(text)
    rules = CONTENT_RULES.get(PurePosixPath(path).suffix.lower())
    if rules:
        head = text[:_CONTENT_HEAD_CHARS]
        return next((lang for lang, marks in rules if marks.search(head)), language)
    return language


def _shebang_language(text: str) -> str | None:
    """`#!/usr/bin/env bash` -> shell; `python3.11` is python (the version is cut)."""
    found = _SHEBANG.match(text)
    if found is None:
        return None
    interpreter = found.group("interpreter").lower()
    return _INTERPRETERS.get(interpreter) or _INTERPRETERS.get(re.sub(r"[\d.]+$", "", interpreter))


def table_key() -> str:
    """A short key of the table (part of the chunker's version): a file whose language or kind
    the table changes (`CMakeLists.txt` was text, a MATLAB `.m` Objective-C) is re-chunked and
    relabelled at the next update."""
    rules = sorted(
        (suffix, [(lang, marks.pattern) for lang, marks in pairs]) for suffix, pairs in CONTENT_RULES.items()
    )
    table = [*sorted(_BY_SUFFIX.items()), *sorted(BUILD_FILE_NAMES.items()), *rules, *HTML_TEMPLATE_GLOBS,
             *SCRIPT_GLOBS, *sorted(_INTERPRETERS.items()), *sorted(NAME_PATTERNS.items())]
    return hashlib.sha1(repr(table).encode()).hexdigest()[:10]


NOTEBOOK_SUFFIX = ".ipynb"
# Outputs (plots as base64 PNG, HTML tables) make most of a notebook's bytes: a notebook may be
# this many times the size cap of other files before the scan leaves it out.
SIZE_FACTOR = 8


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def byte_cap(path: str, max_bytes: int) -> int:
    """The size past which the scan leaves the file out (`too_large`)."""
    return max_bytes * SIZE_FACTOR if is_notebook(path) else max_bytes


def kind_of(language: str | None) -> str:
    return "doc" if language in DOC_LANGUAGES else "code"


def default_mask() -> str:
    """The glob of every file the table knows: `**/*.{md,py,...};**/{Makefile,...}`. Matched
    case-insensitively (`ingest.scan.compile_mask`)."""
    suffixes = ",".join(suffix[1:] for suffix in _BY_SUFFIX)
    names = ",".join(BUILD_FILE_NAMES)
    scripts = (part for glob in SCRIPT_GLOBS for part in (glob, f"!{glob}.*"))  # extensionless ones
    named = ",".join(NAME_PATTERNS)
    globs = (f"**/*.{{{suffixes}}}", f"**/{{{names}}}", f"**/{{{named}}}", *HTML_TEMPLATE_GLOBS)
    return ";".join((*scripts, *globs))
