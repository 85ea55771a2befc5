"""The search pipeline, one step a module: parse, retrieve (lexical, vector, expansions), fuse,
score, rerank, shape. Each model is optional; without one the pipeline does what it can."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.feedback import Feedback
from qmd_daemon.search.fusion import RankedList, fuse
from qmd_daemon.search.hit import Hit
from qmd_daemon.search.lexical import (
    DEFAULT_WEIGHTS,
    LexicalHit,
    lexical_search,
    named_files_search,
    one_data_state,
    question_idf,
    term_idfs,
    term_query,
)
from qmd_daemon.search.path_filter import PathScope, path_scope
from qmd_daemon.search.proximity import proximity_boost
from qmd_daemon.search.query import KEBAB_NAME, ParsedQuery, parse_query, snippet_words
from qmd_daemon.search.report import frame_file_matches
from qmd_daemon.search.rerank import rerank
from qmd_daemon.search.results import shape_hits
from qmd_daemon.search.scoring import (
    ScoringWeights,
    coherence_boost,
    definition_boost,
    deprecated_penalty,
    error_message_boost,
    frame_file_boost,
    name_words_boost,
    path_penalties,
    path_word_boost,
    preamble_penalty,
    saturate,
    sibling_terms_boost,
)
from qmd_daemon.search.static_list import StaticTier, static_list
from qmd_daemon.search.term_feedback import (
    feedback_rescore,
    feedback_search,
    feedback_terms,
    is_feedback_question,
)
from qmd_daemon.search.vector import VECTOR_CANDIDATES, vector_search
from qmd_daemon.store.lexical_query import Phrase
from qmd_daemon.store.protocols import ChunkRow, ChunkStore, VectorStore
from qmd_daemon.text.identifiers import IDENTIFIER, is_acronym

LEXICAL_CANDIDATES = 200
FUSED_CANDIDATES = LEXICAL_CANDIDATES + VECTOR_CANDIDATES  # the question's two lists, whole
EXPANSION_LIST_FACTOR = 0.5  # an expansion line's list weighs half its kind's list for the question
# Fusion (search/fusion.py): each list's normalised score times its weight, summed. Lexical's list
# is the unit the other lists' weights (SearchOptions.vector_weight, static_weight, prf_weight) are
# measured against; a vector list weighs SYMBOL_VECTOR_WEIGHT of its weight for an identifier query
# (they lean lexical; semble: 0.3 vs 0.5).
LEXICAL_WEIGHT = 1.0
SYMBOL_VECTOR_WEIGHT = 0.6
STRONG_TOP, STRONG_GAP = 0.85, 0.15
EXPAND_SHARE = 0.5
MAX_ERROR_HOLDERS = 5  # chunks saying an error message's words, past which it is not its source
# Definitions that do not make a bare word an identifier: a prose heading (`Installation`), a data
# file's key (`dependencies:` of a conda environment, `stages:` of a CI pipeline).
NOT_CODE_DEFINITIONS = frozenset({"heading", "key"})
# PowerShell's `Verb-Noun` names (`Get-ChildItem`, `New-TestDrive`): a capitalised verb, a hyphen,
# a capitalised noun; Lisp-family kebab names are lower case
VERB_NOUN = re.compile(r"[A-Z][A-Za-z\d]*-[A-Z][\w-]*")
MAX_NAME_DEFINITIONS = 30  # chunks defining a name, past which a question's name adds no candidates


@dataclass
class SearchModels:
    """What the engine could load; any of it may be None."""

    vectors: VectorStore | None = None
    embedder: Any = None  # models.embedder.Embedder
    expander: Any = None  # models.expander.Expander
    reranker: Any = None  # models.reranker.Reranker
    static: StaticTier | None = None  # the static tier: counts where chunks lack deep vectors


@dataclass
class SearchOptions:
    limit: int = 10
    per_file: int = 2
    max_tokens: int | None = 8000
    min_score: float = 0.0
    explain: bool = False
    boosts: bool = True
    lexical: bool = True
    vectors: bool = True
    expand: bool = False
    rerank: bool = False
    rerank_candidates: int = 40
    # Latency budget for the model steps, from the start of the search: expansion may use up to
    # EXPAND_SHARE of it, reranking stops starting batches that would end past it (lexical and
    # vector retrieval always run). None: no budget (every step runs in full).
    budget_ms: float | None = 1500.0
    # Fusion weights, relative to lexical's list (LEXICAL_WEIGHT)
    vector_weight: float = 0.5  # chosen on the broad set, checked on queries (docs/ranking.md "Fusion")
    # The static list's (search/static_list.py), while chunks lack deep vectors: 0.25 was the one
    # weight at or above lexical on the dev queries, broad and the held-out set (docs/ranking.md)
    static_weight: float = 0.25
    # Also add the static list when every chunk in scope has a deep vector (issue 11: does it fix
    # the languages where hybrid loses to lexical?). Off: docs/ranking.md "The static list beside
    # complete deep vectors"
    static_with_deep: bool = False
    # Rocchio feedback for the static list (search/feedback.py): the question's static vector moved
    # toward lexical's first hits' before the re-scoring. None: the question's own vector
    static_feedback: Feedback | None = None
    # The same for the deep list: its KNN runs with the question's vector moved toward lexical's
    # first chunks' deep vectors (chunks only). None: the question's own vector
    vector_feedback: Feedback | None = None
    # gitignore-style patterns (`src/`, `*.py`, `!tests/`) of the files searched: search/path_filter.py
    paths: tuple[str, ...] = ()
    # Pseudo-relevance feedback (search/term_feedback.py): the `prf_terms` best words of the first
    # `prf_chunks` lexical hits, one more list at `prf_weight`; 0 chunks: off. `prf_rescore`: the
    # list is lexical's own candidates re-scored by the words they hold (a few ms); False: a second
    # FTS query over the scope (new candidates, ~3x the cost, no better on the sets). Questions only
    # unless `prf_reports`; beside the deep vector list unless not `prf_with_deep`, beside the
    # static list only with `prf_with_static` (docs/ranking.md "Feedback re-scoring lexical's
    # candidates" and "Feedback beside deep vectors, re-judged").
    prf_chunks: int = 5
    prf_terms: int = 20
    prf_weight: float = 0.2
    prf_reports: bool = False
    prf_rescore: bool = True
    prf_with_deep: bool = True  # also when the deep vector list is fused
    prf_with_static: bool = False  # also when the static list (the fast tier) is fused
    weights: ScoringWeights = field(default_factory=ScoringWeights)


@dataclass
class SearchTrace:
    """What ran, for `--explain`, `status` and the benchmarks."""

    lists: dict[str, int] = field(default_factory=dict)
    expanded: list[str] = field(default_factory=list)
    strong_signal: bool = False
    reranked: int = 0
    budget_cuts: list[str] = field(default_factory=list)  # steps the latency budget shortened
    stale: bool = False
    mode: str = "lexical"  # the retrievers that found candidates: lexical, vector or hybrid
    pending_vectors: int = 0  # chunks in scope that vectors cannot find yet (embedding pending)
    deep_off: str = ""  # why deep vectors are not searched at all (models: {deep: off}); "" when they are
    path_files: int | None = None  # files the --path patterns allow (None: no patterns): 0 is why none came
    timings_ms: dict[str, float] = field(default_factory=dict)


def _strong_signal(lexical: list[LexicalHit]) -> bool:
    """QMD's probe: BM25's top hit far ahead on a |x|/(1+|x|) scale means expansion adds noise."""
    if not lexical:
        return False
    norm = [h.score / (1 + h.score) for h in lexical[:2]]
    gap = norm[0] - (norm[1] if len(norm) > 1 else 0.0)
    return norm[0] >= STRONG_TOP and gap >= STRONG_GAP


@dataclass
class Definitions:
    """The question's names and the chunks defining them: `defined` (chunk id -> lowercased names
    it defines), `exact` (those defining one as the question spells it or, where no chunk does, in
    any case, but an acronym never as a lower-case name: code is case-sensitive, `fn deserialize`
    is not `trait Deserialize`; "the Zig AST" asks for `Ast`, and "JSON parser" not for `using
    json`), `spread` (lowercased name -> chunks of the scope defining it) and `unread`
    (lowercased names whose definitions were not all read: only the candidates' are in `defined`)."""

    names: list[str]
    spelled: set[str]
    spread: Counter[str]
    unread: set[str] = field(default_factory=set)
    defined: dict[int, set[str]] = field(default_factory=dict)
    exact: set[int] = field(default_factory=set)
    acronyms: set[str] = field(init=False)  # the question's names said as acronyms, as written

    def __post_init__(self) -> None:
        self.acronyms = {name for name in self.names if is_acronym(name)}

    def add(self, chunk_id: int, name: str) -> None:
        self.defined.setdefault(chunk_id, set()).add(name.lower())
        if name in self.names or (
            name.lower() not in self.spelled and not (name.islower() and name.upper() in self.acronyms)
        ):
            self.exact.add(chunk_id)

    def only_qualified(self, name: str, chunk_ids: set[int]) -> None:
        """The question named `name` qualified (`Ecto.Queryable`) and these chunks define it so:
        they alone define it, not `Ecto.Repo.Queryable` nor another module's `queryable`."""
        key = name.lower()
        for chunk_id, names in list(self.defined.items()):
            if key in names and chunk_id not in chunk_ids:
                names.discard(key)
                if not names:
                    del self.defined[chunk_id]
                    self.exact.discard(chunk_id)
        for chunk_id in chunk_ids:
            self.defined.setdefault(chunk_id, set()).add(key)
            self.exact.add(chunk_id)
        self.spread[key] = len(chunk_ids)
        self.unread.discard(key)


def mark_defined_word(store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int]) -> None:
    """A bare lower-case word that the searched code defines, spelled so, is that identifier: C's
    `struct linprm`, Haskell's `launch`, Elixir's `def stream`, Zig's `fn prepare`, a Swift or
    Scala method. Most languages spell their functions, and C its types, in lower case, so the
    shape of a word (capitals, `_`: `looks_like_symbol`) cannot say it; without this such a query
    got no definition boost and a file saying the name more often (its callers, a header's
    comments) came first. A word no code defines stays a word. So does a kebab-case name (`wrap-params`:
    a Lisp's; `thread-safe`, `end-to-end`: English, whose chunk defining `thread_safe` lost the boost
    of a name saying the question's words when it was read as a symbol everywhere). PowerShell's
    `Verb-Noun` (`New-TestDrive`) is a kebab name whose capitals made its parts two symbols
    (`New`, `TestDrive`: a C# class defining TestDrive came first): the whole name, where defined.
    PowerShell's names are case-insensitive (`get-childitem` runs Get-ChildItem), so a defined
    name of that shape matches the question in any case, and the question asks for it as defined:
    as the question spells it where some definition does (`Get-TestDrive` beside a `Get-Testdrive`
    wrapper), else the first case found."""
    words = parsed.text.split()
    word = words[0].strip("`()") if len(words) == 1 else ""  # `linprm` quoted as code, as looks_like_symbol
    kebab = not parsed.is_long and KEBAB_NAME.fullmatch(word) is not None
    if (parsed.symbols and not kebab) or not (kebab or IDENTIFIER.fullmatch(word)):
        return
    # a stopword (`get`): no term to rank by; a kebab name's terms are its parts
    if not kebab and word.lower() not in {t.lower() for t in parsed.terms}:
        return
    found = [name for _chunk, name, kind in store.chunks_defining([word], collection_ids)
             if kind not in NOT_CODE_DEFINITIONS and (name == word or (kebab and VERB_NOUN.fullmatch(name)))]
    if found:  # the name as the question spells it, where defined so, before another case of it
        parsed.symbols = [word if word in found else found[0]]
        parsed.defined_word = True


