"""Files in the encodings source trees really hold: each is indexed, found by its words, and shown
as its author wrote it (line numbers unchanged)."""

import codecs
from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.source_text import decode_source
from tests.conftest import indexed, write_tree

WIDGET = "def render_widget():\n    # le café est prêt\n    return 'naïve'\n"


def test_each_encoding_is_indexed_and_found(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "enc",
        {
            "utf8.py": WIDGET,
            "bom.py": codecs.BOM_UTF8 + WIDGET.encode("utf-8"),
            "latin1.py": WIDGET.encode("latin-1"),
            "cp1252.py": "def quote():\n    return '\u201cquoted\u201d \u2013 dash'\n".encode("cp1252"),
            "utf16le.ps1": codecs.BOM_UTF16_LE
            + "function Get-Widget {\r\n  # café\r\n}\r\n".encode("utf-16le"),
            "utf16be.txt": codecs.BOM_UTF16_BE + "widget notes: café\n".encode("utf-16-be"),
            "real.bin.py": b"\x00\x01binary\x00",
        },
    )
    name = engine.add_collection(root).name
    report = engine.update([name])[0]
    assert report.skipped == {"binary": 1} and report.files == 6
    texts = {path: engine.read_indexed_text(name, path) for path in ("utf8.py", "bom.py", "latin1.py")}
    assert texts["bom.py"] == texts["latin1.py"] == texts["utf8.py"]
    assert "le café est prêt" in texts["utf8.py"]
    assert "\u201cquoted\u201d \u2013 dash" in engine.read_indexed_text(name, "cp1252.py")
    assert "# café" in engine.read_indexed_text(name, "utf16le.ps1")
    found = {h.path for h in engine.search("café", [name], limit=20)}
    assert found == {"utf8.py", "bom.py", "latin1.py", "utf16le.ps1", "utf16be.txt"}
    first = [h for h in engine.search("render_widget", [name]) if h.path == "bom.py"][0]
    assert first.line == 1 and first.snippet.startswith("def render_widget")  # no U+FEFF


def test_a_byte_order_mark_never_reaches_the_text() -> None:
    assert decode_source(codecs.BOM_UTF8 + "café".encode()) == "café"
    assert decode_source(codecs.BOM_UTF8 + "caf\xe9 d\xe9j\xe0".encode("cp1252")) == "café déjà"


def test_a_utf8_file_with_a_stray_byte_stays_utf8() -> None:
    data = "naïve – «ok» ".encode() * 5 + b"\xff end"
    text = decode_source(data)
    assert text.startswith("naïve – «ok»") and text.endswith("\ufffd end")
    assert decode_source(b"plain ascii") == "plain ascii"


def test_questions_in_other_scripts_find_their_words(engine: Engine, tmp_path: Path) -> None:
    """The query's words used to be ASCII runs: "café" became "caf", and a Cyrillic question had
    no terms at all."""
    name = indexed(
        engine,
        tmp_path / "i18n",
        {
            "conn.py": "def reconnect():\n    # ошибка соединения: повторить попытку\n    pass\n",
            "size.py": "def groesse():\n    # Größe der Datei in Bytes\n    pass\n",
            "other.py": "def unrelated():\n    # nothing here\n    pass\n",
            "hi.py": "def label():\n    # हिन्दी भाषा का लेबल\n    pass\n",
            "calc.py": "def größe_berechnen(datei):\n    return 0\n",
        },
    )
    assert engine.search("ошибка соединения", [name])[0].path == "conn.py"
    assert engine.search("Größe der Datei", [name])[0].path == "size.py"
    assert engine.search("prêt café", [name]) == []
    assert engine.search("हिन्दी", [name])[0].path == "hi.py"  # vowel signs are not `\w` in Python
    assert engine.search("größe", [name])[0].path == "calc.py"  # a part of `größe_berechnen`
    assert [h.path for h in engine.search("reconnect groesse -соединения", [name])] == ["size.py"]


def test_chinese_and_japanese_words_are_found_inside_longer_runs(engine: Engine, tmp_path: Path) -> None:
    """CJK text has no spaces: `数据库` used to match only a chunk whose whole run was `数据库`."""
    name = indexed(
        engine,
        tmp_path / "cjk",
        {
            "pool.py": "def make_pool():\n    # 建立数据库连接池，失败时重试三次\n    pass\n",
            "parse.py": "def parse():\n    # 解析配置文件中的数据\n    pass\n",
            "jp.py": "def connect():\n    # データベース接続の設定を読み込む\n    pass\n",
            "api.py": "def call():\n    # 调用API接口并返回JSON格式的结果\n    pass\n",
        },
    )
    ranked = [h.path for h in engine.search("数据库连接", [name])]
    assert ranked == ["pool.py", "parse.py"]  # the whole word, then a chunk sharing one pair (数据)
    assert engine.search("如何建立数据库连接", [name])[0].path == "pool.py"  # a question, not a run
    assert [h.path for h in engine.search('"数据库"', [name])] == ["pool.py"]  # a phrase inside a run
    assert [h.path for h in engine.search("数据 -连接池", [name])] == ["parse.py"]
    assert engine.search("API", [name])[0].path == "api.py"  # Latin glued to CJK in one token
    assert engine.search("データベース", [name])[0].path == "jp.py"
    assert engine.search("配置文件", [name])[0].path == "parse.py"
