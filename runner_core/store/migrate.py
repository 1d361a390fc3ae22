"""Run the Alembic migrations programmatically (used by `skill-runner migrate` and tests)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError

from runner_core.settings import REPO_ROOT
from runner_core.store.db import make_engine


class SchemaAhead(ValueError):
    """The database is at a revision these migrations do not know: a newer version migrated it."""


def alembic_config(url: str) -> Config:
    cfg = Config(str(REPO_ROOT / "migrations" / "alembic.ini"))
    cfg.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    cfg.attributes["url"] = url
    cfg.attributes["skip_logging"] = True
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`; SchemaAhead when a newer version of the
    service migrated it past what this one knows (this one neither uses nor downgrades it)."""
    cfg = alembic_config(url)
    refuse_unknown_revision(cfg, url)
    command.upgrade(cfg, revision)


def refuse_unknown_revision(cfg: Config, url: str) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            found = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    if found is None:
        return
    scripts = ScriptDirectory.from_config(cfg)
    try:
        scripts.get_revision(found)
    except CommandError:
        raise SchemaAhead(
            f"its schema is at revision {found}, which this version of the service does not "
            f"know (its newest is {scripts.get_current_head()}): a newer version migrated it. "
            "This version does not downgrade it: run the newer version again, or "
            "have the newer version downgrade it (docs/operating.md#upgrading-the-service), or "
            "restore the backup taken before the upgrade"
        ) from None
