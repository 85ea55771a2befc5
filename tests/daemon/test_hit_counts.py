"""The daemon's per-file hit counts (daemon/hit_counts.py): the deep embedder's hint for which
files searches keep returning. Kept off the index (a search never writes it), saved owner-only,
bounded, and a damaged file is only a lost hint: never an error. Real files in tmp_path."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import aiohttp
import pytest

from qmd_daemon.daemon import hit_counts
from qmd_daemon.daemon.hit_counts import FILE_NAME, HitCounts
from qmd_daemon.daemon.server import Daemon
from qmd_daemon.settings import Settings
from tests.daemon.support import make_repo


def _hits(*paths: str, collection: str = "repo") -> list[dict[str, str]]:
    return [{"collection": collection, "path": p} for p in paths]


def test_counts_each_file_once_a_search_and_survive_a_restart(tmp_path: Path) -> None:
    counts = HitCounts(tmp_path)
    counts.record(_hits("a.py", "a.py", "b.py"))  # two chunks of a.py in one answer: one search
    counts.record(_hits("a.py"))
    counts.save()

    assert stat.S_IMODE(os.stat(tmp_path / FILE_NAME).st_mode) == 0o600
    assert HitCounts(tmp_path).returned() == {"repo": {"a.py": 2, "b.py": 1}}


@pytest.mark.parametrize("content", [
    "{not json", '{"files": [["repo", "a.py"]], "searches": 1}', "[]",
    '{"files": [["repo", "a.py", 1e999]], "searches": 1}', "[" * 100_000,  # int(inf), too deep a nest
])
def test_a_corrupt_counts_file_is_ignored_with_a_log_line(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / FILE_NAME).write_text(content)
    with caplog.at_level(logging.WARNING, logger="qmd_daemon.hit_counts"):
        counts = HitCounts(tmp_path)
    assert counts.returned() == {}
    assert any(FILE_NAME in r.getMessage() and "afresh" in r.getMessage() for r in caplog.records)
    counts.record(_hits("a.py"))
    counts.save()  # the damaged file is replaced by a good one
    assert HitCounts(tmp_path).returned() == {"repo": {"a.py": 1}}


def test_counts_stay_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hit_counts, "MAX_FILES", 10)
    monkeypatch.setattr(hit_counts, "KEEP_FILES", 6)
    monkeypatch.setattr(hit_counts, "DECAY_EVERY", 50)
    counts = HitCounts(tmp_path)
    for _ in range(5):
        counts.record(_hits("hot.py"))
    for i in range(40):  # 40 distinct files returned once each
        counts.record(_hits(f"cold_{i}.py"))
        assert len(counts.returned()["repo"]) <= 10
    assert counts.returned()["repo"]["hot.py"] == 5, "a trim keeps the most returned"
    for _ in range(5):  # the 50th search halves every count and drops those at 1
        counts.record(_hits("hot.py"))
    assert counts.returned() == {"repo": {"hot.py": 5}}


async def test_the_daemon_counts_what_searches_return_and_hints_the_embed_job(
    home: Path, tmp_path: Path
) -> None:
    """A real daemon in-process (no models: lexical search), real HTTP on 127.0.0.1."""
    repo = make_repo(tmp_path / "proj")
    d = Daemon(Settings.from_env(), watch=False, idle_minutes=30)
    await d.start()
    try:
        headers = {"Authorization": f"Bearer {d.token}"}
        async with aiohttp.ClientSession(f"http://127.0.0.1:{d.port}", headers=headers) as http:
            for query in ("parse cookie header", "cookie"):
                async with http.post("/search", json={"query": query, "path": str(repo)}) as resp:
                    body = await resp.json()
                    assert resp.status == 200 and body["hits"], body
            async with http.get("/status") as resp:
                assert (await resp.json())["current_collection"] == "repo-proj"
        assert d.jobs.embed_hint is not None
        hint = d.jobs.embed_hint()
        assert hint.current == "repo-proj" and hint.returned["repo-proj"]["src/client.py"] == 2
    finally:
        await d.close()
    saved = HitCounts(d.settings.state_dir)  # saved at close, owner-only
    assert saved.returned()["repo-proj"]["src/client.py"] == 2
    assert stat.S_IMODE(os.stat(d.settings.state_dir / FILE_NAME).st_mode) == 0o600
