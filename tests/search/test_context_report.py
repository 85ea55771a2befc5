from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.context_report import detect_stack, render_context
from tests.conftest import SAMPLE_MD, SAMPLE_PY, run_cli, write_tree


def test_stack_detection_from_manifests_and_files(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "p",
        {
            "client.py": SAMPLE_PY,
            "README.md": SAMPLE_MD,
            "pyproject.toml": '[project]\ndependencies = ["fastapi>=0.100", "pydantic"]\n',
            "web/package.json": '{"dependencies": {"react": "^18", "express": "4"}}\n',
        },
    )
    name = engine.add_collection(root).name
    engine.update([name])
    languages, frameworks = detect_stack(engine.store, engine.collection_ids([name]))
    assert ("python", 1) in languages
    assert set(frameworks) == {"FastAPI", "Pydantic", "React", "Express"}
    hits = engine.search("parse cookie header", [name])
    text = render_context("parse cookie header", hits, languages, frameworks)
    assert "| 1 | `client.py`" in text and "**Frameworks:**" in text and "`README.md`" in text


def test_context_command_prints_markdown(home: Path, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {"client.py": SAMPLE_PY})
    run_cli("collection", "add", str(root), env_home=home, check=True)
    out = run_cli("context", "cookie header", env_home=home, check=True).stdout
    assert out.startswith("## Code search: cookie header") and "`client.py`" in out
    md = run_cli("search", "cookie header", "--format", "md", env_home=home, check=True).stdout
    assert "| 1 | `client.py`" in md
