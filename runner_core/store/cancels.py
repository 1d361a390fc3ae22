"""Cancel requests, and the ends of the runs they stop that hold no process.

A cancel request flags an active run (`cancel_requested_at`); a cancel nobody asked of the run
itself also says why (`cancel_error`: the error the run is to end with), e.g. its composite
parent ended, or an operator revoked it. The flag is all the worker of a running run sees: it
kills the process group and then records the end with `cancel_error_of`, so the reason
survives the kill. The first reason stays: a later request only refreshes the flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import ACTIVE_STATUSES, IDLE_STATUSES, RunStatus
from runner_core.store import interactions
from runner_core.store.models import Run, utcnow

CANCELED = RunError(ErrorCode.CANCELED_BY_USER, "canceled by user")  # a user's own cancel
MAX_NESTING = 32  # composite levels a cancel follows down


def cancel_error_of(session: Any, run_id: str, fallback: RunError = CANCELED) -> RunError:
    """The error a run whose cancel was requested ends with: the reason its request recorded,
    else `fallback` (a user's cancel). `session`: a Session or a Connection."""
    stored = session.scalar(select(Run.cancel_error).where(Run.id == run_id))
    return RunError.from_dict(stored) if isinstance(stored, dict) and stored else fallback


def recorded_cancel_error(run: Run, fallback: RunError = CANCELED) -> RunError:
    """`cancel_error_of` for a run row already read."""
    stored = run.cancel_error
    return RunError.from_dict(stored) if isinstance(stored, dict) and stored else fallback


def parent_ended(parent: Run, status: str, error: Mapping[str, Any] | None) -> RunError:
    """Why the active children of a composite are canceled when it ends with `status` and
    `error`: CANCELED_BY_USER when it was canceled (by its user, or an operator), else
    CANCELED_BY_PARENT; the message and details name the parent and its error."""
    code, message = (error or {}).get("code"), (error or {}).get("message")
    named = f"its parent composite (request {parent.request_id}, skill {parent.skill_id})"
    if status == RunStatus.CANCELED:
        text = f"canceled with {named}: {message or 'canceled'}"
    elif status == RunStatus.FAILED:
        text = f"canceled because {named} failed with {code}: {message}"
    elif status == RunStatus.SUCCEEDED:
        text = f"canceled because {named} succeeded without it"
    elif status == RunStatus.QUEUED:  # its skill's `retry`: the next attempt starts afresh
        text = f"canceled because {named} ended its attempt {parent.attempt} to run again"
    else:
        text = f"canceled because {named} stopped ({status})"
    user = status == RunStatus.CANCELED and code == ErrorCode.CANCELED_BY_USER
    details = {
        "parent_request_id": parent.request_id,
        "parent_status": status,
        "parent_error": {"code": code, "message": message} if error else None,
    }
    return RunError(
        ErrorCode.CANCELED_BY_USER if user else ErrorCode.CANCELED_BY_PARENT,
        text,
        {"details": details},
    )


def request_cancel(session: Session, run_id: str, reason: RunError | None = None) -> bool:
    """Set the cancel flag on an active run, with `reason` (None: the user's own cancel) unless
    an earlier request gave one. False when the run is already terminal."""
    now = utcnow()
    active = (Run.id == run_id, Run.status.in_(ACTIVE_STATUSES))
    flagged = 0
    if reason is not None:
        flagged = _rows(
            session.execute(
                update(Run)
                .where(*active, Run.cancel_requested_at.is_(None))
                .values(cancel_requested_at=now, cancel_error=reason.as_dict(), updated_at=now)
            )
        )
    if not flagged:
        flagged = _rows(
            session.execute(
                update(Run).where(*active).values(cancel_requested_at=now, updated_at=now)
            )
        )
    session.commit()
    return flagged == 1


def request_cancel_descendants(
    session: Session, run_id: str, reason: RunError | None = None
) -> int:
    """Set the cancel flag, with `reason`, on the active children of a run, their children, ...
    (a composite's steps): queued ones are then refused by the claim, running ones killed by
    their worker. One already flagged keeps its own reason. Returns how many were flagged;
    committed."""
    flagged, parents, now = 0, [run_id], utcnow()
    values: dict[str, Any] = {"cancel_requested_at": now, "updated_at": now}
    if reason is not None:
        values["cancel_error"] = reason.as_dict()
    for _ in range(MAX_NESTING):
        active = (Run.parent_run_id.in_(parents), Run.status.in_(ACTIVE_STATUSES))
        flagged += _rows(
            session.execute(
                update(Run)
                .where(*active, Run.cancel_requested_at.is_(None))
                .values(**values)
                .execution_options(synchronize_session=False)
            )
        )
        parents = list(session.scalars(select(Run.id).where(*active)))
        if not parents:
            break
    session.commit()
    return flagged


def cancel_queued(session: Session, run_id: str, error: RunError | None = None) -> bool:
    """queued -> canceled with `error` (default: the reason its cancel request recorded)."""
    return _cancel_idle(session, run_id, (RunStatus.QUEUED,), error)


def cancel_idle(session: Session, run_id: str, error: RunError | None = None) -> bool:
    """queued or waiting_user (no process runs for either) -> canceled with `error` (default:
    the reason its cancel request recorded)."""
    return _cancel_idle(session, run_id, IDLE_STATUSES, error)


def _cancel_idle(
    session: Session, run_id: str, statuses: tuple[str, ...], error: RunError | None
) -> bool:
    error = error or cancel_error_of(session, run_id)
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.in_(statuses))
        .values(
            status=RunStatus.CANCELED,
            finished_at=now,
            updated_at=now,
            error_code=error.code,
            error=error.as_dict(),
            pending_interaction_id=None,
        )
    )
    ended = _rows(result) == 1
    if ended:
        interactions.cancel_pending(session, run_id)
    session.commit()
    return ended


def _rows(result: Any) -> int:
    return cast(CursorResult, result).rowcount
