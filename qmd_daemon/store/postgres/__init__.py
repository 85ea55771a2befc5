"""The PostgreSQL backend (pgvector for vectors): a team's shared index on a server they name."""
