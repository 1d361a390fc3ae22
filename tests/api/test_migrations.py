"""The Alembic migrations build exactly the schema the models describe (SQLite; Postgres is
migrated by every integration test)."""
from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from runner_core.store.migrate import upgrade
from runner_core.store.models import Base


def test_migrations_match_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []
