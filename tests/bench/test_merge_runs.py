"""bench/merge_runs.py: one per-language table over several retrieval runs' JSON files."""

from __future__ import annotations

import json
from pathlib import Path

from bench import merge_runs


def _question(repo: str, language: str, query: str, score: float, files: list[str]) -> dict:
    return {"set": "broad", "index": 0, "repo": repo, "category": "semantic", "language": language,
            "query": query, "relevant": [files[0]], "files": files, "ms": 1.0,
            "ndcg@10": score, "acc@1": score, "acc@5": score, "acc@10": score, "mrr@10": score}


def _run(path: Path, lexical: list[dict], hybrid: list[dict]) -> Path:
    sets = {"broad": {"lexical": {"queries": lexical}, "hybrid": {"queries": hybrid}}}
    path.write_text(json.dumps({"sets": sets}), encoding="utf-8")
    return path


def test_questions_of_two_homes_pool_into_one_language_figure(tmp_path: Path, capsys) -> None:
    # Two runs (two homes), one javascript repository each: the language's figure is over both.
    first = _run(tmp_path / "a.json",
                 [_question("redux", "javascript", "q1", 1.0, ["a.ts", "b.ts"])],
                 [_question("redux", "javascript", "q1", 0.5, ["b.ts", "a.ts"])])
    second = _run(tmp_path / "b.json",
                  [_question("axios", "javascript", "q2", 0.5, ["c.js"])],
                  [_question("axios", "javascript", "q2", 1.0, ["c.js"])])
    assert merge_runs.main([str(first), str(second)]) == 0
    out = capsys.readouterr().out
    language = next(line for line in out.splitlines() if line.startswith("lang:javascript"))
    assert language.split()[1:] == ["0.750", "0.750"]
    assert "questions hybrid scores below lexical (1, ndcg@10)" in out
    assert "redux 1.000 -> 0.500  q1" in out and "  hybrid: b.ts, a.ts" in out
    assert "axios 0.500" not in out  # the question hybrid wins is not a loss


def test_losses_lists_the_worst_first() -> None:
    lexical = [_question("r", "go", "small", 1.0, ["x"]), _question("r", "go", "large", 1.0, ["x"])]
    hybrid = [_question("r", "go", "small", 0.9, ["x"]), _question("r", "go", "large", 0.2, ["x"])]
    assert [a["query"] for a, _ in merge_runs.losses(lexical, hybrid, "ndcg@10")] == ["large", "small"]


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, capsys) -> None:
    same = [_question("r", "go", "q", 1.0, ["x"])]
    run = _run(tmp_path / "a.json", same, same)
    assert merge_runs.main([str(tmp_path / "absent.json")]) == 2
    assert merge_runs.main([str(run), "--methods", "lexical"]) == 2
    assert merge_runs.main([str(run), "--methods", "lexical,vector"]) == 2  # no run has vector
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("merge_runs.py: ") for line in err)


def test_variants_join_the_table_over_the_same_questions(tmp_path: Path, capsys) -> None:
    # A third method (a fusion rule's variant of hybrid) is pooled and tabled beside the two; the
    # losses listed stay the second method's against the first.
    lexical = [_question("redux", "javascript", "q1", 1.0, ["a.ts", "b.ts"])]
    hybrid = [_question("redux", "javascript", "q1", 0.5, ["b.ts", "a.ts"])]
    variant = [_question("redux", "javascript", "q1", 0.75, ["a.ts", "b.ts"])]
    sets = {"broad": {"lexical": {"queries": lexical}, "hybrid": {"queries": hybrid},
                      "agree": {"queries": variant}}}
    run = tmp_path / "a.json"
    run.write_text(json.dumps({"sets": sets}), encoding="utf-8")
    assert merge_runs.main([str(run), "--methods", "lexical,hybrid,agree"]) == 0
    out = capsys.readouterr().out
    language = next(line for line in out.splitlines() if line.startswith("lang:javascript"))
    assert language.split()[1:] == ["1.000", "0.500", "0.750"]
    assert "questions hybrid scores below lexical (1, ndcg@10)" in out


def test_each_group_gets_its_interval_and_verdict(tmp_path: Path, capsys) -> None:
    # go: all 20 questions up, so its interval is above 0; rust: one of 20 down, within noise.
    lexical = [_question("cobra", "go", f"g{i}", 0.5, ["a.go"]) for i in range(20)]
    hybrid = [_question("cobra", "go", f"g{i}", 0.6, ["a.go"]) for i in range(20)]
    lexical += [_question("serde", "rust", f"r{i}", 1.0, ["a.rs"]) for i in range(20)]
    hybrid += [_question("serde", "rust", f"r{i}", 0.5 if i == 0 else 1.0, ["b.rs"]) for i in range(20)]
    assert merge_runs.main([str(_run(tmp_path / "a.json", lexical, hybrid))]) == 0
    out = capsys.readouterr().out
    assert "hybrid - lexical per group (ndcg@10; paired bootstrap" in out
    go = next(line for line in out.splitlines() if line.startswith("lang:go") and "verdict" not in line
              and line.rstrip().endswith(("above", "below", "within noise")))
    assert go.split()[1:5] == ["20", "+0.100", "+2.00", "[+0.100,"] and go.endswith("20     0  above")
    rust = next(line for line in out.splitlines() if line.startswith("lang:rust")
                and line.rstrip().endswith(("above", "below", "within noise")))
    assert rust.split()[1:4] == ["20", "-0.025", "-0.50"] and rust.endswith("within noise")
    assert merge_runs.verdict(-0.2, -0.01) == "below"


def test_pool_tables_every_set_as_one(tmp_path: Path, capsys) -> None:
    # A decision over the broad set and the dev queries together: python's figure is over both
    # sets' questions, under one `pooled` heading; without --pool each set has its own.
    broad = [_question("click", "python", "b1", 1.0, ["a.py"])]
    queries = [{**_question("fastapi", "python", "q1", 0.5, ["b.py"]), "set": "queries"}]
    up = [{**q, "ndcg@10": 1.0} for q in queries]
    sets = {"broad": {"lexical": {"queries": broad}, "hybrid": {"queries": broad}},
            "queries": {"lexical": {"queries": queries}, "hybrid": {"queries": up}}}
    run = tmp_path / "a.json"
    run.write_text(json.dumps({"sets": sets}), encoding="utf-8")
    assert merge_runs.main([str(run), "--pool"]) == 0
    out = capsys.readouterr().out
    assert "##### pooled (2 questions from 1 runs)" in out and "##### broad" not in out
    language = next(line for line in out.splitlines() if line.startswith("lang:python"))
    assert language.split()[1:] == ["0.750", "1.000"]
    assert merge_runs.main([str(run)]) == 0
    assert "##### broad (1 questions" in capsys.readouterr().out
