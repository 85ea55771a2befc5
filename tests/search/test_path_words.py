"""A question's words against names (path_word_boost, name_words_boost) are matched through their
prefixes (WordsMatching): the same answers as trying each word against each name, the rule as it
was written before, checked on every path and name part of this repository against words that
exercise each way of matching."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.scoring import ScoringWeights, _name_said, _path_words, _private_names
from qmd_daemon.search.word_match import WordsMatching, initialisms, name_parts, stem_forms
from tests.conftest import indexed

REPO = Path(__file__).resolve().parents[2]
# exact names (`py`, two letters), words a name starts (`sco`), words that start with a name
# (`searching`, `indexes`), two-letter prefixes that must not match (`st`), and misses
WORDS = ["py", "sco", "scoring", "searching", "search", "indexes", "st", "lex", "lexical", "tests", "t",
         "qmd", "daemon", "stor", "storage", "zzz", "ab", "init", "__init__", "conftest", "bench", "scaled",
         "word", "words", "matching", "path", "pat", "names"]


def word_matches(word: str, names: set[str] | frozenset[str]) -> bool:
    """The rule one pair at a time (scoring's _word_matches before _WordsMatching)."""
    if word in names:
        return True
    if len(word) < 3:
        return False
    return any(n.startswith(word) or (len(n) >= 3 and word.startswith(n)) for n in names)


def test_the_words_matching_a_path_are_those_the_pairwise_rule_finds() -> None:
    paths = sorted(str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts)
    assert len(paths) > 100
    matching = WordsMatching(WORDS)
    matched_any = 0
    for path in paths:
        names = _path_words(path)
        expected = {w for w in WORDS if word_matches(w, names)}
        assert matching.matched(names) == expected, path
        matched_any += bool(expected)
    assert matched_any > 50


def test_a_name_part_is_said_when_the_pairwise_rule_says_so() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "qmd_daemon").rglob("*.py"))
    parts = {part for name in set(text.replace("(", " ").split()) for part in name_parts(name)}
    assert len(parts) > 300
    matching, words = WordsMatching(WORDS), set(WORDS)
    said = {part for part in parts if matching.says(part)}
    assert said == {part for part in parts if word_matches(part, words)}
    assert 20 < len(said) < len(parts)


def test_a_private_modules_name_is_its_words_without_the_leading_underscores() -> None:
    # telescope's `builtin/__git.lua`, scikit-learn's `_base.py`, pydantic's `_internal/` folder
    assert "git" in _private_names("lua/telescope/builtin/__git.lua")
    assert "base" in _private_names("sklearn/linear_model/_base.py")
    assert "internal" in _private_names("pydantic/_internal/fields.py")
    assert "init" not in _private_names("src/click/__init__.py")  # the language's name, not the module's
    assert _private_names("src/click/core.py") == frozenset()


TELESCOPE_FILES = {
    "lua/telescope/builtin/__git.lua": "local git = {}\n\n"
                                      "-- git status: each changed file an entry\n"
                                      "git.status = function(opts)\n"
                                      "  local output = utils.get_os_command_output("
                                      "{ \"git\", \"status\", \"-s\" })\n"
                                      "  return finders.new_table({ results = output })\nend\n\nreturn git\n",
    "lua/telescope/make_entry.lua": "local make_entry = {}\n\n"
                                    "-- an entry per changed file of git status, for the picker\n"
                                    "function make_entry.gen_from_git_status(opts)\n"
                                    "  return function(line) "
                                    "return { value = line, status = line:sub(1, 2) } end\n"
                                    "end\n\nreturn make_entry\n",
}


def ranked_by_path_words(
    engine: Engine, root: Path, files: dict[str, str], query: str
) -> list[tuple[str, bool]]:
    """FILES indexed under ROOT: each hit of QUERY and whether its path's words earned a boost."""
    name = indexed(engine, root, files)
    hits = engine.search(query, [name], options=SearchOptions(per_file=1, explain=True))
    return [(h.path, h.explain["boosts"].get("path_words", 0) > 0) for h in hits]


def test_a_private_modules_name_earns_the_path_words_boost(engine: Engine, tmp_path: Path) -> None:
    ranked = ranked_by_path_words(engine, tmp_path / "telescope", TELESCOPE_FILES,
                                  "how git status changes are listed in a picker")
    assert ranked == [("lua/telescope/builtin/__git.lua", True), ("lua/telescope/make_entry.lua", False)]


def test_initials_of_a_questions_run_of_words_name_a_file() -> None:
    found = initialisms("file system operations like read write open stat")
    assert found["fs"] == ("file", "system")  # `file` is a stopword, but a noun abbreviations take
    assert initialisms("how server-sent events are streamed")["sse"] == ("server", "sent", "events")
    assert "tr" not in initialisms("how the router works")  # `the` breaks a run


def test_initials_are_those_of_whole_words_in_any_script() -> None:
    # `über` is one word: not `ber` (a fragment after the umlaut), whose run with the next word
    # named a file `ba`
    found = initialisms("über allocation of buffers")
    assert "ba" not in found and found["üa"] == ("über", "allocation")


