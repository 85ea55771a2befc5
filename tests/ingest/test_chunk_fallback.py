"""The regex/indentation fallback for languages without a grammar, and rst/text prose."""

from __future__ import annotations

import textwrap

from qmd_daemon.ingest.chunk_fallback import Caps, LineIndex, chunk_fallback, windows
from qmd_daemon.ingest.chunking import chunk_text
from tests.ingest.test_chunking import assert_valid

KOTLIN = textwrap.dedent(
    """\
    package com.example

    import kotlinx.coroutines.flow.Flow

    // Entry point.
    fun main() {
        println("hello")
    }

    class Repository(private val api: Api) {
        fun load(id: Int): Item {
            return api.get(id)
        }

        suspend fun stream(): Flow<Item> {
            return api.stream()
        }
    }

    object Registry {
        val items = mutableListOf<Item>()
    }
    """
)


def test_kotlin_definitions_and_boundaries() -> None:
    # Kotlin has a grammar now; the fallback still chunks it where the wheel is missing
    chunks = chunk_fallback("app/Repo.kt", KOTLIN, "kotlin", max_lines=5)
    assert_valid(KOTLIN, chunks)
    defs = {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}
    lines = KOTLIN.split("\n")
    assert defs["main"] == ("function", lines.index("fun main() {") + 1)
    assert defs["Repository"][0] == "class"
    assert defs["stream"][0] == "function"
    assert defs["Registry"][0] == "class"
    main = next(c for c in chunks if "main" in c.symbols)
    assert main.text.startswith("// Entry point.")
    load = next(c for c in chunks if "load" in c.symbols)
    assert load.heading == "class Repository"
    assert "fun load(id: Int): Item" in load.signature


def test_whole_small_file_is_one_chunk() -> None:
    chunks = chunk_fallback("app/Repo.kt", KOTLIN, "kotlin")
    assert len(chunks) == 1 and chunks[0].start_line == 1
    assert len(chunks[0].signature.split("\n")) <= 5


def test_elixir_module_is_split_at_inner_defs() -> None:
    steps = "\n".join(f"    step({j})" for j in range(8))
    funcs = "\n\n".join(f"  def handle_{i}(conn) do\n{steps}\n  end" for i in range(10))
    text = f"defmodule MyApp.Router do\n  use Plug.Router\n\n{funcs}\nend\n"
    chunks = chunk_text("lib/router.ex", text, "elixir", max_lines=30)
    assert_valid(text, chunks)
    assert len(chunks) >= 4
    chunk = next(c for c in chunks if "handle_7" in c.symbols)
    assert chunk.heading == "module MyApp.Router"


def test_sql_yaml_shell_lua() -> None:
    sql = "CREATE TABLE users (\n  id int\n);\n\ncreate index users_id on users(id);\n"
    yaml = "name: app\nservices:\n  web:\n    image: nginx\nvolumes:\n  data: {}\n"
    shell = "#!/bin/sh\nbuild() {\n  make\n}\n\nfunction deploy {\n  ./ship\n}\n"
    lua = "local M = {}\n\nlocal function helper(x)\n  return x\nend\n\nfunction M.run()\nend\n"
    expect = {
        ("db.sql", "sql", sql): {"users", "users_id"},
        ("c.yaml", "yaml", yaml): {"name", "services", "volumes"},
        ("b.sh", "shell", shell): {"build", "deploy"},
        ("m.lua", "lua", lua): {"helper", "M.run"},
    }
    for (path, language, text), names in expect.items():
        chunks = chunk_text(path, text, language)
        assert_valid(text, chunks)
        found = {d.name for c in chunks for d in c.definitions}
        assert names <= found, (path, found)


def test_sql_extension_scripts_name_what_they_create() -> None:
    # pg_partman's style: a PostgreSQL extension names its schema `@extschema@` (CREATE EXTENSION
    # puts the real one there); the name is what follows it, and a function is a function
    text = (
        "CREATE TABLE @extschema@.part_config (\n    parent_table text NOT NULL\n);\n\n"
        "CREATE OR REPLACE FUNCTION @extschema@.run_maintenance(p_parent_table text DEFAULT NULL)\n"
        "    RETURNS void\n    LANGUAGE plpgsql\n    AS $$\nBEGIN\n    PERFORM 1;\nEND\n$$;\n\n"
        "CREATE PROCEDURE @extschema@.run_maintenance_proc(p_wait int DEFAULT 0)\n"
        "    LANGUAGE plpgsql\n    AS $$\nBEGIN\nEND\n$$;\n"
    )
    chunks = chunk_text("sql/functions/run_maintenance.sql", text, "sql")
    assert_valid(text, chunks)
    found = {(d.name, d.kind) for c in chunks for d in c.definitions}
    expected = {("part_config", "table"), ("run_maintenance", "function"),
                ("run_maintenance_proc", "function")}
    assert expected <= found


