"""Job callbacks: POST the status document to a job's callback_url when its run ends (and, if
asked, when it waits for a reply), signed, retried with exponential backoff as Celery tasks
for SKILL_RUNNER_WEBHOOK_RETRY_SEC, every attempt recorded (GET /v1/jobs/{id}/webhooks)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import shared_task

from runner_core.queues import DELIVER_WEBHOOK, WEBHOOK_QUEUE
from runner_core.store import callbacks, interactions
from runner_core.store.models import Request, Run, utcnow
from runner_core.webhooks import Attempt, WebhookRefused, check_url, deliver
from worker import context
from worker.context import sessions

log = logging.getLogger(__name__)
TERMINAL, WAITING = "terminal", "waiting_user"
MAX_BACKOFF_SEC = 300.0


def status_document(req: Request, run: Run, event: str) -> dict[str, Any]:
    """What the receiver gets: the job's status fields that say how it ended (or what it asks)."""
    return {
        "event": event,
        "request_id": req.id,
        "run_id": run.id,
        "skill_id": req.skill_id,
        "engine": run.engine,
        "status": run.status,
        "error": run.error,
        "warnings": run.warnings or [],
        "pending_interaction_id": run.pending_interaction_id,
        "interaction_count": run.interaction_count,
        "created_at": _iso(req.created_at),
        "finished_at": _iso(run.finished_at),
    }


def _iso(value: datetime | None) -> str | None:
    """As the API writes times: UTC with a trailing Z (SQLite hands back naive UTC times)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def callbacks_for_end(run_id: str, due: list[str] | None = None) -> int:
    """Send the due callbacks of a run that has just ended (the sweep sends any missed);
    `due`: the ones its finish already made `scheduled`."""
    if due is None:
        with context.connect() as conn:
            due = callbacks.schedule_run(conn, run_id)
    for request_id in due:
        _send(request_id, TERMINAL)
    return len(due)


def callbacks_for_question(run_id: str) -> None:
    """A run waits for a reply: its requests that asked for it are called (no retry state)."""
    with sessions()() as session:
        run = session.get(Run, run_id)
        question = run.pending_interaction_id if run is not None else None
        for req in session.query(Request).filter(Request.run_id == run_id):
            if req.callback_url and (req.payload or {}).get("callback_on_waiting"):
                _send(req.id, WAITING, question)


def overdue_callbacks() -> int:
    """The sweep's part: callbacks of ended runs that no worker sent (cache hits, runs the
    API or recovery ended, a lost message)."""
    with sessions()() as session:
        due = callbacks.schedule_due(session)
    for request_id in due:
        _send(request_id, TERMINAL)
    return len(due)


def _send(request_id: str, event: str, question: int | None = None) -> None:
    args: list[Any] = [request_id, event] if question is None else [request_id, event, question]
    try:
        deliver_webhook.apply_async(args=args, queue=WEBHOOK_QUEUE)
    except Exception:  # scheduled but never sent: logged; the row says `scheduled`
        log.warning("callback of request %s not sent", request_id, exc_info=True)


@shared_task(name=DELIVER_WEBHOOK, bind=True, max_retries=None)
def deliver_webhook(self, request_id: str, event: str, question: int | None = None) -> str:
    settings = context.settings()
    with sessions()() as session:
        req = session.get(Request, request_id)
        run = session.get(Run, req.run_id) if req is not None and req.run_id else None
        if req is None or run is None or not req.callback_url:
            return "gone"
        if event == WAITING and (
            run.status != WAITING
            or (question is not None and run.pending_interaction_id != question)
        ):
            # the question was answered, timed out or the run ended: a (retried) call would
            # tell the receiver the run waits when it does not (after its terminal call, even)
            return "stale"
        try:
            check_url(req.callback_url, settings.webhook_hosts)  # the list may have changed
            outcome = deliver(
                req.callback_url,
                status_document(req, run, event),
                settings.webhook_secret,
                event,
                allowed=settings.webhook_hosts,
            )
        except WebhookRefused as exc:
            outcome = Attempt(None, f"refused: {exc}")
            callbacks.record(session, request_id, event, run.status, outcome)
            if event == TERMINAL:
                callbacks.finish(session, request_id, callbacks.FAILED)
            return "refused"
        callbacks.record(session, request_id, event, run.status, outcome)
        if outcome.delivered:
            if event == TERMINAL:
                callbacks.finish(session, request_id, callbacks.DELIVERED)
            return "delivered"
        # a question's call is retried for its own window, from its own first attempt
        asked = interactions.get(session, run.id, question) if event == WAITING else None
        since = asked.created_at if asked is not None else None
        first, tries = callbacks.first_attempt_at(session, request_id, event, since)
        first = first or utcnow()
        if first.tzinfo is None:
            first = first.replace(tzinfo=utcnow().tzinfo)
        if utcnow() - first < timedelta(seconds=settings.webhook_retry_sec):
            delay = min(settings.webhook_backoff_sec * 2 ** (max(tries, 1) - 1), MAX_BACKOFF_SEC)
            raise self.retry(countdown=delay)
        if event == TERMINAL:
            callbacks.finish(session, request_id, callbacks.FAILED)
        return "failed"
