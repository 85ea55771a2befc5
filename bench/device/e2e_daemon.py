"""End to end as an agent meets it: `ai-search` starts the daemon, which embeds and answers.

    python bench/device/e2e_daemon.py --corpus qmd_daemon --model MiniLM.gguf --out OUT [--expect gpu]

Why: on an H200 every daemon died with SIGSEGV at its first model load while `qmd-daemon embed`
and the in-process search worked (2026-12-04, fixed by models.runtime.load_llama_first); only a
daemon started by a client, embedding and answering on the GPU, shows the whole path works.

Per device (`gpu`, then `cpu` with QMD_FORCE_CPU=1), in a fresh QMD_DAEMON_HOME over one git copy
of the corpus, with index.yml `models: {profile: small, device: gpu, rerank: off, expand: off}`
and MiniLM as the embedder (QMD_EMBED_MODEL; Gemma is too big to carry): `qmd-daemon collection
add`; the first `ai-search`, which starts the daemon (detached, as a hook or an agent would); the
daemon embeds on its own as it comes up, and a POST /embed waits behind that (the jobs before it
are recorded); /health; the questions through `ai-search`; `qmd-daemon stop`.

It passes when the same daemon (pid) served from the first question to the stop, no client said
it was unavailable, every vector was written, /health names the expected device, the daemon was
gone after the stop, and the GPU's answers equal the CPU's (same_answers). The daemon is the
client's detached grandchild, so its exit status cannot be read: its log (OUT/daemon-LABEL.log, a
fatal signal's Python stack included) says how it ended. Writes OUT/e2e.json; exit 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from clients import _qmd_client as qc  # noqa: E402  (the clients' own state file, handshake, calls)

QUESTIONS = [
    "where is the daemon token compared",
    "lower the embed job's CPU priority",
    "stop a running llama.cpp decode from another thread",
    "merge index segments when the daemon is idle",
    "which jobs are queued and which one runs",
    "watch the repository for file changes",
]
INDEX_YML = "models:\n  profile: small\n  device: gpu\n  rerank: off\n  expand: off\n"
Hit = tuple[str, int, float]


def same_answers(a: list[list[Hit]], b: list[list[Hit]]) -> dict[str, Any]:
    """Per question, whether both runs gave the same top hits (path, line) in the same order; the
    largest score difference among those that did. GPU kernels round differently, so scores may
    differ a little and, rarely, two near-equal hits swap. A run that broke off answers none."""
    if len(a) != len(b):
        return {"same_top": 0, "same_first": 0, "questions": max(len(a), len(b)), "max_score_delta": None}
    same = [[h[:2] for h in x] == [h[:2] for h in y] for x, y in zip(a, b, strict=True)]
    top1 = [bool(x) and bool(y) and x[0][:2] == y[0][:2] for x, y in zip(a, b, strict=True)]
    deltas = [abs(h[2] - k[2]) for x, y, s in zip(a, b, same, strict=True) if s
              for h, k in zip(x, y, strict=True)]
    return {"same_top": sum(same), "same_first": sum(top1), "questions": len(same),
            "max_score_delta": round(max(deltas, default=0.0), 6)}


def parse_hits(stdout: str) -> list[Hit]:
    """`ai-search --json` output -> (path, line, score) per hit."""
    return [(h["path"], int(h["line"]), round(float(h["score"]), 5)) for h in json.loads(stdout)]


def run(argv: list[str], env: dict[str, str], timeout: float = 300) -> dict[str, Any]:
    """One command of the run: exit status, seconds, stdout, and stderr's tail."""
    t0 = time.perf_counter()
    rc: int | str
    try:
        proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
    return {"rc": rc, "s": round(time.perf_counter() - t0, 3), "stdout": out, "stderr": err[-2000:]}


