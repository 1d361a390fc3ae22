"""The questions of interactive runs in SQL: asking, answering (by a person or by the timeout)
and reading them back. Each transition is guarded, so racing replies and a reply racing the
auto-decision leave exactly one answer and start exactly one next turn."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Table, insert, select, update
from sqlalchemy.orm import Session

from runner_core.interaction import Pending
from runner_core.runtime_options import RuntimeOptions
from runner_core.statuses import RunStatus
from runner_core.store.models import Interaction, Run, utcnow

_runs, _asked = cast(Table, Run.__table__), cast(Table, Interaction.__table__)
PENDING, ANSWERED, AUTO, CANCELED = "pending", "answered", "auto", "canceled"
# reply outcomes
ACCEPTED, DUPLICATE, NOT_WAITING, STALE = "accepted", "duplicate", "not_waiting", "stale"


def ask(
    conn: Session | Connection,
    run_id: str,
    turn: int,
    pending: Pending,
    finish: dict[str, Any],
) -> int | None:
    """running -> waiting_user with a new pending question, in one transaction; `finish` holds
    the turn's warnings, timings, session_handle and token_usage. None when the run was no
    longer running or a cancel was asked for meanwhile: nothing is written then."""
    now = utcnow()
    interaction_id = conn.execute(
        insert(_asked)
        .values(run_id=run_id, turn=turn, state=PENDING, created_at=now, **asdict(pending))
        .returning(_asked.c.id)
    ).scalar_one()
    result = conn.execute(
        update(_runs)
        .where(
            _runs.c.id == run_id,
            _runs.c.status == RunStatus.RUNNING,
            _runs.c.cancel_requested_at.is_(None),
        )
        .values(
            status=RunStatus.WAITING_USER,
            pending_interaction_id=interaction_id,
            interaction_count=_runs.c.interaction_count + 1,
            updated_at=now,
            pgid=None,
            **{k: v for k, v in finish.items() if v is not None},
        )
    )
    if cast(CursorResult, result).rowcount != 1:
        conn.rollback()
        return None
    conn.commit()
    return int(interaction_id)


def pending_document(row: Any) -> dict[str, Any]:
    """The API's `pending` object of an interaction row."""
    return {
        "interaction_id": row.id,
        "kind": row.kind,
        "prompt": row.prompt,
        "options": row.options,
        # Skill-Runner's clients read the options from ui_hints
        "ui_hints": {**(row.ui_hints or {}), "options": row.options}
        if row.options
        else row.ui_hints,
        "default_decision_policy": row.default_decision_policy,
        "required_fields": row.required_fields,
        "context": row.context,
    }


def get(conn: Session | Connection, run_id: str, interaction_id: int | None) -> Any:
    """One interaction of a run (None when the id is not the run's)."""
    if interaction_id is None:
        return None
    return conn.execute(
        select(_asked).where(_asked.c.id == interaction_id, _asked.c.run_id == run_id)
    ).first()


def history(conn: Session | Connection, run_id: str) -> list[Any]:
    """Every question of a run and its answer, in the order they were asked."""
    return list(conn.execute(select(_asked).where(_asked.c.run_id == run_id).order_by("id")))


def last_answered(conn: Session | Connection, run_id: str) -> Any:
    """The latest question that was answered (by a person or the timeout): the next turn's
    input."""
    return conn.execute(
        select(_asked)
        .where(_asked.c.run_id == run_id, _asked.c.state.in_((ANSWERED, AUTO)))
        .order_by(_asked.c.id.desc())
        .limit(1)
    ).first()


def last_asked_at(conn: Session | Connection, run_id: str) -> datetime | None:
    """When the run's latest question was asked (its turn ended then), or None."""
    return conn.execute(
        select(_asked.c.created_at)
        .where(_asked.c.run_id == run_id)
        .order_by(_asked.c.id.desc())
        .limit(1)
    ).scalar()


@dataclass(frozen=True)
class Answer:
    response: Any
    idempotency_key: str | None = None
    auto: bool = False
    task_id: str | None = None  # of the execute_run message the caller sends when accepted
    sha256: str | None = None  # of what the reply sent, kept with its key
    reply: dict[str, Any] | None = None  # the API's answer, kept with its key for a repeat


