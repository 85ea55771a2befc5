"""Markdown chunking: heading paths, fenced code, front matter, caps."""

from __future__ import annotations

import textwrap

from qmd_daemon.ingest.chunk_markdown import chunk_markdown, find_headings
from qmd_daemon.ingest.chunking import chunk_text
from tests.ingest.test_chunking import assert_valid

DOC = textwrap.dedent(
    """\
    ---
    title: Guide
    ---

    Intro paragraph with a [link](x).

    # Install

    Install the package first.

    ## From source

    ```bash
    # clone it, this is not a heading
    git clone https://example.com/repo
    ## nor this
    ```

    ## From PyPI

    pip install it

    ### Extras

    Optional extras.

    Usage
    -----

    Use it like this.

    #### Deep heading

    Details.
    """
)


def test_headings_ignore_fenced_code_and_front_matter() -> None:
    titles = [(title, level) for _start, _row, level, title in find_headings(DOC.split("\n"))]
    assert titles == [
        ("Install", 1), ("From source", 2), ("From PyPI", 2), ("Extras", 3), ("Usage", 2), ("Deep heading", 4)
    ]


def test_heading_paths_and_definitions() -> None:
    chunks = chunk_text("docs/guide.md", DOC, "markdown", max_lines=8)
    assert_valid(DOC, chunks)
    headings = [c.heading for c in chunks]
    assert "Install > From source" in headings
    assert "Install > From PyPI > Extras" in headings
    assert "Install > Usage" in headings
    source = next(c for c in chunks if c.heading == "Install > From source")
    assert "# clone it, this is not a heading" in source.text and "## nor this" in source.text
    defs = {d.name: (d.kind, d.line) for c in chunks for d in c.definitions}
    lines = DOC.split("\n")
    assert defs["From source"] == ("heading", lines.index("## From source") + 1)
    assert defs["Usage"] == ("heading", lines.index("Usage") + 1)
    assert defs["Deep heading"][0] == "heading"
    assert "nor this" not in defs
    # front matter stays with the first chunk
    assert chunks[0].start_line == 1 and "title: Guide" in chunks[0].text


def test_small_sections_merge_and_keep_a_common_heading() -> None:
    chunks = chunk_markdown("guide.md", DOC)
    assert_valid(DOC, chunks)
    assert len(chunks) <= 2
    assert chunks[0].heading == "Install"
    assert "title: Guide" in chunks[0].text


def test_long_section_is_windowed_with_overlap_and_keeps_heading() -> None:
    body = "\n\n".join(f"Paragraph {i} explains one more detail of the configuration." for i in range(120))
    text = f"# Config\n\n## Options\n\n{body}\n\n## Next\n\nbye\n"
    chunks = chunk_text("config.md", text, "markdown", max_lines=40, overlap=3)
    assert_valid(text, chunks)
    options = [c for c in chunks if c.heading == "Config > Options"]
    assert len(options) >= 5
    assert all(c.end_line - c.start_line + 1 <= 40 for c in chunks)
    for a, b in zip(options, options[1:], strict=False):
        assert b.start_line <= a.end_line + 1
    assert chunks[-1].heading == "Config > Next"


def test_no_headings_and_hash_without_space() -> None:
    text = "#hashtag is not a heading\n\nJust text.\n"
    chunks = chunk_text("notes.md", text, "markdown")
    assert_valid(text, chunks)
    assert chunks[0].definitions == []
    assert chunks[0].heading == ""


def test_unclosed_fence_and_crlf() -> None:
    text = "# Title\r\n\r\n```python\r\n# inside\r\ndef f(): pass\r\n"
    chunks = chunk_text("x.md", text, "markdown")
    assert_valid(text, chunks)
    assert [d.name for c in chunks for d in c.definitions] == ["Title"]


def test_r_markdown_is_chunked_as_markdown_and_its_code_comments_are_no_headings() -> None:
    # `.Rmd`/`.qmd` were not indexed at all; their fenced chunks are `{r label, opts}` blocks
    text = "---\ntitle: Sales\n---\n\n# Load data\n\n```{r load, echo=FALSE}\n# read the csv\n" \
           "sales <- read_csv('sales.csv')\n```\n\n## Summaries\n\nText.\n"
    chunks = chunk_text("reports/sales.Rmd", text, None)  # the language from the file table
    assert_valid(text, chunks)
    assert [(d.name, d.line) for c in chunks for d in c.definitions] == [("Load data", 5), ("Summaries", 12)]
