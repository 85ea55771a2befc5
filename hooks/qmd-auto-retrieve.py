"""qmd-daemon UserPromptSubmit hook (opt-in: `install.sh --auto-retrieve`), Claude Code and Codex.

Reads the hook input (JSON on stdin: prompt, cwd), asks `ai-search` with a bounded time limit, and
prints the hits above a high score threshold, within a token cap, as additional context:
`{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}`.
Off by default: fixed context made runs about 2.5 times more expensive in input tokens.
Knobs: QMD_AUTO_RETRIEVE_MIN_SCORE (0.5), QMD_AUTO_RETRIEVE_MAX_TOKENS (1200),
QMD_AUTO_RETRIEVE_TIMEOUT (4 seconds), QMD_AUTO_RETRIEVE_LIMIT (5 hits).
Standard library only; any failure prints nothing and exits 0 (it never blocks a prompt).
"""

import json
import os
import shutil
import subprocess
import sys
import time

QMD_AI_SEARCH_DEFAULT = ""  # filled in by the installer with its ai-search wrapper

# A hit at or above this is added to the prompt. The calibrated score (search/calibration.py) tops
# out near 0.66 with vectors and 0.51 without; in the dev eval three hits in four scored 0.5-0.6
# answer (docs/ranking.md). The 0.75 used before was out of reach: the hook never added a line.
MIN_SCORE_DEFAULT = 0.5


def _num(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _log(message):
    # the state folder as clients/_qmd_client.state_dir finds it, repeated: this script is a copy in
    # the hooks folder and may run under a bare python3 (the wrappers' fallback) without the clients
    # (a `~` in a variable set by an agent's settings file, which no shell expanded, too)
    home = os.path.expanduser(os.environ.get("QMD_DAEMON_HOME") or "")
    state = os.path.expanduser(os.environ.get("XDG_STATE_HOME") or "")
    base = (
        os.path.join(home, "state")
        if home
        else os.path.join(state or os.path.join(os.path.expanduser("~"), ".local", "state"), "qmd-daemon")
    )
    try:
        os.makedirs(os.path.join(base, "logs"), mode=0o700, exist_ok=True)
        # owner-only, as every state file: it quotes the user's prompts' failures
        fd = os.open(os.path.join(base, "logs", "hooks.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} auto-retrieve: {message}\n")
    except OSError:
        pass


def context_for(hits, min_score, max_tokens):
    """The additional-context text: hits >= min_score, best first, until ~max_tokens (4 chars/token)."""
    lines = [f"Possibly relevant code found by semantic-search (score >= {min_score:g}); verify before use:"]
    budget = max_tokens * 4 - len(lines[0])
    kept = 0
    for hit in hits:
        if float(hit.get("score") or 0) < min_score:
            continue
        block = (
            f"\n- {hit.get('path')}:{hit.get('line')}-{hit.get('end_line')} "
            f"(score {float(hit.get('score')):.2f})\n```\n{str(hit.get('snippet') or '').rstrip()}\n```"
        )
        if len(block) > budget:
            break
        lines.append(block)
        budget -= len(block)
        kept += 1
    return "".join(lines) if kept else ""


def main():
    try:
        # bytes, then UTF-8: the agents send UTF-8, and Windows would decode with its ANSI code page
        data = json.loads(sys.stdin.buffer.read().decode("utf-8-sig", "replace") or "{}")
        prompt = str(data.get("prompt") or "").strip()
        cwd = str(data.get("cwd") or os.getcwd())
        if len(prompt.split()) < 3 or prompt.startswith("/"):
            return 0
        search = os.environ.get("QMD_AI_SEARCH") or QMD_AI_SEARCH_DEFAULT
        if not search or not os.path.exists(search):
            search = shutil.which("ai-search")
        if not search:
            _log("ai-search not found")
            return 0
        limit = int(_num("QMD_AUTO_RETRIEVE_LIMIT", 5))
        timeout = _num("QMD_AUTO_RETRIEVE_TIMEOUT", 4.0)
        proc = subprocess.run(
            [search, "--json", "-n", str(limit), "--wait", "0", "--repo", cwd, "--", prompt[:2000]],
            capture_output=True,
            encoding="utf-8",  # what ai-search writes to a pipe, whatever the locale
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            _log(f"ai-search exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            return 0
        hits = json.loads(proc.stdout or "[]")
        floor = _num("QMD_AUTO_RETRIEVE_MIN_SCORE", MIN_SCORE_DEFAULT)
        text = context_for(hits, floor, int(_num("QMD_AUTO_RETRIEVE_MAX_TOKENS", 1200)))
        if text:
            print(
                json.dumps(
                    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}
                )
            )
    except subprocess.TimeoutExpired:
        _log("ai-search timed out; no context added")
    except Exception as exc:  # never fail a prompt
        _log(f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
