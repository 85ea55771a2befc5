from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.lexical import file_names_of, lexical_queries, named_files_search
from qmd_daemon.search.pipeline import LEXICAL_CANDIDATES, SearchOptions, mark_defined_word
from qmd_daemon.search.query import KEBAB_NAME, parse_query
from qmd_daemon.store.lexical_query import AllOf, AnyOf, Word
from tests.conftest import SAMPLE_GO, SAMPLE_PY, indexed


def test_parse_typed_lines_phrases_and_excludes() -> None:
    parsed = parse_query(
        'lex: cookie jar\nvec: how cookies are stored\nintent: web client\n"exact words" -legacy parse'
    )
    assert parsed.lex == ["cookie jar"] and parsed.vec == ["how cookies are stored"]
    assert parsed.intent == "web client"
    assert parsed.phrases == ["exact words"] and parsed.excludes == ["legacy"]
    assert "parse" in parsed.terms and "cookie" in parsed.terms


def test_find_is_a_word_of_the_question() -> None:
    # union-find, `find_root!`, `findAll`: code's word; as a stopword "union find with path
    # compression" searched `union path compression`, and every `Base.union` came first
    assert parse_query("union find with path compression").terms == ["union", "find", "path", "compression"]


def test_compound_identifier_matches_whole_or_parts() -> None:
    queries = lexical_queries(parse_query("getUserName"))
    parts = AllOf((Word("get"), Word("user"), Word("name")))
    assert queries == [AllOf((AnyOf((Word("getusername"), parts)),))]


def test_words_find_camel_and_snake_identifiers(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO})
    assert engine.search("client session", [name])[0].path == "client.py"
    assert engine.search("cookie header", [name])[0].path == "client.py"
    assert engine.search("tcp connector", [name])[0].path == "conn.go"


def test_all_terms_first_then_partial_fallback(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO})
    hits = engine.search("TCPConnector nonexistentword", [name])
    assert hits and hits[0].path == "conn.go"


def test_phrase_and_exclusion(engine: Engine, tmp_path: Path) -> None:
    name = indexed(
        engine,
        tmp_path / "p",
        {
            "a.py": "def one():\n    # connection pool limit\n    pass\n",
            "b.py": "def two():\n    # pool of connection limit legacy\n    pass\n",
        },
    )
    assert [h.path for h in engine.search('"connection pool"', [name])] == ["a.py"]
    assert [h.path for h in engine.search("connection limit -legacy", [name])] == ["a.py"]


def test_symbol_query_puts_definition_first(engine: Engine, tmp_path: Path) -> None:
    uses = "\n".join(
        f"def use_{i}():\n    return ClientSession()  # ClientSession ClientSession\n" for i in range(5)
    )
    name = indexed(engine, tmp_path / "p", {"client.py": SAMPLE_PY, "callers.py": uses})
    top = engine.search("ClientSession", [name])[0]
    assert top.path == "client.py" and top.symbol == "ClientSession"


def test_test_files_rank_below_source(engine: Engine, tmp_path: Path) -> None:
    name = indexed(
        engine,
        tmp_path / "p",
        {
            "src/cookies.py": "def parse_cookie(header):\n    return header.split(';')\n",
            "tests/test_cookies.py": "def test_parse_cookie():\n"
            "    assert parse_cookie('a=1; b=2') == ['a=1', ' b=2']\n"
            "    parse_cookie('x')\n    parse_cookie('y')\n",
        },
    )
    assert engine.search("parse cookie", [name])[0].path == "src/cookies.py"
    assert engine.search("parse cookie tests", [name])[0].path == "tests/test_cookies.py"


