"""The files the setup puts into the agents' homes, each installable and removable on its own.

Ownership rules: JSON hook entries are ours when their command names one of our hook scripts;
instruction lines are ours between our markers; everything else (skill folders, wrapper scripts,
hook scripts) is ours only when install.json lists it as created by the setup.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

from clients._qmd_client import git_executable
from qmd_daemon.setup.journal import Journal, SetupError
from qmd_daemon.setup.paths import REPO_ROOT, SetupPaths

SKILL_NAME = "semantic-search"
SKILL_SOURCE = REPO_ROOT / "skills" / SKILL_NAME
HOOKS_SOURCE = REPO_ROOT / "hooks"
SESSION_HOOK = "qmd-session-start"
RETRIEVE_HOOK = "qmd-auto-retrieve"
OUR_HOOK_NAMES = (SESSION_HOOK, RETRIEVE_HOOK)
WRAPPERS = ("ai-search", "qmd-warm", "qmd-daemon")
WRAPPER_MARK = "qmd-daemon setup wrapper"

# Names the command: "run `semantic-search`" (a skill's name, no program) sent an agent that had
# not loaded the skill to a shell that answered "command not found", then to rg.
INSTRUCTION = (
    "For any code question whose identifiers are unknown, first run `ai-search \"the question in "
    "words\"` (the semantic-search skill: it lists the places that answer it, best first); use `rg` "
    "for known identifiers, or with a brief note if ai-search fails."
)
BEGIN = "<!-- qmd-daemon:semantic-search:begin -->"
END = "<!-- qmd-daemon:semantic-search:end -->"
_BLOCK_RE = re.compile(r"(\n?)" + re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)

GIT_BEGIN = "# >>> qmd-daemon post-commit >>>"
GIT_END = "# <<< qmd-daemon post-commit <<<"

WINDOWS = os.name == "nt"


# -- skill ---------------------------------------------------------------------------------------


def skill_targets(paths: SetupPaths) -> dict[str, Path]:
    return {
        "claude": paths.claude_dir / "skills" / SKILL_NAME,
        "codex": paths.codex_skills_dir / SKILL_NAME,
    }


def legacy_skill_target(paths: SetupPaths) -> Path:
    """Where earlier setups put the Codex skill; its files (when ours) go on Yes and on No."""
    return paths.codex_dir / "skills" / SKILL_NAME


def codex_trust_note(auto_retrieve: bool) -> str:
    """The next step for Codex: each hook we added needs the user's trust there (an auto-retrieve
    hook left untrusted never runs, and the line named only the SessionStart one)."""
    hooks = f"the {SESSION_HOOK} and {RETRIEVE_HOOK} hooks" if auto_retrieve else f"the {SESSION_HOOK} hook"
    return (
        "Codex runs a new or changed hook only after you trust it: start codex, open /hooks and trust "
        f"{hooks} (Claude Code needs no such step)"
    )


def install_skill(journal: Journal, target: Path, owned: set[str]) -> None:
    """Copy skills/semantic-search into `target`; a same-named folder we did not create is kept."""
    files = sorted(p for p in SKILL_SOURCE.rglob("*") if p.is_file())
    if target.exists() and str(target / "SKILL.md") not in owned and str(target) not in owned:
        journal.note(f"kept {target}: a skill of that name exists and the setup did not create it")
        return
    for src in files:
        journal.write_file(target / src.relative_to(SKILL_SOURCE), src.read_text(encoding="utf-8"))


# -- hook scripts --------------------------------------------------------------------------------


def hook_command(paths: SetupPaths, name: str, *, windows: bool = WINDOWS) -> str:
    if windows:
        script = paths.hooks_dir / f"{name}.ps1"
        return f'powershell -NoProfile -ExecutionPolicy Bypass -File "{script}"'
    return f"sh {shlex.quote(str(paths.hooks_dir / f'{name}.sh'))}"


# PowerShell takes the typographic single quotes as quotes too; doubled, each stands for itself
_PS_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")


def script_literal(value: str, ext: str) -> str:
    """VALUE as a string literal of a hook script's language, taken verbatim: a Windows path in a
    Python "..." is a syntax error (\\U starts an escape), and `$` or a backtick in a path would
    expand in a double-quoted shell or PowerShell string."""
    if ext == ".py":
        return repr(value)
    if ext == ".ps1":
        return "'" + _PS_QUOTES.sub(lambda m: m.group(0) * 2, value) + "'"
    return shlex.quote(value)


def install_hook_scripts(journal: Journal, paths: SetupPaths, python: Path, auto_retrieve: bool) -> None:
    """Copy the hook scripts to the data dir with the wrapper and interpreter paths filled in."""
    names = [SESSION_HOOK] + ([RETRIEVE_HOOK] if auto_retrieve else [])
    fills = {
        "QMD_WARM_DEFAULT": str(wrapper_path(paths, "qmd-warm")),
        "QMD_AI_SEARCH_DEFAULT": str(wrapper_path(paths, "ai-search")),
        "QMD_PYTHON_DEFAULT": str(python),
    }
    for name in names:
        for ext in (".sh", ".ps1", ".py"):
            src = HOOKS_SOURCE / f"{name}{ext}"
            if not src.exists():
                continue
            text = src.read_text(encoding="utf-8")
            for key, value in fills.items():
                literal = script_literal(value, ext)
                placeholder = rf'^(\$?{key}\s*=\s*)"[^"\n]*"'

                def fill(match: re.Match[str], value: str = literal) -> str:
                    return match.group(1) + value

                text = re.sub(placeholder, fill, text, flags=re.M)
            if ext == ".ps1":  # Windows PowerShell 5.1 reads a script without a BOM as ANSI
                text = "\ufeff" + text
            journal.write_file(paths.hooks_dir / src.name, text, mode=0o755)


# -- hook entries in settings.json (Claude Code) and hooks.json (Codex) --------------------------


def hook_files(paths: SetupPaths) -> dict[str, Path]:
    return {"claude": paths.claude_dir / "settings.json", "codex": paths.codex_dir / "hooks.json"}


def _parse_json(path: Path, text: str | None) -> dict[str, Any] | None:
    """TEXT (PATH's content; None: no such file) as a JSON object; {} for an empty file."""
    if text is None:
        return None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SetupError(f"cannot parse {path}: {exc}; fix or remove it (left untouched)") from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} must hold a JSON object (left untouched)")
    return data