# A qualified name more chunks define than this is a namespace or a package (`Newtonsoft.Json`:
# 244 files' `namespace` lines), not the one definition a question names.
MAX_QUALIFIED_DEFINITIONS = 5
# Nor does a heading titled `torch.nn.Module`, a data file's key or a namespace line (however few
# files say it) define the module a qualified question names: with them the doc took the
# definition boost from `class Module` (review22).
NOT_QUALIFIED_DEFINITIONS = NOT_CODE_DEFINITIONS | {"namespace"}


def _last_part(symbol: str) -> str:
    """`Conn` of `Plug.Conn`, `Null` of `Mojo::Cache::Null`: the name a definition is looked up by."""
    return symbol.split(".")[-1].split("::")[-1]


def _symbol_candidates(
    store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int], cands: dict[int, Candidate]
) -> Definitions:
    """Chunks that define a queried symbol join the candidates even when no retriever found them.
    A name more than MAX_NAME_DEFINITIONS chunks define (a bug report names `__init__`, `get` or
    `read` in passing: thousands of chunks over 30 repositories) adds none, and its definitions
    are not read here (_common_definitions: only the candidates'), except for a bare identifier."""
    names = list(dict.fromkeys(_last_part(s) for s in parsed.symbols))
    counts = store.definition_counts(names, collection_ids)
    spread: Counter[str] = Counter()
    for name, chunks in counts.items():
        spread[name.lower()] += chunks
    found = Definitions(names, {name.lower() for name in counts if name in names}, spread)
    if not parsed.is_symbol_query:
        found.unread = {n.lower() for n in names if spread[n.lower()] > MAX_NAME_DEFINITIONS}
    read = [n for n in names if n.lower() not in found.unread]
    for chunk_id, name, _kind in store.chunks_defining(read, collection_ids):
        found.add(int(chunk_id), name)
    qualified: dict[str, set[int]] = {}
    for chunk_id, name, kind in store.chunks_defining([s for s in parsed.symbols if _last_part(s) != s],
                                                      collection_ids):
        if kind not in NOT_QUALIFIED_DEFINITIONS:
            qualified.setdefault(_last_part(name), set()).add(int(chunk_id))
    for name, chunk_ids in qualified.items():
        if len(chunk_ids) <= MAX_QUALIFIED_DEFINITIONS:  # else a namespace or package every file declares
            found.only_qualified(name, chunk_ids)
    stems = [n.lower() for n in names] if parsed.is_symbol_query else []
    named = store.chunks_of_files_named(stems, collection_ids)
    extra = [c for c in {*found.defined, *named} if c not in cands]
    for chunk_id, row in store.chunks_by_ids(extra).items():
        cands[chunk_id] = Candidate(row, score=0.0, ranks={"symbol": 1})
    return found


