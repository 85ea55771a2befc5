from tests.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)
