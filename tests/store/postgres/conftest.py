from tests.postgres_server import pg_server, pg_url  # noqa: F401  (the shared PostgreSQL fixtures)
