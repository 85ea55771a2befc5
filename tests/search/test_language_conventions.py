"""Ranking rules that encode how code is written in a language, checked on small real indexes."""

from pathlib import Path

from qmd_daemon.engine import Engine
from tests.conftest import indexed

RUST_TRAIT = """use crate::lib::*;

pub trait Deserialize<'de>: Sized {
    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>
    where
        D: Deserializer<'de>;
}

pub trait Deserializer<'de>: Sized {
    type Error;
    fn deserialize_any<V>(self, visitor: V) -> Result<V::Value, Self::Error>;
}
"""


def rust_impls(types: list[str]) -> str:
    """`impl Deserialize for T` blocks: each defines a `deserialize` method, none the trait."""
    return "\n".join(
        f"impl<'de> Deserialize<'de> for {t} {{\n"
        f"    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>\n"
        f"    where\n        D: Deserializer<'de>,\n    {{\n"
        f"        // Deserialize a {t} from any Deserialize-capable Deserializer\n"
        f"        deserializer.deserialize_any({t}Visitor)\n    }}\n}}\n"
        for t in types
    )


def test_rust_trait_in_mod_rs_leads_its_implementations(engine: Engine, tmp_path: Path) -> None:
    # `de/mod.rs` is the module's body by Rust's convention, not a re-export file, and the
    # `deserialize` methods of the impls are not the `Deserialize` trait (code is case-sensitive).
    name = indexed(
        engine,
        tmp_path / "serde",
        {
            "src/de/mod.rs": RUST_TRAIT,
            "src/de/impls.rs": rust_impls(["bool", "String", "Vec", "Option"]),
            "src/private/de.rs": rust_impls(["Content", "Borrowed"]),
        },
    )
    top = engine.search("Deserialize", [name])[0]
    assert (top.path, top.symbol) == ("src/de/mod.rs", "Deserialize")


def test_capitalised_symbol_prefers_the_class_to_same_named_functions(
    engine: Engine, tmp_path: Path
) -> None:
    helpers = "\n\n".join(
        f"def session(config_{i}):\n    '''Open a Session for config {i}.'''\n"
        f"    return Session(config_{i})\n"
        for i in range(4)
    )
    name = indexed(
        engine,
        tmp_path / "p",
        {
            "net/models.py": "class Session:\n    def __init__(self, config):\n"
            "        self.config = config\n",
            "net/helpers.py": helpers,
        },
    )
    top = engine.search("Session", [name])[0]
    assert (top.path, top.symbol) == ("net/models.py", "Session")


JSON_FWD = """#pragma once
namespace nlohmann {
/// default JSONSerializer template argument
template<typename T = void, typename SFINAE = void>
struct adl_serializer;

template<template<typename U, typename V> class ObjectType = std::map>
class basic_json;

/// default JSON class
using json = basic_json<>;
}
"""

JSON_PARSER = """#pragma once
namespace nlohmann {
namespace detail {
/// syntax analysis of JSON text: the parser reads tokens from the lexer
template<typename BasicJsonType, typename InputAdapterType>
class parser
{
  public:
    /// a parser reading from an input adapter, with the lexer as its tokenizer
    explicit parser(InputAdapterType&& adapter) : m_lexer(std::move(adapter)) {}

    /// public parser interface: parse a JSON value, each token from the tokenizer
    void parse(const bool strict, BasicJsonType& result)
    {
        get_token();
        parse_internal(true, result);
    }

  private:
    token_type get_token() { return last_token = m_lexer.scan(); }
    token_type last_token = token_type::uninitialized;
    lexer_t m_lexer;
};
}
}
"""


def test_an_acronym_in_a_question_does_not_ask_for_a_lower_case_alias(
    engine: Engine, tmp_path: Path
) -> None:
    # "JSON" in prose is the format, not `using json = basic_json<>;` in the forward header (which
    # got the definition boost because no chunk defines `JSON` as spelled).
    name = indexed(
        engine,
        tmp_path / "json",
        {"include/json_fwd.hpp": JSON_FWD, "include/detail/input/parser.hpp": JSON_PARSER},
    )
    hits = engine.search("JSON parser and tokenizer", [name])
    assert hits[0].path == "include/detail/input/parser.hpp"
    assert engine.search("json", [name])[0].path == "include/json_fwd.hpp"  # as a symbol it still is


def test_an_acronym_still_names_a_type_spelled_in_pascal_case(engine: Engine, tmp_path: Path) -> None:
    # "the AST" is `struct Ast` (Rust, Zig, C# spell acronyms as words in type names).
    walker = "\n\n".join(
        f"fn visit_{kind}(node: &Node, scope: &mut Scope) {{\n    // walk the AST: the {kind} node\n"
        f"    for child in node.children() {{ scope.enter(child); }}\n}}"
        for kind in ("block", "call", "field", "loop")
    )
    name = indexed(
        engine,
        tmp_path / "lsp",
        {
            "src/syntax.rs": (
                "/// The syntax tree of one document.\n"
                "pub struct Ast {\n    nodes: Vec<Node>,\n}\n"
            ),
            "src/walk.rs": walker,
        },
    )
    assert engine.search("how the AST is walked", [name])[0].path == "src/syntax.rs"
