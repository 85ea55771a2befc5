"""Per-platform ports of portable code, by the way cross-platform projects lay them out (issue 11).

Portable C keeps a platform-neutral core beside one file or folder per operating system that
defines the same functions again for it: libuv's `src/unix/core.c` beside `src/win/core.c`,
`unix/linux.c`, `unix/sunos.c`, `unix/os390.c`; Go names them by its build constraints
(`command_windows.go`, `exec_linux.go`), Rust and Python keep `sys/windows/`, `_windows.py`.
A question that names no platform asks how the code works, which the core says; each port says
the question's words as densely for its one system (libuv's "file system operations like read
write open stat" found `win/fs.c` before `unix/fs.c`; "how libuv implements the event loop" the
`kqueue.c` backend before `unix/core.c`). Only single systems and their kernel interfaces are
ports here: a family's shared code (`unix/`, `posix-poll.c`, `bsd-ifaddrs.c`) is what its members
run.
"""

from __future__ import annotations

import re
from functools import lru_cache

from qmd_daemon.text.identifiers import split_identifier

# One operating system each, as folder and file names spell them (Go's GOOS values, libuv's and
# CPython's port files, Rust's `std::sys` folders, CMake's platform names).
SYSTEMS = frozenset({
    "win", "win32", "win64", "windows", "winnt", "mingw", "cygwin", "msys",
    "linux", "android", "darwin", "macos", "osx", "ios", "tvos", "watchos",
    "freebsd", "openbsd", "netbsd", "dragonfly", "dragonflybsd",
    "sunos", "solaris", "illumos", "aix", "os390", "zos", "ibmi", "os400",
    "haiku", "hurd", "qnx", "emscripten", "wasi",
    # one system's kernel interface, which event-loop code names its backends after (libuv's
    # `unix/kqueue.c` and `unix/fsevents.c`, libevent's `epoll.c` and `evport.c`, nginx's
    # `ngx_epoll_module.c`, mio's `selector/kqueue.rs`)
    "kqueue", "epoll", "evport", "devpoll", "iocp", "inotify", "fsevents", "uring",
})
# Kotlin Multiplatform's source sets: `commonMain/` (kotlinx's `common/`) holds the API, its
# `expect` declarations with their KDoc, and each target's set (`jvmMain/`, `jsMain/`,
# `nativeMain/`; kotlinx's `jvm/`, `native/`, `jsAndWasmShared/`) the `actual` code for one
# target. Such a folder is a port only beside a common set: `js/` or `native/` alone is anything.
KOTLIN_TARGETS = frozenset({"jvm", "js", "wasm", "wasmjs", "wasmwasi", "native", "nativeother",
                            "jsandwasmshared", "jvmandroid", "nonjvm", "apple"})
COMMON_SOURCE_SETS = frozenset({"common", "commonmain"})
# Names that are also ordinary words: a port only as a folder or as one part of a compound file
# name (`command_win.go`, `FuzzerUtilWindows.cpp`), not as a whole file name (Ecto's `windows.ex`
# builds SQL window clauses).
_PLAIN_WORDS = frozenset({"win", "windows", "dragonfly", "haiku"})
# Words by which a question is about platforms, besides the systems' own names: the families, and
# what names one system indirectly (its devices, toolchains, distributions: "under WSL", "with
# MSVC", "on Ubuntu")
PLATFORM_WORDS = SYSTEMS | frozenset({
    "platform", "platforms", "os", "oses", "operating", "portable", "portability",
    "cross-platform", "mac", "apple", "microsoft", "bsd", "unix", "posix",
    "jvm", "wsl", "msvc", "iphone", "ipad", "ipados", "xcode", "ubuntu", "debian", "fedora", "glibc", "musl",
})


@lru_cache(maxsize=65_536)
def port_places(path: str) -> tuple[tuple[str, ...], bool]:
    """Where PATH names one operating system: the paths of its folders that name one (each
    ending in `/`), and whether its file name or a part of it does (a whole file name only when
    it is no ordinary word). Either makes it a port; a folder only beside other code (scoring)."""
    *folders, name = path.split("/")
    named = tuple("/".join(folders[: depth + 1]) + "/" for depth, folder in enumerate(folders)
                  if folder.lower() in SYSTEMS or SYSTEMS.intersection(_parts(folder)))
    stem = name.split(".")[0]
    return named, bool(stem.lower() in SYSTEMS - _PLAIN_WORDS or SYSTEMS.intersection(_parts(stem)))


@lru_cache(maxsize=65_536)
def source_set_places(path: str) -> tuple[str, ...]:
    """The paths (each ending in `/`) of PATH's folders named as a Kotlin Multiplatform target's
    source set (`jvm/`, `jvmMain/`; a test set such as `jvmTest/` is the test rules' business):
    ports where a common set stands beside them (scoring)."""
    folders = path.lower().split("/")[:-1]
    return tuple("/".join(folders[: depth + 1]) + "/" for depth, folder in enumerate(folders)
                 if folder.removesuffix("main") in KOTLIN_TARGETS)


def _parts(name: str) -> list[str]:
    """The words of a compound name: `FuzzerUtilWindows`, `random-sysctl-linux`, `nativeDarwin`,
    `os390-proctitle` (each piece whole as well: the case rule splits `os390` at its digits)."""
    pieces = [p for p in re.split(r"[-_.]", name) if p]
    whole = [p.lower() for p in pieces] if len(pieces) > 1 else []
    return whole + [w for p in pieces for w in split_identifier(p)]


def names_a_platform(words: list[str]) -> bool:
    """Whether a question's (lowercased) words ask about a platform."""
    return any(word in PLATFORM_WORDS for word in words)
