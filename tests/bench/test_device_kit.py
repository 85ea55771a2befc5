"""bench/device/: the device run's verdicts (e2e_daemon) and its wheel list against pyproject.

The kit itself runs only in a device session (or `bench/device/run.sh --dry-run`); these keep
its judgement and its inputs honest between those rare runs."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from bench.device.e2e_daemon import QUESTIONS, failures, parse_hits, same_answers
from tests.conftest import REPO_ROOT

DEVICE = REPO_ROOT / "bench" / "device"


def _passing_row() -> dict[str, Any]:
    ok = {"rc": 0, "s": 0.1, "stdout": "", "stderr": ""}
    return {"label": "gpu", "pid": 4242, "alive_before_stop": True, "gone_after_stop": True,
            "steps": {"collection_add": ok, "first_search": ok, "stop": ok},
            "embed_job": {"state": "done"}, "health": {"models": {"device": "gpu"}},
            "status": {"vectors": {"chunks": 10, "pending": 0},
                       "static_vectors": {"vectors": 10, "chunks": 10}},
            "answers": [[("a.py", 1, 0.5)]] * len(QUESTIONS)}


def test_a_daemon_that_served_to_the_end_on_the_gpu_passes() -> None:
    assert failures(_passing_row(), "gpu") == []


def test_a_daemon_that_died_or_ran_on_the_cpu_is_named() -> None:
    # what the H200 showed before the fix: the client fell back and said so, another pid came up
    row = _passing_row()
    said = "ai-search: daemon unavailable (truncated reply); searching in-process"
    row["steps"]["ask q"] = {"rc": 0, "s": 4.1, "stdout": "", "stderr": said}
    row["alive_before_stop"] = False
    row["health"] = {"models": {"device": "cpu"}}
    row["status"]["vectors"]["pending"] = 3
    found = " | ".join(failures(row, "gpu"))
    for words in ("daemon unavailable", "pid 4242", "device 'cpu'", "deep vectors"):
        assert words in found


def test_answers_compare_by_path_and_line_in_order() -> None:
    a = [[("a.py", 1, 0.5), ("b.py", 2, 0.4)], [("c.py", 3, 0.9)]]
    near = [[("a.py", 1, 0.5004), ("b.py", 2, 0.4)], [("c.py", 3, 0.9)]]
    expected = {"same_top": 2, "same_first": 2, "questions": 2, "max_score_delta": 0.0004}
    assert same_answers(a, near) == expected
    swapped = [[("b.py", 2, 0.4), ("a.py", 1, 0.5)], [("c.py", 3, 0.9)]]
    assert same_answers(a, swapped)["same_top"] == 1 and same_answers(a, swapped)["same_first"] == 1
    assert same_answers(a, [])["same_top"] == 0  # a run that broke off before its questions


def test_ai_search_json_becomes_hits() -> None:
    out = '[{"path": "x/y.py", "line": 12, "score": 0.1234567, "snippet": "def f"}]'
    assert parse_hits(out) == [("x/y.py", 12, 0.12346)]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_wheel_list_covers_every_dependency_the_device_image_lacks() -> None:
    # a dependency added to pyproject must reach the device: carried (wheels.txt), in the image
    # (its `# image:` line), or built there (llama-cpp-python)
    lines = (DEVICE / "wheels.txt").read_text(encoding="utf-8").splitlines()
    carried = {_name(ln) for ln in lines if ln and not ln.startswith("#")}
    image = {_name(n) for ln in lines if ln.startswith("# image:") for n in ln.split(":", 1)[1].split()}
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    needed = {_name(dep) for dep in pyproject["project"]["dependencies"]} - {"llama-cpp-python"}
    assert needed - carried - image == set()
    assert all("==" in ln for ln in lines if ln and not ln.startswith("#"))  # what ran is what travels
