from pathlib import Path

import pytest

from qmd_daemon.config import CollectionConfig, IndexConfig
from qmd_daemon.errors import ConfigError


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


def test_missing_file_is_empty_config(tmp_path: Path) -> None:
    assert IndexConfig.load(tmp_path / "none.yml").collections() == {}
