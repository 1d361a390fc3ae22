"""The `retry` of a skill.json skill: a run that failed is queued again, as a new attempt of
the same run, while the attempts (claims) are at most 1 + retry. A cancel is never retried."""

from __future__ import annotations

import logging
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.skills.memo import load_skill_cached
from runner_core.statuses import RunStatus
from runner_core.store import runs as run_states
from runner_core.store.models import Run
from worker import context
from worker.context import events_of, sessions
from worker.dispatch import send_run
from worker.execution.run_layout import skill_source

log = logging.getLogger(__name__)


def retry_failed(run: Run, error: dict[str, Any] | None) -> bool:
    """Queue `run` again after its failed attempt when its skill's `retry` allows it."""
    if (error or {}).get("code") in (ErrorCode.CANCELED_BY_USER, ErrorCode.CANCELED_BY_PARENT):
        return False
    try:
        spec = load_skill_cached(skill_source(context.settings(), run)).openevo
    except Exception:  # an unreadable skill gets no retry
        return False
    if spec is None or spec.retry <= 0 or (run.attempt or 0) > spec.retry:
        return False
    with sessions()() as session:
        if not run_states.requeue_failed(session, run.id):
            return False
        events = events_of(run)
        events.emit(
            "diagnostic.warning",
            {
                "code": (error or {}).get("code"),
                "message": f"attempt {run.attempt} failed and is retried: "
                f"{(error or {}).get('message')}",
                "attempt": run.attempt,
                "error": error,
            },
        )
        events.state_changed(RunStatus.RUNNING, RunStatus.QUEUED, "retry_after_failure")
        try:
            run_states.mark_enqueued(session, run.id, send_run(run))
        except Exception as exc:  # the sweep re-sends a queued run whose message is lost
            log.warning("retry of run %s not sent: %s", run.id, exc)
    log.info("run %s failed attempt %s; queued again (retry %s)", run.id, run.attempt, spec.retry)
    return True
