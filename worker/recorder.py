"""The one place a run's end is recorded, whatever ended it: its own finish, a timeout, a cancel,
an operator's revoke, a crash, a lost lease, a cancel while it asked, a composite's last step.

`record_end` makes the guarded transition (only one caller ever wins it), then, for the winner
only: the result document of a run cut short, the terminal event, the finish notice that wakes
long polls, the metrics, the webhooks and the composite parent's notice. A failed run whose
skill declares `retry` is queued again instead (worker.skill_retry).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from runner_core.metrics import record_run_end, record_tokens
from runner_core.results import RunEnd, write_failure
from runner_core.statuses import RunStatus
from runner_core.store import callbacks
from runner_core.store import runs as run_states
from runner_core.store.db import retry_unavailable
from runner_core.store.models import Run
from runner_core.tokens import turn_tokens
from runner_core.workspace import RunPaths
from worker import context
from worker.context import connect, events_of, finished
from worker.dispatch import send_advance
from worker.skill_retry import retry_failed

log = logging.getLogger(__name__)
# How long a run's finish is retried while the database does not answer, in leases: past one
# lease the sweep may take the run over, and the finish's attempt guard then refuses it.
FINISH_RETRY_LEASES = 2


def record_end(
    run: Run,
    end: RunEnd,
    trigger: str,
    *,
    before: str = RunStatus.RUNNING,
    transition: Callable[[], bool] | None = None,
    cut_short: bool = True,
    retry: bool = False,
    advance_parent: Callable[[str, str], object] | None = None,
) -> str | None:
    """Record `end` for `run`; returns the status recorded, QUEUED when the run was queued again
    for its skill's `retry`, or None when someone else ended the run first.

    `transition` is the guarded UPDATE that ends it (default: running -> end.status for this
    attempt, retried while the database is away); `cut_short`: the run wrote no result document
    of its own, so one is written from `end`; `advance_parent`: a composite parent's next steps
    start in this process with it (a run's own task: worker.composite.advance), else an
    `advance` message is sent."""
    if retry and end.status == RunStatus.FAILED and retry_failed(run, _dict(end.error)):
        return RunStatus.QUEUED
    due: list[str] | None = None  # callbacks scheduled with the end (None: not yet)
    if transition is None:
        ended, due = _finish(run, end)()
    else:
        ended = transition()
    if not ended:
        finished().publish(run.id)  # whoever ended it announced it; a long poll may re-read
        return None
    if cut_short:
        write_failure(
            RunPaths(context.settings().runs_dir / run.id), end.status, _dict(end.error) or {}
        )
    _announce(run, before, end, trigger, due)
    _notify_parent(run, advance_parent)
    return end.status


def _finish(run: Run, end: RunEnd) -> Callable[[], tuple[bool, list[str]]]:
    """The run's own finish, and in the same transaction its callbacks made `scheduled`
    (most runs have none: one statement, no second connection or commit)."""

    def finish_once() -> tuple[bool, list[str]]:
        with connect() as conn:
            ended = run_states.finish_run(
                conn,
                run.id,
                end.status,
                error=_dict(end.error),
                warnings=list(end.warnings) if end.warnings is not None else None,
                timings=_dict(end.timings),
                session_handle=end.session_handle,
                token_usage=_dict(end.token_usage),
                attempt=run.attempt,
                commit=False,
            )
            due = callbacks.schedule_run(conn, run.id) if ended else []  # commits
            conn.commit()
            return ended, due

    # a database away for a while must not lose the run (a late finish is safe: it lands only
    # while the run is still this attempt's)
    budget = FINISH_RETRY_LEASES * context.settings().lease_sec
    return lambda: retry_unavailable(finish_once, f"finish of run {run.id}", budget)


def _announce(
    run: Run, before: str, end: RunEnd, trigger: str, due: list[str] | None = None
) -> None:
    """The terminal event, then the finish notice (long polls wake on the latter), the metrics
    (duration, failures by code) and the webhooks (`due`: already scheduled); none of them may
    undo the recorded end."""
    error = _dict(end.error)
    turn = turn_tokens(run.token_usage, _dict(end.token_usage))
    try:
        events_of(run).state_changed(
            before, end.status, trigger, error=error, terminal=True, token_usage=turn
        )
    except Exception as exc:  # the row is the truth; its event log must not stop the end
        log.warning("run %s: the terminal event was not recorded: %s", run.id, exc)
    finished().publish(run.id)
    code = (error or {}).get("code")
    ids = {"run_id": run.id, "request_id": run.request_id}
    log.info(
        "run %s ended %s (%s)%s",
        run.id,
        end.status,
        trigger,
        f": {code}" if code else "",
        extra=ids,
    )
    record_run_end(run.engine, run.skill_id, end.status, code, run.started_at, datetime.now(UTC))
    record_tokens(run.engine, run.model, run.owner, turn)
    from worker.webhook_tasks import callbacks_for_end  # (its module imports the recorder)

    try:
        callbacks_for_end(run.id, due)
    except Exception:  # the sweep sends what is due
        log.warning("callbacks of run %s not scheduled", run.id, exc_info=True)


def _notify_parent(run: Run, advance: Callable[[str, str], object] | None) -> None:
    """A child of a composite: its parent's `advance` (a call of an index-file composite is
    answered by its parent's own worker, which sees it end)."""
    parent_id = getattr(run, "parent_run_id", None)
    if not parent_id or "@" in (run.step_name or ""):
        return
    if advance is not None:
        try:  # here, in the child's process: no broker round trip before the next step starts
            advance(parent_id, run.id)
            return
        except Exception:
            log.warning("advance of %s failed; sent as a task", parent_id, exc_info=True)
    try:
        send_advance(parent_id)
    except Exception as exc:  # the sweep advances running composites on every pass
        log.warning("advance of %s not sent: %s", parent_id, exc)


def _dict(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(value) if value is not None else None