def _common_definitions(store: ChunkStore, found: Definitions, cands: dict[int, Candidate]) -> None:
    """The candidates' definitions of the names too common for _symbol_candidates to read whole:
    they still earn the definition boost, weighed by the name's spread."""
    if not found.unread:
        return
    for chunk_id, definitions in store.definitions_in(list(cands)).items():
        for name, _line in definitions:
            if name.lower() in found.unread:
                found.add(chunk_id, name)


def _error_candidates(
    store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int], cands: dict[int, Candidate]
) -> set[int]:
    """Code chunks holding the fixed words of a quoted error message join the candidates; a
    phrase that more than MAX_ERROR_HOLDERS chunks say is not the message's source."""
    holders: set[int] = set()
    for phrase in parsed.report.error_phrases:
        try:
            found = store.fts_search(Phrase(phrase), collection_ids, MAX_ERROR_HOLDERS + 1, DEFAULT_WEIGHTS)
        except QueryRejected:
            continue
        if len(found) > MAX_ERROR_HOLDERS:
            continue
        rows = store.chunks_by_ids([cid for cid, _ in found])
        for chunk_id, row in rows.items():
            if row.kind != "code":
                continue
            holders.add(chunk_id)
            if chunk_id not in cands:
                cands[chunk_id] = Candidate(row, score=0.0, ranks={"error": 1})
    return holders


