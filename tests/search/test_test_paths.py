"""is_test_path: what a test file is in each language, by its test runners' conventions; when a
question asks for tests (asks_for_tests); CI pipelines below the code (issue 11).

Paths are real ones from open-source repositories of each language."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.query import parse_query
from qmd_daemon.search.scoring import asks_for_tests
from qmd_daemon.search.test_paths import is_test_path
from tests.conftest import indexed

TEST_FILES = [
    # python: pytest `test_*.py` / `*_test.py`, conftest, Django's per-app `tests.py`
    "tests/test_core.py",
    "src/attr/test_funcs.py",
    "sympy/core/basic_test.py",
    "conftest.py",
    "polls/tests.py",
    # go: `*_test.go`
    "cmd/root_test.go",
    "go/printer/testdata/comments.go",  # the go tool skips `testdata/`
    # a suite's folder named by its kind of test
    "src/__performance_tests__/large-obj.mjs",  # a Jest-style variant of `__tests__` (immer)
    "perf-testing/immutability.mjs",
    "integration_tests/test_client.py",
    "e2e-tests/login.spec.ts",
    # elixir: ExUnit `*_test.exs`
    "test/plug/conn_test.exs",
    # ruby: RSpec `*_spec.rb`, minitest `test_*.rb` / Rails `*_test.rb`
    "spec/sinatra/base_spec.rb",
    "lib/rack/test_request.rb",
    "app/models/user_test.rb",
    # lua: busted `*_spec.lua`, luaunit `test_*.lua`
    "lua/telescope/finders_spec.lua",
    "src/test_util.lua",
    # javascript / typescript: Jest/Vitest `*.test.ts` `*.spec.js`, Deno `*_test.ts`, `__tests__/`
    "src/router.test.ts",
    "lib/axios.spec.js",
    "http/file_server_test.ts",
    "test-runner.mjs",  # node --test runs `test-*.mjs`
    "src/__tests__/createStore.ts",
    "src/__mocks__/fs.js",
    # bash: bats files, shunit2 `*_test.sh`, test folders
    "test/bats/run.bats",
    "lib/versions_test.sh",
    "test/fixtures/bats/setup.bash",
    "t/t0001-init.sh",  # git's sharness suite, `tNNNN-*.sh`
    # c / c++: ctest `test_*.c`, `test-*.c` (systemd, libuv), googletest `*_test.cc`
    # `*_unittest.cc`, Qt `tst_*`
    "src/basic/test_hashmap.c",
    "src/test-fs.c",
    "absl/strings/str_cat_test.cc",
    "base/values_unittest.cc",
    "src/corelib/tst_qstring.cpp",
    # java / kotlin: Surefire's `*Test` `*Tests` `Test*` `*TestCase`, Failsafe's `*IT`, `src/test/`
    "src/main/java/org/apache/commons/lang3/StringUtilsTest.java",
    "core/src/TestStringUtils.java",
    "server/src/OrderServiceIT.java",
    "kotlinx-coroutines-core/jvm/src/DispatcherTests.kt",
    "exposed-tests/src/main/kotlin/EntityTest.kt",
    "app/src/test/kotlin/UserRepository.kt",
    "src/main/kotlin/io/kotest/MathSpec.kt",
    # scala: ScalaTest / MUnit `*Spec` `*Suite` `*Test`
    "modules/core/src/main/scala/io/circe/JsonSpec.scala",
    "core/src/main/scala/org/http4s/UriSuite.scala",
    # swift: XCTest `*Tests.swift`, `Tests/`
    "Source/SessionTests.swift",
    "Tests/SnapKitTests/Tests.swift",
    # csharp: xUnit/NUnit `*Test(s).cs`, `Foo.Tests/` projects
    "Src/Newtonsoft.Json.Tests/Serialization/JsonSerializerTest.cs",
    "Dapper.Tests/ProcedureTests.cs",
    # haskell: hspec-discover `*Spec.hs`, tasty `test/`
    "src/Data/Aeson/EncodeSpec.hs",
    "tests/Properties.hs",
    # php: PHPUnit `*Test.php`, PHP's own `.phpt`
    "src/Psr7/UriTest.php",
    "ext/standard/tests/strings/bug1.phpt",
    # rust: `#[cfg(test)] mod tests;` files, integration `tests/`
    "src/de/tests.rs",
    "tests/test_de.rs",
    # zig: test folders (tests are `test` blocks inside the code)
    "test/behavior/array.zig",
    # others: dart, clojure, erlang, perl
    "lib/src/parser_test.dart",
    "src/ring/core_test.clj",
    "test/ranch_SUITE.erl",
    "t/basic.t",
    # objective-c: XCTest targets `*Tests.m`; vb: NUnit classes; crystal spec; Foundry `*.t.sol`
    "AFNetworking/AFURLSessionManagerTests.m",
    "Src/Billing/InvoiceTests.vb",
    "lib/kemal/route_spec.cr",
    "src/Counter.t.sol",
    # powershell: Pester runs `*.Tests.ps1`, in any case (PowerShell's filters ignore it); Pester
    # keeps its own in `tst/`
    "src/Module.Tests.ps1",
    "src/Module.tests.ps1",
    "Scripts/Deploy.TESTS.PS1",
    "tst/functions/Mock.ps1",
    # gdscript (Godot): GUT runs `test_*.gd`, gdUnit4 `*_test.gd` / `*Test.gd` suites, wherever they are
    "addons/inventory/unit/test_inventory.gd",
    "addons/gdUnit4/examples/PlayerTest.gd",
    "game/checks/save_slot_test.gd",
    # test doubles: OpenZeppelin's `contracts/mocks/`, mockery's `mocks/` (Go)
    "contracts/mocks/token/ERC20Mock.sol",
    "internal/store/mocks/Store.go",
    # ocaml: dune tests' `test_*.ml` (angstrom's `lib_test/`); r (testthat), julia: test folders
    "test/test_parser.ml",
    "lib_test/test_angstrom.ml",
    "src/uri_tests.ml",
    # matlab: runtests' `test*.m` functions
    "matlab2tikz/testHeadless.m",
    # dart / flutter: `flutter drive` targets and integration tests
    "example/test_driver/app.dart",
    "integration_test/app.dart",
    "tests/testthat/test-fit.R",
    "test/runtests.jl",
    # any language: a file's test variant, and the scripts that run the tests
    "tsconfig.test.json",
    ".scalafix.test.conf",
    "script/test",
    "bin/test_pyodide.mjs",
    "scripts/test-cov.sh",
]
CODE_FILES = [
    "lib/bats-core/test_functions.bash",  # bats' own library: bats runs `*.bats`, not `test_*`
    "libexec/bats-core/test-helper.sh",
    "src/click/testing.py",  # click's test runner is the product
    "internal/test_helpers.go",  # `go test` runs `*_test.go` only
    "src/main/java/org/apache/commons/lang3/Latest.java",
    "src/main/java/org/junit/Testable.java",
    "lib/contest.kt",
    "src/XMonad/Operations.hs",
    "src/Data/Aeson/T/Record.hs",  # a Haskell module `Data.Aeson.T`, not a `t/` folder
    "Source/Core/Session.swift",
    "Src/Newtonsoft.Json/JsonSerializer.cs",
    "lua/lazy/manage/checker.lua",
    "src/specification.zig",
    "lib/std/testing.zig",  # zig's testing library
    "src/protest.rs",
    "lib/test_pyodide.mjs",  # no JS runner runs `test_*.mjs` (in bin/ it runs the tests)
    "api.spec.yaml",  # an OpenAPI specification
    ".test/index.ts",  # a hidden folder, not a `Foo.Tests` project
    "AFNetworking/AFSecurityPolicy.m",
    "contracts/Token.sol",
    "src/spectator.cr",
    "lib/testable.m",  # `test*` runs only camelCase/snake_case: `testable` is a word
    "lib/attest.ml",
    "src/functions/TestDrive.ps1",  # Pester's own TestDrive feature
    "src/functions/TestResults.NUnit3.ps1",
    "src/tstate.c",
    "addons/dialogic/Modules/Text/auto_skip.gd",
    "addons/gut/testable.gd",
    "rtl/ibex_pmp.sv",
    "packages/react-test-renderer/src/ReactTestRenderer.js",  # a package named for tests, not a suite
    "lib/latest/index.js",
]


# hardware designs: testbenches, lowRISC's design verification beside rtl/ (its UVM environments,
# its C++ co-simulation, its Python scripts): tests in a hardware-description tree only
HARDWARE_TEST_FILES = [
    "dv/uvm/core_ibex/fcov/core_ibex_pmp_fcov_if.sv",
    "dv/cosim/spike_cosim.cc",
    "dv/uvm/core_ibex/scripts/compile_tb.py",
    "hw/ip/uart/dv/env/uart_env.sv",
    "tb/uart_tx_tb.v",
    "sim/tb/fifo_tb.vhd",
]


@pytest.mark.parametrize("path", TEST_FILES)
def test_test_files_of_each_language(path: str) -> None:
    assert is_test_path(path)
    assert is_test_path(path, hardware=True)


@pytest.mark.parametrize("path", HARDWARE_TEST_FILES)
def test_testbench_folders_are_tests_in_a_hardware_tree_only(path: str) -> None:
    assert is_test_path(path, hardware=True)
    assert not is_test_path(path)  # `tb/` is a toolbox as often, in a Go or Python tree


@pytest.mark.parametrize("path", CODE_FILES)
def test_code_files_are_not_tests(path: str) -> None:
    assert not is_test_path(path)


def demoted_as_test(engine: Engine, tmp_path: Path, files: dict[str, str], query: str) -> dict[str, bool]:
    name = indexed(engine, tmp_path / "repo", files)
    hits = engine.search(query, [name], options=SearchOptions(per_file=0, explain=True))
    return {h.path: "test_path" in h.explain["boosts"] for h in hits}


def test_a_shell_library_named_test_is_code(engine: Engine, tmp_path: Path) -> None:
    # bats-core: `test_functions.bash` defines `run` and `bats_pipe` for every test; the tests use
    # them (`*.bats` files and helper scripts under `test/`).
    demoted = demoted_as_test(engine, tmp_path, {
        "lib/bats-core/test_functions.bash": "bats_pipe() {\n  # chain commands of a pipe\n  \"$@\"\n}\n",
        "test/pipe_helper.bash": "check_pipe() {\n  # bats_pipe chains commands\n  bats_pipe echo hi\n}\n",
    }, "how bats_pipe chains commands")
    assert demoted == {"lib/bats-core/test_functions.bash": False, "test/pipe_helper.bash": True}


def test_tb_and_dv_folders_are_tests_only_in_hardware_trees(engine: Engine, tmp_path: Path) -> None:
    # lowRISC's ibex: `dv/cosim/spike_cosim.cc` (C++ co-simulation) said "physical memory
    # protection" more than rtl/ibex_pmp.sv and came first; a Go repository's `tb/` toolbox (and a
    # Python `dv/` data-view package) is its code, and was demoted as a testbench in every language
    pmp = "// physical memory protection: check each access against the PMP regions\n"
    demoted = demoted_as_test(engine, tmp_path / "ibex", {
        "rtl/ibex_pmp.sv": f"{pmp}module ibex_pmp (\n  input logic clk_i\n);\nendmodule\n",
        "dv/cosim/spike_cosim.cc": f"{pmp}{pmp}bool check_pmp(uint32_t addr) {{ return true; }}\n",
        "tb/core_tb.sv": f"{pmp}module core_tb;\nendmodule\n",
    }, "check physical memory protection regions")
    assert demoted == {"rtl/ibex_pmp.sv": False, "dv/cosim/spike_cosim.cc": True, "tb/core_tb.sv": True}
    demoted = demoted_as_test(engine, tmp_path / "tool", {
        "tb/regions.go": "package tb\n\n// check memory regions: each access against the regions\n"
                         "func CheckRegions(addr uint32) bool { return true }\n",
        "dv/regions.py": "def check_regions(addr):\n    \"\"\"Check memory regions of each access.\"\"\"\n"
                         "    return True\n",
        "test/regions_test.go": "package test\n\n// check memory regions\nfunc TestRegions() {}\n",
    }, "check memory regions")
    assert demoted == {"tb/regions.go": False, "dv/regions.py": False, "test/regions_test.go": True}


def test_a_junit_class_is_a_test_beside_its_subject(engine: Engine, tmp_path: Path) -> None:
    # Gradle/Maven flat layouts keep `FooTest.java` beside `Foo.java`: matched with case.
    demoted = demoted_as_test(engine, tmp_path, {
        "src/StringUtils.java": "public class StringUtils {\n  public static String abbreviate(String s) {"
        " return s; }\n}\n",
        "src/StringUtilsTest.java": "public class StringUtilsTest {\n  void abbreviate() {"
        " StringUtils.abbreviate(\"x\"); }\n}\n",
    }, "abbreviate string")
    assert demoted == {"src/StringUtils.java": False, "src/StringUtilsTest.java": True}


def test_declaration_files_of_every_module_kind_rank_below_the_code(engine: Engine, tmp_path: Path) -> None:
    # axios ships `index.d.ts` and `index.d.cts`; the default mask takes `.cts`/`.mts` now
    declaration = "export interface AxiosInterceptorManager { use(onFulfilled): number; }\n"
    code = "class InterceptorManager {\n  use(onFulfilled) {\n    return 0;\n  }\n}\n"
    name = indexed(engine, tmp_path / "repo", {
        "index.d.cts": declaration, "index.d.mts": declaration, "lib/InterceptorManager.js": code,
    })
    scaled = scaled_as_declarations(engine, name, "interceptor manager use")
    assert scaled == {"index.d.cts": True, "index.d.mts": True, "lib/InterceptorManager.js": False}


def test_interfaces_and_objc_headers_rank_below_their_implementation(engine: Engine, tmp_path: Path) -> None:
    # angstrom.mli holds `val`s and their docs beside angstrom.ml; AFNetworking's headers declare
    # the @implementation of the .m beside them; a C header is often all there is of a C API
    name = indexed(engine, tmp_path / "repo", {
        "lib/angstrom.mli": "val parse_string : consume:Consume.t -> 'a t -> string -> ('a, string) result\n",
        "lib/angstrom.ml": "let parse_string ~consume p s =\n  let len = String.length s in\n  run p s len\n",
        "AF/AFSecurityPolicy.h": "#import <Foundation/Foundation.h>\n@interface AFSecurityPolicy : NSObject\n"
                                 "- (BOOL)evaluateServerTrust:(SecTrustRef)serverTrust;\n@end\n",
        "AF/AFSecurityPolicy.m": "#import \"AFSecurityPolicy.h\"\n@implementation AFSecurityPolicy\n"
                                 "- (BOOL)evaluateServerTrust:(SecTrustRef)serverTrust {\n"
                                 "    return YES;\n}\n@end\n",
        "include/trust.h": "/* evaluate server trust */\nint evaluate_server_trust(void *serverTrust);\n",
    })
    scaled = scaled_as_declarations(engine, name, "parse_string evaluate server trust")
    assert scaled == {"lib/angstrom.mli": True, "lib/angstrom.ml": False, "AF/AFSecurityPolicy.h": True,
                      "AF/AFSecurityPolicy.m": False, "include/trust.h": False}


# terraform-aws-eks: `enable_irsa`'s description in variables.tf says "OpenID Connect Provider ...
# IRSA" in English and came first for the OIDC question; main.tf holds the provider itself
TERRAFORM_MODULE = {
    "variables.tf": 'variable "enable_irsa" {\n  description = "Whether to create an OpenID Connect identity'
                    ' provider for IAM roles for service accounts"\n  type = bool\n}\n',
    "outputs.tf": 'output "oidc_provider_arn" {\n  description = "The ARN of the OIDC identity provider"\n'
                  '  value = aws_iam_openid_connect_provider.oidc_provider[0].arn\n}\n',
    "main.tf": 'resource "aws_iam_openid_connect_provider" "oidc_provider" {\n'
               '  count = var.enable_irsa ? 1 : 0\n  url = local.oidc_issuer\n}\n',
}


def test_a_terraform_modules_inputs_and_outputs_rank_below_its_code(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "repo", TERRAFORM_MODULE)
    for question, interface_scaled in [("OIDC identity provider for IAM roles", True),
                                        ("which variable enables the OIDC identity provider", False)]:
        scaled = scaled_as_declarations(engine, name, question)
        assert scaled == {"variables.tf": interface_scaled, "outputs.tf": interface_scaled, "main.tf": False}


def test_a_solidity_interface_ranks_below_the_contract(engine: Engine, tmp_path: Path) -> None:
    # openzeppelin-contracts: IAccessManager.sol (`interface`, named I + the contract by the style
    # guide) documents `minimumDelay` and came first for "minimum delay before a scheduled operation"
    name = indexed(engine, tmp_path / "repo", {
        "access/IAccessManager.sol": "interface IAccessManager {\n    /// @dev Minimum delay before a"
                                     " scheduled operation can be executed.\n"
                                     "    function minimumDelay() external view returns (uint32);\n}\n",
        "governance/TimelockController.sol": "contract TimelockController {\n    uint256 private _minDelay;\n"
                                             "    function getMinDelay() public view returns (uint256) {\n"
                                             "        return _minDelay; // minimum delay, scheduled\n"
                                             "    }\n}\n",
        "access/Initializable.sol": "abstract contract Initializable {\n    // operation scheduled once\n}\n",
    })
    scaled = scaled_as_declarations(engine, name, "minimum delay before a scheduled operation")
    assert scaled == {"access/IAccessManager.sol": True, "governance/TimelockController.sol": False,
                      "access/Initializable.sol": False}


def test_a_postgresql_extensions_update_scripts_rank_below_its_source(engine: Engine, tmp_path: Path) -> None:
    # pg_partman: `updates/pg_partman--4.7.0--4.7.1.sql` re-creates every function its release
    # changed, and 88 such older copies took the places of `sql/functions/*.sql` in the whole tree
    drop = ("CREATE FUNCTION @extschema@.drop_partition_time(p_parent_table text, p_retention interval)\n"
            "RETURNS int LANGUAGE plpgsql AS $$\nBEGIN\n    -- drop child tables older than the retention\n"
            "    RETURN 0;\nEND\n$$;\n")
    files = {"sql/functions/drop_partition_time.sql": drop}
    for old, new in [("4.6.0", "4.7.0"), ("4.7.0", "4.7.1"), ("4.7.1", "5.0.0")]:  # each says it more often
        header = f"-- {new}: drop_partition_time keeps the retention's child tables\n"
        files[f"updates/pg_partman--{old}--{new}.sql"] = header + drop.replace("0;", "1;") * 2
    name = indexed(engine, tmp_path / "repo", files)
    for question, scripts_scaled in [("drop old child tables past the retention", True),
                                     ("which version upgrade changed drop_partition_time", False)]:
        hits = engine.search(question, [name], options=SearchOptions(per_file=0, explain=True))
        scaled = {h.path: "extension_update_script" in h.explain["boosts"] for h in hits}
        assert scaled == {path: scripts_scaled and path.startswith("updates/") for path in files}, question
        if scripts_scaled:
            assert hits[0].path == "sql/functions/drop_partition_time.sql"


def scaled_as_declarations(engine: Engine, name: str, question: str) -> dict[str, bool]:
    """Each hit's path: whether it was ranked as a file declaring what another implements."""
    hits = engine.search(question, [name], options=SearchOptions(per_file=0, explain=True))
    return {h.path: "type_declarations" in h.explain["boosts"] for h in hits}


