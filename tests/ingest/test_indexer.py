import os
import subprocess
from pathlib import Path

from qmd_daemon.engine import Engine
from tests.conftest import SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree


def _tree(root: Path) -> Path:
    return write_tree(root, {"client.py": SAMPLE_PY, "pool/conn.go": SAMPLE_GO, "README.md": SAMPLE_MD})


def test_first_update_indexes_everything_then_nothing_changes(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    first = engine.update([name])[0]
    assert (first.added, first.changed, first.removed) == (3, 0, 0)
    assert first.chunks_added >= 3
    second = engine.update([name])[0]
    assert (second.added, second.changed, second.removed, second.unchanged) == (0, 0, 0, 3)
    assert second.chunks_added == 0


def test_unchanged_size_and_mtime_means_file_is_not_read(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    target = root / "client.py"
    before = target.stat()
    # Same length, same mtime, other bytes: only a read would notice the new word.
    target.write_text(SAMPLE_PY.replace("asyncio", "zqxwvut"))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    report = engine.update([name])[0]
    assert report.unchanged == 3
    assert engine.search("zqxwvut", [name]) == []


def test_touched_file_with_same_bytes_is_not_rechunked(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    os.utime(root / "client.py", ns=(1, 1))
    report = engine.update([name])[0]
    assert (report.changed, report.chunks_added, report.unchanged) == (0, 0, 3)


def test_editing_one_function_replaces_only_its_chunks(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    edited = SAMPLE_PY.replace('return dict(part.split("=", 1)', 'return dict(piece.split("=", 1)')
    (root / "client.py").write_text(edited)
    report = engine.update([name])[0]
    assert report.changed == 1
    assert report.chunks_added == report.chunks_removed == 1
    hits = engine.search("piece split cookie", [name])
    assert hits and hits[0].path == "client.py"


def test_deleted_file_disappears(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    collection_id = engine.store.collection_id(name) or 0
    before = engine.store.chunk_count(collection_id)
    (root / "pool/conn.go").unlink()
    report = engine.update([name])[0]
    assert report.removed == 1
    assert engine.search("TCPConnector", [name]) == []
    # its chunks count as removed: a checkout that deleted 3,401 files said `+0/-0 chunks`
    assert report.chunks_removed == before - engine.store.chunk_count(collection_id) > 0


def test_dangling_symlink_is_counted(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"ok.py": "x = 1\n"})
    os.symlink(root / "missing.py", root / "broken.py")
    report = engine.update([engine.add_collection(root).name])[0]
    assert report.skipped == {"broken_symlink": 1} and report.files == 1


def test_bad_files_are_counted_not_fatal(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "ok.py": "def fine():\n    return 'fine'\n",
            "latin1.py": b"def caf\xe9():\n    return '\xff\xfe broken utf8 marker_word'\n",
            "nul.py": b"binary\x00\x01\x02 stuff",
            "huge.md": "word " * (50 * 1024 * 1024 // 5),
        },
    )
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.skipped == {"binary": 1, "too_large": 1}
    assert report.files == 2
    hits = engine.search("marker_word", [name])
    assert hits and hits[0].path == "latin1.py"
    assert "def café():" in engine.read_indexed_text(name, "latin1.py")  # Windows-1252, not U+FFFD


def test_doc_code_links_both_ways(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    doc_hits = [h for h in engine.search("Sessions guide cookies", [name]) if h.path == "README.md"]
    assert doc_hits and "client.py" in doc_hits[0].related
    code_hits = [h for h in engine.search("parse_cookie_header", [name]) if h.path == "client.py"]
    assert code_hits and "README.md" in code_hits[0].related


def test_new_index_format_rechunks_every_file(engine: Engine, tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    collection_id = engine.store.collection_id(name)
    with engine.store.transaction():
        engine.store.mark_updated(collection_id, "an older chunker")
    report = engine.update([name])[0]
    assert report.changed == 3 and report.unchanged == 0
    assert engine.update([name])[0].unchanged == 3


def test_new_index_format_rederives_kept_chunks_in_place(engine: Engine, tmp_path: Path) -> None:
    """A chunk whose text is unchanged keeps its id (and so its vector), but what is derived from
    it (FTS row, definitions, symbols) is written anew: stand in for rows an older tokenizer or
    chunker wrote by blanking them, then change the format."""
    root = _tree(tmp_path / "proj")
    name = engine.add_collection(root).name
    engine.update([name])
    store = engine.store
    collection_id = store.collection_id(name)
    (chunk_id,) = [c for c, _n, _k in store.chunks_defining(["parse_cookie_header"], [collection_id])]
    with store.transaction():
        store.conn.execute("UPDATE chunks_fts SET symbols = '', body = 'x' WHERE rowid = ?", (chunk_id,))
        store.conn.execute("DELETE FROM definitions WHERE chunk_id = ?", (chunk_id,))
        store.conn.execute("UPDATE chunks SET symbols = '' WHERE id = ?", (chunk_id,))

    def found() -> list[str]:
        return [h.path for h in engine.search("parse_cookie_header", [name])]

    assert found() == ["README.md"]  # the code chunk is gone from FTS; the guide mentions it
    engine.update([name])
    assert found() == ["README.md"]  # same format: kept rows are trusted
    with store.transaction():
        store.mark_updated(collection_id, "an older chunker")
    engine.update([name])
    assert found()[0] == "client.py"
    (symbols,) = store.conn.execute("SELECT symbols FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    assert "parse_cookie_header" in symbols.split()
    kept = [c for c, _n, _k in store.chunks_defining(["parse_cookie_header"], [collection_id])]
    assert kept == [chunk_id]


def test_empty_file_is_indexed_with_empty_text(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    name = engine.add_collection(root).name
    engine.update([name])
    assert "pkg/__init__.py" in engine.indexed_paths(name)
    assert engine.read_indexed_text(name, "pkg/__init__.py") == ""


def test_generated_and_minified_files_are_skipped(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "_parser.c": "/* Generated by Cython 3.0.11 */\nint x;\n",
            "api.pb.go": "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n",
            "result.freezed.dart": "// GENERATED CODE - DO NOT MODIFY BY HAND\npart of 'r.dart';\n",
            "bundle.js": "var a=1;" * 2000,
            "real.py": "def real():\n    return 1\n",
        },
    )
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.skipped == {"generated": 3, "minified": 1}
    assert engine.indexed_paths(name) == ["real.py"]


def test_openapi_documents_generated_from_protos_are_skipped(engine: Engine, tmp_path: Path) -> None:
    """temporalio/api keeps the OpenAPI documents its protos generate beside them (protoc-gen-openapi's
    YAML says so in its first line, protoc-gen-openapiv2's JSON is titled by its .proto): they
    repeat every comment of the protos and came first for every question at whole scope."""
    root = write_tree(
        tmp_path / "proj",
        {
            "openapi/openapiv3.yaml": "# Generated with protoc-gen-openapi\n"
            "# https://github.com/google/gnostic/tree/master/cmd/protoc-gen-openapi\n\nopenapi: 3.0.3\n",
            "openapi/openapiv2.json": '{\n  "swagger": "2.0",\n  "info": {\n'
            '    "title": "temporal/api/workflowservice/v1/request_response.proto",\n'
            '    "version": "version not set"\n  }\n}\n',
            "docs/petstore.json": '{\n  "swagger": "2.0",\n  "info": {\n    "title": "Pet Store"\n  }\n}\n',
            "api/service.proto": 'syntax = "proto3";\nservice Pets {\n  rpc List (Req) returns (Resp);\n}\n',
        },
    )
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.skipped == {"generated": 2}
    assert engine.indexed_paths(name) == ["api/service.proto", "docs/petstore.json"]


def test_indexed_text_keeps_line_numbers_of_the_file(engine: Engine, tmp_path: Path) -> None:
    body = "\n\n\n".join(f"def f{i}():\n" + "    x = 1\n" * 30 for i in range(4)) + "\n"
    root = write_tree(tmp_path / "proj", {"m.py": body})
    name = engine.add_collection(root).name
    engine.update([name])
    rebuilt = engine.read_indexed_text(name, "m.py").split("\n")
    original = body.split("\n")
    assert rebuilt == original[: len(rebuilt)] and len(rebuilt) >= len(original) - 1


def test_a_moved_repository_takes_its_name_and_index_back(engine: Engine, tmp_path: Path) -> None:
    """`mv ~/src/app ~/work/app`: the first search there registered `repo-app-<hash>` beside the
    gone `repo-app` and indexed (then embedded) every file again."""
    root = _tree(tmp_path / "src" / "proj")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    name = engine.add_collection(root, on_demand=True).name
    first = engine.update([name])[0]
    moved = tmp_path / "work" / "proj"
    moved.parent.mkdir()
    root.rename(moved)  # a move keeps each file's size and mtime
    again = engine.add_collection(moved, on_demand=True)
    assert again.name == name == "repo-proj" and again.path == moved.resolve()
    report = engine.update([name])[0]
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, first.added)
    assert engine.search("TCPConnector", [name])
    assert list(engine.collections()) == ["repo-proj"]
    assert [row["root"] for row in engine.store.collection_stats()] == [str(moved.resolve())]


def test_another_repository_of_the_name_leaves_a_gone_folders_index_alone(
    engine: Engine, tmp_path: Path
) -> None:
    """A drive unmounted for now is a gone folder too: a search in an unrelated repository with
    the same folder name took `repo-proj` over, and its update dropped the drive's whole index."""
    drive = _tree(tmp_path / "usb" / "proj")
    subprocess.run(["git", "init", "-q", str(drive)], check=True)
    name = engine.add_collection(drive, on_demand=True).name
    first = engine.update([name])[0]
    unmounted = tmp_path / "offline"
    drive.parent.rename(unmounted)
    other = write_tree(tmp_path / "work" / "proj", {"app/main.py": "def main():\n    return 0\n"})
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    assert engine.add_collection(other, on_demand=True).name.startswith("repo-proj-")
    assert engine.collections()[name].path == drive.resolve()
    unmounted.rename(drive.parent)  # mounted again: its index is as it was
    report = engine.update([name])[0]
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, first.added)


def test_every_reason_a_file_is_left_out_is_named_in_troubleshooting(engine: Engine, tmp_path: Path) -> None:
    # `status` printed `not indexed: 1 undecodable_name` and `update` `skipped broken_symlink=1`,
    # reasons the troubleshooting row that explains the others did not name
    (tmp_path / "outside.py").write_text("x = 1\n")
    root = write_tree(
        tmp_path / "proj",
        {
            "ok.py": "def fine():\n    return 'fine'\n",
            "blob.py": "x = 1\0\n",
            "gen.py": "# Code generated by protoc. DO NOT EDIT.\nx = 1\n",
            "min.js": "var a=1;" * 500,
            "big.py": "x = 1\n" * 200_000,
        },
    )
    os.symlink(root / "missing.py", root / "broken.py")
    os.symlink(tmp_path / "outside.py", root / "linked.py")
    (root / os.fsdecode(b"bad\xff.py")).write_text("2\n")
    report = engine.update([engine.add_collection(root).name])[0]
    assert set(report.skipped) == {
        "binary", "generated", "minified", "too_large", "broken_symlink", "symlink_outside_root",
        "undecodable_name",
    }
    docs = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    row = next(line for line in docs.splitlines() if line.startswith("| `status` says `not indexed"))
    assert [reason for reason in report.skipped if f"`{reason}`" not in row] == []