def answer(session: Session, run_id: str, interaction_id: int, given: Answer) -> str:
    """Record the answer and put the run back in the queue: ACCEPTED (the caller sends the next
    turn), DUPLICATE (this idempotency key was already accepted: send nothing, `replied` has
    what it sent and was answered), NOT_WAITING or STALE."""
    if given.idempotency_key and replied(session, run_id, given.idempotency_key):
        return DUPLICATE
    now = utcnow()
    answered = session.execute(
        update(_asked)
        .where(
            _asked.c.id == interaction_id,
            _asked.c.run_id == run_id,
            _asked.c.state == PENDING,
        )
        .values(
            state=AUTO if given.auto else ANSWERED,
            response=given.response,
            idempotency_key=given.idempotency_key,
            reply_sha256=given.sha256,
            reply_answer=given.reply,
            answered_at=now,
        )
    )
    values: dict[str, Any] = {
        "status": RunStatus.QUEUED,
        "pending_interaction_id": None,
        "queued_at": now,
        "dispatched_at": now,
        "updated_at": now,
        "celery_task_id": given.task_id,
    }
    if given.auto:
        values.update(
            auto_decision_count=_runs.c.auto_decision_count + 1, last_auto_decision_at=now
        )
    requeued = (
        session.execute(
            update(_runs)
            .where(
                _runs.c.id == run_id,
                _runs.c.status == RunStatus.WAITING_USER,
                _runs.c.pending_interaction_id == interaction_id,
                _runs.c.cancel_requested_at.is_(None),
            )
            .values(**values)
        )
        if cast(CursorResult, answered).rowcount == 1
        else None
    )
    if requeued is not None and cast(CursorResult, requeued).rowcount == 1:
        session.commit()
        return ACCEPTED
    session.rollback()
    if given.idempotency_key and replied(session, run_id, given.idempotency_key):
        return DUPLICATE  # a racing request with the same key won
    status = session.scalar(select(_runs.c.status).where(_runs.c.id == run_id))
    return STALE if status == RunStatus.WAITING_USER else NOT_WAITING


def replied(session: Session, run_id: str, key: str) -> Any:
    """The question a reply with this idempotency key answered for the run (its id,
    reply_sha256 and reply_answer), or None when no reply used the key."""
    return session.execute(
        select(_asked.c.id, _asked.c.reply_sha256, _asked.c.reply_answer).where(
            _asked.c.run_id == run_id, _asked.c.idempotency_key == key
        )
    ).first()


def cancel_pending(conn: Session | Connection, run_id: str) -> None:
    """A canceled run's open question is closed (in the caller's transaction)."""
    conn.execute(
        update(_asked)
        .where(_asked.c.run_id == run_id, _asked.c.state == PENDING)
        .values(state=CANCELED)
    )


def overdue(session: Session, now: datetime, cap_sec: int, limit: int = 500) -> list[Any]:
    """Waiting runs with auto-reply on whose question is older than their reply timeout (the
    first `limit` of them). Every waiting run with auto-reply is looked at: the oldest
    questions are not the first due (timeouts differ), and runs without it are left out in
    SQL, so abandoned conversations never hide one that is due."""
    auto_reply = _runs.c.runtime_options["interactive_auto_reply"].as_boolean()
    rows = session.execute(
        select(_runs.c.id, _runs.c.runtime_options, _asked.c.id.label("interaction_id"))
        .join(_asked, _asked.c.id == _runs.c.pending_interaction_id)
        .where(_runs.c.status == RunStatus.WAITING_USER, auto_reply.is_(True))
        .order_by(_asked.c.created_at)
        .add_columns(_asked.c.created_at)
        .execution_options(yield_per=500)
    )
    due = []
    for row in rows:
        options = RuntimeOptions.from_dict(row.runtime_options)
        if not options.interactive_auto_reply:
            continue
        created = (
            row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=now.tzinfo)
        )
        if created + timedelta(seconds=options.reply_timeout(cap_sec)) <= now:
            due.append(row)
            if len(due) >= limit:
                break
    rows.close()
    return due
