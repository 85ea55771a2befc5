"""Run a long command (pip compiling llama-cpp-python) so the user sees it move.

pip alone prints "still running..." once a minute or so while a wheel builds; here every line goes
to the setup log, pip's milestones that matter ("Building wheel", errors) are echoed as they come,
and when nothing was echoed for `interval` seconds a ticker line says how long it has run, how many
packages pip has collected and what it printed last. Not one line per package: a first install
collects about 75 and their lines drowned the steps the user reads; "Successfully installed" ends
as one count (the names are in the log).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from clients._qmd_client import open_private_append
from qmd_daemon.setup.journal import SetupError

PROGRESS_SECONDS = 10.0
MILESTONES = ("Building wheel", "Created wheel", "ERROR", "error:")
COLLECTING = "Collecting "
INSTALLED = "Successfully installed "


def packages(count: int) -> str:
    return f"{count} package{'' if count == 1 else 's'}"


def elapsed_text(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def run_with_progress(
    cmd: list[str], what: str, *, log: Path, echo: Callable[[str], None], interval: float = PROGRESS_SECONDS
) -> None:
    """Run CMD; raise SetupError (naming the log) when it fails."""
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tail: deque[str] = deque(maxlen=12)
    collected = [0]
    lock = threading.Lock()
    last_echo = [time.monotonic()]

    def say(line: str) -> None:
        with lock:
            echo(line)
            last_echo[0] = time.monotonic()

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.monotonic()
    # owner-only like every state file: pip's output names this user's folders and index
    with open(open_private_append(str(log)), "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace", env=env, bufsize=1)
        except OSError as exc:
            raise SetupError(f"cannot {what}: {exc}") from None

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                text = line.strip()
                if text:
                    tail.append(text)
                    if text.startswith(COLLECTING):
                        collected[0] += 1
                    elif text.startswith(INSTALLED):
                        installed = packages(len(text[len(INSTALLED):].split()))
                        say(f"pip installed {installed} (their versions: {log})")
                    elif text.startswith(MILESTONES):
                        say(text)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while reader.is_alive():
            due = last_echo[0] + interval - time.monotonic()
            if due > 0:
                reader.join(timeout=due)
                continue
            last = tail[-1][:140] if tail else "no output yet"
            count = f"{packages(collected[0])} collected; " if collected[0] else ""
            say(f"... {what}: {elapsed_text(time.monotonic() - start)} so far; {count}last: {last}")
        code = proc.wait()
    if code != 0:
        for line in tail:
            echo(f"| {line}")
        raise SetupError(f"cannot {what} (exit {code}); the last lines are above, the whole output in {log}")