def test_per_file_cap_and_token_budget(engine: Engine, tmp_path: Path) -> None:
    body = "\n\n".join(f"def widget_{i}():\n    return 'widget {i}'\n" + "\n" * 60 for i in range(8))
    name = indexed(engine, tmp_path / "p", {"w.py": body, "v.py": "def widget():\n    pass\n"})
    hits = engine.search("widget", [name], limit=10, options=SearchOptions(per_file=2))
    assert sum(1 for h in hits if h.path == "w.py") == 2
    small = engine.search("widget", [name], limit=10, options=SearchOptions(per_file=0, max_tokens=60))
    assert len(small) == 1


def test_docs_and_changelogs_yield_to_code_unless_docs_are_asked_for(engine: Engine, tmp_path: Path) -> None:
    prose = "The retry policy waits with exponential backoff between attempts.\n"
    name = indexed(
        engine,
        tmp_path / "p",
        {
            "net/retry.py": "def retry_policy(attempts):\n"
            "    # exponential backoff\n    return [2 ** n for n in range(attempts)]\n",
            # prose beside the code: a docs site's page is lowered further (test_folder_roles.py)
            "net/retry.md": "# Retry policy\n\n" + prose * 3,
            "CHANGES.rst": "Retry policy: exponential backoff now waits longer (#12)\n" * 3,
            # the rest of a repository: in three files alone the first hits are the whole index,
            # and feedback (on by default) would weigh the words only the code holds
            **{f"ui/view_{i}.py": f"def render_{i}(page):\n    return page.html\n" for i in range(12)},
        },
    )
    ranked = [h.path for h in engine.search("retry policy exponential backoff", [name])]
    assert ranked[0] == "net/retry.py" and ranked.index("CHANGES.rst") == len(ranked) - 1
    assert engine.search("retry policy backoff documentation", [name])[0].path == "net/retry.md"


def test_long_bug_report_is_condensed_for_the_models() -> None:
    title = "Crash when the upload body is empty"
    body = "\n".join(
        [title, "Steps: call ClientSession.post with data=b'' against a server.", "```"]
        + [f"log line {i}: nothing to see here, all fine" for i in range(600)]
        + ["Traceback (most recent call last):", '  File "aiohttp/client_reqrep.py", line 12, in write_bytes',
           "ValueError: empty payload is not allowed", "```"]
    )
    assert len(body) > 20_000
    parsed = parse_query(body)
    assert len(parsed.model_text) <= 600
    first, *rest = parsed.model_text.splitlines()
    assert first == title
    assert "ValueError: empty payload is not allowed" in rest
    assert "aiohttp/client_reqrep.py" in parsed.model_text and "ClientSession.post" in parsed.model_text
    assert "write_bytes" in parsed.model_text and "log line" not in parsed.model_text
    assert len(parsed.terms) <= 40, "BM25 gets a bounded term list too"
    short = parse_query("where is the upload body written -legacy")
    assert short.model_text == "where is the upload body written"


def test_query_words_in_the_file_name_lift_that_file(engine: Engine, tmp_path: Path) -> None:
    body = ("def load(path):\n    '''Read the token from disk and check its expiry.'''\n"
            "    return open(path).read()\n")
    name = indexed(engine, tmp_path / "p", {"auth/token_store.py": body, "misc/helpers.py": body})
    hits = engine.search("token store", [name], options=SearchOptions(explain=True))
    assert hits[0].path == "auth/token_store.py"
    boosts = {h.path: h.explain["boosts"].get("path_words", 0.0) for h in hits}
    assert boosts["auth/token_store.py"] > 0 and boosts.get("misc/helpers.py", 0.0) == 0
    plain = engine.search("token store", [name], options=SearchOptions(explain=True, boosts=False))
    assert all("path_words" not in h.explain["boosts"] for h in plain), "the rule is switchable"


