"""install.json: what the setup chose and what it owns (so No removes exactly that)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qmd_daemon import __version__
from qmd_daemon.atomic_files import replace_file

SELECTIONS = ("yes", "no", "auto")


@dataclass
class InstallState:
    version: str = __version__
    selection: str = "no"
    device: str | None = None
    profile: str | None = None
    owned_package: bool = False
    owned_models: list[str] = field(default_factory=list)
    # Beyond the keys: what else this setup created, so No removes it and nothing more.
    python_env: str | None = None
    created_files: list[str] = field(default_factory=list)
    created_dirs: list[str] = field(default_factory=list)
    models_block_before: dict[str, Any] | None = None
    models_block_written: dict[str, Any] | None = None
    index_yml_created: bool = False
    git_hooks: list[str] = field(default_factory=list)
    auto_retrieve: bool = False
    # settings.json / hooks.json: {"before": the text before our first edit, "written": sha256}
    hook_files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> InstallState:
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        state = cls(**known)
        if state.selection not in SELECTIONS:
            state.selection = "no"
        return state


def load_state(path: Path) -> InstallState | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"install: cannot read {path}: {exc}; fix or remove it (left untouched)") from None
    if not isinstance(raw, dict):
        raise SystemExit(f"install: {path} must hold a JSON object (left untouched)")
    return InstallState.from_dict(raw)


def dump_state(state: InstallState) -> str:
    return json.dumps(state.as_dict(), indent=2, sort_keys=False) + "\n"


def write_atomic(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text, 0o600 if mode is None else mode)