def _dump_like(data: dict[str, Any], original: str | None) -> str:
    """JSON in the file's own style (indent unit, tabs, final newline), so a round trip is
    byte-identical for files json.dumps could have written."""
    indent: int | str | None = 2
    newline = True
    if original and original.strip():
        newline = original.endswith("\n")
        lines = original.strip().splitlines()
        leads = [ln[: len(ln) - len(ln.lstrip())] for ln in lines[1:] if ln.strip()]
        leads = [lead for lead in leads if lead]
        if len(lines) == 1:
            indent = None
        elif leads:
            unit = min(leads, key=len)
            indent = unit if "\t" in unit else len(unit)
    return json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


_OUR_COMMAND = re.compile(
    r"(^|[/\\])(" + "|".join(re.escape(n) for n in OUR_HOOK_NAMES) + r")\.(sh|ps1)['\"]?$"
)


def _is_ours(entry: Any) -> bool:
    """Only the commands `hook_command` writes: the script path ends the command."""
    return isinstance(entry, dict) and bool(_OUR_COMMAND.search(str(entry.get("command", "")).strip()))


def _strip_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    """`hooks` without our entries; groups and events left empty by that are dropped."""
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _is_ours(h)]
                if inner:
                    kept.append({**group, "hooks": inner})
                elif not any(_is_ours(h) for h in group["hooks"]):
                    kept.append(group)
            else:
                kept.append(group)
        if kept:
            out[event] = kept
    return out


