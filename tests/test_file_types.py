"""The one table of languages: what the default mask takes and how each file is labelled."""

from pathlib import Path

import pytest

from qmd_daemon.config import CollectionConfig, IndexConfig, expand_braces
from qmd_daemon.engine import Engine
from qmd_daemon.file_types import (
    BUILD_FILE_NAMES,
    HTML_TEMPLATE_GLOBS,
    LANGUAGE_SUFFIXES,
    NAME_PATTERNS,
    SCRIPT_GLOBS,
    kind_of,
    language_of,
    language_of_text,
    table_key,
)
from qmd_daemon.ingest.chunking import CHUNKER_VERSION, chunk_text
from qmd_daemon.ingest.scan import compile_mask, fast_matcher, scan
from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK, EARLIER_DEFAULT_MASKS
from tests.conftest import indexed, write_tree


def test_the_mask_is_built_from_the_table_and_nothing_else() -> None:
    globs = {g for part in DEFAULT_MASK.split(";") for g in expand_braces(part)}
    suffixes = {s for group in LANGUAGE_SUFFIXES.values() for s in group}
    scripts = {g for glob in SCRIPT_GLOBS for g in (glob, f"!{glob}.*")}
    assert globs == ({f"**/*{s}" for s in suffixes} | {f"**/{n}" for n in BUILD_FILE_NAMES}
                     | set(HTML_TEMPLATE_GLOBS) | scripts | {f"**/{n}" for n in NAME_PATTERNS})
    assert len(suffixes) == sum(map(len, LANGUAGE_SUFFIXES.values())), "one language per suffix"
    assert all(s == s.lower() for s in suffixes) and all(n == n.lower() for n in BUILD_FILE_NAMES)


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("R/analysis.R", "r"),
        ("src/parser.ml", "ocaml"),
        ("src/parser.mli", "ocaml"),
        ("src/lists.erl", "erlang"),
        ("src/core.cljs", "clojure"),
        ("Classes/AppDelegate.m", "objc"),
        ("lib/Foo/Bar.pm", "perl"),
        ("t/basic.t", "perl"),
        ("kernels/add.cu", "cpp"),
        ("contracts/Token.sol", "solidity"),
        ("src/solver.F90", "fortran"),
        ("test/helpers.bats", "shell"),
        ("addons/dialogic/Core/DialogicGameHandler.gd", "gdscript"),  # was not indexed at all
        ("Makefile", "make"),
        ("sub/GNUmakefile", "make"),
        ("CMakeLists.txt", "cmake"),
        ("docker/Dockerfile", "dockerfile"),
        ("Jenkinsfile", "groovy"),
        ("Gemfile", "ruby"),
        ("meson.build", "meson"),
        ("notes.txt", "text"),
        ("reports/sales.Rmd", "markdown"),
        ("docs/index.qmd", "markdown"),
        ("docs/modules/ROOT/pages/index.adoc", "asciidoc"),
        ("analysis/train.ipynb", "jupyter"),
        ("src/parser.y", "yacc"),  # a grammar is the parser's source (jq, Ruby's parse.y)
        ("src/lexer.l", "lex"),
        ("src/builtin.jq", "jq"),
        ("blob.bin", None),
        # a web app's views and styles
        ("app/views/users/new.html.erb", "erb"),
        ("lib/app_web/components/layouts/root.html.heex", "eex"),
        ("Pages/Counter.razor", "razor"),
        ("Views/Home/Index.cshtml", "razor"),
        ("src/pages/index.astro", "astro"),
        ("assets/scss/_buttons.scss", "scss"),
        ("public/site.css", "css"),
        ("templates/email/welcome.html.j2", "jinja"),
        ("charts/app/templates/_helpers.tpl", "gotemplate"),
        # HTML where frameworks keep templates; elsewhere as often generated docs
        ("django/contrib/admin/templates/admin/base.html", "html"),
        ("src/app/hero-detail/hero-detail.component.html", "html"),
        ("docs/api/index.html", None),
        ("prisma/schema.prisma", "prisma"),
        ("src/main/resources/application.properties", "properties"),
        ("setup.cfg", "ini"),
        ("src/Client/Modules/Inventory.luau", "luau"),
        ("lib/Target/X86/X86InstrInfo.td", "tablegen"),
        ("schema/user.gql", "graphql"),
        ("docker/Dockerfile.prod", "dockerfile"),  # a Dockerfile's variants, by their name
        ("Dockerfile-alpine", "dockerfile"),
        (".env.example", "dotenv"),  # the committed example of the settings
        (".env", None),  # never the secrets themselves
        ("htmlcov/index.html", None),
    ],
)
def test_language_by_name_then_suffix_in_any_case(path: str, language: str | None) -> None:
    assert language_of(path) == language


