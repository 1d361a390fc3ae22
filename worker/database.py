"""The worker's database: one SQLAlchemy engine per process (an engine must not cross a fork)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import sessionmaker

from runner_core.per_process import PerProcess
from runner_core.store.db import make_engine, make_sessionmaker
from worker.celery_app import settings


@dataclass(frozen=True)
class Database:
    engine: Engine
    sessions: sessionmaker


def _open_database() -> Database:
    engine = make_engine(settings.database_url)
    return Database(engine, make_sessionmaker(engine))


_database: PerProcess[Database] = PerProcess(_open_database)


def sessions() -> sessionmaker:
    """A sessionmaker for this process."""
    return _database.get().sessions


def connect() -> Connection:
    """A Core connection of this process's engine: a run's own statements (claim, lease,
    finish) need no ORM session."""
    return _database.get().engine.connect()
