"""Recovery: the periodic sweep and the startup reconciliation of runs whose worker is gone.

- running pipeline composites (they hold no process, so no lease): an `advance` each pass, the
  backstop for a step-end callback that was lost;
- running runs whose worker is gone (lease expired, or on this host its process is dead):
  their process group is reaped, then the run is failed ORCHESTRATOR_RESTART_INTERRUPTED
  (failed_reconciled) or, when the skill declares `retries`, queued again;
- ended runs that still record a group on this host: the group is reaped;
- queued runs whose message is older than the grace period and no longer in the broker (at two
  looks 0.3 s apart: a message a worker has just popped shows as reserved a moment later): the
  message is sent again (a lost broker message never loses an accepted run; on Redis a run
  still waiting behind a backlog is recognised and left alone, see worker.recovery.broker_view);
- queued runs still waiting SKILL_RUNNER_QUEUE_UNSERVED_SEC after they were first sent, on a
  queue no live worker consumes (asked of the workers, worker.recovery.served_queues): failed
  QUEUE_NOT_SERVED; a run waiting behind a backlog on a served queue is left alone;
- jobs still waiting for their input upload after SKILL_RUNNER_UPLOAD_WAIT_SEC: failed
  UPLOAD_TIMEOUT;
- at startup, waiting_user runs keep waiting with a session handle, else SESSION_RESUME_FAILED.

Every run this ends is recorded by worker.recorder, as any other end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial

from runner_core.engines import engine_skill_dirs
from runner_core.error_codes import ErrorCode
from runner_core.queues import RUN_QUEUES
from runner_core.results import RunEnd, RunError
from runner_core.settings import Settings
from runner_core.skills.memo import load_skill_cached
from runner_core.statuses import RunStatus
from runner_core.store import recovery as rec
from runner_core.store import runs as run_states
from runner_core.store.models import Run, utcnow
from runner_core.workspace import find_snapshot
from worker.context import events_of
from worker.dispatch import queue_of, send_advance
from worker.execution.lease import aware, beat_interval
from worker.execution.run_layout import skill_source
from worker.recorder import record_end
from worker.recovery.broker_view import BrokerView, read_broker
from worker.recovery.reaper import (
    FOREIGN,
    GONE,
    KILLED,
    parse_worker,
    pid_alive,
    reap_group,
    this_host,
)
from worker.recovery.sweep_clock import clock_of

log = logging.getLogger(__name__)
RELOOK_SEC = 0.3  # before a message the broker seems not to hold is sent again
Send = Callable[[Run], str]  # sends execute_run for a run, returns the task id
Served = Callable[[], "set[str] | None"]  # the queues live workers consume (None: unknown)


def recover(
    settings: Settings,
    sessions: Callable,
    send: Send,
    startup: bool = False,
    served: Served | None = None,
) -> dict:
    """One pass; safe to run concurrently from several workers (guarded transitions).
    `served`: how to ask which queues live workers consume (None: runs on unserved queues are
    not judged, as at a worker's start, before it consumes anything)."""
    counts = {
        "reconciled": 0,
        "requeued_retry": 0,
        "reaped": 0,
        "resent": 0,
        "kept_waiting": 0,
        "failed_waiting": 0,
        "upload_timeouts": 0,
        "still_queued": 0,
        "composites_advanced": 0,
        "queue_not_served": 0,
        "long_queued_served": 0,
    }
    with sessions() as session:
        running = rec.runs_in(session, RunStatus.RUNNING)
        by_age = clock_of(settings).judge_leases()  # not right after the database was away
        for run in running:
            if run.heartbeat_at is None and pipeline_parent(settings, run):
                counts["composites_advanced"] += _advance(run)
            elif worker_gone(settings, run, by_age):
                _recover_running(settings, session, run, send, counts)
        for run in rec.ended_with_group(session, this_host()):
            if _reap(settings, run) in (GONE, KILLED, FOREIGN):
                rec.clear_pgid(session, run.id)
                counts["reaped"] += 1
        if served is not None and settings.queue_unserved_sec > 0:
            _fail_unserved(settings, session, served, counts)
        grace = timedelta(seconds=settings.sweep_grace_sec)
        stale = run_states.stale_queued(session, grace)
        if stale:
            read = partial(read_broker, settings.broker_url, RUN_QUEUES, settings.broker_view)
            for run in missing_from_broker(stale, read, counts):
                if run_states.take_resend(session, run.id, grace):  # not sent by another sweep
                    counts["resent"] += _resend(session, run, send)
        expired = run_states.expire_uploads(session, timedelta(seconds=settings.upload_wait_sec))
        for run_id in expired:
            _announce(session, run_id, RunStatus.QUEUED, "upload_timeout")
        counts["upload_timeouts"] = len(expired)
        if startup:
            for run in rec.runs_in(session, RunStatus.WAITING_USER):
                counts["kept_waiting"] += rec.keep_waiting(session, run.id)
                if rec.fail_waiting(session, run.id):
                    counts["failed_waiting"] += 1
                    _announce(session, run.id, RunStatus.WAITING_USER, "resume_failed")
    watched = ("still_queued", "composites_advanced", "long_queued_served")
    if any(n for name, n in counts.items() if name not in watched):  # something was done
        log.info("recovery%s: %s", " at startup" if startup else "", counts)
    return counts


def missing_from_broker(
    stale: list[Run], read: Callable[[], BrokerView], counts: dict, relook_sec: float = RELOOK_SEC
) -> list[Run]:
    """The stale runs whose message the broker does not hold (the others wait behind a backlog:
    counted `still_queued`). A message missing at the first look is looked for once more
    `relook_sec` later: a worker records a message it has just popped as reserved a moment
    after the pop, and under load that moment can be long."""
    view = read()
    missing = _not_held(view, stale, counts)
    if not any(view.holds(run.celery_task_id) is False for run in missing):
        return missing  # none, or a broker that cannot tell: each is sent again
    time.sleep(relook_sec)
    return _not_held(read(), missing, counts)


def _not_held(view: BrokerView, runs: list[Run], counts: dict) -> list[Run]:
    """`runs` whose message `view` does not hold; the others are counted `still_queued`."""
    missing = []
    for run in runs:
        if view.holds(run.celery_task_id):
            counts["still_queued"] += 1
        else:
            missing.append(run)
    return missing


def _fail_unserved(settings: Settings, session, served: Served, counts: dict) -> None:
    """Fail QUEUE_NOT_SERVED the runs queued past the bound on a queue no live worker consumes;
    the workers are asked only when such runs exist, and runs on served queues wait on."""
    waited = timedelta(seconds=settings.queue_unserved_sec)
    waiting = run_states.long_queued(session, waited)
    queues = _served_queues(session, served, waited) if waiting else None
    if queues is None:
        return
    for run in waiting:
        queue = _queue(run)
        if queue is None:
            continue
        if queue in queues:
            counts["long_queued_served"] += 1  # behind a backlog, or over the running limits
            continue
        served_now = sorted(queues)
        log.warning(
            "run %s: no live worker consumes its queue %s (served: %s)",
            run.id,
            queue,
            ", ".join(served_now),
        )
        error = RunError(
            ErrorCode.QUEUE_NOT_SERVED,
            f"no live worker consumes the queue '{queue}' this run waited in for over "
            f"{settings.queue_unserved_sec} s",
            {"queue": queue, "served_queues": served_now},
        ).as_dict()
        ended = record_end(
            run,
            RunEnd(RunStatus.FAILED, error),
            "queue_not_served",
            before=RunStatus.QUEUED,
            transition=partial(run_states.fail_queued, session, run.id, error, waited),
            cut_short=False,  # it never started: the API answers from the row
        )
        counts["queue_not_served"] += ended is not None


def _served_queues(session, served: Served, waited: timedelta) -> set[str] | None:
    """The queues the live workers say they consume, and those a run was taken from within
    `waited` (a reply that came late, a busy `--pool solo` worker); None when no worker
    answered: then nobody can tell."""
    answered = served()
    if answered is None:
        log.warning("no worker said which queues it consumes: long-queued runs not judged")
        return None
    taken = {_queue(run) for run in run_states.taken_since(session, waited)}
    return answered | {queue for queue in taken if queue is not None}


def _queue(run: Run) -> str | None:
    """The queue `run` is sent to; None when its skill cannot be read (its claim says why)."""
    try:
        return queue_of(run)
    except Exception as exc:
        log.warning("run %s: its queue is not known (%s)", run.id, exc)
        return None


def worker_gone(settings: Settings, run: Run, by_age: bool = True) -> bool:
    """Lease expired (judged only when `by_age`: not right after the database was away, see
    worker.recovery.sweep_clock); or the worker process on this host is dead and the run has missed a
    few beats (the beat check keeps a same-named host in another pid namespace safe)."""
    if run.heartbeat_at is None:
        return True
    silent = (utcnow() - aware(run.heartbeat_at)).total_seconds()
    if by_age and silent > settings.lease_sec:
        return True
    host, pid = parse_worker(run.worker)
    return (
        host == this_host()
        and pid is not None
        and not pid_alive(pid)
        and silent > 3 * beat_interval(settings)
    )


def pipeline_parent(settings: Settings, run: Run) -> bool:
    """A running pipeline composite holds no process and no lease (worker.composite.workflow): no
    lease judges it."""
    if run.engine is not None:
        return False
    try:
        spec = load_skill_cached(skill_source(settings, run)).openevo
    except Exception:  # an unreadable skill: judged like any run
        return False
    return spec is not None and spec.mode == "composite" and bool(spec.pipeline)


def _advance(run: Run) -> int:
    """The sweep's backstop for a composite whose step-end callback was lost: an `advance`
    (idempotent: it starts what is due, or ends the parent)."""
    try:
        send_advance(run.id)
    except Exception as exc:  # the next sweep sends it
        log.warning("advance of composite %s not sent: %s", run.id, exc)
        return 0
    return 1


def retries_left(settings: Settings, run: Run) -> bool:
    """Does the run's skill (as snapshotted into the run) declare retries beyond this attempt?"""
    snapshot = find_snapshot(
        settings.runs_dir / run.id, run.skill_id, engine_skill_dirs(run.engine)
    )
    root = snapshot or settings.skills_dir / run.skill_id
    try:
        pkg = load_skill_cached(root)
    except Exception:  # an unreadable skill gets no retry
        return False
    retries = pkg.manifest.retries if pkg.manifest else 0
    return retries > 0 and run.attempt <= retries  # attempt counts claims: 1 + retries in all


def _recover_running(settings: Settings, session, run: Run, send: Send, counts: dict) -> None:
    outcome = _reap(settings, run)
    reaped = outcome in (GONE, KILLED, FOREIGN)
    counts["reaped"] += outcome == KILLED
    if retries_left(settings, run):
        if rec.requeue_interrupted(session, run.id, reaped=reaped):
            _record_event(
                lambda: events_of(run).state_changed(RunStatus.RUNNING, RunStatus.QUEUED, "retry")
            )
            _resend(session, run, send)  # on a broker failure the next sweep sends it
            counts["requeued_retry"] += 1
    elif rec.reconcile_interrupted(session, run.id, reaped=reaped):
        counts["reconciled"] += 1
        _announce(session, run.id, RunStatus.RUNNING, "reconciled")


def _announce(session, run_id: str, before: str, trigger: str) -> None:
    """What follows the end of a run this pass ended (its guarded UPDATE made the transition;
    the end is read back)."""
    run = session.get(Run, run_id, populate_existing=True)
    if run is not None:
        end = RunEnd.of_row(run)
        _record_event(lambda: record_end(run, end, trigger, before=before, transition=lambda: True))


def _record_event(write: Callable[[], object]) -> None:
    try:
        write()
    except Exception as exc:  # the run's row is the truth; its event log must not stop a sweep
        log.warning("a recovery event was not recorded: %s", exc)


def _reap(settings: Settings, run: Run) -> str:
    if run.pgid is None:
        return GONE
    return reap_group(
        run.pgid, run.worker, settings.work_runs_dir / run.id, run.id, settings.kill_grace_sec
    )


def _resend(session, run: Run, send: Send) -> bool:
    try:
        task_id = send(run)
    except Exception as exc:  # broker down: the row stays queued and the next pass retries
        log.warning("could not send run %s (%s); the next sweep retries", run.id, exc)
        return False
    run_states.mark_enqueued(session, run.id, task_id)
    return True
