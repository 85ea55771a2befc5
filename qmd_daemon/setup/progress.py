"""Run a long command (pip compiling llama-cpp-python) so the user sees it move.

pip alone prints "still running..." once a minute or so while a wheel builds; here every line goes
to the setup log, pip's own milestones ("Collecting", "Building wheel", ...) are echoed as they come,
and when nothing was echoed for `interval` seconds a ticker line says how long it has run and what
the build printed last.
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
MILESTONES = ("Collecting ", "Building wheel", "Created wheel", "Installing collected", "Successfully",
              "ERROR", "error:")


def elapsed_text(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def run_with_progress(
    cmd: list[str], what: str, *, log: Path, echo: Callable[[str], None], interval: float = PROGRESS_SECONDS
) -> None:
    """Run CMD; raise SetupError (naming the log) when it fails."""
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tail: deque[str] = deque(maxlen=12)
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
                    if text.startswith(MILESTONES):
                        say(text)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while reader.is_alive():
            due = last_echo[0] + interval - time.monotonic()
            if due > 0:
                reader.join(timeout=due)
                continue
            last = tail[-1][:140] if tail else "no output yet"
            say(f"... {what}: {elapsed_text(time.monotonic() - start)} so far; last: {last}")
        code = proc.wait()
    if code != 0:
        for line in tail:
            echo(f"| {line}")
        raise SetupError(f"cannot {what} (exit {code}); the last lines are above, the whole output in {log}")
