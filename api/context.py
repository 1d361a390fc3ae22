"""The app's shared objects, reached from inside a request: one accessor each."""

from __future__ import annotations

from typing import Any

from flask import current_app
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from api.jobs.queue_bound import QueueBound
from runner_core.event_bus import EventHub
from runner_core.events import EventLog, RunRef
from runner_core.finish_events import FinishWatcher
from runner_core.settings import Settings
from runner_core.skills import SkillRegistry
from runner_core.store.models import Run


def settings() -> Settings:
    """The service settings the app was built with."""
    return current_app.config["SETTINGS"]


def db_session() -> Session:
    """A new ORM session (use as a context manager)."""
    return current_app.extensions["db"]()


def connect() -> Connection:
    """A Core connection: for the few statements of creating, reading and listing jobs, where
    an ORM session's bookkeeping would cost more than the SQL."""
    return current_app.extensions["db_engine"].connect()


def queue() -> Any:
    """The queue client: `enqueue(run_id, queue, task_id=, time_limits=)`, `revoke`, `ping`."""
    return current_app.extensions["queue"]


def queue_bound() -> QueueBound:
    """This process's count of queued runs, for SKILL_RUNNER_QUEUE_MAX."""
    return current_app.extensions["queue_bound"]


def finish_watcher() -> FinishWatcher:
    """What long polls wait on: the workers' finish notices."""
    return current_app.extensions["finish_watcher"]


def skills() -> SkillRegistry:
    """The installed skills."""
    return current_app.extensions["skills"]


def run_events(run: Run) -> EventLog:
    """The event log of `run`, for the transitions the API makes (a reply, a cancel)."""
    ref = RunRef(run.id, run.request_id, run.engine, run.attempt or 0)
    publish = current_app.extensions["event_publisher"]
    return EventLog(settings().runs_dir / run.id, ref, publish, settings().events)


def event_hub() -> EventHub:
    """What event streams follow: this process's one subscription to the workers' events."""
    return current_app.extensions["event_hub"]