def test_file_names_match_the_question_by_stem(engine: Engine, tmp_path: Path) -> None:
    """A module is named after what it does: "checks" is the checker's, "formatting" the formatter's,
    "composition" compose's; none of them starts the other word as written (docs/ranking.md, "File
    names by their stems")."""
    body = ("local M = {}\nfunction M.run(plugins)\n  -- look at each plugin's remote for new commits\n"
            "  for _, p in ipairs(plugins) do p:fetch() end\nend\nreturn M\n")
    shape = "// shape an error or a function's result before it is sent\nexport const shape = (e) => e\n"
    name = indexed(engine, tmp_path / "p", {"manage/checker.lua": body, "manage/runner.lua": body,
                                          "lib/formatter.ts": shape, "lib/compose.ts": shape,
                                          "lib/send.ts": shape})
    asked = (("how are plugins checked for new commits", "manage/checker.lua"),
             ("error formatting", "lib/formatter.ts"), ("function composition", "lib/compose.ts"))
    for question, named in asked:
        hits = engine.search(question, [name], options=SearchOptions(explain=True))
        boosts = {h.path: h.explain["boosts"].get("path_words", 0.0) for h in hits}
        assert boosts.get(named, 0.0) > 0, (question, boosts)
        assert all(boost == 0.0 for path, boost in boosts.items() if path != named), (question, boosts)
    hits = engine.search("how are plugins checked for new commits", [name])
    assert hits[0].path == "manage/checker.lua"


def test_many_matching_chunks_earn_the_file_a_larger_coherence_boost(engine: Engine, tmp_path: Path) -> None:
    doc = "    '''Evict the cache entry when it expires.'''\n"
    many = "\n\n".join(f"def cache_entry_{i}():\n" + doc + "\n" * 45 for i in range(4))
    one = "def evict():\n    '''Evict the cache entry when it expires.'''\n"
    name = indexed(engine, tmp_path / "p", {"lru.py": many, "other.py": one})
    hits = engine.search("evict expired cache entry", [name], options=SearchOptions(explain=True, per_file=1))
    coherence = {h.path: h.explain["boosts"].get("coherence", 0.0) for h in hits}
    assert coherence["lru.py"] > coherence["other.py"] > 0


def test_a_function_whose_name_the_question_spells_out_ranks_first(engine: Engine, tmp_path: Path) -> None:
    """"split camelCase identifiers into words" names `split_identifier`, while a comment that
    repeats the question's words is only talk; headings and symbol queries are left alone."""
    code = "def split_identifier(word):\n    return [p.lower() for p in _CAMEL.findall(word)]\n"
    talk = "# camelCase identifiers: words split into camelCase parts; identifiers and words\nX = 1\n"
    doc = "# Split Identifier\n\nHow we split camelCase identifiers into words.\n"
    name = indexed(engine, tmp_path / "p", {"a/names.py": code, "b/notes.py": talk, "c/guide.md": doc})
    question = "split camelCase identifiers into words"
    hits = engine.search(question, [name], options=SearchOptions(explain=True))
    assert hits[0].path == "a/names.py", [h.path for h in hits]
    boosts = {h.path: h.explain["boosts"].get("name_words", 0.0) for h in hits}
    assert boosts["a/names.py"] > 0 and not boosts.get("b/notes.py") and not boosts.get("c/guide.md")
    plain = engine.search(question, [name], options=SearchOptions(boosts=False))
    assert plain[0].path != "a/names.py", "without the rule the talkative comment wins"