ASKS_FOR_TESTS = [
    "tests for parse_args",
    "unit tests of the lexer",
    "the router's tests",
    "parse cookie tests",
    "how is the Router tested",
    "integration-test setup for the database",
    "test fixtures for http responses",
    "where is conftest",
]
SAYS_TEST_ABOUT_THE_PRODUCT = [
    # bats-core's questions: a test framework's code is about tests
    "how a test file is preprocessed before execution",
    "how skip aborts a test without marking it as a failure",
    "how the run command captures output and exit status of a command under test",
    "how bats validates the test count across parallel workers",
    # click's CliRunner, guzzle's MockHandler: testing support is the product
    "test runner for CLI commands in isolation",
    "mock handler for simulating HTTP responses in tests",
    # a spec is a specification as often as an RSpec file (lazy.nvim's plugin specs)
    "how plugin fragments handle multiple specs for the same plugin",
    # a bug report says it in passing
    "This is causing test failures for me after some changes to the dict ordering",
]


@pytest.mark.parametrize("question", ASKS_FOR_TESTS)
def test_questions_that_ask_for_tests(question: str) -> None:
    assert asks_for_tests(parse_query(question))


@pytest.mark.parametrize("question", SAYS_TEST_ABOUT_THE_PRODUCT)
def test_questions_that_say_test_about_the_code(question: str) -> None:
    assert not asks_for_tests(parse_query(question))


