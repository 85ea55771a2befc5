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
