"""A throwaway Postgres database for a service under test (`BENCH_POSTGRES_URL` names the
server's admin database); SQLite needs none, its file lives in the service's data directory."""

from __future__ import annotations

import os
import uuid

POSTGRES_ADMIN_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


class PostgresDatabase:
    """A throwaway Postgres database (created on enter, dropped on close)."""

    def __init__(self) -> None:
        import psycopg

        self.name = f"bench_{uuid.uuid4().hex[:10]}"
        self.admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=5)
        self.admin.execute(f'CREATE DATABASE "{self.name}"')
        self.url = f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{self.name}"

    def close(self) -> None:
        self.admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self.admin.close()