MATLAB_FUNCTION = (
    "function mask = isInBox(data, xLim)\n% ISINBOX  points inside the limits\n"
    "    mask = data > xLim(1);\nend\n"
)
OBJC_CLASS = (
    "#import \"AFSecurityPolicy.h\"\n\n@implementation AFSecurityPolicy\n- (BOOL)evaluate {\n"
    "    return YES;\n}\n@end\n"
)
OBJC_HEADER = "#import <Foundation/Foundation.h>\n@interface AFSecurityPolicy : NSObject\n@end\n"


@pytest.mark.parametrize(
    ("path", "text", "language"),
    [
        ("src/private/isInBox.m", MATLAB_FUNCTION, "matlab"),
        ("test/examples/example_bar_plot.m", "% a bar plot\nbar([1 2 3]);\ncleanfigure;\n", "matlab"),
        ("src/Shape.m", "classdef Shape < handle\n    properties\n        Area\n    end\nend\n", "matlab"),
        ("AFNetworking/AFSecurityPolicy.m", OBJC_CLASS, "objc"),
        ("Classes/Plain.m", "int answer(void) { return 42; }\n", "objc"),  # no marks: the table's
        ("AFNetworking/AFSecurityPolicy.h", OBJC_HEADER, "objc"),
        ("include/list.h", "#include <stddef.h>\nstruct list { struct list *next; };\n", "c"),
        # C++ in a `.h` (spdlog's `logger.h`): its classes were missed as C; a C header's guard for
        # C++ callers is no mark
        ("include/spdlog/logger.h", "#pragma once\nnamespace spdlog {\nclass logger {\npublic:\n"
                                    "  void flush();\n};\n}\n", "cpp"),
        ("include/registry.h", "#include <string>\nstruct registry;\n", "cpp"),
        ("include/uv.h", "#ifdef __cplusplus\nextern \"C\" {\n#endif\nint uv_run(void);\n"
                         "#ifdef __cplusplus\n}\n#endif\n", "c"),
        ("src/parser.ml", "% not a MATLAB file\n", "ocaml"),
        # `.v`: Verilog unless Coq's or V's; `.fs`: F# unless a shader's
        ("theories/Lists.v", "Require Import Arith.\nTheorem app_nil : forall l, l ++ [] = l.\n"
                             "Proof.\nQed.\n", "coq"),
        ("vlib/os/os.v", "module os\n\npub fn getenv(key string) string {\n\treturn ''\n}\n", "vlang"),
        ("rtl/alu.v", "module alu (input clk, output reg [7:0] out);\nalways @(posedge clk) out <= 0;\n"
                      "endmodule\n", "verilog"),
        ("shaders/light.fs", "#version 330 core\nout vec4 color;\nvoid main() { color = vec4(1.0); }\n",
         "glsl"),
        ("src/Parser.fs", "module Parser\nlet parse (s: string) = s.Trim()\n", "fsharp"),
        # an executable without an extension: its shebang's language
        ("bin/bats", "#!/usr/bin/env bash\nset -e\n", "shell"),
        ("bin/rails", "#!/usr/bin/env ruby\nrequire_relative '../config/boot'\n", "ruby"),
        ("scripts/release", "#!/usr/bin/python3.11\nimport sys\n", "python"),
        ("bin/cli", "#!/usr/bin/env -S node --no-warnings\nmain()\n", "javascript"),
        ("bin/notes", "no shebang\n", None),
    ],
)
def test_shared_suffixes_are_told_apart_by_their_lines(path: str, text: str, language: str | None) -> None:
    """`.m` is MATLAB's and Objective-C's, `.h` C's and Objective-C's: MATLAB files were parsed
    as Objective-C (names of outputs read as functions), Objective-C headers as C."""
    assert language_of_text(path, text) == language


