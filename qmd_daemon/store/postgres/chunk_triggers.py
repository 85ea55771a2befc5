"""Statement triggers that keep a table derived from `chunks` true through every write: the BM25
statistics (schema.py) and the postings (postings.py). One shape for both: a PL/pgSQL function
that sees the statement's inserted, deleted or rewritten rows (transition tables), and its three
triggers."""

from __future__ import annotations

# an UPDATE that rewrote a chunk's terms (rederive); line moves leave `fts` as it was
REWRITTEN = """SELECT {side}.id, {side}.collection_id, {side}.fts, {side}.token_count FROM old_rows o
    JOIN new_rows n ON n.id = o.id WHERE n.fts IS DISTINCT FROM o.fts"""
NEW_ROWS = "SELECT id, collection_id, fts, token_count FROM new_rows"
OLD_ROWS = "SELECT id, collection_id, fts, token_count FROM old_rows"


def chunk_triggers(function: str, prefix: str, added: str, removed: str, rewritten: str) -> list[str]:
    """FUNCTION (run ADDED on an insert, REMOVED on a delete, REWRITTEN on an update; PL/pgSQL that
    reads new_rows / old_rows) and its triggers `<prefix>_added`, `_removed`, `_rewritten`."""
    return [
        f"""CREATE FUNCTION {function}() RETURNS TRIGGER LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            {added}
        ELSIF TG_OP = 'DELETE' THEN
            {removed}
        ELSE
            {rewritten}
        END IF;
        RETURN NULL;
    END $$""",
        f"""CREATE TRIGGER {prefix}_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE TRIGGER {prefix}_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE TRIGGER {prefix}_rewritten AFTER UPDATE ON chunks
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
    ]