def desired_hooks(paths: SetupPaths, auto_retrieve: bool, *, windows: bool = WINDOWS) -> dict[str, Any]:
    hooks: dict[str, Any] = {
        "SessionStart": [
            {
                # `clear` too: /clear starts a new conversation, often after a pause long enough
                # for the idle daemon to have exited (both agents send it as the event's source)
                "matcher": "startup|resume|clear",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(paths, SESSION_HOOK, windows=windows),
                        "timeout": 10,
                    }
                ],
            }
        ]
    }
    if auto_retrieve:
        hooks["UserPromptSubmit"] = [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(paths, RETRIEVE_HOOK, windows=windows),
                        "timeout": 10,
                    }
                ]
            }
        ]
    return hooks


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _without_ours_text(path: Path, text: str | None) -> str | None:
    """TEXT with our hook entries taken out; the very same text when it holds none."""
    data = _parse_json(path, text)
    if not data or not isinstance(data.get("hooks"), dict):
        return text
    hooks = _strip_ours(data["hooks"])
    if hooks == data["hooks"]:
        return text
    rest = dict(data)
    if hooks:
        rest["hooks"] = hooks
    else:
        rest.pop("hooks")
    return _dump_like(rest, text)


def install_hook_entries(
    journal: Journal, path: Path, wanted: dict[str, Any], record: dict[str, Any]
) -> None:
    """Merge our entries into PATH. RECORD (kept in install.json) holds the file as it was before
    our first edit and the hash of what we wrote, so No can give the user's bytes back exactly."""
    old = _read_text(path)
    base = dict(_parse_json(path, old) or {})
    hooks = _strip_ours(base.get("hooks") or {}) if isinstance(base.get("hooks") or {}, dict) else None
    if hooks is None:
        raise SetupError(f"{path}: 'hooks' must be an object (left untouched)")
    for event, groups in wanted.items():
        hooks[event] = list(hooks.get(event) or []) + groups
    base["hooks"] = hooks
    new = _dump_like(base, old)
    if not record or record.get("written") != _digest(old):  # first edit, or edited by the user since
        record["before"] = _without_ours_text(path, old)
    journal.write_file(path, new)
    record["written"] = _digest(new)


def remove_hook_entries(
    journal: Journal, path: Path, created_by_us: bool, record: dict[str, Any] | None = None
) -> None:
    """Take our entries out of PATH: the bytes from before the install when the file is still as
    we left it, else (the user edited it since) only our entries, in the file's own style."""
    current = _read_text(path)
    if record and current is not None and record.get("written") == _digest(current):
        before = record.get("before")
        if before is None:
            journal.remove_file(path)
        else:
            journal.write_file(path, before)
        return
    rest = _without_ours_text(path, current)
    if rest == current:
        return
    if created_by_us and rest is not None and not json.loads(rest):
        journal.remove_file(path)
    elif rest is not None:
        journal.write_file(path, rest)


# -- instruction line in CLAUDE.md / AGENTS.md ---------------------------------------------------


def instruction_files(paths: SetupPaths) -> dict[str, Path]:
    return {"claude": paths.claude_dir / "CLAUDE.md", "codex": paths.codex_dir / "AGENTS.md"}


def with_instruction(text: str) -> str:
    block = f"{BEGIN}\n{INSTRUCTION}\n{END}\n"
    if BEGIN in text:
        return _BLOCK_RE.sub(lambda m: m.group(1) + block, text, count=1)
    if not text:
        return block
    sep = "" if text.endswith("\n") else "\n"
    return f"{text}{sep}\n{block}"


def without_instruction(text: str) -> str:
    return _BLOCK_RE.sub("", text).rstrip("\n") + "\n" if BEGIN in text else text


def install_instruction(journal: Journal, path: Path) -> None:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    journal.write_file(path, with_instruction(old))


def remove_instruction(journal: Journal, path: Path, created_by_us: bool) -> None:
    if not path.exists():
        return
    old = path.read_text(encoding="utf-8")
    if BEGIN not in old:
        return
    new = without_instruction(old)
    if created_by_us and not new.strip():
        journal.remove_file(path)
    else:
        journal.write_file(path, new)