# libuv: `unix/fs.c` ("file system") said fewer of the question's words than `stream.c`
LIBUV_FILES = {
    "src/unix/fs.c": "/* operations on the thread pool: read, write */\n"
                     "static ssize_t uv__fs_read(uv_fs_t* req) {\n"
                     "  return read(req->file, req->buf, req->len);\n}\n",
    "src/unix/stream.c": "/* stream operations: read and write on a socket */\n"
                         "static void uv__read(uv_stream_t* stream) {\n  read(stream->fd, buf, len);\n}\n\n"
                         "static void uv__write(uv_stream_t* stream) {\n  write(stream->fd, buf, len);\n}\n",
}


def test_a_file_named_by_initials_says_their_words(engine: Engine, tmp_path: Path) -> None:
    ranked = ranked_by_path_words(engine, tmp_path / "libuv", LIBUV_FILES,
                                  "file system operations like read write open stat")
    assert ranked == [("src/unix/fs.c", True), ("src/unix/stream.c", False)]


# pydantic: the public `fields.py` and the private module behind it, `_internal/_fields.py`
PYDANTIC_FILES = {
    "pydantic/fields.py": "def Field(default=None, alias=None):\n"
                          "    \"\"\"Declare a model field with its default and alias.\"\"\"\n"
                          "    return FieldInfo(default, alias)\n",
    "pydantic/_internal/_fields.py": "def collect_model_fields(cls):\n"
                                     "    \"\"\"Collect the fields a model declares, bases first.\"\"\"\n"
                                     "    return dict(cls.__annotations__)\n",
}


def test_a_private_module_behind_a_public_one_leaves_it_the_name(engine: Engine, tmp_path: Path) -> None:
    ranked = dict(ranked_by_path_words(engine, tmp_path / "pydantic", PYDANTIC_FILES,
                                       "how model fields are declared"))
    assert ranked == {"pydantic/fields.py": True, "pydantic/_internal/_fields.py": False}


def test_a_public_module_of_another_collection_leaves_a_private_name_its_words(
    engine: Engine, tmp_path: Path
) -> None:
    # searched together with another repository that has a public `git.lua`, telescope's
    # `builtin/__git.lua` still says "git": it is behind no public module of its own collection
    telescope = indexed(engine, tmp_path / "telescope", TELESCOPE_FILES)
    other = indexed(engine, tmp_path / "other", {"lua/plugin/git.lua": "-- run a shell command\n"
                                                 "local function run(cmd) return vim.fn.system(cmd) end\n"})
    hits = engine.search("how git status changes are listed in a picker", [telescope, other],
                         options=SearchOptions(per_file=1, explain=True))
    boosted = {h.path: h.explain["boosts"].get("path_words", 0) > 0 for h in hits}
    assert boosted["lua/telescope/builtin/__git.lua"] is True


def test_a_page_of_the_docs_named_like_a_private_module_leaves_it_its_name(
    engine: Engine, tmp_path: Path
) -> None:
    # a public module is code: the docs' `git.md` is no module that `__git.lua` stands behind
    files = {**TELESCOPE_FILES, "doc/git.md": "# Git pickers\n\nPickers over git: commits, branches.\n"}
    ranked = dict(ranked_by_path_words(engine, tmp_path / "telescope", files,
                                       "how git status changes are listed in a picker"))
    assert ranked["lua/telescope/builtin/__git.lua"] is True


# commons-lang: the builder and its reflective variant, whose shorter body matches the question a
# little better (BM25 divides by length)
STRING_BUILDER_FILES = {
    "src/lang3/builder/ToStringBuilder.java":
        "/** Builds a readable string of an object. */\n"
        "public class ToStringBuilder {\n"
        "    public ToStringBuilder append(String fieldName, Object value) { return this; }\n"
        "    public ToStringBuilder appendSuper(String superToString) { return this; }\n}\n",
    "src/lang3/builder/ReflectionToStringBuilder.java":
        "/** Builds a readable string of an object. */\n"
        "public class ReflectionToStringBuilder extends ToStringBuilder {\n"
        "    protected boolean accept(Field field) { return true; }\n}\n",
}
STRING_BUILDER_QUESTION = "string builder for readable descriptions"


def _first_file(engine: Engine, name: str, weights: ScoringWeights) -> str:
    hits = engine.search(STRING_BUILDER_QUESTION, [name], options=SearchOptions(per_file=1, weights=weights))
    return hits[0].path


def test_a_name_the_question_says_whole_beats_a_name_with_a_qualifier_it_does_not_say(
    engine: Engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "lang", STRING_BUILDER_FILES)
    # without the rule the variant's body wins; with it the name the question says whole does
    without = _first_file(engine, name, ScoringWeights(name_share=0.0))
    assert without.endswith("/ReflectionToStringBuilder.java")
    assert _first_file(engine, name, ScoringWeights()).endswith("/ToStringBuilder.java")


def test_the_share_of_a_names_words_the_question_says() -> None:
    matching = WordsMatching(stem_forms(["query", "parameters", "extracted", "decoded"]))
    assert _name_said("core/QueryParam.scala", matching) == 1.0  # `param` starts `parameters`
    assert _name_said("core/parser/QueryParser.scala", matching) == 0.5
    assert _name_said("src/_query_params_decoder.py", matching) == 1.0  # by stem: decoder, decoded
    assert _name_said("src/unix/fs.c", matching) == 1.0  # no word of 3 letters: nothing unsaid
