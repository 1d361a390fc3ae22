"""The worker's shared objects, one accessor each (the twin of api/context.py): the settings
and the Celery app, made once per process on first use; the database engine, made again in a
forked child (an engine must not cross a fork); the publishers of finish notices and events."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from celery import Celery
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import sessionmaker

from runner_core.event_bus import EventPublisher
from runner_core.events import EventLog, RunRef
from runner_core.finish_events import FinishPublisher
from runner_core.per_process import PerProcess
from runner_core.settings import Settings, load_settings
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Run
from worker.app import create_celery_app


@functools.cache
def settings() -> Settings:
    """The service settings, read from the environment once."""
    return load_settings()


@functools.cache
def app() -> Celery:
    """The Celery app for these settings (the `celery -A worker.celery_app` target's)."""
    return create_celery_app(settings())


@dataclass(frozen=True)
class Database:
    engine: Engine
    sessions: sessionmaker


def _open_database() -> Database:
    engine = make_engine(settings().database_url)
    return Database(engine, make_sessionmaker(engine))


_database: PerProcess[Database] = PerProcess(_open_database)


def sessions() -> sessionmaker:
    """A sessionmaker for this process."""
    return _database.get().sessions


def connect() -> Connection:
    """A Core connection of this process's engine: a run's own statements (claim, lease,
    finish) need no ORM session."""
    return _database.get().engine.connect()


@functools.cache
def finished() -> FinishPublisher:
    """What wakes API requests waiting on a run (one Redis connection per process)."""
    return FinishPublisher(settings().broker_url)


@functools.cache
def _event_publisher() -> EventPublisher:
    return EventPublisher(settings().broker_url)


def events_of(run: Run) -> EventLog:
    """The event log of `run` (events.jsonl in its directory, announced on Redis)."""
    ref = RunRef(run.id, run.request_id, run.engine, run.attempt or 0)
    return EventLog(settings().runs_dir / run.id, ref, _event_publisher(), settings().events)
