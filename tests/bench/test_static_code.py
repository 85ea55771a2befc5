"""The words a static table is looked up with (qmd_daemon/text/code_words.py), and the variants
of bench/static_code.py."""

from __future__ import annotations

from bench.static_code import CodeAnalysis, FieldWeights, query_identifiers
from qmd_daemon.text.code_words import chunk_fields, code_words


def test_identifiers_split_lowercased_without_punctuation_or_numbers() -> None:
    assert code_words("def getUserName(user_id): return self.__HTTPClient.get('x') + 42") == (
        "def get user name user id return self http client get x")
    assert code_words("src/http/client_session.py") == "src http client session py"
    assert code_words("größe_berechnen();") == "größe berechnen"
    assert code_words(":: => ); 0x1f") == ""


def test_query_keeps_its_identifiers_or_all_of_it() -> None:
    question = "how does resolveRedirects call send_request"
    assert query_identifiers(question) == "resolveRedirects send_request"
    plain = "how are cookies kept across redirects"
    assert query_identifiers(plain) == plain


def test_variant_names_parse_into_weights_cap_and_query_mode() -> None:
    assert CodeAnalysis.parse("code") == CodeAnalysis(FieldWeights(), False)
    assert CodeAnalysis.parse("code-p2-n1.5-cap128-qids") == CodeAnalysis(
        FieldWeights(path=2.0, names=1.5, body=1.0, cap=128), True)
    assert CodeAnalysis.parse("code-cap64") == CodeAnalysis(FieldWeights(cap=64), False)
    for other in ("parts", "codex", "code-cap", "code-qids-p2"):
        assert CodeAnalysis.parse(other) is None


def test_chunk_fields_put_the_signature_in_the_body_once() -> None:
    analysis = CodeAnalysis.parse("code-qids")
    assert analysis is not None
    path, names, body = chunk_fields("net/CookieJar.java", "CookieJar addCookie", "class CookieJar",
                                     "void addCookie(Cookie c)", "store(c);")
    assert (path, names) == ("net cookie jar java", "cookie jar add cookie class cookie jar")
    assert body == "void add cookie cookie c store c"
    inline = chunk_fields("a.py", "", "", "def f(x)", "def f(x):\n    return x")[2]
    assert inline == "def f x return x"
    assert analysis.query_text("where is addCookie called") == "add cookie"
