"""A module named by a dotted path is used by its last part: Elixir's `alias Plug.Conn` makes it
`Conn` in the code, and a question says `Conn` too. The chunker records that part as a definition of
the module, and a question that names the module qualified (`Ecto.Queryable`) means the chunk
defining that full name, not another module ending in the same part (`Ecto.Repo.Queryable`).
Real files, real chunker, index and search (docs/ranking.md, "Modules by their last name")."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.chunking import chunk_text
from qmd_daemon.search.pipeline import SearchOptions
from tests.conftest import indexed

CONN = """defmodule Plug.Conn do
  @moduledoc "The connection struct."
  defstruct host: "www.example.com", path_info: [], halted: false

  def halt(%Plug.Conn{} = c), do: %{c | halted: true}
end
"""
# a module that says `conn` on every line, as an adapter or a test helper does
ADAPTER = "defmodule Plug.Conn.Adapter do\n" + "".join(
    f"  def step{i}(conn), do: conn\n" for i in range(12)) + "end\n"
PROTOCOL = """defprotocol Ecto.Queryable do
  @doc "Converts the given data into an Ecto.Query."
  def to_query(data)
end
"""
REPO_QUERYABLE = """defmodule Ecto.Repo.Queryable do
  @moduledoc "Runs queryable data against a repo: the Ecto.Queryable protocol applied, for query composition."
  # every function takes a queryable, applies the protocol, and composes the query with the repo's
  def all(name, queryable, opts), do: execute(:all, name, Ecto.Queryable.to_query(queryable), opts)
  def one(name, queryable, opts), do: all(name, queryable, opts)
  def stream(name, queryable, opts), do: all(name, queryable, opts)
end
"""


def test_a_module_is_found_by_its_last_name(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "plug", {"lib/plug/conn.ex": CONN, "lib/plug/conn/adapter.ex": ADAPTER,
                                               "lib/plug/test.ex": ADAPTER.replace("Conn.Adapter", "Test")})
    hits = engine.search("Conn", [name])
    assert hits[0].path == "lib/plug/conn.ex"
    assert hits[0].line == 1


def test_a_qualified_name_means_the_module_of_that_full_name(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "ecto", {"queryable.ex": PROTOCOL,
                                               "repo/queryable.ex": REPO_QUERYABLE})
    hits = engine.search("Ecto.Queryable protocol for query composition", [name])
    assert hits[0].path == "queryable.ex"


def test_a_namespace_every_file_declares_defines_nothing(engine: Engine, tmp_path: Path) -> None:
    files = {f"Src/Part{i}.cs": f"namespace Acme.Json\n{{\n    public class Part{i} {{ public int N; }}\n}}\n"
             for i in range(6)}
    files["Src/DateParse.cs"] = (
        "namespace Acme.Json\n{\n    // date parsing for ISO 8601 text\n"
        "    public static class DateParse { public static int Parse(string s) => 0; }\n}\n")
    name = indexed(engine, tmp_path / "acme", files)
    hits = engine.search("date parsing in Acme.Json", [name], options=SearchOptions(explain=True))
    assert hits[0].path == "Src/DateParse.cs"
    assert all("definition" not in h.explain["boosts"] for h in hits), [h.explain["boosts"] for h in hits]


def test_a_heading_titled_by_the_qualified_name_defines_nothing(engine: Engine, tmp_path: Path) -> None:
    """Only Elixir records a module under its full dotted name, so in Python a doc's heading
    `torch.nn.Module` was the one chunk defining it "qualified", and took the definition from
    `class Module` (review22)."""
    users = "".join(f"class Layer{i}(Module):\n    '''A torch.nn.Module layer.'''\n\n" for i in range(8))
    name = indexed(engine, tmp_path / "torch", {
        "torch/nn/modules/module.py": "class Module:\n    '''Base class for all neural network modules.'''\n",
        "docs/nn.md": "# torch.nn.Module\n\nThe base class of every layer.\n",
        "torch/nn/layers.py": users})
    hits = engine.search("torch.nn.Module", [name], options=SearchOptions(explain=True))
    assert hits[0].path == "torch/nn/modules/module.py"
    assert all("definition" not in h.explain["boosts"] for h in hits if h.path == "docs/nn.md")


def test_only_an_alias_shaped_module_name_gives_its_last_part() -> None:
    text = ("defmodule Plug.Conn.Adapter do\nend\n\ndefmodule Module.concat([Foo, Bar]) do\nend\n\n"
            "defmodule :\"Elixir.Foo.Bar\" do\nend\n\ndefmodule __MODULE__.Helper do\nend\n")
    names = {d.name for c in chunk_text("lib/a.ex", text, "elixir") for d in c.definitions}
    assert {"Adapter", "Helper"} <= names
    assert not any(n.startswith("concat") or n.endswith('Bar"') for n in names if "." not in n), names