def test_a_matlab_file_is_indexed_as_matlab_with_its_functions(engine, tmp_path: Path) -> None:
    files = {"src/isInBox.m": MATLAB_FUNCTION, "src/AFSecurityPolicy.m": OBJC_CLASS}
    repo = write_tree(tmp_path / "repo", files)
    engine.add_collection(repo, name="repo")
    engine.update(["repo"])
    ids = engine.collection_ids(["repo"])
    assert dict(engine.store.language_counts(ids)) == {"matlab": 1, "objc": 1}
    assert engine.store.defined_names(ids[0], "src/isInBox.m") >= {"isInBox"}
    assert "mask" not in engine.store.defined_names(ids[0], "src/isInBox.m"), "an output is no function"
    names = {d.name for c in chunk_text("src/isInBox.m", MATLAB_FUNCTION) for d in c.definitions}
    assert names == {"isInBox"}


def test_the_chunker_version_follows_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CHUNKER_VERSION.endswith(":t" + table_key())
    before = table_key()
    monkeypatch.setitem(BUILD_FILE_NAMES, "earthfile", "earthly")
    assert table_key() != before, "a language added re-chunks the index"


def test_a_template_and_a_stylesheet_are_indexed_with_their_blocks_and_rules(engine, tmp_path: Path) -> None:
    """Templates and stylesheets were in no table: a Rails, Django or Phoenix app's pages and its
    styles could not be found at all. Their blocks, mixins and top-level rules name their chunks."""
    base = ("{% load static %}\n<html>\n<body>\n{% block content %}\n<p>Hello</p>\n{% endblock %}\n"
            "{% macro input(name) %}\n<input name=\"{{ name }}\">\n{% endmacro %}\n</body>\n</html>\n")
    scss = (".btn-primary,\n.btn {\n  padding: 1rem;\n}\n\n@mixin button-variant($bg) {\n  color: $bg;\n}\n\n"
            "@keyframes spin {\n  from { opacity: 0; }\n}\n")
    repo = write_tree(tmp_path / "repo", {"app/templates/base.html": base, "assets/_buttons.scss": scss,
                                          "site/index.html": "<html>generated</html>\n"})
    engine.add_collection(repo, name="repo")
    engine.update(["repo"])
    ids = engine.collection_ids(["repo"])
    assert dict(engine.store.language_counts(ids)) == {"html": 1, "scss": 1}, "HTML outside templates/ is not"
    assert engine.store.defined_names(ids[0], "app/templates/base.html") >= {"content", "input"}
    assert engine.store.defined_names(ids[0], "assets/_buttons.scss") >= {".btn", "button-variant", "spin"}


def test_a_schema_and_a_settings_file_are_cut_at_their_models_and_sections() -> None:
    prisma = "model User {\n  id Int @id\n  posts Post[]\n}\n\nenum Role {\n  ADMIN\n}\n"
    ini = "[metadata]\nname = pkg\n\n[options]\npackages = find:\n"
    names = {d.name for c in chunk_text("prisma/schema.prisma", prisma, "prisma") for d in c.definitions}
    assert names == {"User", "Role"}
    coq = "Theorem app_nil : forall l, l ++ [] = l.\nProof. auto. Qed.\n\nInductive color := Red | Blue.\n"
    coq_names = {d.name for c in chunk_text("theories/L.v", coq, "coq") for d in c.definitions}
    assert coq_names == {"app_nil", "color"}
    helpers = '{{- define "app.fullname" -}}\n{{ .Release.Name }}\n{{- end }}\n'
    assert {d.name for c in chunk_text("_helpers.tpl", helpers, "gotemplate") for d in c.definitions} == {
        "app.fullname"}
    sections = {d.name for c in chunk_text("setup.cfg", ini, "ini") for d in c.definitions}
    assert sections == {"metadata", "options"}


def test_build_files_are_code_not_docs() -> None:
    assert kind_of(language_of("CMakeLists.txt")) == "code"
    assert kind_of(language_of("README.txt")) == "doc"