def _frame_candidates(
    store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int], cands: dict[int, Candidate]
) -> dict[int, int]:
    """Files a quoted stack frame names join the candidates; returns file id -> rank of the
    frame file (0: innermost)."""
    frame_paths = parsed.report.frame_paths
    if not frame_paths:
        return {}
    stems = list(dict.fromkeys(p.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() for p in frame_paths))
    ranks: dict[int, int] = {}
    rows = store.chunks_by_ids(store.chunks_of_files_named(stems, collection_ids))
    matched = {
        cid: min((i for i, f in enumerate(frame_paths) if frame_file_matches(f, row.path)), default=None)
        for cid, row in rows.items()
    }
    order = sorted({r for r in matched.values() if r is not None})
    for chunk_id, rank in matched.items():
        if rank is None:
            continue
        ranks[rows[chunk_id].file_id] = order.index(rank)
        if chunk_id not in cands:
            cands[chunk_id] = Candidate(rows[chunk_id], score=0.0, ranks={"frame": rank + 1})
    return ranks


def _term_holders(store: ChunkStore) -> Callable[[str, list[int]], set[int]]:
    """term, chunk ids -> those of the chunks that hold the term (none if the backend rejects it)."""
    def holders(term: str, chunk_ids: list[int]) -> set[int]:
        try:
            return store.chunks_matching(term_query(term), chunk_ids)
        except QueryRejected:
            return set()
    return holders


