"""What a test file is, by each language's own conventions (issue 11).

A test file is one its language's test runner finds by name, or one kept in a test folder. The
name rules are the runners' discovery rules, so they differ by language: `test_*.py` is a pytest
module, but `test_functions.bash` is a shell library (bats runs `*.bats`), and `test_*.go` is not
a test to `go test` (it runs `*_test.go`). Names are matched with case, as the runners do:
`FooTest.java` is a JUnit class, `Latest.java` is not; PowerShell's without (its names and
Pester's `-Filter *.Tests.ps1` are case-insensitive: `Mock.tests.ps1` is a test).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

_JVM = ("*Test.{ext}", "*Tests.{ext}", "*TestCase.{ext}", "*IT.{ext}", "Test[A-Z]*.{ext}", "*Spec.{ext}")

# extensions -> file-name patterns its test runners discover ({ext} is the file's own extension).
TEST_FILE_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("py",): ("test_*.py", "*_test.py", "conftest.py", "tests.py"),  # pytest, unittest, Django apps
    ("rb",): ("*_spec.rb", "test_*.rb", "*_test.rb"),  # RSpec, minitest, Rails
    ("lua",): ("*_spec.lua", "test_*.lua", "*_test.lua"),  # busted, luaunit
    ("go",): ("*_test.go",),  # go test
    ("exs",): ("*_test.exs",),  # ExUnit
    ("rs",): ("tests.rs",),  # `#[cfg(test)] mod tests;` (integration tests live in tests/)
    ("zig",): (),  # `test "..." {}` blocks inside the code itself; test/ folders
    ("sh", "bash", "zsh"): ("*_test.{ext}", "t[0-9][0-9][0-9][0-9]-*.{ext}"),  # shunit2, sharness (git)
    ("bats",): ("*.bats",),
    ("t",): ("*.t",),  # Perl's Test::More, cram
    ("php",): ("*Test.php",),  # PHPUnit, Pest
    ("phpt",): ("*.phpt",),  # PHP's own run-tests
    # Jest / Vitest `*.test.ts` `*.spec.js`, Deno `*_test.ts`, Bun `*_spec.ts`, `node --test`'s
    # `*-test.js` `test-*.js` `test.js`
    ("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"): (
        "*.test.{ext}", "*.spec.{ext}", "*_test.{ext}", "*_spec.{ext}",
        "*-test.{ext}", "test-*.{ext}", "test.{ext}",
    ),
    # googletest `foo_test.cc` `foo_unittest.cc`, CMake/ctest `test_foo.c`, `test-foo.c`, Qt `tst_foo.cpp`
    ("c", "h", "cc", "cpp", "cxx", "hpp", "hh"): (
        "test_*.{ext}", "test-*.{ext}", "*_test.{ext}", "*_tests.{ext}", "*_unittest.{ext}", "tst_*.{ext}",
    ),
    ("java", "kt", "kts", "groovy"): _JVM,  # Maven Surefire/Failsafe includes, Kotest and Spock specs
    ("scala",): ("*Spec.scala", "*Suite.scala", "*Test.scala", "*Tests.scala"),  # ScalaTest, MUnit
    ("cs", "fs", "vb"): ("*Test.{ext}", "*Tests.{ext}", "*Spec.{ext}", "*Specs.{ext}"),  # xUnit/NUnit classes
    # XCTest targets, Kiwi/Specta specs; MATLAB's runtests takes `test*` files (`testHeadless.m`),
    # camelCase or snake_case, so `testable.m` is not one
    ("m", "mm"): ("*Tests.{ext}", "*Test.{ext}", "*Spec.{ext}", "test[A-Z_]*.{ext}"),
    ("swift",): ("*Tests.swift", "*Test.swift", "*Spec.swift"),  # XCTest, Quick
    ("hs",): ("*Spec.hs", "*Test.hs", "*Tests.hs"),  # hspec-discover, tasty
    ("dart",): ("*_test.dart",),  # package:test
    ("clj", "cljs", "cljc"): ("*_test.{ext}",),  # clojure.test
    ("erl",): ("*_SUITE.erl", "*_tests.erl"),  # Common Test, EUnit
    ("ml",): ("test_*.ml", "*_test.ml", "*_tests.ml"),  # dune test stanzas' names (`lib_test/test_x.ml`)
    ("cr",): ("*_spec.cr",),  # crystal spec
    ("sol",): ("*.t.sol",),  # Foundry's forge test
    ("ps1",): ("*.Tests.ps1",),  # Pester
    ("gd",): ("test_*.gd", "*_test.gd", "*Test.gd"),  # Godot's GUT (`test_` prefix), gdUnit4 suites
    # R (testthat), Julia (runtests.jl), Elm, Nim, Gleam: tests live in test folders
}
# extensions whose runners match names in any case (PowerShell's file filters)
_ANY_CASE_EXTENSIONS = frozenset({"ps1"})
_NAMES_BY_EXTENSION = {
    ext: tuple(p.format(ext=ext) for p in patterns)
    for exts, patterns in TEST_FILE_NAMES.items()
    for ext in exts
}

# Folders that hold tests (lower-cased), in most languages, and by one's convention: Jest's
# `__tests__`/`__mocks__`, Go's `testdata` (the go tool skips it), Flutter's `integration_test`
# and `test_driver` (`flutter drive`; Ecto keeps its integration suite in one too), `mocks`
# (mockery's output folder, OpenZeppelin's `contracts/mocks` test contracts); also .NET's
# `Foo.Tests/` projects; `tst` (Pester's and other .NET repositories' test folder). Not `t/`
# (Perl's and git's): lower-cased, it would take Haskell's `T/` modules.
TEST_FOLDERS = frozenset(
    {"test", "tests", "testing", "spec", "specs", "__tests__", "__mocks__", "testdata", "integration_test",
     "test_driver", "mocks", "tst"}
)
# Hardware designs' testbenches, `tb`, and lowRISC's/OpenTitan's design verification, `dv` (UVM
# environments, co-simulation in C++, Python scripts beside the `rtl/`): test folders only in a
# hardware-description tree; elsewhere `tb/` is as often a toolbox.
HARDWARE_TEST_FOLDERS = frozenset({"tb", "dv"})
HARDWARE_LANGUAGES = frozenset({"verilog", "vhdl"})  # file_types' languages of hardware descriptions
TEST_PROJECT_SUFFIXES = (".test", ".tests")
# A suite's folder named by its kind of test: `integration_tests/`, `e2e-tests/`, Jest's variants of
# `__tests__` (immer's `__performance_tests__/`), `perf-testing/`
TEST_KIND_SUFFIXES = ("_tests", "-tests", "_test", "-test", "_testing", "-testing", "tests__", "test__")
# In any language: the test variant of a file (`tsconfig.test.json`, `.scalafix.test.conf`), and
# the scripts that run the tests (GitHub's `script/test`, sympy's `bin/test_isolated`).
ANY_LANGUAGE_NAMES = ("*.test.*",)
SCRIPT_FOLDERS = frozenset({"bin", "script", "scripts", "tools"})
TEST_SCRIPT_NAMES = ("test", "test.*", "test_*", "test-*")


@lru_cache(maxsize=65_536)
def is_test_path(path: str, hardware: bool = False) -> bool:
    """True for a file in a test folder, named as its language's test runner finds tests, a
    `.test.` variant, or a test script of a scripts folder; `hardware`: the file is of a
    hardware-description tree, where `tb/` and `dv/` are test folders too. Kept per path: every
    search asks it of each of its ~250 candidates (0.7 ms of a question at 503k chunks, most of it
    in pathlib), and an agent's questions of one repository meet the same files."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    for folder in parts[:-1]:
        folder = folder.lower()
        if folder in TEST_FOLDERS or (folder.endswith(TEST_PROJECT_SUFFIXES) and not folder.startswith(".")):
            return True
        if folder.endswith(TEST_KIND_SUFFIXES):
            return True
        if hardware and folder in HARDWARE_TEST_FOLDERS:
            return True
    name = parts[-1] if parts else ""
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    patterns = _NAMES_BY_EXTENSION.get(ext, ()) + ANY_LANGUAGE_NAMES
    if len(parts) > 1 and parts[-2].lower() in SCRIPT_FOLDERS:
        patterns += TEST_SCRIPT_NAMES
    if ext in _ANY_CASE_EXTENSIONS:
        name, patterns = name.lower(), tuple(p.lower() for p in patterns)
    return any(fnmatchcase(name, pattern) for pattern in patterns)
