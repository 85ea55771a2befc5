"""A models folder this user cannot reach (QMD_MODELS_DIR behind a folder closed to them): the
models are unavailable, said in `status`, and search runs on keywords.

Tests run as root here, and root reads whatever the modes say, so the commands run as `nobody`
(setpriv) in a world-readable temp folder: real permission errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import python_as_another_user, write_tree

INDEX = """
import sys
import json
import shutil
from pathlib import Path
from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
engine = Engine()
config = IndexConfig.load(engine.settings.config_file)
config.set_models({"profile": "small"})
config.save()
engine.update([engine.add_collection(Path(sys.argv[1])).name])
"""


def test_an_unreachable_models_folder_leaves_keyword_search_and_status(shared_tmp: Path) -> None:
    # building the small profile's models made the folder (mkdir): EACCES failed every search and
    # `status` of the home with `Permission denied: <models folder>`, keyword-only ones included
    repo = write_tree(shared_tmp / "repo", {"ok.py": "def fine_word():\n    return 1\n"})
    closed = shared_tmp / "closed"
    closed.mkdir()
    closed.chmod(0)
    home = shared_tmp / "home"
    env = {"QMD_MODELS_DIR": str(closed / "models"), "QMD_PRELOAD": "0", "HF_HUB_OFFLINE": "1"}
    cli = ("-c", "from qmd_daemon.cli import main; main()")

    made = python_as_another_user(home, "-c", INDEX, str(repo), env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    found = python_as_another_user(home, *cli, "search", "fine_word", env=env)
    assert found.returncode == 0, found.stderr
    assert "ok.py" in found.stdout
    status = python_as_another_user(home, *cli, "status", env=env)
    assert status.returncode == 0, status.stderr
    reason = f"cannot use the models folder {closed / 'models'}: Permission denied"
    assert f"  embed: unavailable  {reason}" in status.stdout.splitlines()


def test_a_read_only_shared_models_folder_still_embeds(
    shared_tmp: Path, small_models: dict[str, Path]
) -> None:
    # QMD_MODELS_DIR shared read-only between homes (Settings.models_dir): the static tier's token rows
    # could not be written there (EACCES), and the OSError failed every `embed`: no deep vectors
    shared = shared_tmp / "models"
    shared.mkdir()
    models = {small_models["embed"], small_models["rerank"]}
    for model in models:
        shutil.copy(model, shared / model.name)
        (shared / model.name).chmod(0o644)
    repo = write_tree(shared_tmp / "repo", {"ok.py": "def fine_word():\n    return 1\n"})
    home = shared_tmp / "home"
    env = {"QMD_MODELS_DIR": str(shared), "QMD_PRELOAD": "0", "HF_HUB_OFFLINE": "1"}
    cli = ("-c", "from qmd_daemon.cli import main; main()")

    made = python_as_another_user(home, "-c", INDEX, str(repo), env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    embedded = python_as_another_user(home, *cli, "embed", env=env)
    assert embedded.returncode == 0, embedded.stderr[-2000:]
    assert f"static tier: cannot write its token rows to {shared / 'static'}" in embedded.stderr
    status = python_as_another_user(home, *cli, "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    vectors = json.loads(status.stdout)["vectors"]
    assert (vectors["pending"], vectors["embedded"]) == (0, 1), vectors
    assert {p.name for p in shared.iterdir()} == {m.name for m in models}, "nothing written there"


ROWS = """
import sys
from pathlib import Path
from qmd_daemon.models.static_table import TokenRows
rows = TokenRows(Path(sys.argv[1]), n_vocab=10, dim=4)
print(rows.merge_saved(), rows.merge_saved(), len(rows.ids))
"""


def test_token_rows_another_user_saved_in_a_shared_folder_are_left_alone(shared_tmp: Path) -> None:
    # a rows file another user's process saved (0600, theirs) in a models folder this user cannot
    # write: reading it fails, and removing it raised PermissionError out of every search's
    # take_saved_rows and every embed
    static = shared_tmp / "static"
    static.mkdir()
    theirs = static / "rows.npz"
    theirs.write_bytes(b"their rows")
    theirs.chmod(0o600)
    ran = python_as_another_user(shared_tmp / "home", "-c", ROWS, str(theirs))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == ["0", "0", "0"]
    assert ran.stderr.count("are unreadable") == 1, ran.stderr  # said once, not at every search
    assert theirs.read_bytes() == b"their rows"