def git_copy(corpus: Path, dest: Path) -> Path:
    """The corpus as a repository of its own, as agents' folders are (the client reads git for its
    freshness stamp); a plain folder where git is missing."""
    shutil.copytree(corpus, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if not shutil.which("git"):
        return dest
    git = ["git", "-C", str(dest), "-c", "user.name=device", "-c", "user.email=device@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(git + args, check=True)
    return dest


@contextmanager
def client_env(env: dict[str, str]) -> Iterator[None]:
    """_qmd_client reads QMD_DAEMON_HOME per call: point this process's calls at one run's home."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (the daemon is nobody's child here once its client exited)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def gpu_apps() -> str:
    """The processes holding GPU memory (nvidia-smi), where there is one: the daemon should."""
    if not shutil.which("nvidia-smi"):
        return "no nvidia-smi"
    query = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"]
    return subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip()


def wait_job(job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = qc.call("GET", f"/jobs/{job_id}", start=False)
        if job.get("state") in ("done", "failed"):
            break
        time.sleep(0.2)
    return job


def earlier_jobs(job_id: str) -> list[dict[str, Any]]:
    """The daemon's jobs before `job_id` ("job-N"): its own refresh and embedding, with their
    results (chunks embedded, seconds, priority)."""
    prefix, _, number = job_id.rpartition("-")
    return [qc.call("GET", f"/jobs/{prefix}-{i}", start=False) for i in range(1, int(number))]


def one_device(label: str, repo: Path, home: Path, model: Path, out: Path, expect: str) -> dict[str, Any]:
    """collection add, ai-search (starts the daemon), the daemon's embed job, questions, stop;
    `expect`: the device /health must name."""
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_EMBED_MODEL=str(model), HF_HUB_OFFLINE="1")
    for var in ("QMD_FORCE_CPU", "QMD_NO_DAEMON", "QMD_PRELOAD", "QMD_CONFIG_DIR", "QMD_INDEX_PATH"):
        env.pop(var, None)  # the defaults a user has: the daemon loads the embedder as it starts
    if label == "cpu":
        env["QMD_FORCE_CPU"] = "1"
    (home / "config").mkdir(parents=True)
    (home / "config" / "index.yml").write_text(INDEX_YML, encoding="utf-8")
    row: dict[str, Any] = {"label": label}
    steps: dict[str, Any] = {}
    row["steps"] = steps
    ask = [sys.executable, str(ROOT / "clients" / "ai_search.py"), "--json", "--repo", str(repo), "-n", "5"]
    with client_env(env):
        try:
            steps["collection_add"] = run([sys.executable, "-m", "qmd_daemon.cli", "collection", "add",
                                           str(repo)], env)
            steps["first_search"] = run([*ask, QUESTIONS[0]], env)
            state = qc.read_state() or {}
            row["pid"] = pid = int(state.get("pid", 0))
            t0 = time.perf_counter()  # the daemon embeds on its own as it starts: this job waits behind it
            started = qc.call("POST", "/embed", {"wait": 0}, start=False)
            job_id = str(started["jobs"][0]["id"])
            row["embed_job"] = wait_job(job_id, timeout=240)
            row["embedded_after_s"] = round(time.perf_counter() - t0, 3)
            row["jobs"] = earlier_jobs(job_id)
            row["gpu_apps"] = gpu_apps()
            health = qc.call("GET", "/health", start=False)
            row["health"] = {k: health.get(k) for k in ("pid", "models", "jobs")}
            answers = []
            for q in QUESTIONS:
                step = run([*ask, q], env)
                steps[f"ask {q}"] = {k: v for k, v in step.items() if k != "stdout"}
                answers.append(parse_hits(step["stdout"]) if step["rc"] == 0 else [])
            row["answers"] = answers
            status = qc.call("GET", "/status", start=False)
            row["status"] = {k: status.get(k) for k in ("vectors", "static_vectors", "models")}
            row["alive_before_stop"] = pid_alive(pid) and (qc.read_state() or {}).get("pid") == pid
        except Exception as exc:  # noqa: BLE001 - the report says what broke; the daemon is still stopped
            row["error"] = repr(exc)
        finally:
            steps["stop"] = run([sys.executable, "-m", "qmd_daemon.cli", "stop"], env, timeout=60)
            pid = row.get("pid", 0)
            deadline = time.monotonic() + 20
            while pid and pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            row["gone_after_stop"] = not (pid and pid_alive(pid))
    log = home / "state" / "logs" / "daemon.log"
    if log.exists():
        shutil.copyfile(log, out / f"daemon-{label}.log")
    row["failures"] = failures(row, expect)
    return row


def failures(row: dict[str, Any], expect: str) -> list[str]:
    """What this run's daemon did wrong, in words (empty: it passed)."""
    found = [f"{name}: exit {step['rc']}" for name, step in row["steps"].items() if step["rc"] != 0]
    found += [f"{name}: the client said: {step['stderr'][-300:]}" for name, step in row["steps"].items()
              if "unavailable" in step["stderr"] or "died" in step["stderr"]]
    if row.get("error"):
        found.append(f"error: {row['error']}")
    if not row.get("pid"):
        found.append("the first ai-search left no daemon")
    elif not row.get("alive_before_stop"):
        found.append(f"the daemon (pid {row['pid']}) did not serve to the end")
    if not row.get("gone_after_stop"):
        found.append("the daemon outlived `qmd-daemon stop` by 20 s")
    if (row.get("embed_job") or {}).get("state") != "done":
        found.append(f"embed job: {row.get('embed_job')}")
    status = row.get("status") or {}
    deep, static = status.get("vectors") or {}, status.get("static_vectors") or {}
    if not deep.get("chunks") or deep.get("pending") != 0:
        found.append(f"deep vectors: {deep}")
    if static.get("vectors") != static.get("chunks"):
        found.append(f"static vectors: {static}")
    device = ((row.get("health") or {}).get("models") or {}).get("device")
    if device != expect:
        found.append(f"/health says device {device!r}, expected {expect!r}")
    if any(not hits for hits in row.get("answers") or [[]]):
        found.append("a question without hits")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder to index (a copy is made)")
    ap.add_argument("--model", type=Path, required=True, help="the embedder's GGUF (MiniLM)")
    ap.add_argument("--out", type=Path, required=True, help="e2e.json and the daemons' logs go here")
    ap.add_argument("--work", type=Path, default=Path("/tmp/qmd-e2e"))
    ap.add_argument("--expect", default="gpu", help="the device /health must name in the first run")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    repo = git_copy(args.corpus.resolve(), args.work / "repo")
    report: dict[str, Any] = {}
    for label in ("gpu", "cpu"):
        expect = args.expect if label == "gpu" else "cpu"
        row = one_device(label, repo, args.work / f"home-{label}", args.model.resolve(), args.out, expect)
        report[label] = row
        brief = {k: v for k, v in row.items() if k not in ("answers", "steps")}
        print(json.dumps(brief, default=str), flush=True)
    report["same_answers"] = same_answers(report["gpu"].get("answers", []), report["cpu"].get("answers", []))
    agree = report["same_answers"]
    if agree["same_first"] < len(QUESTIONS) or agree["same_top"] < len(QUESTIONS) - 1:
        report["gpu"]["failures"].append(f"answers differ from the CPU's: {agree}")
    report["passed"] = not (report["gpu"]["failures"] or report["cpu"]["failures"])
    (args.out / "e2e.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    print(json.dumps({"same_answers": agree, "passed": report["passed"],
                      "failures": {k: report[k]["failures"] for k in ("gpu", "cpu")}}), flush=True)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
