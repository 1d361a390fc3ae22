"""The schema revision this code needs: the newest migration's id. /healthz compares the
database's with it, so an API started on a database nobody migrated says so instead of
answering `ok` while its queries fail (tests/component/test_schema_revision.py keeps this
equal to alembic's head)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

SCHEMA_REVISION = "0018"  # migrations/versions: ids are zero-padded, so they sort as they apply
MIGRATE_HINT = "run `skill-runner migrate`"


def schema_state(session: Session) -> str:
    """ "ok" when the database's schema is this code's (or newer: another host migrated
    first), else "error: ..." saying what it is at and what to do."""
    try:
        found = session.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:  # no such table: never migrated
        session.rollback()
        return f"error: not migrated; {MIGRATE_HINT}"
    if found is None or str(found) < SCHEMA_REVISION:
        return f"error: schema at {found}, this code needs {SCHEMA_REVISION}; {MIGRATE_HINT}"
    return "ok"