def test_a_letter_hyphenated_to_a_word_is_read_as_one_identifier(engine: Engine, tmp_path: Path) -> None:
    """`k-means`, `e-mail`, `b-tree`: code writes them as one identifier (KMeans, email, BTree). The
    letter alone is no term, so the question kept `means`, which the stemmer matched to every
    `np.mean`: a notebook's learning-curve cell outranked the k-means one."""
    parsed = parse_query("where is the k-means model trained")
    assert "kMeans" in parsed.terms and "means" not in parsed.terms and parsed.symbols == []
    assert AnyOf((Word("kmeans"), AllOf((Word("k"), Word("means"))))) in lexical_queries(parsed)[0].parts
    assert parse_query("dry-run flag").terms == ["dry", "run", "flag"]  # two words: as before
    # a bug report's compound identifiers lead its terms: its prose `x-axes` names none (dev-issues:
    # a matplotlib report's file fell out of the top 5 when `xAxes` was read as one)
    report = parse_query("xlim_changed not emitted on shared axis\n" + "We call all other x-axes here. " * 30)
    assert "xAxes" not in report.terms and "axes" in report.terms
    curves = (
        "def plot_learning_curves(model, X, y):\n"
        "    # the model is trained on growing subsets; the means of the scores are plotted\n"
        "    train_means = np.mean(train_scores, axis=1)\n"
        "    valid_means = np.mean(valid_scores, axis=1)\n"
        "    plt.plot(sizes, train_means)\n    plt.plot(sizes, valid_means)\n"
    )
    clusters = (
        "def cluster_points(X):\n"
        "    kmeans = KMeans(n_clusters=4)\n"
        "    kmeans.fit(X)  # the model is trained here\n"
        "    return kmeans.predict(X)\n"
    )
    name = indexed(engine, tmp_path / "p", {"curves.py": curves, "clusters.py": clusters})
    assert engine.search("where is the k-means model trained", [name])[0].path == "clusters.py"
    assert engine.search("e-mail address", [name]) == []  # a term nothing holds finds nothing


def test_a_kebab_case_name_is_a_symbol(engine: Engine, tmp_path: Path) -> None:
    """Clojure (and every Lisp) names functions in kebab case: the question `wrap-params` read as
    the words `wrap` and `params`, and ring's multipart_params.clj, which says both more often,
    came before params.clj, where `(defn wrap-params` is. A phrase of words is no name; nor is a
    name no code defines (the index is asked: pipeline.mark_defined_word)."""
    assert KEBAB_NAME.fullmatch("wrap-params") and KEBAB_NAME.fullmatch("valid-secret-key?")
    assert not KEBAB_NAME.fullmatch("k-means")  # a letter and a word: the compound rule's
    assert parse_query("how are params wrapped").symbols == []
    params = (  # longer than multipart's, as ring's: on its words alone it came second
        "(ns ring.middleware.params\n"
        "  \"Middleware to parse url-encoded parameters from the query string and body.\"\n"
        "  (:require [ring.util.codec :as codec]\n            [ring.util.request :as req]))\n\n"
        "(defn- parse-params [params encoding]\n  (let [params (codec/form-decode params encoding)]\n"
        "    (if (map? params) params {})))\n\n"
        "(defn assoc-query-params\n  \"Parse and assoc parameters from the query string with the request.\"\n"
        "  [request encoding]\n  (merge-with merge request\n"
        "    (let [params (if-let [query-string (:query-string request)]\n"
        "                   (parse-params query-string encoding)\n                   {})]\n"
        "      {:query-params params, :params params})))\n\n"
        "(defn params-request [request]\n  (assoc request :params {}))\n\n"
        "(defn wrap-params\n  \"Middleware to parse urlencoded parameters.\"\n  [handler]\n"
        "  (fn [request] (handler (params-request request))))\n"
    )
    multipart = (
        "(ns ring.middleware.multipart-params\n"
        "  \"Middleware that parses multipart request bodies into params;\n"
        "  wrap a handler with it as with wrap-params.\")\n\n"
        "(defn- multipart-params [request encoding store]\n"
        "  (into {} (for [[k v] (parse request store)] [k v])))\n\n"
        "(defn multipart-params-request\n"
        "  \"Adds :multipart-params and :params keys to the request.\"\n  [request]\n"
        "  (let [params (multipart-params request \"UTF-8\" nil)]\n"
        "    (merge-with merge request {:multipart-params params :params params})))\n\n"
        "(defn wrap-multipart-params\n  \"Middleware to parse multipart params: wrap the handler so that\n"
        "  the request's multipart params join its params.\"\n  [handler]\n"
        "  (fn [request] (handler (multipart-params-request request))))\n"
    )
    name = indexed(engine, tmp_path / "ring", {"src/ring/middleware/params.clj": params,
                                               "src/ring/middleware/multipart_params.clj": multipart})
    assert engine.search("wrap-params", [name])[0].path == "src/ring/middleware/params.clj"


