"""Alembic environment: the URL comes from DATABASE_URL (or the default SQLite file)."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from runner_core.settings import load_settings
from runner_core.store.db import make_engine
from runner_core.store.models import Base

config = context.config
if config.config_file_name and not config.attributes.get("skip_logging"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

url = config.attributes.get("url") or load_settings().database_url


def run_migrations() -> None:
    engine = make_engine(url)
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            # a batch step copies a table and drops the old one: with foreign keys enforced
            # that drop would fire the ON DELETE of every row pointing at it (requests lose
            # their run, interactions go); the pragma holds only outside a transaction
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
