"""A bare lower-case word the searched code defines is that identifier, and its definition comes
first: C's `struct linprm` in a header (its prototypes say `struct linprm *lin` on every line), a
Haskell function whose name a neighbour says more often (`buildLaunch`'s parts and comments say
`launch`). Such words look like words (no capital, no `_`), so they got no definition boost and the
chunk saying the name most often won: 22 of the 25 misses of a 457-name check over 22 languages
(docs/ranking.md, "Bare lower-case identifiers"). A word only a heading or a data file's key
"defines", or that nothing defines, stays a word. Real files, real chunker, index and search."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions, mark_defined_word
from qmd_daemon.search.query import parse_query
from qmd_daemon.settings import Settings
from tests.conftest import indexed

# Shaped like wcslib's lin.h: the struct, then the prototypes that take it, each saying its name.
_PROTOTYPES = "\n".join(
    f"int lin{verb}(struct linprm *lin, int n, double linprm_{verb}[]);\n"
    for verb in ("ini", "init", "dis", "dist", "cpy", "free", "size", "prt", "perr", "set", "p2x", "x2p")
)
LIN_H = f"""#ifndef WCSLIB_LIN
#define WCSLIB_LIN

struct linprm {{
  int flag;
  int naxis;
  double *crpix;
  double *pc;
  double *cdelt;
  struct disprm *dispre;
  struct disprm *disseq;
  double *piximg;
  double *imgpix;
  int i_naxis;
  int unity;
  int affine;
  int simple;
  struct wcserr *err;
  double *tmpcrd;
  int m_flag, m_naxis;
  double *m_crpix, *m_pc, *m_cdelt;
  struct disprm *m_dispre, *m_disseq;
}};

// The size of the linprm struct in int units, for the Fortran wrappers of linprm.
#define LINLEN (sizeof(struct linprm)/sizeof(int))

{_PROTOTYPES}
#endif
"""
LINPRM_LINE = 4

# Shaped like xmonad's Main.hs: `buildLaunch` (whose comment and name say "launch") above `launch`.
MAIN_HS = """module XMonad.Main (xmonad, buildLaunch, launch) where

import System.Environment (getArgs, getProgName)

-- | Build the configuration, then launch it: the launch replaces this process, so a launch
-- that fails to compile raises, and the launch of a stale binary is refused.
buildLaunch :: Directories -> IO ()
buildLaunch dirs = do
    whoami <- getProgName
    let bin = binFileName dirs
    unless (whoami == takeFileName bin) $ do
      trace "relaunch: launch the compiled configuration"
      recompile dirs False
      args <- getArgs
      executeFile bin False args Nothing

-- | Entry point for custom builds.
launch :: XConfig l -> Directories -> IO ()
launch initxmc drs = do
    setLocale LC_ALL (Just "")
    installSignalHandlers
    let xmc = initxmc { layoutHook = Layout $ layoutHook initxmc }
    dpy <- openDisplay ""
    let dflt = defaultScreen dpy
    rootw <- rootWindow dpy dflt
    args <- getArgs
    let resume = "--resume" `elem` args
    xinesc <- getCleanedScreenInfo dpy
    nbc <- initColor dpy (normalBorderColor xmc)
    fbc <- initColor dpy (focusedBorderColor xmc)
    let layout = layoutHook xmc
        initialWinset = new layout (workspaces xmc) xinesc
    runX cf st $ do
        setup dpy rootw
        scan dpy rootw
        mapM_ manage ws
        userCode $ startupHook initxmc
        forever $ prehandle =<< io (nextEvent dpy e)
"""
LAUNCH_LINE = 19  # the equation, as the index records it; its type signature is the line above
_EXPLAIN = SearchOptions(vectors=False, explain=True)


def _first_hit_holds(hit, path: str, line: int) -> bool:
    start, end = hit.explain["chunk_lines"]
    return hit.path == path and start <= line <= end


def test_a_lower_case_c_struct_in_a_header_comes_before_its_prototypes(engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "wcslib", {"C/lin.h": LIN_H})
    hit = engine.search("linprm", [name], limit=3, options=_EXPLAIN)[0]
    assert _first_hit_holds(hit, "C/lin.h", LINPRM_LINE), (hit.path, hit.explain["chunk_lines"])
    assert "definition" in hit.explain["boosts"]
    assert hit.line == LINPRM_LINE


def test_on_postgresql_too(
    home: Path, tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's definitions are asked through the store protocol: the server's store answers the
    same (its `chunks_defining` compares names in lower case, as SQLite's COLLATE NOCASE)."""
    monkeypatch.setenv("QMD_DATABASE_URL", postgres_url)
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "index.yml").write_text("backend: postgres\n", encoding="utf-8")
    engine = Engine(Settings.from_env())
    try:
        name = indexed(engine, tmp_path / "wcslib", {"C/lin.h": LIN_H})
        hit = engine.search("linprm", [name], limit=3, options=_EXPLAIN)[0]
        assert _first_hit_holds(hit, "C/lin.h", LINPRM_LINE), (hit.path, hit.explain["chunk_lines"])
    finally:
        engine.close()


def test_a_lower_case_haskell_function_comes_before_a_neighbour_saying_its_name(
    engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "xmonad", {"src/XMonad/Main.hs": MAIN_HS})
    hit = engine.search("launch", [name], limit=3, options=_EXPLAIN)[0]
    signature = LAUNCH_LINE - 1
    assert _first_hit_holds(hit, "src/XMonad/Main.hs", signature), (hit.path, hit.explain["chunk_lines"])
    assert hit.line == signature  # shown from its type signature (search/snippets.py)


def test_only_code_spelling_the_word_makes_it_an_identifier(engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "mixed", {
        "C/lin.h": LIN_H,
        "azure-pipelines.yml": "stages:\n  - stage: build\n    jobs:\n      - job: test\n",
        "README.md": "# Installation\n\nRun the installer.\n",
        "Stream.java": "public class Stream {\n  int size() { return 0; }\n}\n",
    })
    ids = engine.collection_ids([name])

    def marked(query: str) -> bool:
        parsed = parse_query(query)
        mark_defined_word(engine.store, parsed, ids)
        return parsed.defined_word and parsed.is_symbol_query

    assert marked("linprm")
    assert marked("`linprm`")  # quoted as code
    assert not marked("stages")  # a data file's key
    assert not marked("installation")  # a heading, and not as spelled
    assert not marked("stream")  # only `Stream` is defined: code is case-sensitive
    assert not marked("disprm")  # used, never defined here
    assert not marked("linprm struct")  # two words: a question, not a bare name
