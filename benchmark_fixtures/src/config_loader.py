"""Load application settings from a TOML file, environment variables and defaults."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path


class ConfigError(ValueError):
    """The configuration file is missing a required key or holds a value of the wrong type."""


@dataclass(frozen=True)
class Settings:
    database_url: str
    listen_port: int = 8080
    log_level: str = "info"
    cache_size: int = 1024
    requests_per_second: float = 20.0


def _coerce(name: str, value: object, kind: type) -> object:
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r} must be {kind.__name__}, got {value!r}") from None


def load_settings(path: Path, env: dict[str, str] | None = None) -> Settings:
    """Parse `path` (TOML), then let APP_* environment variables override single keys."""
    env = dict(os.environ if env is None else env)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8")).get("app", {})
    except FileNotFoundError:
        raw = {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    values: dict[str, object] = {}
    for item in fields(Settings):
        env_key = f"APP_{item.name.upper()}"
        if env_key in env:
            values[item.name] = env[env_key]
        elif item.name in raw:
            values[item.name] = raw[item.name]
    if "database_url" not in values:
        raise ConfigError("database_url is required (in [app] or APP_DATABASE_URL)")
    kinds = {"listen_port": int, "cache_size": int, "requests_per_second": float}
    for name, kind in kinds.items():
        if name in values:
            values[name] = _coerce(name, values[name], kind)
    return Settings(**values)