# -- wrapper scripts -----------------------------------------------------------------------------


def wrapper_path(paths: SetupPaths, name: str) -> Path:
    return paths.bin_dir / (f"{name}.cmd" if WINDOWS else name)


def wrapper_text(argv: list[str]) -> str:
    if WINDOWS:
        quoted = " ".join(f'"{a}"' for a in argv)
        return (
            f"@echo off\r\nrem {WRAPPER_MARK} (removed by install --semantic-retrieval no)\r\n{quoted} %*\r\n"
        )
    quoted = " ".join(shlex.quote(a) for a in argv)
    return (
        f'#!/bin/sh\n# {WRAPPER_MARK} (removed by install.sh --semantic-retrieval no)\nexec {quoted} "$@"\n'
    )


def install_wrapper(journal: Journal, paths: SetupPaths, name: str, argv: list[str], owned: set[str]) -> None:
    target = wrapper_path(paths, name)
    if target.exists() and str(target) not in owned and WRAPPER_MARK not in _read(target):
        journal.note(f"kept {target}: it exists and the setup did not create it")
        return
    journal.write_file(target, wrapper_text(argv), mode=0o755)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# -- optional git post-commit hook ---------------------------------------------------------------
#
# The hook file is the one git runs: core.hooksPath when set (relative to the work tree's top,
# `~` expanded), else the repository's hooks folder; git itself says which (`rev-parse
# --git-path`). Our lines are one marked block put right after the `#!` line (so a hook that ends
# in `exit` or `exec` still runs it); removal takes out exactly that block, so the user's hook
# comes back byte for byte. Only shell hooks (`#!` sh/bash/dash, or none) get the block; any
# other hook (python, a symlink, a non-executable file) is left alone with a one-line note.

