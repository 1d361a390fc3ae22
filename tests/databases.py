"""The tests' databases, each a copy of one migrated once per session (and migration head): a
SQLite file copied, a Postgres database created with the migrated one as its TEMPLATE.

Templates have names of their own per session (two sessions can share a Postgres server) and
are removed when the session's interpreter exits.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from runner_core.store.migrate import alembic_config, upgrade

if TYPE_CHECKING:  # psycopg itself is imported by the tiers that use Postgres only
    import psycopg

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SESSION = uuid.uuid4().hex[:10]
_lock = threading.Lock()
_sqlite_templates: dict[str, Path] = {}  # migration head -> migrated file
_postgres_templates: dict[str, str] = {}  # migration head -> database name
_template_dir: Path | None = None


@functools.cache
def migration_head() -> str:
    """The revision the migrations end at (a template is made per head)."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head() or "base"


def migrate(url: str) -> None:
    """Bring the database at `url` to the head: a SQLite file that does not exist yet becomes a
    copy of the session's template; anything else is upgraded (a no-op on a template's copy)."""
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None and not sqlite_file.exists():
        shutil.copyfile(sqlite_template(), sqlite_file)
    else:
        upgrade(url)


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def sqlite_template() -> Path:
    """The session's migrated SQLite file for the current head (made on first use)."""
    global _template_dir
    head = migration_head()
    with _lock:
        if head not in _sqlite_templates:
            if _template_dir is None:
                _template_dir = Path(tempfile.mkdtemp(prefix="skill-runner-test-templates-"))
                atexit.register(shutil.rmtree, _template_dir, True)
            path = _template_dir / f"runs-{head}.db"
            upgrade(f"sqlite:///{path}")
            with sqlite3.connect(path) as conn:  # everything in the main file: no WAL to copy
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
            _sqlite_templates[head] = path
        return _sqlite_templates[head]


def _admin() -> psycopg.Connection:
    import psycopg

    try:
        return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        pytest.fail(f"these tests need Postgres at {POSTGRES_URL} ({exc}); tests/run.sh starts it")


def _database_url(name: str) -> str:
    return f"{POSTGRES_URL.rsplit('/', 1)[0]}/{name}"


def postgres_template() -> str:
    """The name of the session's migrated Postgres database for the current head (made on first
    use, dropped when the session ends)."""
    head = migration_head()
    with _lock:
        if head not in _postgres_templates:
            name = f"skill_runner_template_{head[:12]}_{SESSION}"
            with _admin() as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            atexit.register(_drop, name)
            upgrade(_database_url(name))  # its engine is disposed: no connection left to copy
            _postgres_templates[head] = name
        return _postgres_templates[head]


def _drop(name: str) -> None:
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass  # the server is gone: nothing of ours is left on it to drop


def create_postgres_db(migrated: bool = True) -> tuple[str, Callable[[], None]]:
    """A Postgres database of its own (a copy of the migrated template, or empty with
    `migrated=False`) and a function that drops it; fails (never skips) without Postgres."""
    template = postgres_template() if migrated else None
    name = f"skill_runner_test_{uuid.uuid4().hex[:10]}"
    admin = _admin()
    if template:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    else:
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

    return _database_url(name), drop