class _Clock:
    def __init__(self, trace: SearchTrace, budget_ms: float | None):
        self.trace, self.last = trace, time.perf_counter()
        self.start, self.budget = self.last, budget_ms

    def deadline(self, share: float = 1.0) -> float | None:
        """A `time.perf_counter()` value: `share` of the budget after the search began."""
        return None if self.budget is None else self.start + share * self.budget / 1000

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.trace.timings_ms[step] = round(
            self.trace.timings_ms.get(step, 0.0) + (now - self.last) * 1000, 2
        )
        self.last = now


def _pending_vectors(
    store: ChunkStore, vectors: VectorStore, fingerprint: str, collection_ids: list[int]
) -> int:
    """Chunks the vector list cannot return yet: all of them before the embedder's first vector
    (or after a model change, which re-embeds everything), else those still without one."""
    active = vectors.active_model()
    if active is None or active[0] != fingerprint:
        return store.chunks_in(collection_ids)
    return vectors.pending_count(collection_ids)


def _retrieve(
    store: ChunkStore,
    parsed: ParsedQuery,
    collection_ids: list[int],
    options: SearchOptions,
    models: SearchModels,
    trace: SearchTrace,
    clock: _Clock,
    scope: PathScope | None = None,
) -> tuple[list[RankedList], dict[int, float], dict[int, float], dict[int, ChunkRow]]:
    """Every ranked list, the BM25 score of each lexical hit (for a lexical-only base), the
    cosine of each vector hit to the question (for calibrated scores), and the chunk rows read on
    the way (feedback's); with a SCOPE, each list ranks the chunks of its allowed files only."""
    file_ids = None if scope is None else scope.allowed.file_ids
    lists: list[RankedList] = []
    bm25: dict[int, float] = {}
    similarity: dict[int, float] = {}
    lexical: list[LexicalHit] = []
    rows: dict[int, ChunkRow] = {}
    if options.lexical:
        lexical = lexical_search(store, parsed, collection_ids, LEXICAL_CANDIDATES, DEFAULT_WEIGHTS,
                                 file_ids)
        if len(lexical) >= LEXICAL_CANDIDATES and lexical[-1].strict:  # every term filled it: see there
            held = {h.chunk_id for h in lexical}
            named = named_files_search(store, parsed, collection_ids, DEFAULT_WEIGHTS, file_ids)
            lexical += [h for h in named if h.chunk_id not in held]
        bm25 = {h.chunk_id: h.score for h in lexical}
        lists.append(_lexical_list("bm25", lexical, LEXICAL_WEIGHT))
    clock.lap("lexical")
    trace.strong_signal = _strong_signal(lexical)
    lex_lines, vec_lines = list(parsed.lex), list(parsed.vec) + list(parsed.hyde)
    if (
        options.expand
        and models.expander is not None
        and not trace.strong_signal
        and not (lex_lines or vec_lines)
    ):
        expansions, complete = models.expander.expand_until(parsed.model_text,
                                                            clock.deadline(EXPAND_SHARE))
        if not complete:
            trace.budget_cuts.append(f"expand: {len(expansions)} line(s) in time")
        for expansion in expansions:
            (lex_lines if expansion.kind == "lex" else vec_lines).append(expansion.text)
            trace.expanded.append(f"{expansion.kind}: {expansion.text}")
        clock.lap("expand")
    for i, line in enumerate(lex_lines, start=1):
        hits = lexical_search(
            store, parse_query(line), collection_ids, LEXICAL_CANDIDATES, DEFAULT_WEIGHTS, file_ids
        )
        lists.append(_lexical_list(f"bm25:lex{i}", hits, EXPANSION_LIST_FACTOR * LEXICAL_WEIGHT))
    vectors = models.vectors if options.vectors else None
    if vectors is not None and models.embedder is not None:
        weight = options.vector_weight * (SYMBOL_VECTOR_WEIGHT if parsed.is_symbol_query else 1.0)
        texts = [(parsed.model_text, "vec", weight)]
        expansion_weight = EXPANSION_LIST_FACTOR * weight
        texts += [(line, f"vec:{i}", expansion_weight) for i, line in enumerate(vec_lines, start=1)]
        for text, name, list_weight in texts:
            vector_hits = vector_search(
                vectors, models.embedder, text, collection_ids, within=scope,
                feedback=options.vector_feedback if name == "vec" else None,
                lexical_ids=[h.chunk_id for h in lexical],
            )
            if name == "vec":
                similarity = {h.chunk_id: h.similarity for h in vector_hits}
            if vector_hits:
                lists.append(RankedList(name, [h.chunk_id for h in vector_hits],
                                        [h.similarity for h in vector_hits], "cosine", list_weight))
        trace.pending_vectors = _pending_vectors(store, vectors, models.embedder.fingerprint, collection_ids)
        trace.stale = trace.pending_vectors > 0
        clock.lap("vector")
    if options.vectors and models.static is not None and lexical and not parsed.is_long and (
        vectors is None or models.embedder is None or trace.pending_vectors > 0 or options.static_with_deep
    ):
        # the scope has chunks the deep list cannot find yet: their static vectors count. Not for
        # a bug report: a mean over its hundreds of words knows nothing BM25 does not, and on the
        # three report sets it never lifted one and dropped three (docs/scale.md)
        weight = options.static_weight * (SYMBOL_VECTOR_WEIGHT if parsed.is_symbol_query else 1.0)
        ids = [h.chunk_id for h in lexical]
        feedback = options.static_feedback
        file_of = ({cid: row.file_id for cid, row in store.chunks_by_ids(ids).items()}
                   if feedback is not None and feedback.by_file else None)
        ranked = static_list(models.static, parsed.model_text, ids, weight, feedback, file_of)
        if ranked is not None:
            lists.append(ranked)
        clock.lap("static")
    found = {r.name.split(":")[0] for r in lists if r.chunk_ids}
    vector_lists = found & {"vec", "static"}
    if (options.prf_chunks and lexical and is_feedback_question(parsed)
            and (options.prf_reports or not parsed.is_long)
            and (options.prf_with_deep or "vec" not in vector_lists)
            and (options.prf_with_static or "static" not in vector_lists)):
        # beside the static list the words the first hits share add nothing it does not (broad
        # level, dev queries -0.004); beside the deep list +1.95 of a question over 578, no
        # language below (docs/ranking.md "Feedback beside deep vectors, re-judged")
        ranked, rows = _feedback_list(store, parsed, lexical, collection_ids, options, file_ids)
        lists.append(ranked)
        clock.lap("feedback")
    trace.lists = {r.name: len(r.chunk_ids) for r in lists}
    trace.mode = "hybrid" if "bm25" in found and vector_lists else "vector" if vector_lists else "lexical"
    return lists, bm25, similarity, rows


