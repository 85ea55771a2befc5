"""Ranking rules that encode how code is written in a language, checked on small real indexes."""

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.scoring import ScoringWeights, coherence_boost, deprecated_penalty
from qmd_daemon.store.protocols import ChunkRow
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


SWIFT_FORWARDERS = """public extension ConstraintView {
    @available(*, deprecated, renamed:"snp.makeConstraints(_:)")
    func snp_makeConstraints(_ closure: (_ make: ConstraintMaker) -> Void) {
        self.snp.makeConstraints(closure)
    }

    @available(*, deprecated, renamed:"snp.remakeConstraints(_:)")
    func snp_remakeConstraints(_ closure: (_ make: ConstraintMaker) -> Void) {
        self.snp.remakeConstraints(closure)
    }
}
"""
SWIFT_DSL = """public struct ConstraintViewDSL {
    public func makeConstraints(_ closure: (_ make: ConstraintMaker) -> Void) {
        ConstraintMaker.makeConstraints(item: self.view, closure: closure)
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


def test_deprecated_forwarders_rank_below_the_code_they_forward_to(engine: Engine, tmp_path: Path) -> None:
    # SnapKit keeps its old `snp_` names as deprecated extensions calling the new DSL: they say
    # every word of a makeConstraints question, twice, and do nothing.
    forwarders, dsl = "Sources/ConstraintView+Extensions.swift", "Sources/ConstraintViewDSL.swift"
    name = indexed(engine, tmp_path / "snapkit", {forwarders: SWIFT_FORWARDERS, dsl: SWIFT_DSL})
    hits = engine.search("how make constraints closure remake constraints view", [name],
                         options=SearchOptions(per_file=0, explain=True))
    assert {h.path: "deprecated" in h.explain["boosts"] for h in hits} == {forwarders: True, dsl: False}
    assert hits[0].path == dsl


# language -> a deprecated definition, marked as that language marks it
DEPRECATED_IN_EACH_LANGUAGE = {
    "java": "/** @deprecated use removeEnd */\n@Deprecated\npublic static String chomp(String s) {\n"
            "  return removeEnd(s);\n}\n",
    "kotlin": '@Deprecated("use launch")\nfun spawn(block: () -> Unit) = launch(block)\n',
    "csharp": '[Obsolete("use QueryAsync")]\npublic static Task Query(IDbConnection c) => QueryAsync(c);\n',
    "rust": '#[deprecated(note = "use to_value")]\npub fn to_json(v: &T) -> Value { to_value(v) }\n',
    "go": "// Deprecated: use ExecuteC.\nfunc (c *Command) Exec() error { return c.ExecuteC() }\n",
    "typescript": "/**\n * @deprecated use configureStore\n */\nexport function createStore(r: Reducer) {\n"
                  "  return legacy(r)\n}\n",
    "haskell": '{-# DEPRECATED decode\' "use decode" #-}\ndecode\' = decode\n',
    "cpp": '[[deprecated("use parse")]]\njson from_cbor(const bytes& v) { return parse(v); }\n',
    "elixir": '  @deprecated "use read_body/2"\n  def read_body!(conn), do: read_body(conn)\n',
    "swift": '@available(*, deprecated, renamed: "snp.edges")\n'
             "var snp_edges: ConstraintItem { return self.snp.edges }\n",
}


def lowered(path: str, text: str) -> dict[str, float]:
    cand = Candidate(ChunkRow(1, 1, "c", path, "code", None, 1, 9, text, "", "", "", ""), score=1.0)
    deprecated_penalty([cand], ScoringWeights())
    return cand.boosts


@pytest.mark.parametrize("language", sorted(DEPRECATED_IN_EACH_LANGUAGE))
def test_deprecation_marks_of_each_language(language: str) -> None:
    text = DEPRECATED_IN_EACH_LANGUAGE[language]
    assert lowered(f"src/a.{language}", text) == {"deprecated": ScoringWeights().deprecated_penalty}


def test_a_chunk_with_one_live_definition_among_deprecated_ones_is_not_lowered() -> None:
    # SnapKit's last chunk: the deprecated forwarders end with the live `snp` property (which the
    # index does not list as a definition)
    text = ('    @available(*, deprecated, renamed:"snp.removeConstraints()")\n'
            "    func snp_removeConstraints() {\n        self.snp.removeConstraints()\n    }\n\n"
            "    var snp: ConstraintViewDSL {\n        return ConstraintViewDSL(view: self)\n    }\n}\n")
    assert lowered("Sources/ConstraintView+Extensions.swift", text) == {}


def test_a_class_with_one_deprecated_method_is_not_lowered() -> None:
    text = ("public class StringUtils {\n    @Deprecated\n    public static String chomp(String s) {\n"
            "        return s;\n    }\n\n    public static String strip(String s) {\n        return s;\n"
            "    }\n}\n")
    assert lowered("src/StringUtils.java", text) == {}


def test_a_files_deprecated_chunks_still_count_for_its_coherence() -> None:
    # commons-lang's StringUtils holds dozens of deprecated string methods: they are on its topic,
    # so the file keeps its coherence while each of them ranks lower
    def candidate(chunk_id: int, path: str, text: str, score: float) -> Candidate:
        return Candidate(ChunkRow(chunk_id, chunk_id, "c", path, "code", "java", 1, 9, text, "", "", "", ""),
                         score=score)

    weights = ScoringWeights()
    live = candidate(1, "StringUtils.java", "public static String strip(String s) { return s; }\n", 0.5)
    old = candidate(2, "StringUtils.java", DEPRECATED_IN_EACH_LANGUAGE["java"], 0.5)
    other = candidate(3, "StrBuilder.java", "public StrBuilder append(Object a) { return this; }\n", 0.6)
    deprecated_penalty([live, old, other], weights)
    coherence_boost([live, old, other], 1.0, weights)
    assert old.boosts["deprecated"] == weights.deprecated_penalty
    assert live.boosts["coherence"] == weights.coherence  # 0.5 + 0.5 unlowered: the largest share
    assert other.boosts["coherence"] == round(weights.coherence * 0.6, 4)