def test_a_test_framework_question_keeps_its_own_suite_below_its_code(engine: Engine, tmp_path: Path) -> None:
    # bats-core's whole tree: its own `.bats` suite says "test" and "preprocess" far more often than
    # the library that preprocesses a test file; the question says "test" about the product.
    files = {
        "lib/bats-core/preprocessing.bash": "bats_preprocess_source() {\n"
        "  # preprocess the test file: turn @test blocks into functions\n  bats-preprocess \"$1\"\n}\n",
        "test/preprocess.bats": "@test \"preprocess a test file\" {\n"
        "  run bats_preprocess_source test/fixtures/test.bats\n  # the test file is preprocessed\n"
        "  [ \"$status\" -eq 0 ]  # test file preprocessed, test passes\n}\n",
    }
    demoted = demoted_as_test(engine, tmp_path, files, "how a test file is preprocessed before execution")
    assert demoted == {"lib/bats-core/preprocessing.bash": False, "test/preprocess.bats": True}
    asked = demoted_as_test(engine, tmp_path, files, "tests for the preprocessing of a file")
    assert asked["test/preprocess.bats"] is False


def test_ci_workflows_rank_below_the_code_unless_asked_about(engine: Engine, tmp_path: Path) -> None:
    # bats-core: `.github/workflows/tests.yml` names the suite and every helper; its path says
    # "tests", so a question about a test framework's code found it second
    name = indexed(engine, tmp_path / "repo", {
        ".github/workflows/tests.yml": "name: Tests\njobs:\n  skip:\n    steps:\n"
        "      - run: bin/bats --skip test/skip.bats  # a skipped test aborts the test\n",
        "lib/bats-core/test_functions.bash": "skip() {\n  # abort the test without marking it as a failure\n"
        "  BATS_TEST_SKIPPED=${1:-1}\n  exit 0\n}\n",
    })

    def lowered(query: str) -> dict[str, bool]:
        hits = engine.search(query, [name], options=SearchOptions(per_file=0, explain=True))
        return {h.path: "ci_path" in h.explain["boosts"] for h in hits}

    assert lowered("how skip aborts a test without marking it as a failure") == {
        ".github/workflows/tests.yml": True, "lib/bats-core/test_functions.bash": False}
    assert lowered("which CI workflow runs the skipped tests")[".github/workflows/tests.yml"] is False


@pytest.mark.parametrize("path", ["tests/x.py", "src/test_a.py", "src/a.py", "bin/test", "lib/FooTest.java",
                                  "src/foo.test.ts", "Foo.Tests/a.cs", "a/b/c.rs"])
def test_a_path_is_judged_as_its_folders_and_name_say_whatever_its_spelling(path: str) -> None:
    # is_test_path splits on "/" itself (pathlib cost most of its time): an empty or `.` part,
    # which pathlib drops, changes nothing
    expected = is_test_path(path)
    for spelling in ("./" + path, path.replace("/", "//"), path.replace("/", "/./")):
        assert is_test_path(spelling) is expected, spelling
