"""File extension to language and kind (code or doc)."""

from __future__ import annotations

from pathlib import PurePosixPath

_BY_SUFFIX = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".zig": "zig",
    ".dart": "dart",
    ".vue": "vue",
    ".svelte": "svelte",
    ".r": "r",
    ".jl": "julia",
    ".pl": "perl",
    ".sh": "shell",
    ".bash": "shell",
    ".ps1": "powershell",
    ".sql": "sql",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".tf": "terraform",
    ".json": "json",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".xml": "xml",
    ".gradle": "gradle",
    ".cmake": "cmake",
    ".md": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
}
_DOC_LANGUAGES = {"markdown", "rst", "text"}


def language_of(path: str) -> str | None:
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower())


def kind_of(language: str | None) -> str:
    return "doc" if language in _DOC_LANGUAGES else "code"
