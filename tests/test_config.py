import subprocess
import sys
from pathlib import Path

import pytest

from qmd_daemon.config import CollectionConfig, IndexConfig
from qmd_daemon.errors import ConfigError
from tests.conftest import run_cli, write_tree


def test_save_keeps_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "index.yml"
    path.write_text(
        "theme: dark\ncollections:\n  docs:\n    path: /x\n    color: blue\nmodels:\n  embed: a.gguf\n"
    )
    config = IndexConfig.load(path)
    config.set_collection(CollectionConfig(name="docs", path=Path("/y")))
    config.set_collection(CollectionConfig(name="repo-a", path=Path("/a"), include_by_default=True))
    config.save()
    again = IndexConfig.load(path)
    assert again.raw["theme"] == "dark"
    assert again.raw["collections"]["docs"]["color"] == "blue"
    assert again.models() == {"embed": "a.gguf"}
    assert again.collections()["docs"].path == Path("/y")
    assert again.collections()["repo-a"].include_by_default is True


@pytest.mark.parametrize("text", ["collections: [unclosed\n", "- just\n- a list\n", "collections: 5\n"])
def test_unparsable_file_aborts_and_is_left_untouched(tmp_path: Path, text: str) -> None:
    path = tmp_path / "index.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        IndexConfig.load(path)
    assert "\n" not in str(info.value)
    assert path.read_text() == text


@pytest.mark.parametrize("ignore", ["5", "{a: b}", "true"])
def test_an_ignore_that_is_no_pattern_list_is_one_line(tmp_path: Path, ignore: str) -> None:
    path = tmp_path / "index.yml"
    text = f"collections:\n  x:\n    path: /y\n    ignore: {ignore}\n"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        IndexConfig.load(path).collections()
    assert str(info.value) == (
        f"{path}: collection 'x': 'ignore' must be a pattern or a list of patterns (left untouched)"
    )
    assert path.read_text() == text


def test_a_pattern_that_is_no_valid_mask_leaves_that_collection_out(tmp_path: Path) -> None:
    """An older version accepted it: that entry is set aside with its fix, the others are read."""
    path = tmp_path / "index.yml"
    text = "collections:\n  x:\n    path: /y\n    pattern: '**/*.py['\n  ok:\n    path: /z\n"
    path.write_text(text)
    config = IndexConfig.load(path)
    assert list(config.collections()) == ["ok"]
    assert config.refused()["x"].message == (
        "collection 'x' is skipped: its mask '**/*.py[' is no longer accepted (a '[' that no ']' closes "
        "(write '\\[' for the character itself)); give it a valid one: qmd-daemon collection add /y "
        "--mask 'GLOBS'"
    )
    assert path.read_text() == text
    path.write_text("collections:\n  x:\n    path: /y\n    pattern: '**/*.[ch];**/\\[x'\n")
    assert IndexConfig.load(path).collections()["x"].pattern == "**/*.[ch];**/\\[x"
    assert IndexConfig.load(path).refused() == {}


def test_missing_file_is_empty_config(tmp_path: Path) -> None:
    assert IndexConfig.load(tmp_path / "none.yml").collections() == {}


EDIT = """
import sys
from pathlib import Path
from qmd_daemon.config import IndexConfig
with IndexConfig.editing(Path(sys.argv[1])) as config:
    config.set_models({f"key_{sys.argv[2]}": sys.argv[2]})
"""


def test_concurrent_edits_from_processes_all_land_and_leave_only_index_yml(tmp_path: Path) -> None:
    # the edit lock is a file beside index.yml (no fcntl on a folder: Windows has none); it must
    # exclude real processes (each load-change-save whole) and be gone afterwards
    path = tmp_path / "config" / "index.yml"
    procs = [
        subprocess.Popen([sys.executable, "-c", EDIT, str(path), str(i)], stderr=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert IndexConfig.load(path).models() == {f"key_{i}": str(i) for i in range(8)}
    assert sorted(p.name for p in path.parent.iterdir()) == ["index.yml"]


@pytest.mark.parametrize(
    ("line", "key", "shown"),
    [
        ("device: quantum", "device", "'quantum'"),  # was read as auto
        ("device: off", "device", "False"),  # YAML's off: was auto too, not the cpu it seems to say
        ("embed: 5", "embed", "5"),  # was the default model, silently
        ("rerank: [a.gguf]", "rerank", "['a.gguf']"),
        ("expand: {path: a.gguf}", "expand", "{'path': 'a.gguf'}"),
    ],
)
def test_a_bad_device_or_model_reference_is_one_line(tmp_path: Path, line: str, key: str, shown: str) -> None:
    path = tmp_path / "index.yml"
    text = f"models:\n  profile: small\n  {line}\n"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        IndexConfig.load(path).models()
    message = str(info.value)
    assert message.startswith(f"{path}: models.{key} must be ") and "\n" not in message
    assert message.endswith(f", not {shown} (left untouched)")
    assert path.read_text() == text


def test_the_device_and_role_values_a_user_may_write_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "index.yml"
    path.write_text("models:\n  device: GPU\n  embed: /m/e.gguf\n  rerank: off\n  expand:\n")
    assert IndexConfig.load(path).models() == {
        "device": "GPU", "embed": "/m/e.gguf", "rerank": False, "expand": None,
    }
    for device in ("cpu", "auto"):
        path.write_text(f"models:\n  device: {device}\n")
        assert IndexConfig.load(path).models() == {"device": device}


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("quantization: int4", "models.quantization must be one of float, int8, not 'int4'"),
        ("static: maybe", "models.static must be on or off, not 'maybe'"),
    ],
)
def test_a_bad_models_value_names_the_full_path(home: Path, tmp_path: Path, line: str, error: str) -> None:
    # these said `index.yml: ...` or no file at all, where every other index.yml error names its path
    project = write_tree(tmp_path / "proj", {"a.py": "def x():\n    return 1\n"})
    run_cli("collection", "add", str(project), env_home=home, check=True)
    path = home / "config" / "index.yml"
    path.write_text(path.read_text() + f"models:\n  {line}\n")
    for command in (("status",), ("search", "x")):
        proc = run_cli(*command, env_home=home)
        assert proc.returncode != 0
        assert proc.stderr.strip().splitlines() == [f"qmd-daemon: error: {path}: {error} (left untouched)"]


def test_a_bad_device_stops_a_command_with_one_line(home: Path) -> None:
    path = home / "config" / "index.yml"
    path.parent.mkdir(parents=True)
    path.write_text("models:\n  device: quantum\n")
    proc = run_cli("status", env_home=home)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"qmd-daemon: error: {path}: models.device must be one of auto, cpu, gpu, not 'quantum' "
        "(left untouched)"
    ]
    assert path.read_text() == "models:\n  device: quantum\n"


def test_a_pending_removal_is_written_so_an_older_version_skips_it(tmp_path: Path) -> None:
    """Versions before shared-index listings read `removing:` entries that are a bare id and
    finish them by deleting the rows, other homes' listings or not; a mapping they skip. A bare
    id an older version wrote is still read (and finished) by this one."""
    path = tmp_path / "index.yml"
    path.write_text("removing: {repo-old: 7}\n", encoding="utf-8")
    with IndexConfig.editing(path) as config:
        assert config.removing() == {"repo-old": (7, False)}
        config.set_removing("repo-app", 9, purge=False)
    raw = IndexConfig.load(path).raw["removing"]
    assert raw == {"repo-old": {"id": 7, "purge": False}, "repo-app": {"id": 9, "purge": False}}