def test_rst_sections_with_heading_paths() -> None:
    text = textwrap.dedent(
        """\
        .. _anchor:

        =============
         Quickstart
        =============

        Intro.

        Make a Request
        ==============

        Body text.

        Details
        -------

        More text.
        """
    )
    chunks = chunk_text("docs/quick.rst", text, "rst", max_lines=6)
    assert_valid(text, chunks)
    headings = [c.heading for c in chunks]
    assert "Quickstart > Make a Request > Details" in headings
    defs = {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}
    assert defs["Make a Request"] == ("heading", text.split("\n").index("Make a Request") + 1)
    assert defs["Quickstart"][0] == "heading"


def test_asciidoc_sections_with_heading_paths_and_no_titles_inside_blocks() -> None:
    # Spring's and Asciidoctor's docs: `== Section`; a listing's `== x` or `# comment` is no title
    text = textwrap.dedent(
        """\
        = Reference Guide
        :toc:

        == Configuring the Retry Template

        Intro text.

        [source,bash]
        ----
        # not a title: a shell comment in a listing
        == nor this
        ----

        === Backoff Policies

        More text.
        """
    )
    chunks = chunk_text("docs/modules/ROOT/pages/retry.adoc", text, "asciidoc", max_lines=6)
    assert_valid(text, chunks)
    path = "Reference Guide > Configuring the Retry Template > Backoff Policies"
    assert path in [c.heading for c in chunks]
    defs = {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}
    assert defs["Configuring the Retry Template"] == ("heading", 4)
    assert set(defs) == {"Reference Guide", "Configuring the Retry Template", "Backoff Policies"}


def test_asciidoc_two_line_titles_are_titles_not_blocks() -> None:
    # Asciidoctor's setext titles (older AsciiDoc docs): an underline was taken for a block's
    # delimiter, which nothing closed: no title of the file was found after the first
    text = textwrap.dedent(
        """\
        Reference Guide
        ===============

        Retry Template
        --------------

        Intro text.

        [source]
        --------
        == not a title: in a listing
        --------

        Backoff Policies
        ~~~~~~~~~~~~~~~~

        Exponential backoff doubles the wait.
        A cap bounds it.

        == Jitter
        More text.
        """
    )
    chunks = chunk_text("docs/guide.adoc", text, "asciidoc", max_lines=6)
    assert_valid(text, chunks)
    defs = {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}
    assert set(defs) == {"Reference Guide", "Retry Template", "Backoff Policies", "Jitter"}
    assert defs["Retry Template"] == ("heading", 4)
    assert "Reference Guide > Retry Template > Backoff Policies" in [c.heading for c in chunks]


def test_plain_text_prefers_paragraph_breaks() -> None:
    text = "\n\n".join("\n".join(f"line {p}.{i} of a paragraph" for i in range(5)) for p in range(30))
    chunks = chunk_text("notes.txt", text, "text", max_lines=40)
    assert_valid(text, chunks)
    assert len(chunks) >= 4
    for chunk in chunks[:-1]:
        nxt = text.split("\n")[chunk.end_line] if chunk.end_line < len(text.split("\n")) else ""
        assert nxt == "" or chunk.text.split("\n")[-1].endswith("4 of a paragraph")


def test_windows_cover_and_respect_caps() -> None:
    lines = [("x" * (i % 50)) if i % 7 else "" for i in range(500)]
    index = LineIndex(lines)
    caps = Caps(30, 600, 3)
    spans = windows(index, 0, 499, caps)
    assert spans[0][0] == 0 and spans[-1][1] == 499
    for (s1, e1), (s2, e2) in zip(spans, spans[1:], strict=False):
        assert s1 < s2 <= e1 + 1 and e2 > e1
    for s, e in spans:
        assert e - s + 1 <= 30 and (index.chars(s, e) <= 600 or s == e)


def test_fallback_unknown_language_and_huge_line() -> None:
    text = "a" * 10_000 + "\nshort line\n"
    chunks = chunk_fallback("x.unknown", text, None, max_chars=1000)
    assert_valid(text, chunks)
    assert sum(1 for c in chunks if c.start_line == 1) == 10
