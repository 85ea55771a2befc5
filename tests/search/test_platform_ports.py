"""platform_ports: one operating system's port of portable code ranks below the platform-neutral
code unless the question names a platform (issue 11, c23). Paths are real ones from libuv, Go,
LLVM's fuzzer, kotlinx-coroutines, Ecto, xmonad."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.platform_ports import names_a_platform, port_places, source_set_places
from qmd_daemon.search.query import content_words, parse_query
from tests.conftest import indexed
from tests.search.test_folder_roles import _lowered_by

PORTS = [
    "src/win/fs.c",  # a folder per system
    "src/unix/linux.c",  # a file per system
    "src/unix/os390-proctitle.c",
    "src/unix/random-sysctl-linux.c",
    "command_win.go",  # Go's build-constraint suffixes
    "exec_windows.go",
    "tests/thirdparty/Fuzzer/FuzzerUtilWindows.cpp",
    "kotlinx-coroutines-core/nativeDarwin/src/Dispatchers.kt",  # a Kotlin source set
    "src/unix/kqueue.c",  # one system's kernel interface: an event loop's backend
    "src/event/modules/ngx_epoll_module.c",
]
NOT_PORTS = [
    "src/unix/fs.c",  # the Unix family's shared code is the core
    "src/unix/posix-poll.c",
    "src/unix/bsd-ifaddrs.c",
    "src/uv-common.c",
    "lib/ecto/query/builder/windows.ex",  # SQL window clauses: an ordinary word as a whole name
    "src/XMonad/Operations.hs",
]


@pytest.mark.parametrize("path", PORTS)
def test_a_file_or_folder_named_after_one_system_is_a_port(path: str) -> None:
    folders, file_named = port_places(path)
    assert folders or file_named


@pytest.mark.parametrize("path", NOT_PORTS)
def test_core_and_family_code_is_no_port(path: str) -> None:
    assert port_places(path) == ((), False)


def test_a_question_names_a_platform_by_a_system_or_the_word() -> None:
    assert names_a_platform(["file", "reads", "windows"])
    assert names_a_platform(["platform", "specific", "polling"])
    assert names_a_platform(["watching", "inotify", "kqueue"])
    assert not names_a_platform(["file", "system", "operations", "read", "write"])


@pytest.mark.parametrize("question", [
    "why does the file watcher miss changes under WSL",  # Windows' Linux layer
    "camera permission prompt on iPhone",
    "linking fails with MSVC",
    "signing the app bundle in Xcode",
    "install path on Ubuntu",
])
def test_a_question_names_a_platform_by_its_toolchain_device_or_distribution(question: str) -> None:
    assert names_a_platform(content_words(parse_query(question)))


# libuv: the Windows port says a question's words about file operations more densely than the
# Unix core (`win/fs.c` ranked before `unix/fs.c`)
LIBUV_FILES = {
    "src/unix/fs.c": "/* file system operations on the thread pool */\n"
                     "static ssize_t uv__fs_read(uv_fs_t* req) {\n"
                     "  return read(req->file, req->buf, req->len);\n}\n\n"
                     "static int uv__fs_open(uv_fs_t* req) {\n"
                     "  return open(req->path, req->flags, req->mode);\n}\n",
    "src/win/fs.c": "/* file system operations: read write open stat with Windows handles */\n"
                    "void fs__read(uv_fs_t* req) {\n  /* read the file */\n"
                    "  ReadFile(handle, req->buf, req->len);\n}\n\n"
                    "void fs__write(uv_fs_t* req) {\n  /* write the file */\n"
                    "  WriteFile(handle, req->buf);\n}\n\n"
                    "void fs__open(uv_fs_t* req) {\n  /* open the file */\n  CreateFileW(req->path);\n}\n\n"
                    "void fs__stat(uv_fs_t* req) {\n  /* stat the file */\n"
                    "  GetFileInformationByHandle(handle);\n}\n",
}


def test_the_core_ranks_before_a_port_unless_the_question_names_a_platform(
    engine: Engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "libuv", LIBUV_FILES)
    question = "file system operations like read write open stat"
    assert list(_lowered_by(engine, name, question, {"platform_port"}).items()) == [
        ("src/unix/fs.c", False), ("src/win/fs.c", True)]
    on_windows = _lowered_by(engine, name, question + " on Windows", {"platform_port"})
    assert next(iter(on_windows.items())) == ("src/win/fs.c", False)


def test_a_folder_naming_a_system_with_nothing_beside_it_is_the_code_not_a_port(
    engine: Engine, tmp_path: Path
) -> None:
    # ExoPlayer's code is all under the Java package `com/google/android/`: an Android library's
    # own code, beside no other system's port nor any core, which its README must not pass
    player = "library/core/src/main/java/com/google/android/exoplayer2/ExoPlayerImpl.java"
    name = indexed(engine, tmp_path / "exoplayer", {
        player: "/** Prepares the media source and starts playback when ready. */\n"
                "final class ExoPlayerImpl {\n  void prepare(MediaSource source) { source.prepare(); }\n}\n",
        "README.md": "# ExoPlayer\n\nAn application level media player: "
                     "prepare a media source, start playback.\n",
    })
    lowered = _lowered_by(engine, name, "how a media source is prepared before playback starts",
                          {"platform_port"})
    assert lowered[player] is False


def test_a_file_naming_a_system_is_a_port_inside_a_folder_that_is_not(engine: Engine, tmp_path: Path) -> None:
    # inside the lone Java package `com/google/android/`, `SocketLinux.java` is still one system's port
    core, port = "src/com/google/android/net/Socket.java", "src/com/google/android/net/SocketLinux.java"
    name = indexed(engine, tmp_path / "net", {
        core: "/** Connects the socket to its address. */\nclass Socket {\n  void connect(Address a) {}\n}\n",
        port: "/** Connects the socket to its address with Linux options. */\n"
              "class SocketLinux {\n  void connect(Address a) {}\n}\n",
    })
    assert _lowered_by(engine, name, "how a socket connects to its address", {"platform_port"}) == {
        core: False, port: True}


@pytest.mark.parametrize(("path", "places"), [
    ("kotlinx-coroutines-core/jvm/src/CoroutineContext.kt", ("kotlinx-coroutines-core/jvm/",)),
    ("okio/src/jvmMain/kotlin/okio/JvmOkio.kt", ("okio/src/jvmmain/",)),
    ("kotlinx-coroutines-core/jsAndWasmShared/src/Promise.kt", ("kotlinx-coroutines-core/jsandwasmshared/",)),
    ("kotlinx-coroutines-core/common/src/CoroutineContext.common.kt", ()),
    ("src/main/kotlin/Json.kt", ()),
])
def test_kotlin_target_source_sets_by_their_folder_names(path: str, places: tuple[str, ...]) -> None:
    assert source_set_places(path) == places


# kotlinx-coroutines: the JVM's `actual` says "CoroutineContext" as densely as the common
# `expect` declaration, whose KDoc is the API's (the JVM's ranked first in the whole checkout)
KOTLINX_FILES = {
    "core/common/src/CoroutineContext.common.kt":
        "/** Creates a context for a new coroutine: the coroutine context elements of the scope. */\n"
        "public expect fun CoroutineScope.newCoroutineContext(context: CoroutineContext): CoroutineContext\n",
    "core/jvm/src/CoroutineContext.kt":
        "/** Creates a CoroutineContext for a new coroutine, with debug coroutine context elements. */\n"
        "public actual fun CoroutineScope.newCoroutineContext(context: CoroutineContext):\n"
        "        CoroutineContext {\n"
        "    val combined = coroutineContext + context // CoroutineContext elements\n"
        "    return if (DEBUG) combined + CoroutineId(COROUTINE_ID.incrementAndGet()) else combined\n}\n",
}


def test_a_kotlin_targets_actual_code_ranks_after_the_common_declaration(
    engine: Engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "kotlinx", KOTLINX_FILES)
    question = "CoroutineContext and coroutine context elements"
    assert list(_lowered_by(engine, name, question, {"platform_port"}).items()) == [
        ("core/common/src/CoroutineContext.common.kt", False), ("core/jvm/src/CoroutineContext.kt", True)]
    on_jvm = _lowered_by(engine, name, question + " on the JVM", {"platform_port"})
    assert on_jvm["core/jvm/src/CoroutineContext.kt"] is False


def test_a_folder_named_like_a_kotlin_target_without_a_common_set_is_no_port(
    engine: Engine, tmp_path: Path
) -> None:
    # a Kotlin app's `native/` bridge beside `app/`: no common source set, so no target's port
    bridge = "native/src/Bridge.kt"
    name = indexed(engine, tmp_path / "app", {
        bridge: "/** Calls into the native camera library. */\nobject Bridge {\n  fun openCamera() {}\n}\n",
        "app/src/Camera.kt": "/** The camera screen. */\nclass Camera {\n  fun show() {}\n}\n",
    })
    lowered = _lowered_by(engine, name, "how the native camera library is opened", {"platform_port"})
    assert lowered[bridge] is False
