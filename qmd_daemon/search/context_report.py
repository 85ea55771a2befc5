"""`qmd-daemon context`: a markdown briefing for an agent's context window — the hits as a table,
the languages and frameworks of the searched collections, and the docs related to the hits."""

from __future__ import annotations

import re
from collections import Counter

from qmd_daemon.search.hit import Hit
from qmd_daemon.store.protocols import ChunkStore

# manifest file name -> frameworks recognised by a dependency name inside it
_MANIFESTS = (
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "go.mod",
    "Cargo.toml",
    "Gemfile",
    "composer.json",
    "pom.xml",
    "build.gradle",
)
_FRAMEWORKS = {
    "react": "React",
    "next": "Next.js",
    "vue": "Vue",
    "svelte": "Svelte",
    "express": "Express",
    "@angular/core": "Angular",
    "fastapi": "FastAPI",
    "django": "Django",
    "flask": "Flask",
    "aiohttp": "aiohttp",
    "pydantic": "Pydantic",
    "sqlalchemy": "SQLAlchemy",
    "pytest": "pytest",
    "torch": "PyTorch",
    "numpy": "NumPy",
    "gin-gonic/gin": "Gin",
    "tokio": "Tokio",
    "actix-web": "Actix",
    "axum": "Axum",
    "rails": "Rails",
    "laravel/framework": "Laravel",
    "spring-boot": "Spring Boot",
}
_WORD = re.compile(r"[@\w./-]+")


def detect_stack(store: ChunkStore, collection_ids: list[int]) -> tuple[list[tuple[str, int]], list[str]]:
    """(language, file count) most common first, and frameworks named by the manifests."""
    if not collection_ids:
        return [], []
    languages = store.language_counts(collection_ids)
    frameworks: Counter[str] = Counter()
    for text in store.manifest_texts(collection_ids, _MANIFESTS):
        words = {w.strip("\"'").lower() for w in _WORD.findall(text)}
        frameworks.update(label for key, label in _FRAMEWORKS.items() if key in words)
    return languages, [name for name, _ in frameworks.most_common()]


def render_context(
    query: str, hits: list[Hit], languages: list[tuple[str, int]], frameworks: list[str]
) -> str:
    lines = [f"## Code search: {query}", ""]
    if hits:
        lines += ["| # | file | line | symbol | collection | kind | score |", "|---|---|---|---|---|---|---|"]
        for rank, hit in enumerate(hits, start=1):
            lines.append(
                f"| {rank} | `{hit.path}` | {hit.line}-{hit.end_line} | {hit.symbol or ''} "
                f"| {hit.collection} | {hit.kind} | {hit.score:.2f} |"
            )
    else:
        lines.append("No matching code.")
    if languages:
        lines += ["", "**Languages:** " + ", ".join(f"{lang} ({count} files)" for lang, count in languages)]
    if frameworks:
        lines.append("**Frameworks:** " + ", ".join(frameworks))
    related = list(dict.fromkeys(r for hit in hits for r in hit.related if r not in {h.path for h in hits}))
    if related:
        lines += ["", "**Related:** " + ", ".join(f"`{r}`" for r in related[:10])]
    for rank, hit in enumerate(hits[:5], start=1):
        lines += ["", f"### {rank}. `{hit.path}:{hit.line}`", "```", hit.snippet, "```"]
    return "\n".join(lines) + "\n"
