"""The SQLite index: connection, schema and migrations, and the typed operations on it."""
