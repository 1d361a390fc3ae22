"""Interactive runs between turns: record a turn's question, and answer it by the timeout when
the run asked for auto-reply (a Celery countdown, with the sweep as the backstop)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.runtime_options import RuntimeOptions
from runner_core.statuses import RunStatus
from runner_core.store import interactions
from runner_core.store.db import retry_unavailable
from runner_core.store.models import Run, utcnow

log = logging.getLogger(__name__)
CANCELED = RunError(ErrorCode.CANCELED_BY_USER, "canceled by user while it asked")


def record_question(
    connect: Callable, run: Run, turn: int, outcome: Any, budget: float
) -> int | None:
    """running -> waiting_user with the turn's question; None when a cancel came first (the
    caller then records the run's end, canceled)."""
    finish = {
        "warnings": outcome.warnings,
        "timings": outcome.timings,
        "session_handle": outcome.session_handle,
        "token_usage": outcome.token_usage,
    }

    def ask() -> int | None:
        with connect() as conn:
            return interactions.ask(conn, run.id, turn, outcome.pending, finish)

    return retry_unavailable(ask, f"question of run {run.id}", budget)


def auto_reply_delay(run: Run, cap_sec: int) -> int | None:
    """Seconds until an unanswered question is decided by the agent (None: auto-reply off)."""
    options = RuntimeOptions.from_dict(run.runtime_options)
    if not options.interactive_auto_reply:
        return None
    return options.reply_timeout(cap_sec)


def auto_decide(session, run_id: str, interaction_id: int, cap_sec: int, task_id: str) -> str:
    """Answer the question 'nobody answered' once its timeout has passed: ACCEPTED (send the
    next turn), or why not (early, answered, canceled...)."""
    run = session.get(Run, run_id)
    if run is None or run.status != RunStatus.WAITING_USER:
        return "not_waiting"
    if run.pending_interaction_id != interaction_id:
        return "stale"
    delay = auto_reply_delay(run, cap_sec)
    asked = interactions.get(session, run_id, interaction_id)
    if delay is None or asked is None:
        return "off"
    budget = RuntimeOptions.from_dict(run.runtime_options).budget
    if budget is not None and budget.exceeded(run.token_usage):
        return "over_budget"  # it waits for a person's reply raising its budget
    created = (
        asked.created_at
        if asked.created_at.tzinfo
        else asked.created_at.replace(tzinfo=utcnow().tzinfo)
    )
    if created + timedelta(seconds=delay) > utcnow() + timedelta(seconds=1):
        return "early"
    return interactions.answer(
        session, run_id, interaction_id, interactions.Answer(None, auto=True, task_id=task_id)
    )
