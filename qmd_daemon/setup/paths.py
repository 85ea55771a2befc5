"""Where the setup puts things. Every location can be moved by an env var (tests use a temp HOME)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from qmd_daemon.settings import Settings, SetupSettings

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


@dataclass(frozen=True)
class SetupPaths:
    home: Path
    config_dir: Path  # index.yml and install.json
    state_dir: Path  # daemon state file, logs
    models_dir: Path  # small-profile builds (hf: downloads go to the Hugging Face cache)
    data_dir: Path  # the owned virtual environment and the installed hook scripts
    bin_dir: Path  # wrapper scripts (ai-search, qmd-warm, qmd-daemon)
    claude_dir: Path
    codex_dir: Path

    @property
    def install_json(self) -> Path:
        return self.config_dir / "install.json"

    @property
    def index_yml(self) -> Path:
        return self.config_dir / "index.yml"

    @property
    def codex_skills_dir(self) -> Path:
        """Codex's user skills folder: $HOME/.agents/skills (its docs' USER scope, 2026); Codex
        no longer documents $CODEX_HOME/skills, where setups before this one put the skill."""
        return self.home / ".agents" / "skills"

    @property
    def venv_dir(self) -> Path:
        return self.data_dir / "venv"

    @property
    def hooks_dir(self) -> Path:
        return self.data_dir / "hooks"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "logs" / "setup.log"

    @classmethod
    def from_env(cls) -> SetupPaths:
        settings, setup = Settings.from_env(), SetupSettings.from_env()
        home = Path.home()
        return cls(
            home=home,
            config_dir=settings.config_dir,
            state_dir=settings.state_dir,
            models_dir=settings.models_dir,
            data_dir=setup.data_dir,
            bin_dir=setup.bin_dir,
            claude_dir=_env("CLAUDE_CONFIG_DIR") or home / ".claude",
            codex_dir=_env("CODEX_HOME") or home / ".codex",
        )
