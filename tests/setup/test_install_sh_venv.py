"""The issue's acceptance run: in a temporary HOME, `install.sh --semantic-retrieval yes` with the
small profile creates (and owns) a real virtual environment, leaves a working `ai-search`, the
skill and the hook files; `--semantic-retrieval no` afterwards leaves nothing the setup created.

No network here, so the venv's real `pip install` installs a wheel of this checkout built by the
test (`--package-spec`, with --no-index --no-deps), and the test seam QMD_SETUP_VENV_EXTRA_SITE
lends the fresh venv this test environment's already-installed dependencies (a .pth line).
Everything else is the production path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

import yaml

from tests.setup.conftest import build_wheel, listing, run_install


def test_yes_then_no_with_an_owned_virtual_environment(fake_home, tmp_path):
    home = Path(fake_home["HOME"])
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "retry.py").write_text(
        'def retry_with_backoff(call, attempts=3):\n    """Retry a failed call, doubling the delay."""\n'
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    env = dict(fake_home, QMD_SETUP_VENV_EXTRA_SITE=sysconfig.get_paths()["purelib"])
    before = listing(home)
    proc = run_install(
        env,
        "--semantic-retrieval",
        "yes",
        "--profile",
        "small",
        "--package-spec",
        str(build_wheel(tmp_path)),
        "--pip-arg=--no-index",
        "--pip-arg=--no-deps",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    venv = home / ".qmd/data/venv"
    state = json.loads((home / ".qmd/config/install.json").read_text())
    assert state["owned_package"] is True and state["python_env"] == str(venv)
    assert (venv / "bin/python").exists()
    for path in (
        ".claude/skills/semantic-search/SKILL.md",
        ".agents/skills/semantic-search/SKILL.md",
        ".qmd/data/hooks/qmd-session-start.sh",
        ".qmd/data/hooks/qmd-session-start.ps1",
    ):
        assert (home / path).is_file(), path
    ai_search = home / ".local/bin/ai-search"
    assert str(venv) in ai_search.read_text()

    search = subprocess.run(
        [str(ai_search), "--json", "--repo", str(repo), "retry a failed call with backoff"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=repo,
    )
    assert search.returncode == 0, search.stderr
    hits = json.loads(search.stdout)
    assert hits and hits[0]["path"] == "retry.py"
    daemon = json.loads((home / ".qmd/state/daemon.json").read_text())

    proc = run_install(env, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stop the running daemon" in proc.stdout
    with_pid_gone = subprocess.run(["kill", "-0", str(daemon["pid"])], capture_output=True)
    assert with_pid_gone.returncode != 0
    # What remains is only what *using* ai-search made (its index, daemon state, the collection it
    # registered in index.yml); nothing the setup created.
    usage = (".qmd/cache", ".qmd/state", ".qmd/config")
    after = {k: v for k, v in listing(home, skip=usage).items() if k != ".qmd"}
    assert after == {k: v for k, v in before.items() if not k.startswith(usage) and k != ".qmd"}
    assert not (home / ".qmd/data").exists()
    assert sorted(p.name for p in (home / ".qmd/config").iterdir()) == ["index.yml"]
    config = yaml.safe_load((home / ".qmd/config/index.yml").read_text())
    assert "models" not in config and list(config) == ["collections"]
    assert not venv.exists()
    assert not os.path.exists(home / ".local/bin/ai-search")


def test_a_failure_after_the_environment_was_built_keeps_it_for_the_retry(fake_home, tmp_path):
    home = Path(fake_home["HOME"])
    env = dict(fake_home, QMD_SETUP_VENV_EXTRA_SITE=sysconfig.get_paths()["purelib"])
    wheel = str(build_wheel(tmp_path))
    args = ("--semantic-retrieval", "yes", "--profile", "small", "--package-spec", wheel,
            "--pip-arg=--no-index", "--pip-arg=--no-deps")
    proc = run_install(dict(env, QMD_SETUP_FAIL_AFTER="models"), *args)
    assert proc.returncode == 1
    venv = home / ".qmd/data/venv"
    assert f"kept the environment {venv}" in proc.stderr
    assert (venv / "bin/python").exists()
    assert not (home / ".claude").exists()  # everything else was rolled back
    state = json.loads((home / ".qmd/config/install.json").read_text())
    assert (state["selection"], state["owned_package"], state["python_env"]) == ("no", True, str(venv))

    retry = run_install(env, *args)  # reuses it: an update, not a second build
    assert retry.returncode == 0, retry.stdout + retry.stderr
    assert f"update qmd-daemon in {venv}" in retry.stdout
    proc = run_install(env, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert not venv.exists() and not (home / ".qmd/data").exists()
