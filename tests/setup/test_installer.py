"""install.sh end to end in a temporary HOME: Yes, No, dry run, ownership, idempotence, rollback."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import yaml

from tests.setup.conftest import listing, run_install, yes_small

QUESTION = "Enable local QMD search models (Qwen3 embedding, Qwen3 reranker, QMD query expansion)?"
QUESTION_SMALL = (
    "Enable local QMD search models (small offline profile: MiniLM embedding, Gemma 3 270M reranker "
    "and query expansion)?"
)


def _home(env: dict[str, str]) -> Path:
    return Path(env["HOME"])


def _state(env: dict[str, str]) -> dict:
    return json.loads((_home(env) / ".qmd/config/install.json").read_text())


def _seed_user_files(home: Path) -> None:
    """Things a user had before the setup ever ran: they must come out of every run unchanged."""
    (home / ".claude/skills/other").mkdir(parents=True)
    (home / ".claude/skills/other/SKILL.md").write_text("---\nname: other\ndescription: x\n---\n")
    (home / ".claude/CLAUDE.md").write_text("# My rules\n\nAlways write tests.\n")
    (home / ".claude/settings.json").write_text(
        json.dumps(
            {
                "model": "opus",
                "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]},
            },
            indent=2,
        )
    )
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text('model = "gpt-5"\n')
    (home / ".local/bin").mkdir(parents=True)
    (home / ".local/bin/ai-search").write_text("#!/bin/sh\necho my own ai-search\n")
    config = home / ".qmd/config"
    config.mkdir(parents=True)
    (config / "index.yml").write_text(
        "collections:\n  notes:\n    path: /tmp/notes\nmodels:\n  embed: /opt/my-embedder.gguf\ncustom: 1\n"
    )


def test_yes_installs_skill_hooks_wrappers_instruction_and_state(fake_home):
    proc = yes_small(fake_home)
    assert proc.returncode == 0, proc.stderr
    home = _home(fake_home)
    for skills in (".claude/skills", ".agents/skills"):  # Claude Code's and Codex's user skills
        skill = (home / skills / "semantic-search/SKILL.md").read_text()
        assert skill.startswith(
            '---\nname: semantic-search\ndescription: "MUST use before reading or grepping'
        )
    settings = json.loads((home / ".claude/settings.json").read_text())
    codex = json.loads((home / ".codex/hooks.json").read_text())
    for hooks in (settings["hooks"], codex["hooks"]):
        (group,) = hooks["SessionStart"]
        assert "qmd-session-start.sh" in group["hooks"][0]["command"]
        assert group["matcher"].split("|") == ["startup", "resume", "clear"]
        assert "UserPromptSubmit" not in hooks  # auto-retrieve is opt-in
    # a command the setup puts on PATH, not the skill's name (no program of that name exists)
    instruction = (home / ".claude/CLAUDE.md").read_text()
    assert 'first run `ai-search "' in instruction and "run `semantic-search`" not in instruction
    assert (home / ".local/bin/ai-search").is_file()
    assert "<!-- qmd-daemon:semantic-search:begin -->" in (home / ".codex/AGENTS.md").read_text()
    hook = (home / ".qmd/data/hooks/qmd-session-start.sh").read_text()
    assert f"QMD_WARM_DEFAULT={shlex.quote(str(home / '.local/bin/qmd-warm'))}" in hook
    for name in ("ai-search", "qmd-warm", "qmd-daemon"):
        assert (home / ".local/bin" / name).stat().st_mode & 0o111
    state = _state(fake_home)
    assert {k: state[k] for k in ("selection", "device", "profile", "owned_package", "owned_models")} == {
        "selection": "yes",
        "device": "cpu",
        "profile": "small",
        "owned_package": False,  # --python-env: the setup did not create it
        "owned_models": [],  # the small profile was already built in the shared cache
    }
    assert state["version"]
    assert yaml.safe_load((home / ".qmd/config/index.yml").read_text()) == {
        "models": {"profile": "small", "device": "cpu"}
    }
    # nothing stores QMD_DAEMON_HOME or QMD_MODELS_DIR: a daemon an agent starts without them would
    # look for the index and models elsewhere (and build the models again), so the summary says so
    (placed,) = [line for line in proc.stdout.splitlines() if "this setup ran with" in line]
    assert placed.startswith("next: this setup ran with QMD_DAEMON_HOME, QMD_MODELS_DIR set:"), placed


def test_no_after_yes_leaves_nothing_the_setup_created(fake_home):
    home = _home(fake_home)
    before = listing(home)
    assert yes_small(fake_home).returncode == 0
    assert listing(home) != before
    proc = run_install(fake_home, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert listing(home) == before


def test_ownership_preexisting_files_survive_yes_then_no(fake_home):
    home = _home(fake_home)
    _seed_user_files(home)
    before = listing(home)
    proc = yes_small(fake_home)
    assert proc.returncode == 0, proc.stderr
    # merged, not replaced
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert settings["model"] == "opus"
    assert [g["hooks"][0]["command"] for g in settings["hooks"]["SessionStart"]][0] == "echo mine"
    assert (home / ".local/bin/ai-search").read_text() == "#!/bin/sh\necho my own ai-search\n"  # kept
    config = yaml.safe_load((home / ".qmd/config/index.yml").read_text())
    assert config["custom"] == 1 and config["collections"]["notes"]["path"] == "/tmp/notes"
    assert config["models"] == {"embed": "/opt/my-embedder.gguf", "profile": "small", "device": "cpu"}
    assert "Always write tests." in (home / ".claude/CLAUDE.md").read_text()
    proc = run_install(fake_home, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert listing(home) == before  # byte for byte
    assert Path(fake_home["QMD_MODELS_DIR"], "all-MiniLM-L6-v2-q8_0.gguf").exists()  # not owned: kept


def test_rerun_is_idempotent(fake_home):
    home = _home(fake_home)
    assert yes_small(fake_home).returncode == 0
    first = listing(home)
    proc = yes_small(fake_home)
    assert proc.returncode == 0, proc.stderr
    assert listing(home) == first
    settings = json.loads((home / ".claude/settings.json").read_text())
    assert len(settings["hooks"]["SessionStart"]) == 1


def test_dry_run_prints_steps_and_changes_nothing(fake_home):
    home = _home(fake_home)
    _seed_user_files(home)
    before = listing(home)
    for args in (
        ("--semantic-retrieval", "yes", "--profile", "small"),
        ("--semantic-retrieval", "auto", "--profile", "small"),
        ("--semantic-retrieval", "no"),
    ):
        proc = run_install(fake_home, *args, "--dry-run")
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("qmd-daemon setup:") and "dry run" in lines[0]
        assert all(line.startswith(("DRYRUN ", "  ")) for line in lines[1:]), proc.stdout
        assert listing(home) == before
    yes = run_install(fake_home, "--semantic-retrieval", "yes", "--profile", "small", "--dry-run").stdout
    assert "DRYRUN create the virtual environment" in yes
    assert "DRYRUN install the semantic-search skill into" in yes
    # the models step names what it writes, not JSON nulls for the keys it takes out (first-hour-9)
    models = next(line for line in yes.splitlines() if line.startswith("DRYRUN write models:"))
    assert "null" not in models and '{"profile": "small", "device": "gpu|cpu"}' in models, models
    assert "every role on: an earlier Auto's expand, rerank, static, deep, auto keys go" in models
    # with something installed, No's dry run lists the removals
    assert yes_small(fake_home).returncode == 0
    installed = listing(home)
    no = run_install(fake_home, "--semantic-retrieval", "no", "--dry-run")
    assert "DRYRUN remove the qmd-daemon hook entries from" in no.stdout
    assert listing(home) == installed


def test_failure_midway_rolls_back_everything(fake_home):
    home = _home(fake_home)
    _seed_user_files(home)
    before = listing(home)
    env = dict(fake_home, QMD_SETUP_FAIL_AFTER="hooks-codex")  # test seam: fail after that step
    proc = yes_small(env)
    assert proc.returncode == 1
    assert "injected failure after step 'hooks-codex'" in proc.stderr
    assert "rolled back" in proc.stderr
    assert listing(home) == before


def test_failed_rerun_keeps_the_previous_install(fake_home):
    home = _home(fake_home)
    assert yes_small(fake_home).returncode == 0
    installed = listing(home)
    proc = yes_small(dict(fake_home, QMD_SETUP_FAIL_AFTER="instruction-claude"), "--auto-retrieve")
    assert proc.returncode == 1
    assert listing(home) == installed


def test_unparsable_index_yml_aborts_without_writing(fake_home):
    home = _home(fake_home)
    (home / ".qmd/config").mkdir(parents=True)
    (home / ".qmd/config/index.yml").write_text("collections: [unclosed\n")
    before = listing(home)
    proc = yes_small(fake_home)
    assert proc.returncode == 1
    assert "cannot parse" in proc.stderr
    assert listing(home) == before


def test_yes_without_prerequisites_aborts_before_any_change(fake_home, tmp_path):
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\necho 3.9\n")
    old.chmod(0o755)
    home = _home(fake_home)
    before = listing(home)
    env = dict(fake_home, QMD_SETUP_BASE_PYTHON=str(old))  # the interpreter that would create the venv
    proc = run_install(env, "--semantic-retrieval", "yes", "--profile", "small")
    assert proc.returncode == 2
    assert "Python 3.11 or newer is required" in proc.stderr
    assert listing(home) == before
    proc = run_install(env, "--semantic-retrieval", "auto", "--profile", "small")
    assert proc.returncode == 0, proc.stderr
    assert "Auto: unsuitable: Python 3.11 or newer is required" in proc.stdout
    assert _state(fake_home)["selection"] == "no"


def test_stored_selection_is_the_default_of_the_question(fake_home):
    assert yes_small(fake_home).returncode == 0
    proc = run_install(fake_home, "--python-env", fake_home["QMD_PYTHON"], input="\n")  # Enter
    assert proc.returncode == 0, proc.stderr
    assert f"{QUESTION_SMALL} [Y/n/a]" in proc.stdout  # the stored profile's models are named
    assert "qmd-daemon setup: selection yes" in proc.stdout


def test_a_piped_answer_is_honoured_and_the_prompt_says_what_no_means(fake_home):
    proc = run_install(
        fake_home, "--profile", "small", "--python-env", fake_home["QMD_PYTHON"], input="y\n"
    )  # echo y | ./install.sh
    assert proc.returncode == 0, proc.stderr
    assert "No installs none of them (no skill, no hooks)" in proc.stdout
    # the piped answer shows where it was read; the question names the models --profile small
    # installs (it named the Qwen3 set, which that run never downloads)
    assert f"{QUESTION_SMALL} [y/N/a] y\n" in proc.stdout and "Qwen3" not in proc.stdout
    assert "qmd-daemon setup: selection yes, profile small" in proc.stdout
    assert _state(fake_home)["selection"] == "yes"
    assert (_home(fake_home) / ".claude/skills/semantic-search/SKILL.md").is_file()


def test_an_invalid_answer_asks_again_and_never_becomes_no(fake_home):
    home = _home(fake_home)
    before = listing(home)
    proc = run_install(fake_home, "--python-env", fake_home["QMD_PYTHON"], input="sure\nmaybe\n")
    assert proc.returncode == 2
    assert proc.stdout.count(QUESTION) == 3  # asked, asked again twice, then the input ended
    assert "'sure' is not an answer" in proc.stdout
    assert proc.stderr.strip() == (
        "install: error: no answer on standard input; nothing was changed "
        "(pass --semantic-retrieval yes|no|auto)"
    )
    assert listing(home) == before


def test_no_input_at_all_is_refused_with_a_hint(fake_home):
    proc = run_install(fake_home)  # stdin /dev/null, no --semantic-retrieval
    assert proc.returncode == 2
    assert "--semantic-retrieval yes|no|auto" in proc.stderr
    assert "selection no" not in proc.stdout
    # --help said "default: ask on a terminal, else the stored selection, else no": a pipe is
    # asked too, and no input is this refusal, not a No
    usage = " ".join(run_install(fake_home, "--help").stdout.split())
    assert "ask on a terminal" not in usage and "no input at all stops with exit 2" in usage


def test_auto_pass_continues_as_yes(fake_home):
    env = dict(fake_home, QMD_BENCHMARK_MAX_EMBED_MINUTES="100000")  # any rate passes: 20,000 chunks
    proc = run_install(
        env, "--semantic-retrieval", "auto", "--profile", "small", "--python-env", fake_home["QMD_PYTHON"]
    )
    assert proc.returncode == 0, proc.stderr
    rows = [
        json.loads(line.strip())
        for line in proc.stdout.split("benchmark summary:")[1].splitlines()[1:]
        if line.strip().startswith("{")
    ]
    assert rows and rows[0]["device"] == "cpu" and rows[0]["passed"] is True
    assert set(rows[0]) >= {"device", "querySeconds", "chunksPerSecond", "embedMinutes", "roles", "passed"}
    state = _state(fake_home)
    assert (state["selection"], state["profile"], state["device"]) == ("yes", "small", "cpu")
    # the choice per role, and why, in one line; recorded in the models block that status shows
    decision = [ln for ln in proc.stdout.splitlines() if ln.startswith("Auto: small on cpu: static vectors ")]
    assert len(decision) == 1 and "continuing as Yes" in decision[0], proc.stdout
    assert "; deep vectors on (20,000 chunks in " in decision[0]
    models = yaml.safe_load((_home(fake_home) / ".qmd/config/index.yml").read_text())["models"]
    assert {models["rerank"], models["expand"]} <= {"on", "off"} and models["auto"].startswith("small on cpu")
    assert "deep" not in models  # the deep pass passed: no switch
    client = str(Path(fake_home["QMD_PYTHON"]).parent / "qmd-daemon")
    status = subprocess.run([client, "status"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert f"chosen by the installer's Auto: {models['auto']}" in status.stdout, status.stderr
    assert (_home(fake_home) / ".claude/skills/semantic-search/SKILL.md").exists()
    assert not list(Path(fake_home["TMPDIR"]).glob("qmd-bench-*"))  # temporary index removed


def test_auto_static_tier_alone_continues_as_yes_with_the_deep_pass_off(fake_home):
    """The old Auto asked the deep model to embed the index within the hour or installed nothing:
    a CPU at 9 chunks/s lost the static tier too. Now that CPU gets it, and the switch."""
    env = dict(fake_home, QMD_BENCHMARK_MAX_EMBED_MINUTES="0.001",  # no CPU embeds 20,000 chunks in 0.06 s
               QMD_BENCHMARK_MAX_STATIC_MINUTES="100000")  # the static tier passes however loaded the box
    proc = run_install(
        env, "--semantic-retrieval", "auto", "--profile", "small", "--python-env", fake_home["QMD_PYTHON"]
    )
    assert proc.returncode == 0, proc.stderr
    auto_lines = proc.stdout.splitlines()
    decision = [ln for ln in auto_lines if ln.startswith("Auto: small on cpu: static vectors on ")]
    assert len(decision) == 1 and "continuing as Yes" in decision[0], proc.stdout
    assert "; deep vectors off (20,000 chunks would take " in decision[0]
    assert "no device passed" not in proc.stdout
    assert _state(fake_home)["selection"] == "yes"
    models = yaml.safe_load((_home(fake_home) / ".qmd/config/index.yml").read_text())["models"]
    assert models["deep"] == "off" and models["auto"] == decision[0][len("Auto: "):].split("; continuing")[0]
    assert "write models: {" in proc.stdout and '"deep": "off"' in proc.stdout
    assert (_home(fake_home) / ".claude/skills/semantic-search/SKILL.md").exists()
    client = str(Path(fake_home["QMD_PYTHON"]).parent / "qmd-daemon")
    status = subprocess.run([client, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert "deep vectors: switched off (models: {deep: off})" in status.stdout, status.stderr
    # Yes later switches the deep pass back on: the key goes with Auto's others
    again = run_install(env, "--semantic-retrieval", "yes", "--profile", "small",
                        "--python-env", fake_home["QMD_PYTHON"])
    assert again.returncode == 0, again.stderr
    models = yaml.safe_load((_home(fake_home) / ".qmd/config/index.yml").read_text())["models"]
    assert "deep" not in models and "auto" not in models


def test_auto_static_tier_failed_is_switched_off_as_its_line_says(fake_home):
    """The Auto line said `static vectors off (...)` when the static pass would not cover the index
    in time, but index.yml kept the tier on: every embed still ran that pass before the deep one,
    and `status` contradicted the recorded choice. The failed tier is now written off."""
    env = dict(fake_home, QMD_BENCHMARK_MAX_EMBED_MINUTES="100000",  # any rate passes: 20,000 chunks
               QMD_BENCHMARK_MAX_STATIC_MINUTES="0.00001")  # no CPU pools 20,000 chunks in 0.6 ms
    proc = run_install(
        env, "--semantic-retrieval", "auto", "--profile", "small", "--python-env", fake_home["QMD_PYTHON"]
    )
    assert proc.returncode == 0, proc.stderr
    said = "Auto: small on cpu: static vectors off "
    decision = [ln for ln in proc.stdout.splitlines() if ln.startswith(said)]
    assert len(decision) == 1 and "; deep vectors on (" in decision[0], proc.stdout
    models = yaml.safe_load((_home(fake_home) / ".qmd/config/index.yml").read_text())["models"]
    assert models["static"] == "off" and "deep" not in models
    assert "(other keys kept; deep passed: an earlier deep: off goes)" in proc.stdout
    client = str(Path(fake_home["QMD_PYTHON"]).parent / "qmd-daemon")
    status = subprocess.run([client, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert "static vectors: unavailable, switched off (models: {static: off})" in status.stdout, status.stderr


def test_auto_fail_stores_no_and_installs_nothing(fake_home):
    home = _home(fake_home)
    before = listing(home)
    env = dict(fake_home, QMD_BENCHMARK_MAX_EMBED_MINUTES="0.001",  # no CPU embeds 20,000 chunks in 0.06 s
               QMD_BENCHMARK_MAX_STATIC_MINUTES="0.001")  # nor pools them
    proc = run_install(
        env, "--semantic-retrieval", "auto", "--profile", "small", "--python-env", fake_home["QMD_PYTHON"]
    )
    assert proc.returncode == 0, proc.stderr
    assert "no device passed" in proc.stdout
    assert '"passed": false' in proc.stdout.split("benchmark summary:")[1]
    # what to do next, not a bare "done" after nothing was installed (first-hour-9)
    anyway = "next: to install anyway, every role on: ./install.sh --semantic-retrieval yes --profile small"
    assert anyway in proc.stdout
    # each device's result once as it comes (it was printed twice in a row), then in the summary
    assert (proc.stderr + proc.stdout.split("benchmark summary:")[0]).count('"querySeconds"') == 1
    # each step as it starts: the benchmark runs minutes on a slow machine and used to say nothing
    steps = proc.stderr.split("benchmark: small models on cpu")[1].split('"querySeconds"')[0]
    for step in ("loading the models", "static vectors for", "embedding"):
        assert step in steps, proc.stderr
    assert "timed queries" not in steps  # a device that installs nothing needs no query timed
    assert _state(fake_home)["selection"] == "no"
    after = listing(home)
    assert set(after) - set(before) == {".qmd", ".qmd/config", ".qmd/config/install.json"}


def test_yes_without_the_hub_falls_back_to_the_small_profile(fake_home):
    # fake_home has HF_HUB_OFFLINE=1 and an empty HF_HOME: the Qwen3 models cannot be downloaded
    proc = run_install(fake_home, "--semantic-retrieval", "yes", "--python-env", fake_home["QMD_PYTHON"])
    assert proc.returncode == 0, proc.stderr
    assert "continuing with the offline small profile" in proc.stdout
    assert "qmd-daemon pull" not in proc.stdout + proc.stderr
    state = _state(fake_home)
    assert (state["selection"], state["profile"]) == ("yes", "small")
    config = yaml.safe_load((_home(fake_home) / ".qmd/config/index.yml").read_text())
    assert config["models"]["profile"] == "small"


def test_an_explicit_qwen3_without_the_hub_fails_naming_a_fix_that_works(fake_home):
    home = _home(fake_home)
    before = listing(home)
    python_env = ("--python-env", fake_home["QMD_PYTHON"])
    proc = run_install(fake_home, "--semantic-retrieval", "yes", "--profile", "qwen3", *python_env)
    assert proc.returncode == 1
    assert "use --profile small (offline), or set HF_ENDPOINT" in proc.stderr
    assert listing(home) == before


USER_SETTINGS = (  # a hand-written style json.dumps would not reproduce: inline objects, 4 spaces
    '{\n    "model": "opus",\n    "permissions": {"allow": ["Bash(ls:*)", "Read"]},\n'
    '    "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}\n}'
)


def test_uninstall_gives_settings_json_back_byte_for_byte(fake_home):
    settings = _home(fake_home) / ".claude/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS)
    assert yes_small(fake_home).returncode == 0
    assert yes_small(fake_home, "--auto-retrieve").returncode == 0  # a second edit of ours
    assert "qmd-auto-retrieve" in settings.read_text()
    proc = run_install(fake_home, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert settings.read_text() == USER_SETTINGS


def test_uninstall_after_the_user_edited_settings_keeps_their_edit(fake_home):
    settings = _home(fake_home) / ".claude/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS)
    assert yes_small(fake_home).returncode == 0
    data = json.loads(settings.read_text())
    data["theme"] = "dark"
    settings.write_text(json.dumps(data, indent=4))
    assert run_install(fake_home, "--semantic-retrieval", "no").returncode == 0
    after = json.loads(settings.read_text())
    assert after == {**json.loads(USER_SETTINGS), "theme": "dark"}
    assert settings.read_text().startswith('{\n    "model"')  # their indentation


def test_codex_skill_moves_from_the_old_folder_and_the_summary_names_the_trust_step(fake_home):
    home = _home(fake_home)
    old = home / ".codex/skills/semantic-search/SKILL.md"  # where earlier setups put it
    old.parent.mkdir(parents=True)
    old.write_text("old copy\n")
    state = home / ".qmd/config/install.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"selection": "yes", "created_files": [str(old)]}))
    proc = yes_small(fake_home)
    assert proc.returncode == 0, proc.stderr
    assert not old.exists() and (home / ".agents/skills/semantic-search/SKILL.md").is_file()
    assert "next: Codex runs a new or changed hook only after you trust it" in proc.stdout
    assert "/hooks" in proc.stdout


def test_no_removes_the_small_profile_it_built_with_its_downloads(fake_home, tmp_path):
    models = tmp_path / "models"  # nothing built yet: this run builds (and owns) all of it
    env = dict(fake_home, QMD_MODELS_DIR=str(models))
    assert yes_small(env).returncode == 0
    assert (models / "downloads").is_dir() and (models / "all-MiniLM-L6-v2-q8_0.gguf").is_file()
    assert str(models / "downloads") in _state(env)["owned_models"]
    proc = run_install(env, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert not models.exists()


def test_no_stops_the_daemon_without_telling_a_stranger_the_token(fake_home):
    # review finding: the uninstall POSTed the state file's token to its port whenever the pid was
    # alive; a pid can be reused and the port taken over by any program
    import subprocess
    import sys

    from qmd_daemon.daemon.state import DaemonState, write_state
    from tests.daemon.support import Stranger

    token = "tok3n-" + "u" * 40
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the reused pid
    stranger = Stranger()
    try:
        state = DaemonState(port=stranger.port, token=token, pid=alive.pid, version="0", started_at=0)
        write_state(Path(fake_home["QMD_DAEMON_HOME"]) / "state", state)
        proc = run_install(fake_home, "--semantic-retrieval", "no")
        assert alive.poll() is None, "the installer signalled a process that is not the daemon"
    finally:
        stranger.close()
        alive.kill()
        alive.wait()
    assert proc.returncode == 0, proc.stderr
    assert stranger.received and token.encode() not in stranger.received
    assert f"pid {alive.pid} is not a running daemon (a state file left behind): left alone" in proc.stdout


def test_the_setup_says_when_the_daemon_outlives_its_stop(fake_home):
    """A daemon holding its lock that neither takes /shutdown nor SIGTERM within 10 s each (one
    from before the embed job's yield to shutdown, finishing its batch): the run says it goes on
    by itself rather than leaving 'stop the running daemon' as if it were done."""
    import subprocess
    import sys

    from qmd_daemon.daemon.state import DaemonState, write_state
    from tests.daemon.support import Stranger

    state_dir = Path(fake_home["QMD_DAEMON_HOME"]) / "state"
    holder = (
        "import signal, sys, time; from pathlib import Path; from qmd_daemon.locks import file_lock;"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); lock = file_lock(Path(sys.argv[1]));"
        "lock.acquire(); print('held', flush=True); time.sleep(120)"
    )
    busy = subprocess.Popen(
        [sys.executable, "-c", holder, str(state_dir / "daemon.lock")], stdout=subprocess.PIPE, text=True
    )
    stranger = Stranger(silent=True)
    try:
        assert busy.stdout is not None and busy.stdout.readline() == "held\n"
        state = DaemonState(port=stranger.port, token="t" * 43, pid=busy.pid, version="0", started_at=0)
        write_state(state_dir, state)
        proc = run_install(fake_home, "--semantic-retrieval", "no")
    finally:
        stranger.close()
        busy.kill()
        busy.wait()
    assert proc.returncode == 0, proc.stderr
    assert f"the daemon (pid {busy.pid}) is still finishing a job: it exits by itself" in proc.stdout


def test_yes_stops_a_daemon_started_before_it(fake_home):
    """A re-run of Yes (an upgrade: pip install --upgrade into the same environment) left the
    running daemon serving the old code: it answered ai-search and re-chunked the index in the old
    format, until it idled out."""
    from tests.daemon.support import pid_running, start_serve, state_of, wait_for

    qmd_home = Path(fake_home["QMD_DAEMON_HOME"])
    daemon = start_serve(qmd_home, QMD_MODELS_DIR=fake_home["QMD_MODELS_DIR"])
    try:
        pid = wait_for(lambda: (state_of(qmd_home) or {}).get("pid"))
        proc = yes_small(fake_home)
        assert proc.returncode == 0, proc.stderr
        assert f"stop the running daemon (pid {pid})" in proc.stdout
        wait_for(lambda: not pid_running(pid), timeout=15)
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()


def test_a_device_past_its_time_limit_fails_with_that_reason(fake_home):
    """The benchmark's child is killed at QMD_BENCHMARK_DEVICE_TIMEOUT (its steps are read as
    they come, so the limit is kept by a timer rather than by subprocess.run)."""
    import subprocess
    import sys
    import time

    env = dict(fake_home, QMD_BENCHMARK_DEVICE_TIMEOUT="2")
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.setup.bench", "--profile", "small", "--device", "cpu"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    (row,) = json.loads(proc.stdout)["devices"]
    assert row["error"] == "timed out after 2 s" and row["passed"] is False
    assert time.monotonic() - started < 60
    assert not list(Path(fake_home["TMPDIR"]).glob("qmd-bench-*"))  # temporary index removed