def _feedback_list(store: ChunkStore, parsed: ParsedQuery, lexical: list[LexicalHit],
                   collection_ids: list[int], options: SearchOptions,
                   file_ids: frozenset[int] | None) -> tuple[RankedList, dict[int, ChunkRow]]:
    """The list of the words the first lexical hits share beyond the question (search/term_feedback.py),
    and the rows of lexical's candidates it read (the fused candidates' rows need not be read again)."""
    words = feedback_terms(store, parsed, lexical, collection_ids, options.prf_chunks, options.prf_terms)
    rows: dict[int, ChunkRow] = {}
    if options.prf_rescore:
        rows = store.chunks_by_ids([h.chunk_id for h in lexical])
        found = feedback_rescore(store, words, collection_ids, rows)
    else:
        found = feedback_search(store, words, collection_ids, LEXICAL_CANDIDATES, DEFAULT_WEIGHTS,
                                file_ids)
    ranked = RankedList("bm25:prf", [cid for cid, _ in found], [score for _, score in found], "bm25",
                        options.prf_weight * LEXICAL_WEIGHT)
    return ranked, rows


def _lexical_list(name: str, hits: list[LexicalHit], weight: float) -> RankedList:
    return RankedList(name, [h.chunk_id for h in hits], [h.score for h in hits], "bm25", weight)


