"""Sending a run's next execute_run message, announcing a run's end, and writing the result
file of a run cut short: shared by the run tasks and the interactive ones."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from runner_core.event_bus import EventPublisher
from runner_core.events import EventLog, RunRef
from runner_core.finish_events import FinishPublisher
from runner_core.metrics import record_run_end
from runner_core.queues import (
    ADVANCE_COMPOSITE,
    ADVANCE_QUEUE,
    EXECUTE_RUN,
    queue_for,
    task_label,
)
from runner_core.skills.memo import load_skill_cached
from runner_core.store.models import Run
from worker import results
from worker.celery_app import app, settings
from worker.run_layout import skill_source

log = logging.getLogger(__name__)
finished = FinishPublisher(settings.broker_url)  # wakes API requests waiting on a run
_publish_event = EventPublisher(settings.broker_url)


def events_of(run: Run) -> EventLog:
    """The event log of `run` (events.jsonl in its directory, announced on Redis)."""
    ref = RunRef(run.id, run.request_id, run.engine, run.attempt or 0)
    return EventLog(settings.runs_dir / run.id, ref, _publish_event, settings.events)


def announce_end(run: Run, before: str, status: str, error: dict | None, trigger: str) -> None:
    """The terminal event, then the finish notice (long polls wake on the latter); counted in
    the metrics (duration, failures by code)."""
    events_of(run).state_changed(before, status, trigger, error=error, terminal=True)
    finished.publish(run.id)
    code = (error or {}).get("code")
    ids = {"run_id": run.id, "request_id": run.request_id}
    log.info(
        "run %s ended %s (%s)%s", run.id, status, trigger, f": {code}" if code else "", extra=ids
    )
    record_run_end(run.engine, run.skill_id, status, code, run.started_at, datetime.now(UTC))
    from worker.webhook_tasks import callbacks_for_end  # (its module imports this one's app)

    try:
        callbacks_for_end(run.id)
    except Exception:  # the sweep sends what is due
        log.warning("callbacks of run %s not scheduled", run.id, exc_info=True)


def queue_of(run: Run) -> str:
    """The queue of `run`: its engine's, or the script queue."""
    return queue_for(load_skill_cached(skill_source(settings, run)), run.engine)


def send_run(run: Run, task_id: str | None = None, queue: str | None = None) -> str:
    """Send execute_run for `run` to its queue (`queue` when the caller knows it); returns the
    task id."""
    return app.send_task(
        EXECUTE_RUN,
        args=[run.id],
        queue=queue or queue_of(run),
        task_id=task_id,
        **task_label(run.skill_id, run.engine, run.request_id),
    ).id


def send_advance(parent_id: str, countdown: float | None = None) -> None:
    """Send `advance` for a composite parent (now, or after `countdown` seconds)."""
    app.send_task(ADVANCE_COMPOSITE, args=[parent_id], queue=ADVANCE_QUEUE, countdown=countdown)


def write_failure(run: Run, status: str, error: dict) -> None:
    """result/result.json of a run cut short (see worker.results)."""
    results.write_failure(settings.runs_dir, run.id, status, error)
