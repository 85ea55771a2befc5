"""is_test_path: what a test file is in each language of the broad set (issue 11)."""

from __future__ import annotations

import pytest

from qmd_daemon.search.scoring import is_test_path

TEST_FILES = [
    "tests/test_core.py",  # python
    "conftest.py",
    "cmd/root_test.go",  # go
    "test/plug/conn_test.exs",  # elixir
    "spec/sinatra/base_spec.rb",  # ruby
    "lua/telescope/finders_spec.lua",  # lua (busted)
    "tests/test_util.lua",
    "src/router.test.ts",  # typescript / javascript
    "lib/axios.spec.js",
    "test/bats/run.bats",  # bash
    "exposed-tests/src/main/kotlin/EntityTest.kt",  # kotlin
    "kotlinx-coroutines-core/jvm/src/DispatcherTests.kt",
    "modules/core/src/main/scala/io/circe/JsonSpec.scala",  # scala
    "core/src/main/scala/org/http4s/UriSuite.scala",
    "Source/SessionTests.swift",  # swift
    "Src/Newtonsoft.Json.Tests/Serialization/JsonSerializerTest.cs",  # csharp
    "Dapper.Tests/ProcedureTests.cs",
    "src/main/java/org/apache/commons/lang3/StringUtilsTest.java",  # java
    "src/Data/Aeson/EncodeSpec.hs",  # haskell
]
CODE_FILES = [
    "src/click/testing.py",  # click's test runner is the product
    "src/main/java/org/apache/commons/lang3/Latest.java",
    "lib/contest.kt",
    "src/XMonad/Operations.hs",
    "Source/Core/Session.swift",
    "Src/Newtonsoft.Json/JsonSerializer.cs",
    "lua/lazy/manage/checker.lua",
    "src/specification.zig",
]


@pytest.mark.parametrize("path", TEST_FILES)
def test_test_files_of_each_language(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize("path", CODE_FILES)
def test_code_files_are_not_tests(path: str) -> None:
    assert not is_test_path(path)