def test_an_english_hyphenated_question_is_no_name_where_no_code_defines_it(
    engine: Engine, tmp_path: Path
) -> None:
    """`thread-safe` in a Python repository is English: read as a kebab-case name it lost the
    boost of the chunk whose name says both words (`def thread_safe`), and a chunk merely saying
    them came first. Only a name the searched code defines so (a Lisp's `wrap-params`) is one."""
    locking = (
        "import functools\nimport threading\n\n\n"
        "def thread_safe(func):\n    \"\"\"One caller at a time runs FUNC.\"\"\"\n"
        "    lock = threading.Lock()\n\n    @functools.wraps(func)\n"
        "    def wrapper(*args, **kwargs):\n        with lock:\n            return func(*args, **kwargs)\n\n"
        "    return wrapper\n"
    )
    counter = "def safe_thread_count():\n    '''thread safe thread safe'''\n    return 1\n"
    name = indexed(engine, tmp_path / "p", {"locking.py": locking, "count.py": counter})
    assert [h.path for h in engine.search("thread-safe", [name])][:1] == ["locking.py"]
    assert [h.path for h in engine.search("thread safe", [name])][:1] == ["locking.py"]


def test_an_emacs_lisp_private_name_is_a_symbol(engine: Engine, tmp_path: Path) -> None:
    """Emacs Lisp marks a package's private function with two hyphens (`magit--refresh-buffer`,
    the manual's convention): the kebab-name reading missed them, and the file whose public
    `magit-buffer-refresh` says the same words more often came before the one defining the name."""
    assert KEBAB_NAME.fullmatch("magit--refresh-buffer") and not KEBAB_NAME.fullmatch("a--b")
    private = (
        ";;; magit-buffer.el --- buffers  -*- lexical-binding: t -*-\n\n"
        "(defun magit--refresh-buffer (buffer)\n  \"Redraw BUFFER from the repository state.\"\n"
        "  (with-current-buffer buffer\n    (let ((inhibit-read-only t))\n      (erase-buffer)\n"
        "      (magit-insert-sections))))\n"
    )
    public = (
        ";;; magit-refresh.el --- refresh  -*- lexical-binding: t -*-\n\n"
        "(defun magit-buffer-refresh (&optional buffer)\n"
        "  \"Refresh BUFFER, the current magit buffer when nil: refresh the buffer and its sections.\"\n"
        "  (interactive)\n  (magit--refresh-buffer (or buffer (current-buffer)))\n"
        "  (run-hooks 'magit-buffer-refresh-hook))\n"
    )
    name = indexed(engine, tmp_path / "magit", {"lisp/magit-buffer.el": private,
                                                "lisp/magit-refresh.el": public})
    assert engine.search("magit--refresh-buffer", [name])[0].path == "lisp/magit-buffer.el"