def _candidates(
    store: ChunkStore, lists: list[RankedList], read: dict[int, ChunkRow]
) -> dict[int, Candidate]:
    """Fused candidates with a base score in [0, 1] (the best is 1); the lexical list alone gives
    each its BM25 over the best one's. `read`: rows retrieval read already."""
    fused = fuse(lists, FUSED_CANDIDATES)
    top = max((score for score, _ in fused.values()), default=0.0) or 1.0
    rows = {**read, **store.chunks_by_ids([cid for cid in fused if cid not in read])}
    return {cid: Candidate(rows[cid], score=score / top, ranks=dict(ranks))
            for cid, (score, ranks) in fused.items() if cid in rows}


def run_search(
    store: ChunkStore,
    query: str,
    collection_ids: list[int],
    options: SearchOptions,
    models: SearchModels | None = None,
    trace: SearchTrace | None = None,
) -> list[Hit]:
    """The ranked hits of QUERY, the store's data state asked once for the whole search."""
    with one_data_state(store):
        return _search(store, query, collection_ids, options, models, trace)


def _search(
    store: ChunkStore,
    query: str,
    collection_ids: list[int],
    options: SearchOptions,
    models: SearchModels | None,
    trace: SearchTrace | None,
) -> list[Hit]:
    models = models or SearchModels()
    trace = trace if trace is not None else SearchTrace()
    clock = _Clock(trace, options.budget_ms)
    parsed = parse_query(query)
    if not collection_ids or not any(ch.isalnum() for ch in query):
        return []  # `!!!`, `...`: no word to match, and their vectors' nearest chunks are noise
    if options.boosts:
        mark_defined_word(store, parsed, collection_ids)
    scope = path_scope(store, collection_ids, [*options.paths, *parsed.paths])
    if scope is not None:
        trace.path_files = len(scope.allowed.file_ids)
    lists, bm25, similarity, read = _retrieve(store, parsed, collection_ids, options, models, trace, clock,
                                              scope)
    cands = _candidates(store, lists, read)
    for chunk_id, cand in cands.items():
        cand.similarity = similarity.get(chunk_id)
        cand.bm25 = bm25.get(chunk_id)
    if options.boosts:
        found = _symbol_candidates(store, parsed, collection_ids, cands)
        frame_ranks = _frame_candidates(store, parsed, collection_ids, cands)
        error_holders = _error_candidates(store, parsed, collection_ids, cands)
        if scope is not None:  # the names, frames and messages found chunks of every file
            cands = {cid: cand for cid, cand in cands.items() if scope.admits(cand.chunk)}
        _common_definitions(store, found, cands)
        pool = list(cands.values())
        definition_boost(pool, parsed, 1.0, options.weights, found.defined, found.exact, found.spread)
        name_words_boost(pool, parsed, 1.0, options.weights, store.definitions_in, found.defined)
        path_word_boost(pool, parsed, 1.0, options.weights)
        proximity_boost(pool, parsed, 1.0, options.weights.proximity, options.weights.proximity_scale)
        sibling_terms_boost(pool, 1.0, options.weights, term_idfs(store, parsed, collection_ids),
                            store.signature_outline, _term_holders(store))
        frame_file_boost(pool, frame_ranks, options.weights)
        error_message_boost(pool, error_holders, options.weights)
        path_penalties(pool, parsed, options.weights)
        deprecated_penalty(pool, options.weights)
        preamble_penalty(pool, options.weights, store.last_lines)
        coherence_boost(pool, 1.0, options.weights)
    ranked = sorted(cands.values(), key=lambda c: -c.score)
    clock.lap("score")
    if options.rerank and models.reranker is not None and ranked:
        count = min(max(0, options.rerank_candidates), len(ranked))
        ranked, trace.reranked = rerank(models.reranker, parsed.rerank_text, ranked, count,
                                        clock.deadline())
        if trace.reranked < count:
            trace.budget_cuts.append(f"rerank: {trace.reranked} of {count} in time")
        clock.lap("rerank")
    if options.boosts:
        ranked = saturate(ranked, options.weights)
    hits = shape_hits(
        ranked,
        snippet_words(parsed),
        question_idf(store, parsed, collection_ids),
        limit=options.limit,
        per_file=options.per_file,
        max_tokens=options.max_tokens,
        min_score=options.min_score,
        related_of=store.related_paths,
        explain=options.explain,
        definitions_of=store.definitions_in,
    )
    clock.lap("shape")
    return hits
