"""The one result shape shared by the CLI, the HTTP API and in-process callers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Hit:
    path: str
    line: int
    end_line: int
    score: float
    snippet: str
    collection: str
    symbol: str = ""
    kind: str = "code"
    related: list[str] = field(default_factory=list)
    explain: dict[str, Any] | None = None

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not explain:
            data.pop("explain")
        if not data["related"]:
            data.pop("related")
        return data
