"""Job callbacks in SQL: which requests have one due, and every delivery attempt.

A request with a callback starts `pending`; when its run has ended one guarded UPDATE makes it
`scheduled` (so the worker that ended the run and the sweep never both send it), and the
delivery ends it `delivered` or `failed`."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Table, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from runner_core.statuses import TERMINAL_STATUSES
from runner_core.store.models import Request, Run, WebhookAttempt, utcnow

_requests, _runs = cast(Table, Request.__table__), cast(Table, Run.__table__)
_attempts = cast(Table, WebhookAttempt.__table__)
PENDING, SCHEDULED, DELIVERED, FAILED = "pending", "scheduled", "delivered", "failed"
# A run's own pending callbacks, once it has ended: one guarded UPDATE, built once
_SCHEDULE_RUN = (
    update(_requests)
    .where(
        _requests.c.callback_state == PENDING,
        _requests.c.run_id.in_(
            select(_runs.c.id).where(
                _runs.c.id == bindparam("run_id_"), _runs.c.status.in_(TERMINAL_STATUSES)
            )
        ),
    )
    .values(callback_state=SCHEDULED)
    .returning(_requests.c.id)
)


def schedule_due(session: Session, run_id: str | None = None, limit: int = 500) -> list[str]:
    """Mark `scheduled` the pending callbacks whose run has ended (of `run_id`, or any) and
    return their request ids: the caller sends one delivery task each."""
    ended = select(_runs.c.id).where(_runs.c.status.in_(TERMINAL_STATUSES))
    if run_id is not None:
        ended = ended.where(_runs.c.id == run_id)
    due = list(
        session.scalars(
            select(_requests.c.id)
            .where(_requests.c.callback_state == PENDING, _requests.c.run_id.in_(ended))
            .limit(limit)
        )
    )
    taken = []
    for request_id in due:
        result = session.execute(
            update(_requests)
            .where(_requests.c.id == request_id, _requests.c.callback_state == PENDING)
            .values(callback_state=SCHEDULED)
        )
        if cast(CursorResult, result).rowcount == 1:
            taken.append(request_id)
    session.commit()
    return taken


def schedule_run(conn: Connection, run_id: str) -> list[str]:
    """`schedule_due` for the run that has just ended, in one statement on a Core connection
    (every run's end pays for it, and most runs have no callback)."""
    taken = list(conn.execute(_SCHEDULE_RUN, {"run_id_": run_id}).scalars())
    conn.commit()
    return taken


def record(session: Session, request_id: str, event: str, run_status: str, outcome: Any) -> int:
    """Store one attempt; returns its number (1 for the first of this event)."""
    before = session.scalar(
        select(func.count())
        .select_from(_attempts)
        .where(_attempts.c.request_id == request_id, _attempts.c.event == event)
    )
    number = 1 + int(before or 0)
    session.execute(
        insert(_attempts).values(
            request_id=request_id,
            event=event,
            run_status=run_status,
            attempt=number,
            status_code=outcome.status_code,
            error=outcome.error,
            delivered=outcome.delivered,
            created_at=utcnow(),
        )
    )
    session.commit()
    return number


def first_attempt_at(
    session: Session, request_id: str, event: str, since: Any = None
) -> tuple[Any, int]:
    """When the first attempt of `event` was made (at or after `since`: a question's own
    attempts), and how many there have been since."""
    where = [_attempts.c.request_id == request_id, _attempts.c.event == event]
    if since is not None:
        where.append(_attempts.c.created_at >= since)
    first, count = session.execute(
        select(func.min(_attempts.c.created_at), func.count()).where(*where)
    ).one()
    return first, int(count or 0)


def finish(session: Session, request_id: str, state: str) -> None:
    session.execute(
        update(_requests).where(_requests.c.id == request_id).values(callback_state=state)
    )
    session.commit()


def attempts(session: Session, request_id: str) -> list[Any]:
    return list(
        session.execute(
            select(_attempts).where(_attempts.c.request_id == request_id).order_by(_attempts.c.id)
        )
    )