def test_a_powershell_verb_noun_name_is_a_symbol(engine: Engine, tmp_path: Path) -> None:
    """PowerShell names its functions `Verb-Noun`: the question `New-TestDrive` was read as the two
    symbols `New` and `TestDrive`, and Pester's C# configuration class, whose `TestDrive` property
    says the noun more often, came before TestDrive.ps1, where `function New-TestDrive` is."""
    drive = (
        "function Get-TestDrivePlugin {\n    New-PluginObject -Name 'TestDrive'\n}\n\n"
        "function New-TestDrive {\n    param ([string] $Path)\n"
        "    $directory = New-RandomTempDirectory\n    New-PSDrive -Name TestDrive -Root $directory\n}\n\n"
        "function Remove-TestDrive ($TestDrivePath) {\n    Remove-Item -Recurse $TestDrivePath\n}\n"
    )
    config = (
        "namespace Pester\n{\n    public class TestDriveConfiguration\n    {\n"
        "        // TestDrive: enable the TestDrive; a new TestDrive for each block\n"
        "        public BoolOption TestDrive { get; set; }\n"
        "        public void New() { TestDrive = new BoolOption(\"TestDrive\", \"new TestDrive\", true); }\n"
        "    }\n}\n"
    )
    name = indexed(engine, tmp_path / "pester", {"src/functions/TestDrive.ps1": drive,
                                                 "src/csharp/Pester/TestDriveConfiguration.cs": config})
    assert engine.search("New-TestDrive", [name])[0].path == "src/functions/TestDrive.ps1"


@pytest.mark.parametrize("question", ["new-testdrive", "NEW-TESTDRIVE", "New-Testdrive"])
def test_a_powershell_name_in_another_case_is_the_defined_name(
    engine: Engine, tmp_path: Path, question: str
) -> None:
    """PowerShell's names are case-insensitive (`get-childitem` runs Get-ChildItem), and a question
    is typed as it comes: `new-testdrive` was a word pair no code defines spelled so, and the C#
    class that says `TestDrive` most came first."""
    drive = (
        "function New-TestDrive {\n    param ([string] $Path)\n"
        "    $directory = New-RandomTempDirectory\n    New-PSDrive -Name TestDrive -Root $directory\n}\n"
    )
    config = (
        "namespace Pester\n{\n    public class TestDriveConfiguration\n    {\n"
        "        // TestDrive: a new TestDrive for each block; new TestDrive, new drive\n"
        "        public BoolOption TestDrive { get; set; }\n"
        "        public void New() { TestDrive = new BoolOption(\"TestDrive\", \"new TestDrive\", true); }\n"
        "    }\n}\n"
    )
    name = indexed(engine, tmp_path / "pester", {"src/functions/TestDrive.ps1": drive,
                                                 "src/csharp/Pester/TestDriveConfiguration.cs": config})
    hits = engine.search(question, [name])
    assert hits[0].path == "src/functions/TestDrive.ps1", [h.path for h in hits]


@pytest.mark.parametrize("legacy_first", [True, False])
def test_a_powershell_name_as_typed_wins_over_another_case_of_it(
    engine: Engine, tmp_path: Path, legacy_first: bool
) -> None:
    """Any case of a Verb-Noun name matches a question (PowerShell's names are case-insensitive),
    but the first definition found in any case was taken as the name asked for: with a
    `New-Testdrive` wrapper indexed before `New-TestDrive`, the question `New-TestDrive` asked for
    the wrapper, and the wrapper (which calls the function, saying its name) came first."""
    drive = (
        "function New-TestDrive {\n    param ([string] $Path)\n"
        "    $directory = New-RandomTempDirectory\n    New-PSDrive -Name TestDrive -Root $directory\n}\n"
    )
    legacy = (
        "# Pester 3 spelled it so; kept for old scripts\n"
        "function New-Testdrive {\n    New-TestDrive @args\n}\n"
    )
    legacy_path = "src/Drives.ps1" if legacy_first else "src/zz/Drives.ps1"  # indexed before/after
    name = indexed(engine, tmp_path / "pester", {"src/functions/TestDrive.ps1": drive, legacy_path: legacy})
    ids = engine.collection_ids([name])
    parsed = parse_query("New-TestDrive")
    mark_defined_word(engine.store, parsed, ids)
    assert parsed.symbols == ["New-TestDrive"]
    assert engine.search("New-TestDrive", [name])[0].path == "src/functions/TestDrive.ps1"
    assert engine.search("New-Testdrive", [name])[0].path == legacy_path


