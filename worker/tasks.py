"""Thin tasks: claim the run, call the executor, record the outcome; and the sweep.

Every way a run can be stopped ends in the supervisor's group kill: cancel and timeout through
the watch, Flower's revoke-with-terminate (SIGTERM to the pool child) through `Terminated`, a
soft time limit through SoftTimeLimitExceeded. Hard kills are covered by leases and the reaper
(`worker.recovery.sweep`), which also runs once when a worker starts.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
from dataclasses import replace
from typing import Any, cast

from celery import shared_task
from celery.concurrency import get_implementation
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from runner_core.cgroups import hold_own_group, hold_per_thread, pids_root
from runner_core.error_codes import ErrorCode
from runner_core.logs import bind
from runner_core.queues import EXECUTE_RUN, SWEEP, task_label
from runner_core.results import RunEnd, RunError
from runner_core.run_pool import IDLE_KEY_SEC, RunDirPool
from runner_core.sandbox import sandbox_status
from runner_core.settings import DEMO_LLM_WARNING
from runner_core.skill_copy import installed_signatures
from runner_core.skills.memo import load_skill_cached
from runner_core.statuses import RunStatus
from runner_core.store import cancels, checkpoint, claim
from runner_core.store import runs as run_states
from runner_core.store.db import make_engine, make_sessionmaker, retry_unavailable
from runner_core.store.models import Run
from runner_core.sweep_mark import mark_of
from worker import context
from worker.composite import workflow as composite
from worker.composite.calls import calls_served
from worker.composite.workflow import is_composite
from worker.context import connect, events_of, sessions
from worker.dispatch import send_run
from worker.execution.executor import RunExecutor
from worker.execution.lease import Heartbeat, beat_interval, make_watch
from worker.execution.refill import Refiller
from worker.execution.run_layout import skill_copies, skill_source
from worker.execution.strays import become_subreaper
from worker.execution.turns import Resume, resume_input
from worker.hooks import observability  # noqa: F401  (connects its signal handlers)
from worker.hooks.termination import Terminated, terminable, terminating
from worker.interactive.tasks import ask_user, overdue_replies
from worker.recorder import record_end
from worker.recovery.leftovers import clear_leftovers
from worker.recovery.served_queues import served_queues
from worker.recovery.sweep import recover
from worker.recovery.sweep_clock import clock_of
from worker.webhook_tasks import overdue_callbacks

log = logging.getLogger(__name__)
_refiller = Refiller()
SOFT_TIME_LIMIT = RunError(
    ErrorCode.TIMEOUT, "the soft time limit was reached; the process group was killed"
)
TERMINATED = RunError(
    ErrorCode.CANCELED_BY_USER,
    "terminated (SIGTERM to the worker process); the process group was killed",
)
_LABEL = select(Run.skill_id, Run.engine, Run.request_id)  # runner_core.queues.task_label's


@worker_process_init.connect
def _hold_pids_group(**_kwargs) -> None:
    """A prefork pool process runs one command at a time: it moves into its own pids group
    now, so that its runs' processes are born there instead of joining it one by one."""
    settings = context.settings()
    root = pids_root()
    if settings.sandbox == "off" or not settings.run_processes_max or root is None:
        return
    try:
        hold_own_group(root, settings.run_processes_max)
    except OSError:  # its commands join the group as they start, as in a threads pool
        log.warning("pids group: this pool process cannot move into its own", exc_info=True)


@worker_process_init.connect
def _freeze_startup_objects(**_kwargs) -> None:
    """In each pool process: the loaded app's objects never need collecting, and a full
    collection over them pauses a run (as in the API's gunicorn workers)."""
    gc.freeze()


@worker_process_init.connect
def _adopt_orphans(**_kwargs) -> None:
    """Each pool process adopts its runs' orphans, so none outlives its run (worker.execution.strays)."""
    become_subreaper()


@worker_ready.connect
def _prepare_thread_pool(sender=None, **_kwargs) -> None:
    """A pool of threads runs the tasks in this process, which no pool process start reaches:
    the same preparation as each prefork pool process's, once here."""
    if isinstance(getattr(sender, "pool", None), get_implementation("threads")):
        gc.freeze()
        become_subreaper()
        hold_per_thread()  # each pool thread's commands are born in its own pids group


