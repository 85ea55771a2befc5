"""A long definition cut into windows: every window after the first carries the definition's
name in its heading, which the embedder reads (issue 13: the cookie lines of requests' 120-line
`resolve_redirects` sat in a chunk whose heading and symbols never said "redirect")."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.chunking import chunk_text
from qmd_daemon.text.chunk_model import Chunk
from tests.conftest import indexed


def _python() -> str:
    body = "\n".join(f"            hop_{i} = self.rebuild_hop(resp, {i})" for i in range(60))
    return f'''class SessionRedirectMixin:
    def get_redirect_target(self, resp):
        return resp.headers.get("location")

    def resolve_redirects(self, resp, req):
        """Follow each redirect of resp."""
        url = self.get_redirect_target(resp)
        while url:
{body}
            extract_cookies_to_jar(prepared._cookies, req, resp.raw)
            merge_cookies(prepared._cookies, self.cookies)
            url = self.get_redirect_target(resp)
        return resp
'''


def _go() -> str:
    body = "\n".join(f"\t\thop{i} := c.rebuildHop(resp, {i})\n\t\t_ = hop{i}" for i in range(40))
    return f"""package http

func (c *Client) ResolveRedirects(resp *Response, req *Request) *Response {{
\turl := redirectTarget(resp)
\tfor url != "" {{
{body}
\t\tc.Jar.SetCookies(req.URL, resp.Cookies())
\t\turl = redirectTarget(resp)
\t}}
\treturn resp
}}
"""


def _javascript() -> str:
    body = "\n".join(f"      const hop{i} = this.rebuildHop(resp, {i});" for i in range(60))
    return f"""class Session {{
  resolveRedirects(resp, req) {{
    let url = redirectTarget(resp);
    while (url) {{
{body}
      this.jar.setCookies(req.url, resp.cookies);
      url = redirectTarget(resp);
    }}
    return resp;
  }}
}}
"""


# (file, text, the definition's chunk heading, the continuation heading)
CASES = {
    "python": ("sessions.py", _python(), "class SessionRedirectMixin",
               "class SessionRedirectMixin > method resolve_redirects"),
    "go": ("client.go", _go(), "", "method ResolveRedirects"),
    "javascript": ("session.js", _javascript(), "class Session", "class Session > method resolveRedirects"),
}


def _cookie_chunk(chunks: list[Chunk]) -> Chunk:
    return next(c for c in chunks if "ookie" in c.text and "hop_0 " not in c.text and "hop0 " not in c.text)


@pytest.mark.parametrize("language", sorted(CASES))
def test_continuation_windows_carry_the_definition_in_their_heading(language: str) -> None:
    path, text, own_heading, continuation_heading = CASES[language]
    chunks = chunk_text(path, text)
    name = continuation_heading.rsplit(" ", 1)[-1]
    first = next(c for c in chunks if name in c.symbols)
    assert first.heading == own_heading  # the window that defines it keeps its container's heading
    cookie = _cookie_chunk(chunks)
    assert cookie.start_line > first.start_line and name not in cookie.text
    assert cookie.heading == continuation_heading
    assert name not in cookie.symbols and not cookie.definitions  # context, not a definition
    after = [c for c in chunks if c.start_line > first.start_line]  # the definition is the file's last
    assert after and all(c.heading == continuation_heading for c in after), [
        (c.start_line, c.heading) for c in after]


def test_a_definition_after_a_windowed_one_gets_its_own_heading_back() -> None:
    text = _python() + "\n    def rebuild_auth(self, prepared):\n        return prepared\n"
    last = chunk_text("sessions.py", text)[-1]
    assert "rebuild_auth" in last.symbols and last.heading == "class SessionRedirectMixin"


def test_fallback_language_continuations_carry_the_name_too() -> None:
    """Languages without a grammar (the regex fallback) follow the same model."""
    body = "\n".join(f"    hop_{i} = rebuild_hop(resp, {i})" for i in range(60))
    text = f"proc resolveRedirects(resp: Response) =\n{body}\n    mergeCookies(jar, resp)\n"
    cookie = next(c for c in chunk_text("session.nim", text, "nim") if "mergeCookies" in c.text)
    assert cookie.heading.endswith("resolveRedirects") and "resolveRedirects" not in cookie.text


def test_renaming_the_function_renames_its_kept_windows(engine: Engine, tmp_path: Path) -> None:
    """Only the first window's lines change; the windows kept by content hash get the new heading."""
    path, text, _, _ = CASES["python"]
    root = tmp_path / "p"
    name = indexed(engine, root, {path: text})
    (root / path).write_text(text.replace("def resolve_redirects", "def follow_hops"))
    engine.update([name])
    headings = {row[0] for row in engine.store.conn.execute(
        "SELECT heading FROM chunks WHERE text LIKE '%merge_cookies%'")}
    assert headings == {"class SessionRedirectMixin > method follow_hops"}
