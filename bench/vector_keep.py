"""Deep vectors kept after their chunks go (store/kept_vectors.py): a branch switched back to,
before and after, in one run.

    QMD_MODELS_DIR=/work/main/.test-cache/models python bench/vector_keep.py \
        [--mirror /work/.mirror/psf+requests/repo] [--away v2.0.0] [--rounds 5]

Each mode gets a fresh clone and a fresh index (small profile: MiniLM, 384 dims): index + embed
main, check out AWAY, update, check out main, update, then what is still pending is embedded and
one hybrid search runs. `before` is the code as it was: the vectors' delete trigger made again
as older code made it (a deleted chunk's vector deleted, nothing kept); `after` is this code.
Printed per mode: chunks waiting for the embedder after switching back, the seconds from the
switch back to fresh hybrid results (update + embed of what waits + one search), the index's size
after the switch away (file + WAL, checkpointed), and the median seconds of an update with
nothing deleted (a file added, then a no-change update), ROUNDS of each, the update switching away
(the deletions: the trigger's cost) and a `collection remove` at the end. Then the bytes a kept
vector costs at 384 and 1024 dims, float and int8, in a scratch table as the index keeps them.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIRROR = Path("/work/.mirror/psf+requests/repo")
QUERY = "how are cookies persisted across redirects in a session"
OLD_TRIGGER = """CREATE TRIGGER chunk_vectors_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE rowid = old.id; END"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def index_bytes(engine: Any) -> int:
    engine.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = Path(engine.store.path)
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def run_mode(mode: str, mirror: Path, away: str, rounds: int, work: Path) -> dict[str, Any]:
    os.environ["QMD_DAEMON_HOME"] = str(work / f"home-{mode}")
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.search.pipeline import SearchOptions
    from qmd_daemon.settings import Settings

    clone = work / f"requests-{mode}"
    subprocess.run(["git", "clone", "-q", str(mirror), str(clone)], check=True)
    git(clone, "checkout", "-q", "main")
    settings = Settings.from_env()
    config = IndexConfig.load(settings.config_file)
    config.set_models({"profile": "small"})
    config.save()
    engine = Engine(settings)
    try:
        name = engine.add_collection(clone).name
        engine.update([name])
        engine.embed([name], progress=False)
        total = engine.store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if mode == "before":
            with engine.store.transaction():
                engine.store.conn.execute("DROP TRIGGER chunk_vectors_delete")
                engine.store.conn.execute(OLD_TRIGGER)
        size_main = index_bytes(engine)
        git(clone, "checkout", "-q", away)
        t_away = time.perf_counter()
        [gone] = engine.update([name])
        t_away = time.perf_counter() - t_away
        size_away = index_bytes(engine)
        kept = engine.vectors.kept_count() if engine.vectors else 0
        git(clone, "checkout", "-q", "main")
        t0 = time.perf_counter()
        [back] = engine.update([name])
        t_update = time.perf_counter() - t0
        waiting = engine.pending_vectors([name])
        t1 = time.perf_counter()
        engine.embed([name], progress=False)
        t_embed = time.perf_counter() - t1
        hits = engine.search(QUERY, [name], limit=5, options=SearchOptions(expand=False, rerank=False))
        fresh = time.perf_counter() - t0
        no_deletion = []
        unchanged = []
        for i in range(rounds):
            (clone / f"added_{i}.py").write_text(f"def added_{i}(x):\n    return x + {i}\n")
            t = time.perf_counter()
            [report] = engine.update([name])
            no_deletion.append(time.perf_counter() - t)
            assert report.chunks_removed == 0
            t = time.perf_counter()
            engine.update([name])
            unchanged.append(time.perf_counter() - t)
        t_remove = time.perf_counter()
        engine.remove_collection(name)
        t_remove = time.perf_counter() - t_remove
        left_kept = engine.vectors.kept_count() if engine.vectors else 0
    finally:
        engine.close()
    return {
        "mode": mode, "chunks": total, "removed_away": gone.chunks_removed, "kept": kept,
        "update_away_s": t_away, "added_back": back.chunks_added, "waiting_back": waiting,
        "update_back_s": t_update,
        "embed_back_s": t_embed, "fresh_hybrid_s": fresh, "hits": len(hits),
        "size_main_mb": size_main / 1e6, "size_away_mb": size_away / 1e6,
        "add_update_s": statistics.median(no_deletion), "nochange_update_s": statistics.median(unchanged),
        "remove_s": t_remove, "kept_after_remove": left_kept,
    }


def kept_bytes(work: Path, count: int = 5000) -> dict[str, float]:
    """Bytes a kept vector costs in the index file (the table and its indexes), by dims/type."""
    from qmd_daemon.store.connection import sqlite
    from qmd_daemon.store.kept_vectors import KEPT_BY_COLLECTION, KEPT_TABLE

    out = {}
    for dims in (384, 1024):
        for kind, width in (("float", 4), ("int8", 1)):
            path = work / f"kept-{dims}-{kind}.sqlite"
            conn = sqlite.connect(str(path))
            conn.execute(KEPT_TABLE)
            conn.execute(KEPT_BY_COLLECTION)
            conn.commit()
            empty = path.stat().st_size
            conn.executemany(
                "INSERT INTO kept_vectors (hash, collection_id, embedding) VALUES (?, 1, ?)",
                ((secrets.token_hex(32), secrets.token_bytes(dims * width)) for _ in range(count)),
            )
            conn.commit()
            conn.execute("VACUUM")
            conn.close()
            out[f"{dims}-{kind}"] = (path.stat().st_size - empty) / count
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--away", default="v2.0.0")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if "QMD_MODELS_DIR" not in os.environ:
        sys.exit("set QMD_MODELS_DIR (the small profile's models, e.g. /work/main/.test-cache/models)")
    with tempfile.TemporaryDirectory(prefix="vector-keep-") as tmp:
        work = Path(tmp)
        rows = [run_mode(mode, args.mirror, args.away, args.rounds, work) for mode in ("before", "after")]
        for row in rows:
            print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
        before, after = rows
        print(f"waiting after switching back: {before['waiting_back']} -> {after['waiting_back']} "
              f"of {after['added_back']} returning chunks")
        print(f"switch back to fresh hybrid results: {before['fresh_hybrid_s']:.1f} s -> "
              f"{after['fresh_hybrid_s']:.1f} s (x{after['fresh_hybrid_s'] / before['fresh_hybrid_s']:.2f}); "
              f"at the production embedder's <1 chunk/s on a CPU: >= {before['waiting_back']} s -> "
              f">= {after['waiting_back']} s of embedding")
        grew = [row["size_away_mb"] - row["size_main_mb"] for row in rows]
        print(f"index size after switching away: {before['size_away_mb']:.2f} MB -> "
              f"{after['size_away_mb']:.2f} MB ({grew[1] - grew[0]:+.2f} MB, {after['kept']} kept)")
        print(f"update switching away ({after['removed_away']} chunks deleted): "
              f"{before['update_away_s']:.3f} -> "
              f"{after['update_away_s']:.3f} s; collection remove: {before['remove_s']:.3f} -> "
              f"{after['remove_s']:.3f} s, kept vectors left after it: {after['kept_after_remove']}")
        for key in ("add_update_s", "nochange_update_s"):
            ratio = after[key] / before[key]
            print(f"{key} (no deletion): {before[key]:.3f} -> {after[key]:.3f} s (x{ratio:.2f})")
        for key, value in kept_bytes(work).items():
            print(f"bytes a kept vector, {key}: {value:.0f}")


if __name__ == "__main__":
    main()
