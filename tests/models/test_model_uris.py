"""Model references, their precedence, and the real huggingface-hub download path.

The Hub is a local stdlib HTTP server on 127.0.0.1 answering the two requests hf_hub_download
makes (HEAD then GET of /{repo}/resolve/{revision}/{file}, with Range on resume).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from qmd_daemon.models import ModelError
from qmd_daemon.models.uris import DEFAULT_URIS, model_uri, parse_uri, pull, resolve
from qmd_daemon.settings import MODEL_ENV_VARS

COMMIT = "a" * 40


class FakeHub:
    """Files by URL path; `drop_next` makes the next GET stop halfway through the body."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.drop_next = False
        self.requests: list[tuple[str, str, str | None]] = []


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _route(self) -> bytes | None:
            self.requests_entry = (self.command, self.path, self.headers.get("Range"))
            hub.requests.append(self.requests_entry)
            parts = self.path.split("/resolve/")
            if len(parts) != 2 or parts[0].strip("/") not in {k.split("/resolve/")[0].strip("/")
                                                                for k in hub.files}:
                self._error(404, "RepoNotFound")
                return None
            body = hub.files.get(self.path)
            if body is None:
                self._error(404, "EntryNotFound")
            return body

        def _error(self, code: int, error_code: str) -> None:
            self.send_response(code)
            self.send_header("X-Error-Code", error_code)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _headers(self, body: bytes, status: int = 200, start: int = 0) -> None:
            self.send_response(status)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest() + '"')
            self.send_header("Content-Length", str(len(body) - start))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.end_headers()

        def do_HEAD(self) -> None:  # noqa: N802
            body = self._route()
            if body is not None:
                self._headers(body)

        def do_GET(self) -> None:  # noqa: N802
            body = self._route()
            if body is None:
                return
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-")[0])
            self._headers(body, 206 if start else 200, start)
            if hub.drop_next:
                hub.drop_next = False
                self.wfile.write(body[start : start + (len(body) - start) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body[start:])

    return Handler


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    fake = FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for var in MODEL_ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    yield fake
    server.shutdown()
    server.server_close()


def test_parse_uri() -> None:
    ref = parse_uri("hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf")
    assert (ref.repo_id, ref.filename, ref.revision) == (
        "Qwen/Qwen3-Embedding-0.6B-GGUF", "Qwen3-Embedding-0.6B-Q8_0.gguf", None)
    ref = parse_uri("hf:o/r@v1.0/sub/dir/m.gguf")
    assert (ref.repo_id, ref.filename, ref.revision) == ("o/r", "sub/dir/m.gguf", "v1.0")
    assert parse_uri("file:///tmp/a%20b.gguf").path == Path("/tmp/a b.gguf")
    assert parse_uri("~/m.gguf").path == Path.home() / "m.gguf"
    for bad in ("hf:onlyowner/file.gguf", "", "hf:o//f.gguf"):
        with pytest.raises(ModelError):
            parse_uri(bad)


def test_model_uri_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in MODEL_ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    assert model_uri("embed") == DEFAULT_URIS["embed"]
    assert model_uri("embed", {}, {"embed": "/p.gguf"}) == "/p.gguf"
    assert model_uri("embed", {"embed": "/cfg.gguf"}, {"embed": "/p.gguf"}) == "/cfg.gguf"
    monkeypatch.setenv("QMD_EMBED_MODEL", "/env.gguf")
    assert model_uri("embed", {"embed": "/cfg.gguf"}) == "/env.gguf"
    assert model_uri("rerank", {"embed": "/cfg.gguf"}) == DEFAULT_URIS["rerank"]
    with pytest.raises(ModelError, match="unknown model role"):
        model_uri("summarise")


def test_hf_download_and_cache(hub: FakeHub, tiny_gguf: Path, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    body = tiny_gguf.read_bytes()
    hub.files["/org/tiny-GGUF/resolve/main/tiny-q8.gguf"] = body
    uri = "hf:org/tiny-GGUF/tiny-q8.gguf"
    path = resolve(uri)
    assert path.read_bytes() == body
    assert str(path).startswith(str(tmp_path / "hf-home" / "hub"))  # HF_HOME respected
    gets = sum(1 for r in hub.requests if r[0] == "GET")
    assert resolve(uri) == path and sum(1 for r in hub.requests if r[0] == "GET") == gets  # cached
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    n = len(hub.requests)
    assert resolve(uri) == path and len(hub.requests) == n  # offline: no request at all
    with pytest.raises(ModelError, match="offline"):
        resolve("hf:org/tiny-GGUF/other.gguf")


def test_interrupted_download_resumes(hub: FakeHub, small_models: dict[str, Path]) -> None:
    # huggingface-hub writes in 10 MiB chunks; the 25 MB MiniLM GGUF is cut after ~12 MB, so the
    # retry must ask for the rest with a Range request and the result must be byte-identical.
    body = small_models["embed"].read_bytes()
    hub.files["/org/minilm-GGUF/resolve/main/minilm.gguf"] = body
    hub.drop_next = True
    path = resolve("hf:org/minilm-GGUF/minilm.gguf")
    assert path.stat().st_size == len(body) and path.read_bytes() == body
    ranges = [r[2] for r in hub.requests if r[0] == "GET"]
    assert ranges[0] is None and ranges[1] is not None
    assert 0 < int(ranges[1].removeprefix("bytes=").rstrip("-")) <= len(body) // 2


def test_pull_and_refresh(hub: FakeHub, tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.files["/org/tiny-GGUF/resolve/main/tiny-q8.gguf"] = tiny_gguf.read_bytes()
    monkeypatch.setenv("QMD_RERANK_MODEL", "hf:org/tiny-GGUF/tiny-q8.gguf")
    paths = pull("rerank", progress=False)
    assert set(paths) == {"rerank"} and paths["rerank"].exists()
    gets = sum(1 for r in hub.requests if r[0] == "GET")
    pull("rerank", refresh=True, progress=False)
    assert sum(1 for r in hub.requests if r[0] == "GET") == gets + 1


def test_hub_errors_are_one_line(hub: FakeHub, tiny_gguf: Path) -> None:
    hub.files["/org/tiny-GGUF/resolve/main/tiny-q8.gguf"] = tiny_gguf.read_bytes()
    hub.files["/org/tiny-GGUF/resolve/main/page.gguf"] = b"<html><body>rate limited</body></html>"
    cases = {
        "hf:nobody/missing/x.gguf": "not found",
        "hf:org/tiny-GGUF/absent.gguf": "not found",
        "hf:org/tiny-GGUF/page.gguf": "not a GGUF",
    }
    for uri, words in cases.items():
        with pytest.raises(ModelError) as exc:
            resolve(uri)
        assert words in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    with pytest.raises(ModelError, match="pull --refresh"):  # a bad download: fetch it again
        resolve("hf:org/tiny-GGUF/page.gguf")


def test_a_hub_whose_name_does_not_resolve_is_answered_at_once_without_retries(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # a first install with no network (first-hour-9): huggingface-hub retried the HEAD request
    # five times with back-off (23 s, ten lines of "Retrying in 8s") before the same answer
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.qmd-test.invalid")  # .invalid never resolves
    with pytest.raises(ModelError) as err:
        resolve("hf:o/r/m.gguf", download=True)
    assert "the Hub could not be reached (hub.qmd-test.invalid does not resolve" in str(err.value)
    assert "Retrying" not in capfd.readouterr().err


@pytest.mark.parametrize("offline", [False, True], ids=["unreachable", "HF_HUB_OFFLINE"])
def test_pull_that_cannot_reach_the_hub_does_not_advise_running_pull(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, offline: bool
) -> None:
    # `qmd-daemon pull` offline answered "... is not in the local cache and the Hub could not be
    # reached (...); run `qmd-daemon pull`": the very command that failed
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.qmd-test.invalid")
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ModelError) as err:
        pull("embed", {"embed": "hf:o/r/m.gguf"}, progress=False)
    said = str(err.value)
    assert "run `qmd-daemon pull`" not in said and "`qmd-daemon pull --profile small`" in said, said
    assert ("unset HF_HUB_OFFLINE" if offline else "HF_ENDPOINT") in said, said
    with pytest.raises(ModelError, match=r"run `qmd-daemon pull`$"):  # a search's load still names it
        resolve("hf:o/r/m.gguf", download=True)
