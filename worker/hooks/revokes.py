"""Operator revokes (Flower, `celery control revoke`) end runs exactly like POST .../cancel.

A revoke is a broadcast that each worker's main process adds to its revoked set; Celery itself
only drops the message when a worker takes it, and leaves a running task alone unless asked to
terminate it. So each worker checks its revoked set every REVOKE_CHECK_SEC while it holds a task
(every IDLE_REVOKE_CHECK_SEC when it holds none, so an idle worker sleeps; a task received
brings the next check forward), and for a task id
that is the message of an active run: sets the run's cancel flag (the run's watch kills its
process group within half a second) and ends a queued or waiting run at once, with its terminal
event. Every step is a guarded UPDATE, so several workers hearing the same revoke, a revoke with
terminate (SIGTERM to the pool process, see worker.tasks) and a user's cancel never conflict;
a canceled run is no longer queued, so the sweep never sends it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial

from celery import bootsteps
from celery.signals import task_received, task_revoked
from celery.worker import state as worker_state
from sqlalchemy import select

from runner_core.error_codes import ErrorCode
from runner_core.queues import EXECUTE_RUN
from runner_core.results import RunEnd, RunError
from runner_core.statuses import ACTIVE_STATUSES, RunStatus
from runner_core.store import cancels
from runner_core.store.models import Run
from worker import context
from worker.context import sessions
from worker.recorder import record_end

log = logging.getLogger(__name__)
REVOKE_CHECK_SEC = 0.5
# with no task of this worker received or running (a queued run's message is dropped, and its
# run ended, by `_on_task_revoked` when it arrives)
IDLE_REVOKE_CHECK_SEC = 5.0
REVOKED = RunError(
    ErrorCode.CANCELED_BY_USER, "revoked by an operator (Flower or celery control revoke)"
)


def cancel_revoked(task_ids: Iterable[str]) -> list[str]:
    """Cancel the active runs whose current message is one of `task_ids`; returns their ids."""
    ids = list(task_ids)
    if not ids:
        return []
    canceled = []
    with sessions()() as session:
        runs = session.scalars(
            select(Run).where(Run.celery_task_id.in_(ids), Run.status.in_(ACTIVE_STATUSES))
        ).all()
        for run in runs:
            before = run.status
            if not cancels.request_cancel(session, run.id, REVOKED):
                continue  # ended meanwhile
            canceled.append(run.id)
            log.info(
                "run %s: task %s revoked by an operator",
                run.id,
                run.celery_task_id,
                extra={"run_id": run.id, "request_id": run.request_id},
            )
            # a running run is ended by its own watch; one with no process ends here
            if before != RunStatus.RUNNING:
                error = cancels.cancel_error_of(session, run.id)  # an earlier reason stays
                record_end(
                    run,
                    RunEnd.failed(error, RunStatus.CANCELED),
                    "revoke",
                    before=before,
                    transition=partial(cancels.cancel_idle, session, run.id, error),
                    cut_short=False,  # no process wrote anything: the API answers from the row
                )
    return canceled


class RevokeWatch(bootsteps.StartStopStep):
    """A worker step: new ids in the worker's revoked set cancel their runs.

    That set, `celery.worker.state.revoked`, is Celery's internal worker state, not public API:
    no public hook tells a worker that a revoke came for a message it has not reached or a
    task it runs (the `task_revoked` signal below fires only when it drops or terminates one).
    So the step is kept behind SKILL_RUNNER_REVOKE_WATCH for what it buys (bench/RESULTS.md,
    revoke-watch), and tests/unit/test_revoke_watch.py fails when Celery changes the set."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, parent, **kwargs) -> None:
        super().__init__(parent, **kwargs)
        self.seen: set[str] = set()
        self.timer_ref = None
        self.idle = False  # the next check is an idle one (IDLE_REVOKE_CHECK_SEC away)

    def include_if(self, parent) -> bool:
        """Celery's bootstep hook: the worker leaves the step out with the setting off."""
        return context.settings().revoke_watch

    def start(self, parent) -> None:
        self.timer = parent.timer
        _watches.append(self)
        self._schedule()

    def stop(self, parent) -> None:
        if self in _watches:
            _watches.remove(self)
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None

    def wake(self) -> None:
        """A task arrived: a run revoked right after an idle spell is checked within
        REVOKE_CHECK_SEC, not at the end of the idle wait."""
        if self.idle and self.timer_ref is not None:
            self.timer_ref.cancel()
            self._schedule(busy=True)

    def _schedule(self, busy: bool = False) -> None:
        """The next check: soon while a task of this worker runs, rarely when none does."""
        # the sets `revoked` is read against
        busy = busy or bool(worker_state.active_requests or worker_state.reserved_requests)
        self.idle = not busy
        wait = REVOKE_CHECK_SEC if busy else IDLE_REVOKE_CHECK_SEC
        self.timer_ref = self.timer.call_after(wait, self._check_and_schedule, priority=10)

    def _check_and_schedule(self) -> None:
        try:
            self.check()
        finally:
            if self.timer_ref is not None:
                self._schedule()

    def check(self) -> None:
        revoked = set(worker_state.revoked)
        fresh = revoked - self.seen
        self.seen = revoked  # ids Celery has purged from its set are forgotten here too
        if not fresh:
            return
        try:
            cancel_revoked(fresh)
        except Exception:  # a database away: the message is still dropped when it arrives
            log.exception("canceling the runs of revoked tasks failed")
            self.seen -= fresh  # try again on the next check


_watches: list[RevokeWatch] = []  # the started watch of this worker (one per worker process)


@task_received.connect
def _on_task_received(**_kwargs) -> None:
    for watch in list(_watches):
        watch.wake()


@task_revoked.connect
def _on_task_revoked(sender=None, request=None, expired=False, **_kwargs) -> None:
    """A revoked execute_run message was dropped (or its task terminated): the run is ended
    (nothing to do when the check above already did)."""
    if expired or getattr(sender, "name", None) != EXECUTE_RUN or request is None:
        return
    try:
        cancel_revoked([request.id])
    except Exception:
        log.exception("canceling the run of revoked task %s failed", request.id)