def test_a_file_the_question_names_is_searched_when_every_term_fills_the_list(
    engine: Engine, tmp_path: Path
) -> None:
    """A whole tree's tests say every word of "exception types for parse and type errors" in more
    chunks than BM25's list holds (`parse_error`, `type_error` in each assertion), so the any-term
    pass never ran and `exceptions.hpp`, which defines them without saying "types", was no
    candidate at all (nlohmann-json, docs/ranking.md "Files a question names")."""
    case = "\n".join(f"  CHECK_THROWS_AS(json::parse(bad{i}), json::parse_error); // exception types: parse, "
                     f"type errors\n  CHECK_THROWS_AS(j.at({i}), json::type_error);" for i in range(20))
    files = {f"tests/unit-{n}.cpp": "\n\n".join(f'TEST_CASE("t{n}_{k}") {{\n{case}\n}}' for k in range(3))
             for n in range(LEXICAL_CANDIDATES // 3 + 5)}
    files["include/detail/exceptions.hpp"] = (
        "/// exception indicating a parse error\nclass parse_error : public exception\n{\n  public:\n"
        "    static parse_error create(int id, const std::string& what_arg);\n};\n\n"
        "/// exception indicating executing a member function with a wrong type\n"
        "class type_error : public exception\n{\n};\n")
    name = indexed(engine, tmp_path / "p", files)
    hits = engine.search("exception types for parse and type errors", [name], limit=10)
    assert "include/detail/exceptions.hpp" in [h.path for h in hits]


def test_the_file_names_a_word_names_are_its_singular_and_plural() -> None:
    assert file_names_of("errors") == {"errors", "error"}
    assert file_names_of("exception") == {"exception", "exceptions"}
    assert file_names_of("matches") == {"matches", "matche", "match"}
    assert file_names_of("index") == {"index", "indexes"}


def test_a_bug_report_or_a_symbol_names_no_file_by_its_words(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {"src/python.py": "def run():\n    return 'python'\n"})
    collections = engine.collection_ids([name])
    report = parse_query("Bug with milli prefix: python prints 1 when multiplied, expected milli watts "
                         "in the output of the units module after conversion")
    assert len({t.lower() for t in report.terms}) > 10
    assert named_files_search(engine.store, report, collections) == []
    assert named_files_search(engine.store, parse_query("python"), collections) != []
    assert named_files_search(engine.store, parse_query("PythonRunner"), collections) == []


_TWO_DEFINITIONS_GO = """package conf

import "io"

// MergeInSettings merges the file on disk into the settings it holds.
func MergeInSettings() error { return store.MergeInSettings() }

// MergeInSettings merges the file on disk into the settings it holds.
func (s *Store) MergeInSettings() error {
	data, err := s.read()
	if err != nil {
		return err
	}
	return s.merge(data)
}

// LoadSettings reads settings from a reader, dropping the keys it lacks.
func LoadSettings(in io.Reader) error { return store.LoadSettings(in) }

// LoadSettings reads settings from a reader, dropping the keys it lacks.
func (s *Store) LoadSettings(in io.Reader) error {
	settings := map[string]any{}
	if err := s.decode(in, settings); err != nil {
		return err
	}
	s.settings = settings
	return nil
}
"""


def test_a_hit_is_named_by_the_definition_its_snippet_starts_at(engine: Engine, tmp_path: Path) -> None:
    # one chunk held both functions; a hit on the second, its snippet at `func LoadSettings`, was
    # named by the first (`viper.go:1640  MergeInConfig` over `func ReadConfig(...)`)
    name = indexed(engine, tmp_path / "p", {"conf.go": _TWO_DEFINITIONS_GO})
    top = engine.search("LoadSettings", [name], options=SearchOptions(explain=True))[0]
    assert top.explain["chunk_lines"][0] < top.line  # the chunk starts at the first function
    assert _TWO_DEFINITIONS_GO.splitlines()[top.line - 1].startswith("func LoadSettings(")
    assert top.symbol == "LoadSettings"
