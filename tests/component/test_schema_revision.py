"""The schema revision /healthz asks for is the newest migration's."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from runner_core.store.migrate import alembic_config
from runner_core.store.schema_revision import SCHEMA_REVISION


def test_the_revision_the_code_needs_is_alembics_head() -> None:
    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    assert heads == [SCHEMA_REVISION], "a new migration: set SCHEMA_REVISION to its id"
