"""The pool of threads the one-process `serve` runs its runs on: Celery's, plus what a cold
shutdown (a second Ctrl-C, SIGQUIT) needs there.

Celery ends a cold shutdown by terminating each active task (`terminate_job`), which a pool of
threads cannot do: its TaskPool raised NotImplementedError in the middle of the shutdown, the
runs were left `running` in the database and their commands (children in groups of their own)
went on after the service had exited. Here the cold stop sets the cancel flag of every run this
process is running: each run's watch kills its process group within half a second and the run
ends `canceled`, recorded, before the pool's threads are joined. A warm stop still lets the runs
finish.
"""

from __future__ import annotations

import logging

from celery.concurrency.thread import TaskPool
from celery.worker import state as worker_state
from sqlalchemy import select

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import RunStatus
from runner_core.store.cancels import request_cancel
from runner_core.store.models import Run
from worker.context import sessions

log = logging.getLogger(__name__)
# asked for by whoever stopped the service cold (a second Ctrl-C, SIGQUIT)
COLD_STOP = RunError(ErrorCode.CANCELED_BY_USER, "canceled by the service's cold stop")


def cancel_runs_of(worker: str) -> list[str]:
    """Set the cancel flag of every run `worker` (host:pid) is running; returns their ids."""
    with sessions()() as session:
        running = session.scalars(
            select(Run.id).where(Run.worker == worker, Run.status == RunStatus.RUNNING)
        ).all()
        return [run_id for run_id in running if request_cancel(session, run_id, COLD_STOP)]


class RunThreadPool(TaskPool):
    """Celery's pool of threads, whose cold stop cancels its runs instead of failing."""

    def terminate_job(self, pid, signal=None) -> None:
        """A thread cannot be terminated: a cold stop cancels the runs in `on_stop`, and a
        revoke with terminate reaches its run through the revoke watch (worker.hooks.revokes)."""

    def on_stop(self) -> None:
        if worker_state.should_terminate:  # a cold shutdown: do not wait for the runs' ends
            from worker.tasks import worker_name

            try:
                canceled = cancel_runs_of(worker_name())
            except Exception as exc:  # the database is away: the runs end as their leases do
                log.warning("cold shutdown: the running runs were not canceled: %s", exc)
            else:
                if canceled:
                    log.warning(
                        "cold shutdown: canceling %d running run(s): %s",
                        len(canceled),
                        ", ".join(canceled),
                    )
        super().on_stop()
