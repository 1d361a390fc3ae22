"""The Alembic migrations build exactly the schema the models describe (SQLite; on Postgres
every session migrates the template its test databases are copied from: tests/databases.py)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from runner_core.store.db import normalize_url
from runner_core.store.migrate import upgrade
from runner_core.store.models import Base
from tests.databases import migration_head
from tests.helpers import BOTH_DATABASES


def test_migrations_match_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []


def test_the_cache_lookup_is_one_index_seek(tmp_path):
    """Every POST /v1/jobs looks its cache key up: with a status index alone SQLite walked all
    succeeded runs and sorted them (migration 0006)."""
    from api.job_cache import _NEWEST_SUCCEEDED

    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    compiled = _NEWEST_SUCCEEDED.compile(engine, compile_kwargs={"literal_binds": False})
    with engine.connect() as conn:
        plan = " | ".join(
            row[-1]
            for row in conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {compiled}",
                tuple(compiled.construct_params({"key_": "k", "owner_": None}).values()),
            )
        )
    engine.dispose()
    assert "ix_runs_cache_lookup" in plan, plan
    assert "TEMP B-TREE" not in plan, plan


def test_cleanup_finds_the_idempotency_keys_of_a_request_by_index(tmp_path):
    """Cleanup deletes the Idempotency-Keys of the requests it deletes, by request id: without
    an index on it (migration 0017) each cleanup walked every key."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    with engine.connect() as conn:
        plan = " | ".join(
            row[-1]
            for row in conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN DELETE FROM idempotency_keys WHERE request_id IN (?, ?)",
                ("a", "b"),
            )
        )
    engine.dispose()
    assert "ix_idempotency_keys_request_id" in plan, plan


@BOTH_DATABASES
def test_a_test_database_is_a_copy_of_the_template_at_the_migration_head(settings):
    engine = create_engine(normalize_url(settings.database_url))
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == migration_head()
    engine.dispose()


def test_migrate_never_prints_the_database_password(tmp_path, monkeypatch, capsys):
    import os

    from launcher.cli import main
    from tests.databases import create_postgres_db

    url, drop = create_postgres_db()
    try:
        with_password = url.replace("postgres@", "postgres:hunter2-long-pw@", 1)
        assert "hunter2" in with_password  # trust auth: any password is taken
        monkeypatch.setattr(os, "environ", {**os.environ})
        monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
        monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path))
        monkeypatch.setenv("DATABASE_URL", with_password)
        assert main(["migrate"]) == 0
    finally:
        drop()
    out = capsys.readouterr().out
    assert "hunter2" not in out and ":[REDACTED]@" in out


def test_migrate_refuses_a_database_a_newer_version_migrated(tmp_path, monkeypatch, capsys):
    """Older code started on a newer install's database (an operator going back a version):
    one line saying what happened and what to do, exit 2, the database left as it is."""
    import os
    import sqlite3

    from launcher.cli import main

    db = tmp_path / "runs.db"
    upgrade(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    conn.close()
    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert "schema is at revision 9999" in err and f"newest is {migration_head()}" in err, err
    assert "does not downgrade" in err and "Traceback" not in err, err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]
    conn.close()