SHELLS = ("sh", "bash", "dash")
_BLOCK_LINES_RE = re.compile(re.escape(GIT_BEGIN) + r"\n.*?" + re.escape(GIT_END) + r"\n", re.S)
_BLOCK_AT_END_RE = re.compile(r"\n" + re.escape(GIT_BEGIN) + r"\n.*?" + re.escape(GIT_END) + r"\Z", re.S)
_GIT_LOCAL_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _git(cwd: Path, *args: str) -> str | None:
    """`git -C cwd args` (rev-parse questions only), git found as the clients find it (stdlib, like
    the installer): never a `git` a relative PATH entry would pick out of the repository. Not
    through git_argv: its core.hooksPath override changes the answer to `--git-path hooks/...`,
    the very question asked, and rev-parse runs no hook and no fsmonitor."""
    git = git_executable()
    if git is None:
        return None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL_ENV}
    try:
        proc = subprocess.run(
            [git, "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and out else None


def git_hook_location(repo: Path) -> tuple[Path, bool]:
    """(the post-commit hook file git runs for REPO, whether it lies in the work tree itself)."""
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top is None:
        raise SetupError(f"--git-hook {repo}: not inside a git work tree (or git is not installed)")
    root = Path(top)
    rel = _git(root, "rev-parse", "--git-path", "hooks/post-commit")
    git_dir = _git(root, "rev-parse", "--absolute-git-dir")
    if rel is None or git_dir is None:
        raise SetupError(f"--git-hook {repo}: git cannot say where its hooks are")
    hook = Path(os.path.normpath(root / rel))  # rel is relative to root unless absolute
    common = _git(root, "rev-parse", "--git-common-dir")
    git_dirs = [Path(git_dir), Path(os.path.normpath(root / common)) if common else Path(git_dir)]
    in_tree = hook.is_relative_to(root) and not any(hook.is_relative_to(d) for d in git_dirs)
    return hook, in_tree


def git_hook_path(repo: Path) -> Path:
    return git_hook_location(repo)[0]


def git_hook_block(paths: SetupPaths) -> str:
    warm = shlex.quote(str(wrapper_path(paths, "qmd-warm")))
    logs = paths.state_dir / "logs"
    return (
        f"{GIT_BEGIN}\n"
        "# Added by the qmd-daemon setup (--git-hook); `install.sh --semantic-retrieval no` takes it out.\n"
        "# Refreshes this repository's collection in the background: never blocks or fails a commit.\n"
        "(\n"
        "  umask 077\n"
        "  root=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0\n"
        "  unset $(git rev-parse --local-env-vars 2>/dev/null)\n"
        f"  mkdir -p {shlex.quote(str(logs))} 2>/dev/null\n"
        f'  {warm} --repo "$root" </dev/null >>{shlex.quote(str(logs / "hooks.log"))} 2>&1 &\n'
        ") >/dev/null 2>&1 </dev/null || :\n"
        f"{GIT_END}\n"
    )


def hook_interpreter(text: str) -> str | None:
    """The program a `#!` line names (looking through `env`), or None when there is no `#!`."""
    if not text.startswith("#!"):
        return None
    words = text[2:].split("\n", 1)[0].split()
    name = os.path.basename(words[0]) if words else ""
    if name == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        name = os.path.basename(rest[0]) if rest else ""
    return name


def with_git_block(text: str, block: str) -> str:
    """`text` with `block` right after its `#!` line (or first, without one)."""
    if not text.startswith("#!"):
        return block + text
    end = text.find("\n")
    if end == -1:  # a lone `#!` line without a newline: the newline we add goes with the block
        return text + "\n" + block.rstrip("\n")
    return text[: end + 1] + block + text[end + 1 :]


def without_git_block(text: str) -> str:
    """The exact inverse of `with_git_block`."""
    match = _BLOCK_LINES_RE.search(text)
    if match:
        return text[: match.start()] + text[match.end() :]
    match = _BLOCK_AT_END_RE.search(text)
    return text[: match.start()] if match else text


def install_git_hook(journal: Journal, paths: SetupPaths, repo: Path) -> bool:
    """Add (or refresh) our block in REPO's post-commit hook; False when the hook was left alone."""
    path, in_tree = git_hook_location(repo)
    block = git_hook_block(paths)
    if in_tree:
        journal.note(f"note: {path} is inside the work tree; keep the qmd-daemon block out of commits")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        journal.note(f"left {path} alone: not a plain file (a hook manager's link?); no refresh hook added")
        return False
    if not path.exists():
        journal.write_file(path, "#!/bin/sh\n" + block, mode=0o755)
        return True
    try:
        old = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        old = "\0"
    program = hook_interpreter(old)
    mode = stat.S_IMODE(path.stat().st_mode)
    if "\0" in old or (program is not None and program not in SHELLS):
        kind = f"a {program or 'non-shell'} script" if "\0" not in old else "not a text file"
        journal.note(f"left {path} alone: it is {kind}, not a shell script; no refresh hook added")
        return False
    if not mode & stat.S_IXUSR:
        journal.note(f"left {path} alone: it is not executable (git skips it); no refresh hook added")
        return False
    journal.write_file(path, with_git_block(without_git_block(old), block), mode=mode)
    return True


def remove_git_hook(journal: Journal, repo: Path, owned: set[str]) -> None:
    """Take our block out of REPO's hook (where git runs it now, and the default hooks folder, in
    case core.hooksPath changed since); a hook file the setup created and holds nothing else goes."""
    candidates: list[Path] = []
    with contextlib.suppress(SetupError):  # the repository or git may be gone: the default place
        candidates.append(git_hook_path(repo))
    default = repo / ".git" / "hooks" / "post-commit"
    if default not in candidates:
        candidates.append(default)
    for path in candidates:
        if path.is_symlink() or not path.is_file():
            continue
        try:
            old = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if GIT_BEGIN not in old:
            continue
        new = without_git_block(old)
        if str(path) in owned and new == "#!/bin/sh\n":
            journal.remove_file(path)
        else:
            journal.write_file(path, new, mode=stat.S_IMODE(path.stat().st_mode))
