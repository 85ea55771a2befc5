"""folder_roles: what the folders beside a checkout's source hold (examples, benchmarks, the docs
site, fixtures, vendored copies), and that their files rank below the source unless a question
asks for them (issue 11, the whole tree).

Paths are real ones from open-source repositories of several ecosystems."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.folder_roles import folder_roles
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.translations import is_translation
from tests.conftest import indexed

ROLE_OF_PATH = {
    # example apps and snippets
    "examples/next-prisma-starter/src/server/routers/_app.ts": "example_path",
    "Example/Source/AppDelegate.swift": "example_path",
    "Example-iOS/demos/SimpleLayoutViewController.swift": "example_path",
    "SnapKitPlayground.playground/Contents.swift": "example_path",
    "Doc/Samples/Linq/CreateJsonAnonymousObject.cs": "example_path",
    "docs_src/first_steps/tutorial001.py": "example_path",
    "packages/vite/playground/alias/index.js": "example_path",
    # benchmarks: Cargo's `benches/`, Haskell's `bench/`, airspeed velocity's `asv_bench/`
    "benches/bench.rs": "benchmark_path",
    "aeson/benchmarks/bench/AesonMap.hs": "benchmark_path",
    "asv_bench/benchmarks/dataset_io.py": "benchmark_path",
    "src/jmh/java/kotlinx/coroutines/ChannelBenchmark.kt": "benchmark_path",
    # the docs site: pages, generated API pages, the guide's programs
    "docs/code/uvcat/main.c": "docs_site_path",
    "www/docs/server/routers.md": "docs_site_path",
    "documentation-website/Writerside/snippets/exposed-dsl/src/main/kotlin/App.kt": "docs_site_path",
    "Documentation/Usage.md": "docs_site_path",
    "api-docs/index.html": "docs_site_path",
    "man/xmonad.hs": "docs_site_path",
    "vignettes/recoding-replacing.Rmd": "docs_site_path",  # an R package's long-form docs
    # the project's own scripts
    "scripts/mangleErrors.mts": "scripts_path",
    "script/bootstrap": "scripts_path",
    # other projects' code copied in
    "deps/hiredis/read.c": "vendored_path",  # a C project's dependencies (redis)
    "third_party/abseil-cpp/absl/strings/str_cat.cc": "vendored_path",
    "src/3rdparty/fmt/format.h": "vendored_path",
    "src/pip/_vendor/requests/sessions.py": "vendored_path",
    "include/spdlog/fmt/bundled/format.h": "vendored_path",
}
SOURCE_PATHS = [
    "src/click/core.py",
    "doc/md_docs.go",  # cobra's doc generator is a Go package named doc
    "lua/lazy/example.lua",  # a file's own name is not a folder's role
    "bin/bats",  # `bin/` is as often the product itself
    "src/tools/config_gen.zig",
    "lib/sinatra/base.rb",
    "src/sample.rs",
    "packages/server/src/unstable-core-do-not-import/router.ts",
    "sympy/external/importtools.py",  # `external/` is as often the project's own bindings
    "exposed-core/src/main/kotlin/org/jetbrains/exposed/v1/core/vendors/PostgreSQL.kt",  # database vendors
]


@pytest.mark.parametrize(("path", "role"), ROLE_OF_PATH.items())
def test_folders_by_their_ecosystems_conventions(path: str, role: str) -> None:
    assert [r.name for r in folder_roles(path)] == [role]


@pytest.mark.parametrize("path", SOURCE_PATHS)
def test_source_folders_have_no_role(path: str) -> None:
    assert folder_roles(path) == ()


# libuv: the guide's `docs/code/*/main.c` programs call the API with every word of a question
# about it, more densely than the implementation
LIBUV_FILES = {
    "src/unix/udp.c": "/* UDP sockets. */\nint uv__udp_send(uv_udp_send_t* req, uv_udp_t* handle) {\n"
                      "  /* queue the datagram; the socket sends it when writable */\n"
                      "  return uv__udp_sendmsg(handle);\n}\n\n"
                      "int uv__udp_recv_start(uv_udp_t* handle, uv_udp_recv_cb recv_cb) {\n"
                      "  /* receive datagrams on the socket */\n"
                      "  handle->recv_cb = recv_cb;\n  return 0;\n}\n",
    "docs/code/udp-dhcp/main.c": "/* send and receive on a UDP socket */\nint main() {\n"
                                 "  uv_udp_init(loop, &send_socket);  /* udp socket */\n"
                                 "  uv_udp_send(&req, &send_socket, &buf, 1, addr, on_send);  /* send */\n"
                                 "  uv_udp_recv_start(&recv_socket, alloc_buffer, on_read);  /* receive */\n"
                                 "  return uv_run(loop, UV_RUN_DEFAULT);\n}\n",
}


def test_a_docs_sites_code_ranks_below_the_source_unless_docs_are_asked_for(
    engine: Engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "libuv", LIBUV_FILES)

    def ranked(query: str) -> list[tuple[str, bool]]:
        hits = engine.search(query, [name], options=SearchOptions(per_file=0, explain=True))
        return [(h.path, "docs_site_path" in h.explain["boosts"]) for h in hits]

    assert ranked("UDP socket send and receive") == [
        ("src/unix/udp.c", False), ("docs/code/udp-dhcp/main.c", True)]
    assert ("docs/code/udp-dhcp/main.c", False) in ranked("docs example of UDP socket send and receive")


def test_a_question_about_benchmarks_lifts_them(engine: Engine, tmp_path: Path) -> None:
    # kotlinx-coroutines keeps JMH benchmarks beside the code; a question that names benchmarks
    # asks for them (they were lowered with the examples, whatever the question said)
    bench = "benchmarks/src/jmh/kotlin/ChannelSendBenchmark.kt"
    source = "core/src/channels/BufferedChannel.kt"
    name = indexed(engine, tmp_path / "coroutines", {
        bench: "class ChannelSendBenchmark {\n  // channel send throughput\n"
               "  fun sendReceive() = runBlocking { channel.send(1); channel.receive() }\n}\n",
        source: "class BufferedChannel<E> {\n  // send an element to the channel, suspend while it is full\n"
                "  suspend fun send(element: E) { enqueue(element) }\n}\n",
    })

    def lowered(query: str) -> dict[str, bool]:
        # either name: benchmarks were lowered as examples before they had their own role
        return _lowered_by(engine, name, query, {"benchmark_path", "example_path"})

    assert lowered("how a channel send suspends") == {bench: True, source: False}
    assert lowered("benchmark of channel send throughput") == {bench: False, source: False}


# Files that name every feature without doing it, each lowered by its rule unless the question asks
# for it: trpc's `_artifacts/domain_map.yaml` maps every feature to its files in the question's words;
# xmonad's Config.hs binds every key to the operation it runs
LISTS_OF_FEATURES = {
    "data_file": (
        {"_artifacts/domain_map.yaml": "routers:\n  description: how routers are created and merged\n"
                                       "  files: [router.ts]\n  merged routers: createRouter mergeRouters\n",
         "packages/server/src/router.ts": "// a router holds procedures; routers are merged into one\n"
                                          "export function mergeRouters(...routers: Router[]) {\n"
                                          "  return createRouter(routers)\n}\n"},
        "how routers are created and merged", "yaml map of how routers are merged",
    ),
    "config_module": (
        {"src/XMonad/Config.hs": "-- | The default key bindings\nkeys conf = M.fromList\n"
                                 "    -- move the focused window to workspace N, switch to a workspace\n"
                                 "    [ ((modMask .|. shiftMask, k), windows (W.shift i))"
                                 " -- %! Move window to workspace\n"
                                 "    , ((modMask, k), windows (W.greedyView i)) -- %! Switch to workspace\n"
                                 "    ]\n",
         "src/XMonad/Operations.hs": "-- | Move the focused window to another workspace.\n"
                                     "windows :: (WindowSet -> WindowSet) -> X ()\n"
                                     "windows f = modify (f . windowset)\n"},
        "how xmonad moves a window to a different workspace", "the default key bindings for workspaces",
    ),
}


@pytest.mark.parametrize("rule", sorted(LISTS_OF_FEATURES))
def test_files_listing_every_feature_rank_below_the_code_unless_asked_for(
    engine: Engine, tmp_path: Path, rule: str
) -> None:
    files, question, asking = LISTS_OF_FEATURES[rule]
    listing, code = files
    name = indexed(engine, tmp_path / rule, files)
    assert engine.search(question, [name])[0].path == code
    assert _lowered_by(engine, name, question, {rule}) == {listing: True, code: False}
    assert _lowered_by(engine, name, asking, {rule})[listing] is False


def _lowered_by(engine: Engine, collection: str, query: str, rules: set[str]) -> dict[str, bool]:
    """Each hit's path -> whether one of RULES lowered it (the hits' --explain boosts)."""
    hits = engine.search(query, [collection], options=SearchOptions(per_file=0, explain=True))
    return {h.path: bool(rules & h.explain["boosts"].keys()) for h in hits}


def test_a_first_versions_folder_is_old_code_only_beside_its_replacement(
    engine: Engine, tmp_path: Path
) -> None:
    # Exposed's packages are all `org.jetbrains.exposed.v1.*`: its code, not an old copy of it;
    # pydantic keeps its v1 API in `pydantic/v1/` beside the current modules
    op = "exposed-core/src/main/kotlin/org/jetbrains/exposed/v1/core/Op.kt"
    compose = "buildScripts/docker/docker-compose-sqlserver.yml"
    exposed = indexed(engine, tmp_path / "exposed", {
        op: "// SQL operators composed into WHERE conditions\n"
            "abstract class Op<T> : Expression<T>() {\n  // and, or, not: composed conditions\n}\n",
        compose: "# SQL Server for the tests\nservices:\n  sqlserver:\n    image: mssql\n",
    })
    assert _lowered_by(engine, exposed, "how SQL operators are composed into WHERE conditions",
                       {"compat_path"}) == {op: False, compose: False}
    pydantic = indexed(engine, tmp_path / "pydantic", {
        "pydantic/main.py": "class BaseModel:\n    \"\"\"A model: fields declared with types.\"\"\"\n",
        "pydantic/v1/main.py": "class BaseModel:\n    \"\"\"A v1 model: fields declared with types.\"\"\"\n",
    })
    assert _lowered_by(engine, pydantic, "how model fields are declared", {"compat_path"}) == {
        "pydantic/main.py": False, "pydantic/v1/main.py": True}


def test_a_first_versions_folder_is_judged_by_its_own_collection(engine: Engine, tmp_path: Path) -> None:
    # two protobuf APIs searched together: one's `api/v1/` is its only version, beside nothing of its
    # own; the other project's `api/v2/` replaced nothing of it
    only = indexed(engine, tmp_path / "temporal", {
        "api/v1/service.proto": "// starts a workflow execution with its input\n"
                                "service WorkflowService {\n"
                                "  rpc StartWorkflowExecution(Request) returns (Reply);\n}\n",
    })
    other = indexed(engine, tmp_path / "other", {
        "api/v2/service.proto": "// starts a workflow run\n"
                                "service Runs {\n  rpc Start(Request) returns (Reply);\n}\n",
    })
    hits = engine.search("how a workflow execution is started", [only, other],
                         options=SearchOptions(per_file=0, explain=True))
    lowered = {h.path: "compat_path" in h.explain["boosts"] for h in hits}
    assert lowered["api/v1/service.proto"] is False


def test_a_first_versions_folder_beside_prose_only_is_the_code(engine: Engine, tmp_path: Path) -> None:
    # a root `v1/` is the project's code when the root holds no other code among the candidates:
    # the README beside it describes it, it replaces nothing
    server = "v1/server.go"
    name = indexed(engine, tmp_path / "svc", {
        server: "// Serve answers each request with the stored record\nfunc Serve(req Request) Record {\n"
                "\treturn store.Lookup(req.Key)\n}\n",
        "README.md": "# svc\n\nAnswers each request with the stored record.\n",
    })
    assert _lowered_by(engine, name, "how each request is answered with the stored record",
                       {"compat_path"})[server] is False


@pytest.mark.parametrize("question", ["which environment variable sets the cache folder",
                                      "QMD_CACHE_DIR env var"])
def test_a_question_about_environment_variables_is_about_configuration(
    engine: Engine, tmp_path: Path, question: str
) -> None:
    # the settings module is where a project reads its environment (this project's own rule: QMD_*
    # variables are read only in settings.py): the answer, not a list of features
    settings = "pkg/settings.py"
    name = indexed(engine, tmp_path / "pkg", {
        settings: "import os\n\ndef cache_folder():\n"
                  "    \"\"\"The cache folder: QMD_CACHE_DIR from the environment, else ~/.cache.\"\"\"\n"
                  "    return os.environ.get(\"QMD_CACHE_DIR\", \"~/.cache\")\n",
        "pkg/cache.py": "def store(key, value):\n    \"\"\"Write a value into the cache folder.\"\"\"\n"
                        "    open(cache_folder() + key, 'w').write(value)\n",
    })
    assert _lowered_by(engine, name, question, {"config_module"})[settings] is False


def test_vendored_code_ranks_below_the_source_unless_the_question_names_it(
    engine: Engine, tmp_path: Path
) -> None:
    # redis keeps hiredis, lua and jemalloc under `deps/`: a copy of another project's reply parser
    # says "parse a reply" as densely as redis's own
    copied = "deps/hiredis/read.c"
    source = "src/networking.c"
    name = indexed(engine, tmp_path / "redis", {
        copied: "/* parse a reply from the server: read the reply's type, then its bulk */\n"
                "static int processItem(redisReader *r) { return parseReply(r); /* reply */ }\n",
        source: "/* parse a client's request; write the reply to the client */\n"
                "int processCommand(client *c) { return addReply(c); }\n",
    })
    lowered = _lowered_by(engine, name, "how is a reply parsed", {"vendored_path"})
    assert lowered == {copied: True, source: False}
    assert _lowered_by(engine, name, "how hiredis parses a reply", {"vendored_path"})[copied] is False
    assert _lowered_by(engine, name, "vendored reply parser", {"vendored_path"})[copied] is False


@pytest.mark.parametrize("path", [
    "packages/zod/src/v4/locales/fr.ts", "config/locales/pt-BR.yml", "src/i18n/zh_Hant.json",
    "App/fr.lproj/Localizable.strings", "locales/fil.json", "i18n/es-419.json",
    "public/locales/de/translation.json",  # i18next: a folder per language
    "django/conf/locale/fr/LC_MESSAGES/django.po",  # gettext
    "website/i18n/ko/docusaurus-plugin-content-docs/current/intro.md",  # Docusaurus
    "src/main/resources/org/app/Messages_fr.properties",  # Java's ResourceBundle, anywhere
    "src/main/resources/messages_pt_BR.properties",
    "src/FluentValidation/Resources/Languages/ChineseSimplifiedLanguage.cs",  # a class per language
    "lang/english.php",
])
def test_a_language_named_file_under_a_locale_folder_is_a_translation(path: str) -> None:
    assert is_translation(path)


@pytest.mark.parametrize("path", [
    "src/locales/index.ts",  # the machinery that loads them
    "i18n/api.ts",  # a 3-letter module, no language
    "src/java/lang/String.java",  # `lang/` is a package as often
    "src/io.rs",  # a 2-letter module outside any locale folder
    "src/i18n/loader/index.ts",  # the machinery, in a folder of its own
    "src/FluentValidation/Resources/LanguageManager.cs",
    "src/languages/python.js",  # highlight.js: a folder of programming languages
    "src/main/resources/application_dev.properties",  # a profile, not a language
])
def test_modules_are_no_translations(path: str) -> None:
    assert not is_translation(path)


def test_translations_rank_below_the_code_unless_the_question_asks_for_them(
    engine: Engine, tmp_path: Path
) -> None:
    # zod's `locales/en.ts` words every validation message, in the question's words, without the check
    english = "src/locales/en.ts"
    check = "src/checks.ts"
    name = indexed(engine, tmp_path / "zod", {
        english: "export const messages = {\n"
                 "  too_small: 'String must contain at least the minimum length',\n"
                 "  too_big: 'String must contain at most the maximum length',\n};\n",
        check: "// the minimum length check of a string\nexport function minLength(min: number) {\n"
               "  return (s: string) => s.length >= min;\n}\n",
    })
    question = "how is a string's minimum length checked"
    assert _lowered_by(engine, name, question, {"translation"}) == {english: True, check: False}
    assert _lowered_by(engine, name, "english translation of the minimum length message",
                       {"translation"})[english] is False


def test_an_older_versions_folder_beside_a_later_one_is_old_code(engine: Engine, tmp_path: Path) -> None:
    # zod keeps v3 in `src/v3/` beside the current `src/v4/`; a `v2/` alone is the code
    old, new = "src/v3/types.ts", "src/v4/core/schemas.ts"
    zod = indexed(engine, tmp_path / "zod", {
        old: "// parse a string schema: check its type, then every refinement\nexport class ZodString {}\n",
        new: "// parse a string schema: check its type, then each check\nexport const $ZodString = 1;\n",
    })
    lowered = _lowered_by(engine, zod, "how a string schema is parsed", {"compat_path"})
    assert lowered == {old: True, new: False}
    alone = indexed(engine, tmp_path / "svc", {
        "api/v2/server.go": "// Serve answers each request with the stored record\nfunc Serve() {}\n",
        "cmd/main.go": "// main starts the server\nfunc main() { Serve() }\n",
    })
    lowered = _lowered_by(engine, alone, "how each request is answered", {"compat_path"})
    assert lowered["api/v2/server.go"] is False


def test_a_header_whose_bodies_sit_beside_it_declares(engine: Engine, tmp_path: Path) -> None:
    # spdlog: `logger.h` declares, `logger-inl.h` holds the bodies; a header alone is the code
    header, body = "include/spdlog/logger.h", "include/spdlog/logger-inl.h"
    alone = "include/spdlog/pattern_formatter.h"
    name = indexed(engine, tmp_path / "spdlog", {
        header: "// flush the logger's sinks when the level is at least flush_level\n"
                "class logger {\n  void flush();  // flush every sink\n};\n",
        body: "// flush every sink of the logger\nSPDLOG_INLINE void logger::flush() {\n"
              "  for (auto &sink : sinks_) { sink->flush(); }  // flush the sink\n}\n",
        alone: "// formats a log message by the pattern; flush is not its job\nclass pattern_formatter {};\n",
    })
    assert _lowered_by(engine, name, "how does the logger flush its sinks", {"type_declarations"}) == {
        header: True, body: False, alone: False}


def test_templates_and_stylesheets_rank_below_the_code_unless_the_question_asks_for_them(
    engine: Engine, tmp_path: Path
) -> None:
    # a Rails app's sign-up page says every word of the sign-up flow; the controller does it
    page = "app/views/users/new.html.erb"
    style = "app/assets/stylesheets/users.scss"
    controller = "app/controllers/users_controller.rb"
    name = indexed(engine, tmp_path / "shop", {
        page: "<h1>Sign up</h1>\n<%= form_with model: @user do |f| %>\n  <%= f.email_field :email %>\n"
              "  <%= f.submit 'Sign up with email' %>\n<% end %>\n",
        style: ".users-sign-up {\n  /* the sign up form's email field */\n  margin: 1rem;\n}\n",
        controller: "class UsersController < ApplicationController\n  # sign up with an email\n  def create\n"
                    "    @user = User.create(params.require(:user).permit(:email))\n  end\nend\n",
    })
    assert _lowered_by(engine, name, "how does sign up with an email create the user", {"markup"}) == {
        page: True, style: True, controller: False}
    asked = _lowered_by(engine, name, "the sign up page template and its styles", {"markup"})
    assert asked[page] is False and asked[style] is False


def test_a_properties_file_is_data_as_yaml_is(engine: Engine, tmp_path: Path) -> None:
    # Spring's `application.properties` names the features it configures; the code does them
    settings = "src/main/resources/application.properties"
    code = "src/main/java/shop/OrderService.java"
    name = indexed(engine, tmp_path / "shop", {
        settings: "# order retry\norder.retry.max-attempts=3\norder.retry.backoff=2s\n",
        code: "class OrderService {\n  // retry a failed order with backoff\n  void retryOrder() {}\n}\n",
    })
    assert _lowered_by(engine, name, "how a failed order is retried with backoff", {"data_file"}) == {
        settings: True, code: False}
    assert _lowered_by(engine, name, "order retry properties", {"data_file"})[settings] is False
