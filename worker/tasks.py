"""Thin tasks: load the run, call the executor, record the outcome."""
from __future__ import annotations

import logging
import os
import signal
import socket
import time
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init

from runner_core.queues import queue_for
from runner_core.skills import SkillRegistry
from runner_core.store import runs as run_states
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Run, utcnow
from worker.celery_app import app, settings
from worker.executor import RunExecutor
from worker.supervisor import Watch, group_alive, kill_group

log = logging.getLogger(__name__)
_sessions = {"pid": None, "factory": None}


class Terminated(BaseException):
    """Raised in the task when the pool child gets SIGTERM (e.g. Flower revoke-terminate)."""


@worker_process_init.connect
def _child_init(**_kwargs) -> None:
    def _on_sigterm(_signum, _frame):
        raise Terminated()
    signal.signal(signal.SIGTERM, _on_sigterm)


def sessions():
    """A sessionmaker for this process (engines must not cross a fork)."""
    if _sessions["pid"] != os.getpid():
        _sessions["factory"] = make_sessionmaker(make_engine(settings.database_url))
        _sessions["pid"] = os.getpid()
    return _sessions["factory"]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@app.task(name="worker.tasks.execute_run", bind=True)
def execute_run(self, run_id: str) -> str:
    """Claim and execute one run; a redelivered or duplicate message does nothing."""
    factory = sessions()
    with factory() as session:
        if not run_states.claim_run(session, run_id, worker_name(), self.request.id):
            run = session.get(Run, run_id)
            if run is not None and run.status == "queued" and run.cancel_requested_at:
                run_states.cancel_queued(session, run_id)
            log.info("run %s not claimed (status %s)", run_id, run.status if run else "missing")
            return "skipped"
        run = session.get(Run, run_id)
    outcome_status = "failed"
    try:
        executor = RunExecutor(settings, run, lambda pkg: make_watch(run, pkg))
        outcome = executor.execute()
        outcome_status = outcome.status
        with factory() as session:
            run_states.finish_run(session, run_id, outcome.status, error=outcome.error,
                                  warnings=outcome.warnings, timings=outcome.timings,
                                  session_handle=outcome.session_handle)
    except (Terminated, SoftTimeLimitExceeded) as exc:
        code = "TIMEOUT" if isinstance(exc, SoftTimeLimitExceeded) else "CANCELED_BY_USER"
        status = "failed" if code == "TIMEOUT" else "canceled"
        with factory() as session:
            run_states.finish_run(session, run_id, status,
                                  error={"code": code, "message": "ended by the worker: " + code})
        outcome_status = status
    return outcome_status


def make_watch(run: Run, pkg) -> Watch:
    """Deadline from the skill (capped by the server maximum) and a heartbeat/cancel poll."""
    timeout = (pkg.manifest.automation.timeout_sec if pkg and pkg.manifest else None)
    timeout = min(timeout or settings.default_timeout_sec, settings.max_timeout_sec)
    override = run.runtime_options.get("timeout_sec")
    if isinstance(override, int) and override > 0:
        timeout = min(override, settings.max_timeout_sec)
    started = run.started_at.timestamp() if run.started_at else time.time()
    deadline = time.monotonic() + max(0.0, started + timeout - time.time())
    factory = sessions()

    def poll(pgid: int) -> bool:
        with factory() as session:
            return run_states.beat(session, run.id, pgid)
    return Watch(deadline=deadline, poll=poll)


@app.task(name="worker.tasks.sweep")
def sweep() -> dict:
    """Re-enqueue queued runs nobody claimed; fail runs whose lease expired; reap orphans."""
    factory = sessions()
    requeued = reconciled = 0
    with factory() as session:
        for run in run_states.stale_queued(session, timedelta(seconds=settings.sweep_grace_sec)):
            result = app.send_task("worker.tasks.execute_run", args=[run.id],
                                   queue=_queue_of(session, run))
            run_states.mark_enqueued(session, run.id, result.id)
            requeued += 1
        for run in run_states.expired_leases(session, timedelta(seconds=settings.lease_sec)):
            if run.pgid and group_alive(run.pgid):
                kill_group(run.pgid, 1.0)
            if run_states.reconcile_interrupted(session, run.id):
                reconciled += 1
    return {"requeued": requeued, "reconciled": reconciled}


def _queue_of(session, run: Run) -> str:
    pkg = SkillRegistry(settings.skills_dir).get(run.skill_id)
    return queue_for(run.engine, pkg.manifest.entrypoint.type if pkg and pkg.manifest else "script")
