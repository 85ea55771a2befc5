"""A compiled keyword query (lexical.py's tree) as one SQL statement that decides FTS5's matches and
computes FTS5's bm25() in the server, so only the best `limit` rows cross the wire.

The GIN index finds the candidate rows (the tsquery: a superset, since `<->` may cross columns);
each candidate's positions of the query's lexemes then give every phrase's occurrences per column
(a phrase lies inside one column: weights A/B/C are path/symbols/body), the tree is evaluated over
"phrase i occurs", and bm25 is summed as fts5_aux.c does: per phrase, its occurrences weighted by
column, k1 1.2, b 0.75, IDF and average length over every row of the index, and only the phrases of
sub-expressions that match the row counted (an AND or NOT that fails counts none of its phrases, as
in fts5_expr.c). The arithmetic is FTS5's, in doubles, in its order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qmd_daemon.store.postgres import postings
from qmd_daemon.store.postgres.lexical import COLUMN_LABELS, Node, Op, Seq, lexemes, phrases, tsquery

K1, B = 1.2, 0.75  # FTS5's bm25 constants (fts5_aux.c)
SCOPES = {"collection_id": "c.collection_id", "id": "c.id"}  # what `among` the candidates are


@dataclass(frozen=True)
class Statement:
    sql: str
    params: dict[str, Any]


def decided_by_tsquery(node: Node) -> bool:
    """Whether the tsquery alone matches as FTS5 does: single words (with or without a column)
    cannot cross a column, so no position needs reading."""
    return all(len(seq.tokens) == 1 for seq in phrases(node))


def _weight(label: str) -> str:
    """SQL: the bm25 weight of column LABEL (an SQL expression)."""
    return (f"CASE {label} WHEN '{COLUMN_LABELS[0]}' THEN %(w_a)s::float8"
            f" WHEN '{COLUMN_LABELS[1]}' THEN %(w_b)s::float8 ELSE %(w_c)s::float8 END")


# A single word's occurrences in one row, from its positions' column labels (t.weights): all of
# them, or those of the word's column q.label.
_WORD_COUNT = """CASE WHEN q.label = '' THEN cardinality(t.weights)
                         ELSE cardinality(array_positions(t.weights, q.label)) END"""
_WORD_FREQUENCY = """CASE WHEN q.label = '' THEN
                             %(w_a)s::float8 * cardinality(array_positions(t.weights, '{}'))
                             + %(w_b)s::float8 * cardinality(array_positions(t.weights, '{}'))
                             + %(w_c)s::float8 * cardinality(array_positions(t.weights, '{}'))
                         ELSE ({{weight}}) * cardinality(array_positions(t.weights, q.label)) END""".format(
    *COLUMN_LABELS
)


def _words(seqs: list[Seq], params: dict[str, Any]) -> None:
    """The single words of SEQS as the arrays both word parts unnest: lexeme, column, phrase."""
    words = [(i, seq) for i, seq in enumerate(seqs) if len(seq.tokens) == 1]
    params["words"] = [seq.tokens[0] for _, seq in words]
    params["word_columns"] = [seq.column or "" for _, seq in words]
    params["word_phrases"] = [i for i, _ in words]


def _posted(seqs: list[Seq], ids: list[int], weights: tuple[float, float, float],
            params: dict[str, Any]) -> str:
    """SELECT of (phrase, id, token_count, n, f) for the single words of SEQS from their postings
    (postings.py), in the collections IDS: the word part of _occurrences without the tsvectors."""
    _words(seqs, params)
    params.update(scope=ids, w_a=weights[0], w_b=weights[1], w_c=weights[2])
    return postings.occurrences(_weight("q.label"))


def _occurrences(seqs: list[Seq], params: dict[str, Any]) -> str:
    """SELECTs of (phrase, id, token_count, occurrences, their weights summed): single words per
    row from their positions' labels, in one join against the array of them; each longer phrase
    per occurrence, joining its tokens at consecutive positions of one column."""
    _words(seqs, params)
    frequency = _WORD_FREQUENCY.format(weight=_weight("q.label"))
    parts = [f"""SELECT q.phrase, t.id, t.token_count, {_WORD_COUNT} AS n,
               {frequency} AS f
        FROM term t JOIN unnest(%(words)s::text[], %(word_columns)s::text[], %(word_phrases)s::int[])
             AS q(lexeme, label, phrase) ON q.lexeme = t.lexeme"""]
    for i, seq in enumerate(seqs):
        if len(seq.tokens) == 1:
            continue
        joins = "".join(
            f"\n        JOIN hit h{j} ON h{j}.id = h0.id AND h{j}.label = h0.label"
            f" AND h{j}.pos = h0.pos + {j} AND h{j}.lexeme = %(p{i}_{j})s"
            for j in range(1, len(seq.tokens))
        )
        params.update({f"p{i}_{j}": token for j, token in enumerate(seq.tokens)})
        column = ""
        if seq.column:
            params[f"p{i}_column"] = seq.column
            column = f" AND h0.label = %(p{i}_column)s"
        parts.append(f"SELECT {i}, h0.id, h0.token_count, 1, {_weight('h0.label')} FROM hit h0{joins}\n"
                     f"        WHERE h0.lexeme = %(p{i}_0)s{column}")
    return "\n        UNION ALL ".join(parts)


def _matches(node: Node, first: int) -> tuple[str, int]:
    """SQL saying whether NODE matches a row of `per_row` (n<i>: phrase i's occurrences), and how
    many phrases it holds (numbered from FIRST, in phrases() order)."""
    if isinstance(node, Seq):
        return f"n{first} > 0", 1
    conditions, count = [], 0
    for part in node.parts:
        sql, held = _matches(part, first + count)
        conditions.append(sql)
        count += held
    if node.kind == "not":
        return f"({conditions[0]} AND NOT {conditions[1]})", count
    return "(" + (" AND " if node.kind == "and" else " OR ").join(conditions) + ")", count


def _counted_when(node: Node, guard: str = "TRUE", first: int = 0) -> list[str]:
    """Per phrase, when its occurrences count toward bm25: every AND / NOT above it matches."""
    if isinstance(node, Seq):
        return [guard]
    if node.kind != "or":
        guard = f"{guard} AND {_matches(node, first)[0]}"
    out: list[str] = []
    for part in node.parts:
        out += _counted_when(part, guard, first + len(out))
    return out


def _candidates(node: Node, among: str, ids: list[int], weights: tuple[float, float, float],
                params: dict[str, Any], file_ids: list[int] | None = None) -> str:
    """The WITH clauses up to `per_row`: one row per candidate that holds any phrase, with n<i>
    (occurrences of phrase i) and f<i> (their column weights summed); `file_ids`: only those
    files' chunks are candidates."""
    seqs = phrases(node)
    params.update(scope=ids, tsquery=tsquery(node), lexemes=lexemes(node),
                  w_a=weights[0], w_b=weights[1], w_c=weights[2])
    files = ""
    if file_ids is not None:
        params["files"] = file_ids
        files = " AND c.file_id = ANY(%(files)s)"
    columns = "".join(
        f",\n               coalesce(sum(n) FILTER (WHERE phrase = {i}), 0) AS n{i},"
        f" coalesce(sum(f) FILTER (WHERE phrase = {i}), 0) AS f{i}"
        for i in range(len(seqs))
    )
    per_row = f"""per_row AS (
        SELECT id, token_count{columns}
        FROM occ GROUP BY id, token_count
    )"""
    if among == "collection_id" and file_ids is None and decided_by_tsquery(node):
        # words only: their postings hold every count (a chunk holding none of them is no match)
        return f"""WITH occ AS (
        {_posted(seqs, ids, weights, params)}
    ), {per_row}"""
    # `term`: the candidates' own tsvectors cut to the query's lexemes (deleting the lexemes that
    # remain once those are deleted) before unnest: unnest builds every lexeme's positions and
    # labels, and a chunk holds ~60 lexemes where a query asks a few.
    return f"""WITH term AS (
        SELECT c.id, c.token_count, u.lexeme, u.positions, u.weights
        FROM chunks c,
             unnest(ts_delete(c.fts, tsvector_to_array(ts_delete(c.fts, %(lexemes)s::text[])))) u
        WHERE {SCOPES[among]} = ANY(%(scope)s) AND c.fts @@ %(tsquery)s::tsquery{files}
    ), hit AS (
        SELECT t.id, t.token_count, t.lexeme, p.pos, p.label
        FROM term t, unnest(t.positions, t.weights) AS p(pos, label)
    ), occ AS (
        {_occurrences(seqs, params)}
    ), {per_row}"""


def matching(node: Node, among: str, ids: list[int]) -> Statement:
    """SELECT of the ids of the candidates (chunks of collections `ids`, or the chunks `ids`)
    that match NODE as FTS5 decides."""
    params: dict[str, Any] = {}
    head = _candidates(node, among, ids, (1.0, 1.0, 1.0), params)
    return Statement(f"{head}\n    SELECT id FROM per_row WHERE {_matches(node, 0)[0]}", params)


LONG_AND = 16  # phrases: past this a root AND is first asked whether any row can match


def any_candidate(node: Node, collection_ids: list[int], file_ids: list[int] | None) -> Statement | None:
    """For a root AND of more than LONG_AND phrases (a long report's all-terms pass; a NOT by its
    kept part), a SELECT of one row that can match, among the postings of its rarest required
    token, or of none: such a pass mostly matches no row, and planning its ranking statement of
    80 phrases took 1-2 s in the server (pg25's finding, session 25). None for other trees."""
    kept = node.parts[0] if isinstance(node, Op) and node.kind == "not" else node
    if not (isinstance(kept, Op) and kept.kind == "and" and len(phrases(kept)) > LONG_AND):
        return None
    # every token of a phrase directly under the root AND is required
    required = sorted({t for part in kept.parts if isinstance(part, Seq) for t in part.tokens})
    params: dict[str, Any] = {"scope": collection_ids, "tsquery": tsquery(node), "required": required}
    files = ""
    if file_ids is not None:
        params["files"] = file_ids
        files = " AND c.file_id = ANY(%(files)s)"
    anchor = ""
    if required:  # an array, not IN: the chunks are read by id, the tsquery tests only those
        anchor = """ AND c.id = ANY(ARRAY(
            SELECT p.chunk_id FROM chunk_terms p JOIN lexemes l ON l.id = p.lexeme_id
            WHERE p.collection_id = ANY(%(scope)s) AND l.lexeme = (
                SELECT q.lexeme FROM unnest(%(required)s::text[]) AS q(lexeme)
                LEFT JOIN term_stats s ON s.lexeme = q.lexeme AND s.collection_id = ANY(%(scope)s)
                GROUP BY q.lexeme ORDER BY coalesce(sum(s.df), 0), q.lexeme LIMIT 1)))"""
    return Statement(f"SELECT 1 FROM chunks c WHERE c.collection_id = ANY(%(scope)s)"
                     f" AND c.fts @@ %(tsquery)s::tsquery{files}{anchor} LIMIT 1", params)


def _rows_holding(i: int, seq: Seq, params: dict[str, Any]) -> str:
    """How many rows of the whole index hold phrase i (FTS5's IDF counts every row, in the
    phrase's column when it has one): a word's from term_stats, the others counted."""
    if len(seq.tokens) == 1 and seq.column is None:
        params[f"df{i}"] = seq.tokens[0]
        return f"(SELECT coalesce(sum(df), 0) FROM term_stats WHERE lexeme = %(df{i})s)::float8"
    params[f"df{i}"] = tsquery(seq)
    return f"(SELECT count(*) FROM chunks WHERE fts @@ %(df{i})s::tsquery)::float8"


def _term(idf: str, weighted: str, length: str, average: str) -> str:
    """SQL: one phrase's bm25 term, FTS5's formula with its IDF floor, as one expression both forms
    of `ranked` evaluate (so the two give the same doubles)."""
    return (f"(CASE WHEN {idf} > 0 THEN {idf} ELSE 1e-6::float8 END) * ({weighted} * (%(k1)s::float8 + 1))"
            f" / ({weighted} + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * {length} / {average}))")


def _any_word(node: Node) -> bool:
    """Whether NODE is one word or an OR of words: every word a row holds counts toward its bm25,
    so a row's score is the sum of its words' terms (a bug report's any-word pass)."""
    if isinstance(node, Seq):
        return len(node.tokens) == 1
    return node.kind == "or" and all(isinstance(part, Seq) and len(part.tokens) == 1 for part in node.parts)


def ranked(
    node: Node,
    collection_ids: list[int],
    limit: int,
    weights: tuple[float, float, float],
    file_ids: list[int] | None = None,
) -> Statement:
    """SELECT of (id, bm25) of the chunks of the collections (of the files `file_ids` only, when
    given) matching NODE, best first (larger is better, ties by id), at most LIMIT."""
    params: dict[str, Any] = {"limit": limit, "k1": K1, "b": B}
    seqs = phrases(node)
    rows_holding = "".join(f",\n               {_rows_holding(i, seq, params)} AS r{i}"
                           for i, seq in enumerate(seqs))
    idfs = "".join(f",\n               ln((0.5::float8 + rows - r{i}) / (0.5::float8 + r{i})) AS idf{i}"
                   for i in range(len(seqs)))
    statistics = f"""totals AS (
        SELECT coalesce(sum(chunks), 0)::float8 AS rows, coalesce(sum(tokens), 0)::float8 AS tokens
        FROM collection_totals
    ), stats AS (
        SELECT CASE WHEN rows > 0 THEN tokens / rows ELSE 1 END AS average{rows_holding}
        FROM totals
    ), idf AS MATERIALIZED (
        SELECT average{idfs}
        FROM stats, totals
    )"""
    if file_ids is None and _any_word(node):
        # each posting's term, summed per row in the phrases' order: the doubles of the sum below
        # (a phrase a row lacks adds an exact 0 there), without a column per phrase per row
        idf_of = "ARRAY[" + ", ".join(f"idf{i}" for i in range(len(seqs))) + "]::float8[]"
        term = _term("i.idf[occ.phrase + 1]", "occ.f", "occ.token_count", "i.average")
        # MATERIALIZED (and `idf` above): inlined, every posting row rebuilt the array and its
        # logarithms (2.7 s of a 40-word report's 2.8 s at 65k chunks)
        sql = f"""WITH {statistics}, idf_of AS MATERIALIZED (
        SELECT average, {idf_of} AS idf FROM idf
    ), occ AS (
        {_posted(seqs, collection_ids, weights, params)}
    ), scored AS (
        SELECT occ.id, occ.phrase, {term} AS term
        FROM occ, idf_of i WHERE occ.n > 0
    )
    SELECT id, 0::float8 + sum(term ORDER BY phrase) AS score
    FROM scored GROUP BY id ORDER BY score DESC, id LIMIT %(limit)s"""
        return Statement(sql, params)
    head = _candidates(node, "collection_id", collection_ids, weights, params, file_ids)
    counted = "".join(f",\n               CASE WHEN {when} THEN f{i} ELSE 0 END AS c{i}"
                      for i, when in enumerate(_counted_when(node)))
    score = " + ".join(_term(f"idf{i}", f"c{i}", "token_count", "average") for i in range(len(seqs)))
    sql = f"""{head}, counted AS (
        SELECT id, token_count{counted}
        FROM per_row WHERE {_matches(node, 0)[0]}
    ), {statistics}
    SELECT id, 0::float8 + {score} AS score
    FROM counted, idf ORDER BY score DESC, id LIMIT %(limit)s"""
    return Statement(sql, params)
