"""Chunks that are only imports / package lines / a file header must not outrank the code that
does what the question asks (issue 13: an import block first for "how are cookies persisted
across redirects" in psf/requests)."""

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.header_chunks import is_preamble_only
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.scoring import ScoringWeights
from tests.conftest import indexed

PREAMBLES = {
    "python": '"""Sessions: persist cookies across redirects."""\n\nfrom __future__ import annotations\n\n'
    "import os\nfrom .cookies import (\n    RequestsCookieJar,\n    merge_cookies,\n)\n"
    "from .exceptions import TooManyRedirects  # noqa: F401\n",
    "go": '// Copyright 2020 The Go Authors.\n\npackage http\n\nimport (\n\t"fmt"\n\tnet "net/url"\n)\n',
    "rust": "//! Crate docs\nuse std::io::{self, Read};\npub use self::x::Y;\nmod inner;\n"
    "use std::{\n    fmt,\n};\n",
    "c": '/* MIT License\n * Copyright\n */\n#ifndef FOO_H\n#define FOO_H\n'
    '#include <stdio.h>\n#include "x.h"\n',
    "javascript": "'use strict';\nconst fs = require('fs');\nimport { a, b } from './x';\n"
    "export * from './y';\n",
    "java": "package org.example.net;\n\nimport java.util.List;\nimport static org.example.Z.*;\n",
    "csharp": "using System;\nusing System.Text;\nnamespace Example.Net;\n",
    "php": "<?php\nnamespace App\\Http;\nuse Illuminate\\Support\\Str;\nrequire_once 'x.php';\n",
    "ruby": "require 'json'\nrequire_relative 'cookie_jar'\n",
}
CODE = {
    "python": "def resolve_redirects(self, resp):\n    url = self.get_redirect_target(resp)\n"
    "    while url:\n        extract_cookies_to_jar(self.cookies, req, resp.raw)\n        return url\n",
    "imports then code": "import os\nimport sys\n\nhome = os.environ['HOME']\nprint(home, sys.argv)\n",
    "go": "func (c *Client) Do(req *Request) (*Response, error) {\n\treturn c.do(req)\n}\n",
    "short": "def f():\n    return x\n",
}


@pytest.mark.parametrize("language", sorted(PREAMBLES))
def test_preambles_in_any_language_are_recognised(language: str) -> None:
    assert is_preamble_only(PREAMBLES[language])


@pytest.mark.parametrize("name", sorted(CODE))
def test_code_is_not_a_preamble(name: str) -> None:
    assert not is_preamble_only(CODE[name])


# dplyr's R/bind-rows.R: 29 lines of roxygen above `bind_rows <- function`, cut into a chunk of
# their own; they say what the function does ("Bind multiple data frames by row"), so they are
# the function's docs, not the file's header (a `#` comment in any other language still is)
ROXYGEN = ("#' Bind multiple data frames by row\n#'\n#' @param ... Data frames to combine. Columns are\n"
           "#'   matched by name, and any missing columns will be filled with `NA`.\n#' @export\n")


def test_roxygen_documents_the_r_function_below_it() -> None:
    assert not is_preamble_only(ROXYGEN, "r")
    assert is_preamble_only("# Bind multiple data frames by row\n# @export\n", "r")
    assert is_preamble_only(ROXYGEN, "python")


SESSIONS = PREAMBLES["python"] + "\n\n" + "\n".join(f"# padding line {i}" for i in range(40)) + "\n\n" + """
class SessionRedirectMixin:
    def resolve_redirects(self, resp, req):
        \"\"\"Follow each redirect, keeping the session's cookies.\"\"\"
        url = self.get_redirect_target(resp)
        while url:
            prepared = req.copy()
            extract_cookies_to_jar(prepared._cookies, req, resp.raw)
            merge_cookies(prepared._cookies, self.cookies)
            resp = self.send(prepared, allow_redirects=False)
            url = self.get_redirect_target(resp)
        return resp
"""


# other modules, so that BM25's idf means something (with two chunks every shared word weighs 0)
OTHERS = {
    f"mod{i}.py": f"def helper_{i}(value):\n    '''Format value number {i} for the log.'''\n"
    f"    return str(value) + '{i}'\n"
    for i in range(8)
}


def test_code_that_does_it_outranks_the_import_block(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {"sessions.py": SESSIONS, **OTHERS})
    hits = engine.search("how are cookies persisted across redirects", [name],
                         options=SearchOptions(per_file=0, explain=True))
    assert hits[0].symbol in ("SessionRedirectMixin", "resolve_redirects"), [h.explain for h in hits]
    preamble = next(h for h in hits if h.explain["chunk_lines"][0] == 1)
    assert preamble.explain["boosts"]["preamble_only"] == ScoringWeights().preamble_penalty


def test_a_file_that_is_only_imports_is_the_answer_itself(engine: Engine, tmp_path: Path) -> None:
    """A re-export module (fastapi/middleware/cors.py) has no code after its imports to prefer."""
    reexport = "from starlette.middleware.cors import CORSMiddleware as CORSMiddleware  # noqa\n"
    name = indexed(engine, tmp_path / "p", {"middleware/cors.py": reexport})
    hit = engine.search("cors middleware", [name], options=SearchOptions(explain=True))[0]
    assert hit.path == "middleware/cors.py" and "preamble_only" not in hit.explain["boosts"]
