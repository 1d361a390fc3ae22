"""The tasks of interactive runs between turns: record a turn's question, and let the agent
decide when nobody answered in time (a Celery countdown for timeouts up to an hour, the
periodic sweep for longer ones and for any countdown message that was lost)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, replace
from typing import Any

from celery import shared_task

from runner_core.metrics import record_tokens
from runner_core.queues import AUTO_REPLY
from runner_core.results import RunEnd
from runner_core.runtime_options import RuntimeOptions
from runner_core.statuses import RunStatus
from runner_core.store import cancels, interactions
from runner_core.store.models import Run, utcnow
from runner_core.tokens import turn_tokens
from worker import context
from worker.context import connect, events_of, finished, sessions
from worker.dispatch import queue_of, send_run
from worker.interactive.waiting import CANCELED, auto_decide, auto_reply_delay, record_question
from worker.recorder import record_end
from worker.webhook_tasks import callbacks_for_question

log = logging.getLogger(__name__)
# Longer countdowns are left to the sweep: a Redis message held past the broker's visibility
# timeout is delivered twice (harmless here, but pointless).
COUNTDOWN_MAX_SEC = 3600


def ask_user(run: Run, turn: int, outcome: Any) -> str:
    """The turn asked: the run waits for a reply, with an auto-reply scheduled if it wants one."""
    settings = context.settings()
    interaction_id = record_question(connect, run, turn, outcome, settings.lease_sec / 2)
    if interaction_id is None:  # canceled meanwhile: the turn's warnings are kept
        with connect() as conn:  # why, when no user asked (its composite parent ended)
            error = cancels.cancel_error_of(conn, run.id, CANCELED)
        end = replace(
            RunEnd.failed(error, RunStatus.CANCELED),
            warnings=outcome.warnings,
            token_usage=outcome.token_usage,
        )
        record_end(run, end, "cancel")
        return RunStatus.CANCELED
    events = events_of(run)  # never after the end a cancel of the waiting run wrote meanwhile
    events.emit(
        "user.input.required",
        {"interaction_id": interaction_id, "turn": turn, **asdict(outcome.pending)},
        before_end=True,
    )
    turn_usage = turn_tokens(run.token_usage, outcome.token_usage)
    events.state_changed(
        RunStatus.RUNNING,
        RunStatus.WAITING_USER,
        "ask",
        interaction_id,
        token_usage=turn_usage,
        before_end=True,
    )
    record_tokens(run.engine, run.model, run.owner, turn_usage)
    finished().publish(run.id)  # wakes long polls: the run needs its client now
    try:
        callbacks_for_question(run.id)
    except Exception:
        log.warning("waiting callbacks of run %s not sent", run.id, exc_info=True)
    delay = auto_reply_delay(run, settings.reply_timeout_max_sec)
    if delay is not None and delay <= COUNTDOWN_MAX_SEC:
        try:
            auto_reply.apply_async(
                args=[run.id, interaction_id], countdown=delay, queue=queue_of(run)
            )
        except Exception:  # the sweep decides overdue questions too
            log.warning("run %s: auto-reply not scheduled", run.id, exc_info=True)
    return RunStatus.WAITING_USER


@shared_task(name=AUTO_REPLY)
def auto_reply(run_id: str, interaction_id: int) -> str:
    """Nobody answered within the run's reply timeout: the agent decides and goes on."""
    settings = context.settings()
    task_id = str(uuid.uuid4())
    with sessions()() as session:
        outcome = auto_decide(
            session, run_id, interaction_id, settings.reply_timeout_max_sec, task_id
        )
        run = session.get(Run, run_id) if outcome == interactions.ACCEPTED else None
    if run is not None:
        events = events_of(run)
        options = RuntimeOptions.from_dict(run.runtime_options)
        waited = options.reply_timeout(settings.reply_timeout_max_sec)
        events.emit(
            "interaction.auto_decide.timeout",
            {"interaction_id": interaction_id, "timeout_sec": waited},
            before_end=True,
        )
        events.state_changed(
            RunStatus.WAITING_USER, RunStatus.QUEUED, "auto_decide", before_end=True
        )
        send_run(run, task_id)  # if this fails the run is queued: the sweep re-sends it
    return outcome


def overdue_replies() -> int:
    """Questions past their reply timeout (long ones, or a lost countdown): decided now."""
    with sessions()() as session:
        due = interactions.overdue(session, utcnow(), context.settings().reply_timeout_max_sec)
    return sum(auto_reply(row.id, row.interaction_id) == interactions.ACCEPTED for row in due)
