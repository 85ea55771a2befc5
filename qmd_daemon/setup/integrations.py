"""The files the setup puts into the agents' homes, each installable and removable on its own.

Ownership rules: JSON hook entries are ours when their command names one of our hook scripts;
instruction lines are ours between our markers; everything else (skill folders, wrapper scripts,
hook scripts) is ours only when install.json lists it as created by the setup.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from pathlib import Path
from typing import Any

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

INSTRUCTION = (
    "When `semantic-search` is installed, run it first for any question whose identifiers are "
    "unknown; fall back to `rg` with a brief note only if it fails."
)
BEGIN = "<!-- qmd-daemon:semantic-search:begin -->"
END = "<!-- qmd-daemon:semantic-search:end -->"
_BLOCK_RE = re.compile(r"(\n?)" + re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)

GIT_BEGIN = "# >>> qmd-daemon post-commit >>>"
GIT_END = "# <<< qmd-daemon post-commit <<<"
_GIT_RE = re.compile(r"\n?" + re.escape(GIT_BEGIN) + r".*?" + re.escape(GIT_END) + r"\n?", re.S)

WINDOWS = os.name == "nt"


# -- skill ---------------------------------------------------------------------------------------


def skill_targets(paths: SetupPaths) -> dict[str, Path]:
    return {
        "claude": paths.claude_dir / "skills" / SKILL_NAME,
        "codex": paths.codex_dir / "skills" / SKILL_NAME,
    }


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
                text = re.sub(
                    rf'^(\$?{key}\s*=\s*)"[^"\n]*"', lambda m, v=value: f'{m.group(1)}"{v}"', text, flags=re.M
                )
            journal.write_file(paths.hooks_dir / src.name, text, mode=0o755)


# -- hook entries in settings.json (Claude Code) and hooks.json (Codex) --------------------------


def hook_files(paths: SetupPaths) -> dict[str, Path]:
    return {"claude": paths.claude_dir / "settings.json", "codex": paths.codex_dir / "hooks.json"}


def _load_json(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
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
    """JSON in the file's own style (indent, final newline), so a round trip is byte-identical."""
    indent: int | str | None = 2
    newline = True
    if original and original.strip():
        newline = original.endswith("\n")
        lines = original.strip().splitlines()
        if len(lines) == 1:
            indent = None
        else:
            second = lines[1]
            lead = second[: len(second) - len(second.lstrip())]
            indent = lead if "\t" in lead else (len(lead) or 2)
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
                "matcher": "startup|resume",
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


def install_hook_entries(journal: Journal, path: Path, wanted: dict[str, Any]) -> None:
    data = _load_json(path)
    base = dict(data or {})
    hooks = _strip_ours(base.get("hooks") or {}) if isinstance(base.get("hooks") or {}, dict) else None
    if hooks is None:
        raise SetupError(f"{path}: 'hooks' must be an object (left untouched)")
    for event, groups in wanted.items():
        hooks[event] = list(hooks.get(event) or []) + groups
    base["hooks"] = hooks
    journal.write_file(path, _dump_like(base, _read_text(path)))


def remove_hook_entries(journal: Journal, path: Path, created_by_us: bool) -> None:
    data = _load_json(path)
    if data is None or not isinstance(data.get("hooks"), dict):
        return
    hooks = _strip_ours(data["hooks"])
    if hooks == data["hooks"]:
        return
    rest = dict(data)
    if hooks:
        rest["hooks"] = hooks
    else:
        rest.pop("hooks")
    if not rest and created_by_us:
        journal.remove_file(path)
    else:
        journal.write_file(path, _dump_like(rest, _read_text(path)))


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


def git_hook_path(repo: Path) -> Path:
    git = repo / ".git"
    if not git.is_dir():
        raise SetupError(f"{repo} is not a git repository with a .git folder")
    return git / "hooks" / "post-commit"


def git_hook_block(paths: SetupPaths) -> str:
    warm = shlex.quote(str(wrapper_path(paths, "qmd-warm")))
    return (
        f"{GIT_BEGIN}\n"
        "# Refresh this repository's qmd-daemon collection in the background; never blocks a commit.\n"
        f'( {warm} --repo "$(git rev-parse --show-toplevel)" </dev/null >/dev/null 2>&1 & ) || true\n'
        f"{GIT_END}\n"
    )


def install_git_hook(journal: Journal, paths: SetupPaths, repo: Path) -> None:
    path = git_hook_path(repo)
    old = _read(path) if path.exists() else ""
    block = git_hook_block(paths)
    if GIT_BEGIN in old:
        new = _GIT_RE.sub("\n" + block, old, count=1)
    elif old:
        new = old + ("" if old.endswith("\n") else "\n") + block
    else:
        new = "#!/bin/sh\n" + block
    journal.write_file(
        path, new, mode=(path.stat().st_mode & 0o777 if path.exists() else 0o755) | stat.S_IXUSR
    )


def remove_git_hook(journal: Journal, repo: Path, created_by_us: bool) -> None:
    path = repo / ".git" / "hooks" / "post-commit"
    if not path.exists():
        return
    old = _read(path)
    if GIT_BEGIN not in old:
        return
    new = _GIT_RE.sub("\n", old).rstrip("\n") + "\n"
    if created_by_us and new.strip() in ("", "#!/bin/sh"):
        journal.remove_file(path)
    else:
        journal.write_file(path, new)
