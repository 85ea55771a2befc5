"""Local models (embed, rerank, expand) run through llama-cpp-python.

Submodules import llama_cpp lazily, so importing this package stays cheap for thin clients.
"""

from __future__ import annotations

from qmd_daemon.errors import QmdError

ROLES: tuple[str, ...] = ("embed", "rerank", "expand")


class ModelError(QmdError):
    """A model cannot be found, downloaded, loaded or run; the message is one line for the user."""

    code = "model_error"


__all__ = ["ROLES", "ModelError"]
