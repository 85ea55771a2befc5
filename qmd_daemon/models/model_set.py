"""The three model roles as one lazily built set; each role is optional.

Search never downloads: a role whose file is not on disk yet is reported unavailable (with the
reason) and the pipeline degrades to what is there. `qmd-daemon pull` fetches them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qmd_daemon.config import OFF
from qmd_daemon.models import ModelError
from qmd_daemon.models.cache import LLMCache
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.expander import Expander
from qmd_daemon.models.profiles import resolve_role
from qmd_daemon.models.reranker import Reranker
from qmd_daemon.models.runtime import select_device
from qmd_daemon.models.static_table import StaticModel

RETRY_SECONDS = 30.0
_FACTORIES = {"embed": Embedder, "rerank": Reranker, "expand": Expander}


class ModelSet:
    def __init__(
        self,
        models: Mapping[str, Any],
        models_dir: Path,
        cache: LLMCache | None = None,
    ):
        self.config = dict(models)
        self.models_dir = models_dir
        self.cache = cache
        self.device = select_device(str(self.config["device"]) if self.config.get("device") else None)
        self._built: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self._failed_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._static: StaticModel | None = None

    def enabled(self, role: str) -> bool:
        """`models: {rerank: off}` (or false/none) switches a role off; any other value of a role
        is its model (a path or `hf:` reference). `deep` and `static` name no model: on or off only
        (IndexConfig.models checked that)."""
        return str(self.config.get(role, True)).strip().lower() not in OFF

    def deep_off(self) -> str | None:
        """Why no chunk goes through the embedder itself, when `models: {deep: off}` says so (on a
        CPU where the deep pass would take hours): the embedder still loads, as its tokenizer and
        token rows are the static tier's, and search uses the static vectors. None: the deep pass runs."""
        return None if self.enabled("deep") else "switched off (models: {deep: off})"

    def get(self, role: str) -> Any | None:
        if not self.enabled(role):
            return None
        with self._lock:
            if role in self._built:
                return self._built[role]
            if self._failed_lately(role):
                return None
            try:
                path = resolve_role(role, self.config, self.models_dir, download=False)
                kwargs: dict[str, Any] = {"device": self.device}
                if role != "embed":
                    kwargs["cache"] = self.cache
                self._built[role] = self._share_model(_FACTORIES[role](path, **kwargs))
            except ModelError as exc:  # e.g. not pulled yet: tried again a little later
                self._failed(role, exc)
                return None
            self._errors.pop(role, None)
            return self._built[role]

    def _failed_lately(self, role: str) -> bool:
        """A role that failed to build is tried again after RETRY_SECONDS, not on every search."""
        failed_at = self._failed_at.get(role)
        return failed_at is not None and time.monotonic() - failed_at < RETRY_SECONDS

    def _failed(self, role: str, exc: ModelError) -> None:
        self._errors[role] = str(exc)
        self._failed_at[role] = time.monotonic()

    def _share_model(self, model: Any) -> Any:
        """One llama.cpp model per file: a role whose GGUF another built role loads the same way
        (the small profile's Gemma, for rerank and expand) uses that role's handle, so the file
        is mapped and its weights repacked once, not once per role. They then take turns on it."""
        for other in self._built.values():
            if other.handle.can_serve(model.handle):
                other.handle.widen(model.handle.n_ctx)
                model.handle = other.handle
                break
        return model

    def embedder(self) -> Embedder | None:
        return self.get("embed")

    def reranker(self) -> Reranker | None:
        return self.get("rerank")

    def expander(self) -> Expander | None:
        return self.get("expand")

    def static(self) -> StaticModel | None:
        """The embedder's static tier (models/static_table.py): None when there is no embedder
        (its tokenizer and rows are the tier's) or `models: {static: off}`."""
        if not self.enabled("static"):
            return None
        embedder = self.embedder()
        if embedder is None:
            return None
        with self._lock:
            if self._static is None or self._static.source is not embedder:
                if self._failed_lately("static"):  # not re-read on every search
                    return None
                try:
                    self._static = StaticModel(embedder, self.models_dir)
                except ModelError as exc:
                    self._failed("static", exc)
                    return None
            return self._static

    def static_error(self) -> str | None:
        """Why the static tier could not be built, when it could not."""
        return self._errors.get("static")

    def unload(self) -> None:
        for model in self._built.values():
            model.unload()

    def status(self) -> dict[str, Any]:
        roles: dict[str, Any] = {}
        for role in _FACTORIES:
            if not self.enabled(role):
                roles[role] = {"state": "off"}
            elif (model := self._built.get(role)) is not None:
                roles[role] = {
                    "state": "loaded" if model.handle.loaded else "ready",
                    "model": model.handle.path.name,
                }
            elif (error := self._errors.get(role)) is not None:  # one read: /health calls this
                roles[role] = {"state": "unavailable", "reason": error}  # beside the reader thread
            else:
                roles[role] = {"state": "not loaded yet"}
        status = {"device": self.device, "profile": self.config.get("profile", "qwen3"), "roles": roles}
        if self.config.get("auto"):  # the installer's Auto: what it chose per role and why
            status["auto"] = str(self.config["auto"])
        return status