def test_the_default_mask_scans_new_languages_and_build_files_in_any_case(tmp_path: Path) -> None:
    files = {
        "R/fit.R": "fit <- function(x) x\n",
        "lib/parser.ml": "let parse s = s\n",
        "src/App.m": "@implementation App\n@end\n",
        "Makefile": "all:\n\ttrue\n",
        "cmd/CMakeLists.txt": "project(x)\n",
        "main.PY": "x = 1\n",
        "build/out.ml": "let generated = 1\n",
        "workspace/blob.bin": "\x00\x01",
    }
    write_tree(tmp_path, files)
    found = sorted(f.path for f in scan(tmp_path, mask=DEFAULT_MASK, ignore=[], excludes=DEFAULT_EXCLUDES,
                                        max_file_bytes=1 << 20).files)
    assert found == ["Makefile", "R/fit.R", "cmd/CMakeLists.txt", "lib/parser.ml", "main.PY", "src/App.m"]


def test_an_executable_script_without_extension_is_indexed_by_its_shebang(engine, tmp_path: Path) -> None:
    """bats-core's runner is `libexec/bats-core/bats-exec-test`, Rails' `bin/rails`: no extension, so
    no suffix took them, and a question about how a test file runs could not find its code."""
    runner = "#!/usr/bin/env bash\nset -e\n\nbats_run_test() {\n  local test_name=$1\n  \"$test_name\"\n}\n"
    repo = write_tree(tmp_path / "repo", {"libexec/bats-core/bats-exec-test": runner,
                                          "bin/bats": "#!/usr/bin/env bash\nexec bats-exec-suite \"$@\"\n",
                                          "bin/data.dat": "not a script\n", "tools/notes": "#!/bin/sh\n"})
    engine.add_collection(repo, name="repo")
    engine.update(["repo"])
    ids = engine.collection_ids(["repo"])
    assert dict(engine.store.language_counts(ids)) == {"shell": 2}, "in a scripts folder, not elsewhere"
    assert "bats_run_test" in engine.store.defined_names(ids[0], "libexec/bats-core/bats-exec-test")


def test_dockerfile_variants_and_the_env_example_are_scanned_never_the_env(tmp_path: Path) -> None:
    files = {"docker/Dockerfile.prod": "FROM python:3.12\n", "Dockerfile-alpine": "FROM alpine\n",
             ".env.example": "DATABASE_URL=\n", ".env": "DATABASE_URL=postgres://user:secret@db/app\n"}
    write_tree(tmp_path, files)
    found = sorted(f.path for f in scan(tmp_path, mask=DEFAULT_MASK, ignore=[], excludes=DEFAULT_EXCLUDES,
                                        max_file_bytes=1 << 20).files)
    assert found == [".env.example", "Dockerfile-alpine", "docker/Dockerfile.prod"]


def test_a_name_in_the_mask_does_not_take_a_folder_of_that_name() -> None:
    in_mask = fast_matcher(compile_mask(DEFAULT_MASK))
    assert in_mask("pkg/Dockerfile") and in_mask("x/BUILD.bazel")
    assert not in_mask("build/lib.o") and not in_mask("workspace/a.bin")


def test_an_explicit_pattern_matches_in_any_case_too() -> None:
    in_mask = fast_matcher(compile_mask("src/**/*.{r,jl}"))
    assert in_mask("src/a/model.R") and in_mask("src/b.jl")
    assert not in_mask("other/model.R")


def test_a_collection_on_an_earlier_default_follows_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "index.yml"
    (earlier,) = EARLIER_DEFAULT_MASKS
    path.write_text(f"collections:\n  repo:\n    path: /r\n    pattern: '{earlier}'\n")
    config = IndexConfig.load(path)
    assert config.collections()["repo"].pattern == DEFAULT_MASK
    config.set_collection(config.collections()["repo"])
    config.set_collection(CollectionConfig(name="mine", path=Path("/m"), pattern="**/*.py"))
    config.save()
    raw = IndexConfig.load(path).raw["collections"]
    assert "pattern" not in raw["repo"], "the default is not pinned into index.yml"
    assert raw["mine"]["pattern"] == "**/*.py", "an explicit pattern is kept"


