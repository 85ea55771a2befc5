"""bench/first_search.py on a real index of this repository's `text` package: one fresh process
per kind of query, each line with its wall and CPU ms and MB read."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_first_searches_of_each_kind_in_a_fresh_process(tmp_path: Path) -> None:
    env = {**os.environ, "QMD_DAEMON_HOME": str(tmp_path / "home"), "QMD_EVAL_DIR": str(tmp_path / "eval")}
    shutil.copytree(REPO / "qmd_daemon" / "text", tmp_path / "text")
    cli = [str(Path(sys.executable).parent / "qmd-daemon")]
    subprocess.run([*cli, "collection", "add", str(tmp_path / "text"), "--name", "text"], env=env, check=True)
    subprocess.run([*cli, "update"], env=env, check=True, capture_output=True)
    with sqlite3.connect(tmp_path / "home" / "cache" / "index.sqlite") as index:
        assert index.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    (tmp_path / "eval").mkdir()
    queries = {"dev-queries.jsonl": "split identifier", "dev-issues.jsonl": "tokens of CJK text"}
    for name, query in queries.items():
        (tmp_path / "eval" / name).write_text(json.dumps({"query": query}) + "\n")
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "first_search.py"), "--home", str(tmp_path / "home"),
         "--count", "3"],
        env=env, check=True, capture_output=True, text=True,
    )
    rows = re.findall(r"^(\w+) +(\d)  wall +[\d.]+ ms  cpu +[\d.]+ ms  read +[\d.]+ MB$", done.stdout, re.M)
    assert rows == [("questions", "0"), ("bug_reports", "0")]  # one query in each file
