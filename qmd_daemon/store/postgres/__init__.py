"""The PostgreSQL backend: a team's shared index on a server the user names (docs/postgres.md)."""