def test_an_update_picks_up_files_of_a_language_the_old_default_skipped(engine, tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"a.py": "def a():\n    pass\n", "lib/parser.ml": "let p s = s\n"})
    (earlier,) = EARLIER_DEFAULT_MASKS
    engine.add_collection(repo, name="repo", mask=earlier)
    engine.update(["repo"])
    status = {c["name"]: c for c in engine.status()["collections"]}
    assert status["repo"]["files"] == 2


ROUTING_POD = (
    "\n=encoding utf8\n\n=head1 NAME\n\nMojolicious::Guides::Routing - Routing requests\n\n"
    "=head1 OVERVIEW\n\nThis document contains a simple and fun introduction to the router.\n\n"
    "=head1 CONCEPTS\n\nEssentials every developer should know.\n\n=head2 Dispatcher\n\n"
    + "The foundation of every web framework is a tiny black box connecting requests and responses.\n\n" * 20
    + "=head2 Wildcard placeholders\n\n"
    + "Wildcard placeholders are just like C<*> in a glob: they match all characters, slashes too.\n\n"
      "  $r->get('/hello/*you')->to('foo#bar');\n\n" * 14
    + "=head1 MORE\n\nYou can continue with L<Mojolicious::Guides> now.\n\n=cut\n"
)


def test_a_pod_file_is_indexed_as_documentation_headed_by_its_titles(engine, tmp_path: Path) -> None:
    """Perl's manuals (mojo's `Guides/*.pod`) were in no table, so the scan never took one: a
    question about routing placeholders found only the code. A `.pod` file is documentation now,
    cut at its `=head` titles and headed by their path, as the POD in a module (chunk_code)."""
    assert language_of("lib/Mojolicious/Guides/Routing.pod") == "pod"
    assert kind_of("pod") == "doc"
    repo = write_tree(tmp_path / "repo", {
        "lib/Mojolicious/Guides/Routing.pod": ROUTING_POD,
        "lib/Mojolicious/Routes.pm": "package Mojolicious::Routes;\n\nsub dispatch {\n"
                                     "  my ($self, $c) = @_;\n  return $self->match($c);\n}\n\n1;\n",
    })
    engine.add_collection(repo, name="repo")
    engine.update(["repo"])
    assert dict(engine.store.language_counts(engine.collection_ids(["repo"]))) == {"perl": 1, "pod": 1}
    hits = engine.search("wildcard placeholders match slashes", ["repo"])
    assert hits[0].path == "lib/Mojolicious/Guides/Routing.pod", [h.path for h in hits]
    chunks = chunk_text("lib/Mojolicious/Guides/Routing.pod", ROUTING_POD, "pod")
    lines = ROUTING_POD.split("\n")
    wildcard = [c for c in chunks if "$r->get('/hello/*you')" in c.text]
    assert wildcard and all(c.heading == "CONCEPTS > Wildcard placeholders" for c in wildcard)
    titled = {c.heading for c in chunks if lines[c.start_line - 1].startswith("=head")}
    assert "CONCEPTS > Dispatcher" in titled, titled
    assert all(d.kind == "heading" for c in chunks for d in c.definitions)


def test_a_grammar_and_a_scanner_are_indexed_as_code(engine: Engine, tmp_path: Path) -> None:
    # jq's parser is `src/parser.y` (bison) and its tokens `src/lexer.l` (flex): the code a question
    # about the language's syntax means; before, the default mask skipped both
    name = indexed(engine, tmp_path / "jq", {
        "src/parser.y": "%token IDENT FIELD\n%%\n"
                        "Exp: Exp '|' Exp { $$ = block_join($1, $3); }  /* the pipe joins two filters */\n"
                        "| Term { $$ = $1; }\n;\n%%\n"
                        "static int yyerror(const char *msg) { return report_parse_error(msg); }\n",
        "src/lexer.l": "%%\n\"|\" { return '|'; }  /* pipe */\n[a-zA-Z_]+ { return IDENT; }\n%%\n",
        "src/execute.c": "/* run a compiled program */\nint jq_next(jq_state *jq) { return run(jq); }\n",
    })
    hits = engine.search("how does the grammar parse the pipe between two filters", [name])
    assert hits[0].path == "src/parser.y" and hits[0].kind == "code"
    assert "src/lexer.l" in {h.path for h in engine.search("pipe token", [name])}
