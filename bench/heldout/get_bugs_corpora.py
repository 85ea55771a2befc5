"""Write the corpora of issues-git-many.jsonl: one checkout per repository, from the bare snapshots.

    python bench/heldout/get_bugs_corpora.py [--mirror-root DIR] [--out ~/.cache/qmd-eval/bugs-corpora]

Each row's `instance_id` is `<owner>__<name>-<issue>`; its `checkout` is written to OUT/<repo>/ (`repo` as in
the row, e.g. `ripgrep-git`) with `git archive | tar -x`, through a scratch repository that borrows the
snapshot's objects and overrides `export-ignore`, so the tree is the committed one (tests and docs kept), as
/work/shared/eval/get-dev-git-corpora.py does for the dev sets. A folder that exists is left alone. Afterwards
every `relevant` and `secondary` path is checked to exist. Exit status 0 when all are in place.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SET_FILE = HERE / "issues-git-many.jsonl"


def checkouts(rows: list[dict]) -> dict[str, tuple[str, str]]:
    """repo -> (owner+name snapshot folder, checkout); one checkout per repository."""
    out: dict[str, tuple[str, str]] = {}
    for row in rows:
        github = row["instance_id"].rsplit("-", 1)[0].replace("__", "+")
        if out.setdefault(row["repo"], (github, row["checkout"])) != (github, row["checkout"]):
            sys.exit(f"{row['repo']}: two checkouts or two repositories in {SET_FILE.name}")
    return out


def extract(snapshot: Path, rev: str, dest: Path) -> None:
    """The tree at `rev` into `dest`, through a scratch bare repo that borrows `snapshot`'s objects."""
    with tempfile.TemporaryDirectory(prefix=".git-", dir=dest.parent) as scratch:
        subprocess.run(["git", "init", "--bare", "-q", scratch], check=True)
        Path(scratch, "objects", "info", "alternates").write_text(str(snapshot / "objects") + "\n")
        Path(scratch, "info").mkdir(exist_ok=True)
        Path(scratch, "info", "attributes").write_text("* -export-ignore -export-subst\n")
        dest.mkdir(parents=True)
        archive = subprocess.Popen(["git", "--git-dir", scratch, "archive", "--format=tar", rev],
                                   stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-f", "-", "-C", str(dest)], stdin=archive.stdout, check=True)
        if archive.wait():
            sys.exit(f"git archive {rev} failed for {dest}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    p.add_argument("--out", type=Path, default=Path("~/.cache/qmd-eval/bugs-corpora").expanduser())
    args = p.parse_args()
    rows = [json.loads(line) for line in SET_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    for repo, (github, rev) in sorted(checkouts(rows).items()):
        dest = args.out / repo
        if dest.is_dir():
            continue
        snapshot = args.mirror_root / github / "repo"
        if not (snapshot / "HEAD").is_file():
            print(f"missing snapshot {snapshot}: fetch github:{github.replace('+', '/')}", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        extract(snapshot, rev, dest)
        print(f"{repo}: {rev[:12]}")
    missing = [f"{r['repo']}/{f}" for r in rows for f in r["relevant"] + r["secondary"]
               if not (args.out / r["repo"] / f).is_file()]
    for m in missing:
        print(f"missing gold path {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
