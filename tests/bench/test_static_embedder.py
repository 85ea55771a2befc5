"""The static tier distilled from the small profile's real MiniLM through llama.cpp: token rows
are deterministic, and chunk vectors from the table find the chunk a question is about."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from bench.static_embedder import STATIC_DIMS, StaticEmbedder, principal_components, zipf_weights
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.static_table import STATIC_DIR, embed_vocabulary
from tests.conftest import MODELS_DIR, indexed


@pytest.fixture(scope="module")
def table(embedder: Embedder) -> np.ndarray:
    """The whole vocabulary distilled, reduced and Zipf-weighted (bench/static_tier.py's `zipf`
    variant), kept in .test-cache/models/static by the embedder's fingerprint (about a minute the
    first time)."""
    digest = hashlib.sha256(embedder.fingerprint.encode("utf-8")).hexdigest()[:16]
    path = MODELS_DIR / STATIC_DIR / f"{digest}-{STATIC_DIMS}.npy"
    if path.is_file():
        return np.load(path)
    rows = embed_vocabulary(embedder, progress=False)
    table = principal_components(rows, STATIC_DIMS) * zipf_weights(len(rows))[:, None]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, table)
    return table


def test_token_rows_are_deterministic_and_independent_of_the_batch(embedder: Embedder) -> None:
    tokens = [1996, 7592, 4638, 2000, 16324, 3231]  # the, cookie, ...: ordinary vocabulary ids
    first = embed_vocabulary(embedder, progress=False, tokens=tokens)
    again = embed_vocabulary(embedder, progress=False, tokens=tokens)
    alone = embed_vocabulary(embedder, progress=False, tokens=tokens[2:3])
    assert first.shape == (len(tokens), embedder.dim)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(alone[0], first[2], atol=1e-5)
    assert len({row.tobytes() for row in first}) == len(tokens)  # each token its own vector
    # a token's row is what the embedder itself gives the word ([CLS] cookie [SEP], mean-pooled)
    with embedder.handle.acquire() as llm:
        (token,) = llm.tokenize(b"cookie", add_bos=False, special=False)
    row = embed_vocabulary(embedder, progress=False, tokens=[token])[0]
    reference = np.asarray(embedder.embed_documents(["cookie"])[0])
    assert float(reference @ (row / np.linalg.norm(row))) > 0.999


def test_static_vectors_rank_the_chunk_a_question_is_about_first(
    small_engine, tmp_path: Path, embedder: Embedder, table: np.ndarray
) -> None:
    files = {
        "cookies.py": (
            "def parse_cookie_header(header):\n"
            '    """Split an HTTP Cookie header into name=value pairs."""\n'
            "    jar = {}\n"
            "    for part in header.split(';'):\n"
            "        name, _, value = part.strip().partition('=')\n"
            "        jar[name] = value\n"
            "    return jar\n"
        ),
        "images.py": (
            "def resize_image(pixels, width, height):\n"
            '    """Scale a bitmap to a new width and height with bilinear sampling."""\n'
            "    return [[pixels[int(y * height)][int(x * width)] for x in range(width)]\n"
            "            for y in range(height)]\n"
        ),
    }
    name = indexed(small_engine, tmp_path / "repo", files)
    store = small_engine.store
    ids = small_engine.collection_ids([name])
    rows = store.chunks_by_ids([int(r[0]) for r in store.conn.execute(
        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?", ids)])
    by_path = {row.path: row.text for row in rows.values()}
    static = StaticEmbedder(embedder, table)
    chunks = np.asarray(static.embed_documents([by_path["cookies.py"], by_path["images.py"]]))
    for question, best in (("how are cookies read from the request header", 0),
                           ("shrink a picture to a smaller size", 1)):
        scores = chunks @ np.asarray(static.embed_query(question))
        assert int(np.argmax(scores)) == best, (question, scores)


def test_fields_are_weighted_means_and_the_body_is_capped(embedder: Embedder, table: np.ndarray) -> None:
    static = StaticEmbedder(embedder, table)
    chunk = ("http cookies py", "cookie jar", "store the cookie in the jar")
    (path, names, body), = static.field_tokens([chunk], cap=3)
    assert body == static.tokenize(["store the cookie"])[0]
    assert path == static.tokenize(["http cookies py"])[0]
    fields = [[path, names, body]]
    only_path = np.asarray(static.embed_field_tokens(fields, (1.0, 0.0, 0.0))[0])
    np.testing.assert_allclose(only_path, static.embed_documents(["http cookies py"])[0], atol=1e-6)
    # a 3-token path at weight 2 outweighs a body however long: the path's mean counts, not its count
    long_body = body * 40
    weighted = np.asarray(static.embed_field_tokens([[path, [], long_body]], (2.0, 0.0, 1.0))[0])
    pooled = np.asarray(static.embed_documents(["http cookies py " + "store the cookie " * 40])[0])
    assert float(weighted @ only_path) > float(pooled @ only_path)


def test_a_common_direction_is_removed_from_documents_and_queries(embedder: Embedder,
                                                                  table: np.ndarray) -> None:
    static = StaticEmbedder(embedder, table)
    static.common = np.asarray(static.embed_query("the of and to in"), dtype=np.float32)
    for vector in (static.embed_query("parse the cookie header"),
                   static.embed_documents(["resize an image"])[0]):
        assert abs(float(np.asarray(vector) @ static.common)) < 1e-5
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
