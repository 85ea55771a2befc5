"""FTS5 compilation of the search's keyword queries (store/fts5_query.py): the MATCH strings are
those search/lexical.py wrote itself before the store compiled them, so rankings stay bit-equal."""

from pathlib import Path

import pytest

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.lexical import lexical_queries
from qmd_daemon.search.query import parse_query
from qmd_daemon.store.fts5_query import match_expression
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import AllOf, Word
from qmd_daemon.text.chunk_model import Chunk

# (query, the MATCH strings search/lexical.py wrote before the move), strictest first
BEFORE = [
    (
        'getUserName',
        [
            '("getusername" OR ("get" AND "user" AND "name"))',
        ],
    ),
    (
        'client session',
        [
            '"client" AND "session"',
            '"client" OR "session"',
        ],
    ),
    (
        'ClientSession nonexistentword',
        [
            '("clientsession" OR ("client" AND "session")) AND "nonexistentword"',
            '("clientsession" OR ("client" AND "session")) OR "nonexistentword"',
        ],
    ),
    (
        '"connection pool"',
        [
            '"connection pool"',
        ],
    ),
    (
        'connection limit -legacy',
        [
            '"connection" AND "limit" NOT ("legacy")',
            '("connection" OR "limit") NOT ("legacy")',
        ],
    ),
    (
        '"exact words" parse cookie -legacy -"old api"',
        [
            '"exact words" AND "old api" AND "parse" AND "cookie" NOT ("legacy")',
            '("parse" OR "cookie") NOT ("legacy")',
        ],
    ),
    (
        '"exact words" parse',
        [
            '"exact words" AND "parse"',
            '("parse")',
        ],
    ),
    (
        '"exact words" parse_cookie',
        [
            '"exact words" AND ("parse_cookie" OR ("parse" AND "cookie"))',
            '(("parse_cookie" OR ("parse" AND "cookie")))',
        ],
    ),
    (
        'parse -legacy',
        [
            '"parse" NOT ("legacy")',
        ],
    ),
    (
        '"only a phrase"',
        [
            '"only a phrase"',
        ],
    ),
    (
        '建立数据库连接池',
        [
            '"建立" AND "立数" AND "数据" AND "据库" AND "库连" AND "连接" AND "接池"',
            '"建立" OR "立数" OR "数据" OR "据库" OR "库连" OR "连接" OR "接池"',
        ],
    ),
    (
        '"返回JSON格式的数据" parse',
        [
            '("返回" AND "格式 式的 的数 数据" AND "JSON") AND "parse"',
            '("parse")',
        ],
    ),
    (
        '数据库 连接 -旧版',
        [
            '"数据" AND "据库" AND "连接" NOT ("旧版")',
            '("数据" OR "据库" OR "连接") NOT ("旧版")',
        ],
    ),
    (
        'say "he said ""hi"""',
        [
            '"he said" AND "hi" AND "say"',
            '("say")',
        ],
    ),
    (
        'get_user_name HTTPServer xml2json',
        [
            '("get_user_name" OR ("get" AND "user" AND "name")) AND ("httpserver" OR ("http" AND '
            '"server")) AND ("xml2json" OR ("xml" AND "2" AND "json"))',
            '("get_user_name" OR ("get" AND "user" AND "name")) OR ("httpserver" OR ("http" AND '
            '"server")) OR ("xml2json" OR ("xml" AND "2" AND "json"))',
        ],
    ),
    (
        'größe_berechnen Straße',
        [
            '("größe_berechnen" OR ("größe" AND "berechnen")) AND "straße"',
            '("größe_berechnen" OR ("größe" AND "berechnen")) OR "straße"',
        ],
    ),
    (
        'ValueError: empty payload "is not allowed"',
        [
            '"is not allowed" AND ("valueerror" OR ("value" AND "error")) AND "empty" AND "payload"',
            '(("valueerror" OR ("value" AND "error")) OR "empty" OR "payload")',
        ],
    ),
]


def _same_or_outer_parentheses_dropped(before: str, now: str) -> bool:
    """The any-term query beside a phrase was wrapped in one redundant pair of parentheses; the
    tree does not carry that, and FTS5 parses both alike (the test below runs both)."""
    return now == before or before == f"({now})"


@pytest.mark.parametrize(("query", "before"), BEFORE)
def test_compiled_match_strings_are_todays(query: str, before: list[str]) -> None:
    now = [match_expression(q) for q in lexical_queries(parse_query(query))]
    assert len(now) == len(before)
    assert all(_same_or_outer_parentheses_dropped(b, n) for b, n in zip(before, now, strict=True)), now


def _store(tmp_path: Path) -> tuple[IndexStore, int]:
    store = IndexStore(tmp_path / "index.sqlite")
    texts = [
        "def getUserName(user):\n    return user.name  # get the user name",
        "connection pool limit, no legacy; parse_cookie and the exact words",
        "建立数据库连接池 返回JSON格式的数据 parse",
        "ValueError: empty payload is not allowed",
        "say he said hi; HTTPServer get_user_name xml2json größe_berechnen Straße",
        "pool of connection limit legacy 旧版 数据库 连接",
    ]
    with store.transaction():
        collection = store.ensure_collection("c", tmp_path)
        for n, text in enumerate(texts):
            store.write_file(collection, f"f{n}.py", size=1, mtime_ns=1, content_hash=str(n),
                             language="python", kind="code", line_count=1, chunks=[Chunk(1, 1, text)])
    return store, collection


def test_compiled_queries_rank_exactly_as_todays_strings(tmp_path: Path) -> None:
    store, collection = _store(tmp_path)
    weights = (2.0, 4.0, 1.0)
    scope = f"collection : (qmdcol{collection})"
    for query, before in BEFORE:
        for old, tree in zip(before, lexical_queries(parse_query(query)), strict=True):
            rows = store.conn.execute(
                "SELECT rowid, bm25(chunks_fts, 0.0, 2.0, 4.0, 1.0) AS s FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY s LIMIT 50", (f"{scope} AND ({old})",)
            ).fetchall()
            assert store.fts_search(tree, [collection], 50, weights) == [(r[0], -r[1]) for r in rows], query
            assert store.fts_count(tree, [collection]) == len(rows)
    store.close()


def test_a_query_fts5_refuses_is_rejected_not_a_driver_error(tmp_path: Path) -> None:
    """An empty AND compiles to `()`, which FTS5's syntax refuses: the caller sees QueryRejected
    (the project's type), never sqlite3's OperationalError, and the store keeps working."""
    store, collection = _store(tmp_path)
    with pytest.raises(QueryRejected):
        store.fts_search(AllOf(()), [collection], 5, (2.0, 4.0, 1.0))
    with pytest.raises(QueryRejected):
        store.fts_count(AllOf(()), [collection])
    assert store.fts_count(Word("legacy"), [collection]) == 2
    store.close()
