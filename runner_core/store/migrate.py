"""Run the Alembic migrations programmatically (used by `skill-runner migrate` and tests)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from runner_core.settings import REPO_ROOT


def alembic_config(url: str) -> Config:
    cfg = Config(str(REPO_ROOT / "migrations" / "alembic.ini"))
    cfg.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    cfg.attributes["url"] = url
    cfg.attributes["skip_logging"] = True
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`."""
    command.upgrade(alembic_config(url), revision)
