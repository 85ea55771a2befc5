"""The unit of indexing and of search results: a span of lines of one file."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Definition:
    """A symbol defined inside a chunk (function, class, method, heading anchor...)."""

    name: str
    kind: str
    line: int


@dataclass
class Chunk:
    """Lines start_line..end_line (1-based, inclusive) of a file, with what they define.

    `signature` holds the definition lines a reader would skim (what an agent reads first);
    `heading` is the markdown heading path or the enclosing class, used as context.
    """

    start_line: int
    end_line: int
    text: str
    definitions: list[Definition] = field(default_factory=list)
    signature: str = ""
    heading: str = ""

    @property
    def symbols(self) -> list[str]:
        seen: dict[str, None] = {}
        for definition in self.definitions:
            seen.setdefault(definition.name, None)
        return list(seen)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def embedding_text(path: str, heading: str, signature: str, text: str) -> str:
    """What a vector sees: the path first, then context and signatures, then the lines themselves
    (as an agent reads code: where it is, what it defines, how)."""
    parts = [path]
    if heading:
        parts.append(heading)
    if signature and signature not in text[: len(signature) + 200]:
        parts.append(signature)
    parts.append(text)
    return "\n".join(parts)
