"""`qmd-daemon demo`: the embedded default job. Indexes qmd-daemon's own installed source into a
throwaway index and answers a few questions about it, so a fresh install shows what it does.
Everything it writes stays in that throwaway folder: the user's config, state (locks, skip log)
and a team's PostgreSQL index (`QMD_DATABASE_URL`) are never touched."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings

DEMO_QUESTIONS = (
    "how are binary and oversized files skipped while scanning",
    "where is the schema version checked when the index is opened",
    "split camelCase identifiers into words",
    "IndexStore",
)


def run_demo(echo: Callable[[str], None], questions: tuple[str, ...] = DEMO_QUESTIONS) -> int:
    source = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="qmd-demo-") as tmp:
        base = Settings.from_env()
        settings = replace(
            base,
            config_dir=Path(tmp) / "config",
            state_dir=Path(tmp) / "state",
            index_path=Path(tmp) / "index.sqlite",
            database_url=None,
        )
        engine = Engine(settings)
        try:
            collection = engine.add_collection(source, name="qmd-daemon-source", ignore=["demo.py"])
            report = engine.update([collection.name], progress=False)[0]
            echo(
                f"indexed {report.files} files ({report.chunks_added} chunks) of {source} "
                f"in {report.seconds:.2f}s"
            )
            for question in questions:
                echo(f"\n? {question}")
                for hit in engine.search(question, [collection.name], limit=3):
                    echo(f"  {hit.score:.2f}  {hit.path}:{hit.line}  {hit.symbol}")
        finally:
            engine.close()
    return 0
