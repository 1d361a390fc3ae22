"""Sending a run's execute_run and a composite's advance messages, to the queue the run's
skill goes to: shared by the run tasks, the interactive ones, the composites and the sweep."""

from __future__ import annotations

import logging

from runner_core.queues import (
    ADVANCE_COMPOSITE,
    ADVANCE_QUEUE,
    EXECUTE_RUN,
    queue_for,
    task_label,
)
from runner_core.skills.memo import load_skill_cached
from runner_core.store.models import Run
from worker import context
from worker.execution.run_layout import skill_source

log = logging.getLogger(__name__)


def queue_of(run: Run) -> str:
    """The queue of `run`: its engine's, or the script queue."""
    return queue_for(load_skill_cached(skill_source(context.settings(), run)), run.engine)


def send_run(run: Run, task_id: str | None = None, queue: str | None = None) -> str:
    """Send execute_run for `run` to its queue (`queue` when the caller knows it); returns the
    task id."""
    return (
        context.app()
        .send_task(
            EXECUTE_RUN,
            args=[run.id],
            queue=queue or queue_of(run),
            task_id=task_id,
            **task_label(run.skill_id, run.engine, run.request_id),
        )
        .id
    )


def send_advance(parent_id: str, countdown: float | None = None) -> None:
    """Send `advance` for a composite parent (now, or after `countdown` seconds)."""
    context.app().send_task(
        ADVANCE_COMPOSITE, args=[parent_id], queue=ADVANCE_QUEUE, countdown=countdown
    )