@worker_ready.connect
def _startup_reconciliation(**_kwargs) -> None:
    """At worker start: reap orphans, reconcile runs of dead workers (idempotent)."""
    settings = context.settings()
    engine = make_engine(settings.database_url)
    try:
        recover(settings, make_sessionmaker(engine), send_run, startup=True)
        clear_leftovers(settings, make_sessionmaker(engine))
    except Exception:  # never keep a worker from starting; the periodic sweep retries
        log.exception("startup reconciliation failed")
    finally:
        engine.dispose()
        checkpoint.forget(engine)  # the main process writes nothing more


@worker_ready.connect
def _warn_demo_llm(**_kwargs) -> None:
    """Say it loudly in the worker's log when the engine CLIs talk to the demo LLM."""
    settings = context.settings()
    if settings.demo_llm:
        log.warning(DEMO_LLM_WARNING, settings.demo_llm)


@worker_ready.connect
def _report_sandbox(**_kwargs) -> None:
    """Say once at start how runs are boxed here (a warning when bwrap cannot box them)."""
    settings = context.settings()
    status = sandbox_status(settings.sandbox, settings.sandbox_bwrap, settings.engine_network)
    if settings.sandbox == "auto" and status["box"] is None:
        log.warning("run box: bwrap not usable here, runs get resource limits only: %s", status)
    else:
        log.info("run box: %s", status)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@shared_task(name=EXECUTE_RUN, bind=True, max_retries=None)
def execute_run(self, run_id: str) -> str:
    """Claim and execute one run; a redelivered or duplicate message does nothing, and a run
    over the running limits stays queued while this message retries with a countdown."""
    settings = context.settings()

    def claim_it() -> tuple[str, Any]:
        with connect() as conn:
            outcome, run = claim.claim_run(
                conn,
                run_id,
                worker_name(),
                self.request.id,
                settings.max_running,
                settings.max_running_per_engine,
            )
            if outcome == claim.LIMITED:
                run_states.touch_dispatched(conn, run_id)
                run = conn.execute(_LABEL.where(Run.id == run_id)).first()  # for the retry
            return outcome, run

    # The database away: hold this message and try again, rather than drop it for the sweep to
    # send again after its grace (a restart would otherwise drain the whole queue meanwhile)
    outcome, run = retry_unavailable(claim_it, f"claim of run {run_id}", settings.lease_sec)
    if outcome == claim.LIMITED:
        # the retry is a new message: it carries the run's label in Flower, made from the
        # run's row as every sender makes it (apply_async's documented kwargsrepr option)
        label = task_label(run.skill_id, run.engine, run.request_id) if run is not None else {}
        raise self.retry(countdown=settings.limit_retry_sec, **label)
    if outcome == claim.SKIPPED:
        return _not_claimed(run_id)
    assert run is not None  # CLAIMED comes with the claimed row
    claimed = cast(Run, run)  # the row carries every column of Run as an attribute
    if claimed.engine is None and is_composite(load_skill_cached(skill_source(settings, claimed))):
        return composite.start(claimed)
    bind(request_id=claimed.request_id)  # every line about the run says which request
    away = clock_of(settings).database_away  # the sweep must not judge this lease at once
    executor = RunExecutor(
        settings,
        claimed,
        lambda pkg: make_watch(settings, connect, claimed, pkg, away),
        run.request_payload,
        lambda: _resume(claimed),
        events_of(claimed) if settings.events else None,
        unwinds=(SoftTimeLimitExceeded,),
        record_skill=lambda version, key: _ran_skill(claimed, version, key),
        cancel_error=lambda: _cancel_error(run_id),
    )
    with (
        terminable(run_id),
        Heartbeat(connect, run_id, beat_interval(settings), claimed.attempt, away),
        calls_served(claimed),
    ):
        status = _execute(executor)
    _refill_pool(executor)  # after the parent's next step started (worker.recorder)
    return status


def _ran_skill(run: Run, version: str | None, key: str | None) -> None:
    """The skill version the run runs and the cache key of its files, on its row."""
    with connect() as conn:
        run_states.ran_skill(conn, run.id, run.attempt, version, key)


def _cancel_error(run_id: str) -> RunError:
    """Why the run's cancel was asked: CANCELED_BY_USER, unless the request said otherwise."""
    with connect() as conn:
        return cancels.cancel_error_of(conn, run_id)


def _resume(run: Run) -> Resume | None:
    with connect() as conn:
        return resume_input(conn, run, context.settings().reply_timeout_max_sec)


def _not_claimed(run_id: str) -> str:
    """A run someone else has, or that ended; a queued run canceled meanwhile ends here."""
    with sessions()() as session:
        current = session.get(Run, run_id)
        if (
            current is not None
            and current.status == RunStatus.QUEUED
            and current.cancel_requested_at
        ):
            error = cancels.recorded_cancel_error(current)
            record_end(
                current,
                RunEnd.failed(error, RunStatus.CANCELED),
                "cancel",
                before=RunStatus.QUEUED,
                transition=lambda: cancels.cancel_queued(session, run_id, error),
                cut_short=False,  # it never started: the API answers from the row
            )
        log.info("run %s not claimed (status %s)", run_id, current.status if current else "missing")
    return "skipped"


def _refill_pool(executor: RunExecutor) -> None:
    """Once the run is recorded and announced: make the next run's directory ahead of time,
    on this process's refill thread, while Celery hands the next message over."""
    _refiller.submit(executor.refill_pool, f"run {executor.run.id}")


def _execute(executor: RunExecutor) -> str:
    run = executor.run
    try:
        outcome = executor.execute()
        if terminating() and outcome.status == RunStatus.FAILED:
            # SIGTERM landed inside a library (a database ping) that turned it into its own
            # error: the run was terminated, not broken
            raise Terminated()
        if outcome.status == RunStatus.WAITING_USER:
            return ask_user(run, executor.turn, outcome)
        # result/result.json is written (the executor's own document)
        recorded = record_end(
            run,
            outcome.end(),
            "turn_finished",
            cut_short=False,
            retry=True,
            advance_parent=composite.advance,
        )
        return recorded or outcome.status
    except (Terminated, SoftTimeLimitExceeded) as exc:
        # the supervisor's `finally` has already killed the process group
        if isinstance(exc, SoftTimeLimitExceeded):
            status, error = RunStatus.FAILED, SOFT_TIME_LIMIT
        else:
            status, error = RunStatus.CANCELED, TERMINATED
        # The signal may land after the run's real end was recorded (e.g. a worker stopped
        # while it announced the end): the guarded UPDATE decides, and only the call that
        # ended the run writes its result file, so a recorded success is never overwritten.
        end = replace(RunEnd.failed(error, status), token_usage=executor.tokens_cut_short())
        executor.publish_cut_short()  # nothing left to move once the end was recorded
        ended = record_end(run, end, "terminated", advance_parent=composite.advance)
        return ended or "recorded"
    except Exception as exc:
        # A failure outside the executor's own handling (e.g. its result could not be
        # recorded): end the run now rather than leave it `running` until its lease expires.
        log.exception("run %s: the task failed", run.id)
        error = RunError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        end = replace(RunEnd.failed(error), token_usage=executor.tokens_cut_short())
        executor.publish_cut_short()
        record_end(run, end, "crashed", advance_parent=composite.advance)
        return RunStatus.FAILED


@shared_task(name=SWEEP)
def sweep() -> dict:
    """Reconcile runs of gone workers, reap orphan groups, re-send lost queued runs, fail runs
    queued too long where no worker serves; drop the ready run directories of skills no longer
    run."""
    settings = context.settings()
    try:
        report = recover(
            settings, sessions(), send_run, served=lambda: served_queues(context.app())
        )
    except OperationalError:
        clock_of(settings).database_away()  # the next sweep to reach it waits a lease
        raise
    report["auto_replied"] = overdue_replies()
    report["callbacks"] = overdue_callbacks()
    report["leftovers"] = clear_leftovers(settings, sessions())
    try:
        RunDirPool(settings.run_pool_dir, settings.run_pool).prune_idle(IDLE_KEY_SEC)
        copies = skill_copies(settings)
        if copies is not None:  # only the installed skills' current versions are linked from
            copies.prune(installed_signatures(settings.skills_dir))
    except OSError:
        log.warning("run pool / skill copies prune failed", exc_info=True)
    mark_of(settings.broker_url).swept()  # /healthz reports how long ago
    return report
