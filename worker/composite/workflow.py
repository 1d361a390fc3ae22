"""Composite skill.json runs as a workflow of child runs.

The parent run is claimed like any run, then holds no process: each step (each item of a
`foreach`, each retry) is a child run of its own (a request and a run row with `parent_run_id`
and `step_name`, sent as execute_run), so status, cancel, events and Flower work per step. When
a child ends, `advance` runs for its parent: under the parent's row lock it reads the children,
starts what became ready (on as many worker processes as are free), and at the end writes the
parent's outcome (outputMapping, validated against `output`). A unique (parent, step_name) index
keeps two racing callbacks from starting a child twice. A failed composite whose skill declares
`retry` is queued again as a new attempt, whose children start afresh (named for it). Waiting
costs no worker slot: a retry's delay and the composite's own `timeout` are `advance` messages
sent with a countdown. A child's end runs `advance` in the child's own worker process, right
after its end is recorded (worker.recorder).
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from contextlib import contextmanager
from typing import Any

from celery import shared_task
from jsonschema import Draft7Validator
from sqlalchemy import update
from sqlalchemy.exc import DBAPIError, IntegrityError

from runner_core.error_codes import ErrorCode
from runner_core.in_run import open_in_run
from runner_core.inputs import TOO_DEEP_TO_VALIDATE, apply_defaults
from runner_core.openevo.engines import model_ignored
from runner_core.openevo.steps import in_run_attempt
from runner_core.openevo.workflow import StepState, final_output, next_moves, stopped_steps
from runner_core.queues import ADVANCE_COMPOSITE
from runner_core.results import RunError
from runner_core.runtime_options import RuntimeOptions
from runner_core.schema_validators import all_errors, new_validator, timed
from runner_core.skills import SkillPackage
from runner_core.skills.memo import load_skill_cached
from runner_core.statuses import ACTIVE_STATUSES, TERMINAL_STATUSES, RunStatus
from runner_core.store.cancels import parent_ended, recorded_cancel_error
from runner_core.store.models import Run
from runner_core.store.runs import ran_skill
from runner_core.workspace import own_folder
from worker import context
from worker.composite.children import (
    attempts,
    cancel_children,
    children,
    new_child,
    save_children,
    steps_engine,
)
from worker.composite.end import (
    end,
    forget_skipped,
    record_skipped,
    skipped,
    step_ended,
    stop_children,
)
from worker.context import connect, events_of, sessions
from worker.dispatch import send_advance, send_run
from worker.execution.lease import aware
from worker.execution.ran_skill import ran_key
from worker.execution.run_layout import skill_source

log = logging.getLogger(__name__)
STOP_GRACE_SEC = 5.0  # a stopping parent waits this long at most for its killed children
ADVANCE_LOCK = ".advance.lock"


def is_composite(pkg: SkillPackage) -> bool:
    return pkg.manifest is not None and pkg.manifest.entrypoint.type == "composite"


def start(run: Run) -> str:
    """The parent was claimed: it keeps no lease (no process to watch), its steps start, and
    an `advance` is due when its timeout passes."""
    settings = context.settings()
    unused = model_ignored(run.engine, getattr(run, "request_payload", None))
    with sessions()() as session:
        values: dict[str, Any] = {"heartbeat_at": None, "pgid": None}
        if unused:  # kept by its end, which writes no warnings of its own
            values["warnings"] = [unused]
        session.execute(update(Run).where(Run.id == run.id).values(**values))
        session.commit()
    own_folder(settings.runs_dir / run.id / "result")
    forget_skipped(run)  # each attempt (skill `retry`) plans its steps afresh
    events_of(run).state_changed(RunStatus.QUEUED, RunStatus.RUNNING, "composite_started")
    pkg = load_skill_cached(skill_source(settings, run))
    key = ran_key(settings, run, pkg)  # an install since the job was created changes it
    if (pkg.version, key) != (run.skill_version, run.cache_key):
        with connect() as conn:
            ran_skill(conn, run.id, run.attempt, pkg.version, key)
    send_advance(run.id, time_limit(run, pkg) + 0.05)
    advance(run.id)
    return RunStatus.RUNNING


def time_limit(parent: Run, pkg: SkillPackage) -> float:
    """The composite's `timeout` in seconds (ms precision), or the request's `timeout_sec`;
    never above the server maximum."""
    seconds = (pkg.openevo.timeout_ms if pkg.openevo else 30000) / 1000
    requested = RuntimeOptions.from_dict(parent.runtime_options).timeout_sec
    return min(requested or seconds, context.settings().max_timeout_sec)


@shared_task(name=ADVANCE_COMPOSITE)
def advance(parent_id: str, ended_child: str | None = None) -> str:
    """Start the children that are due, or end the parent; idempotent. `ended_child`: the
    child whose end called it (its `step.ended` is written first, unless the parent has
    ended). A failure other than the database's fails the parent (INTERNAL_ERROR) rather than
    leave it running: each later `advance` (the sweep sends one every pass) would fail the
    same way."""
    try:
        with _one_at_a_time(parent_id):
            return _advance(parent_id, ended_child)
    except DBAPIError:  # the database away or refusing: the next advance tries again
        raise
    except Exception as exc:
        log.exception("advance of composite %s failed", parent_id)
        return _fail(parent_id, exc)


@contextmanager
def _one_at_a_time(parent_id: str):
    """The parent's advances one after another, to their end: SQLite has no row lock, and the
    commit that stops the children frees Postgres's before the parent's end is recorded, so
    two children ending together could both end it (each writing the other's step.ended)."""
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        lock = os.fdopen(
            open_in_run(context.settings().runs_dir / parent_id, ADVANCE_LOCK, flags), "ab"
        )
    except OSError:  # no such run, a full disk: the row lock alone
        lock = None
    if lock is None:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _advance(parent_id: str, ended_child: str | None) -> str:
    with sessions()() as session:
        parent = session.get(Run, parent_id, with_for_update=True)
        if (
            parent is not None
            and ended_child is not None
            and parent.status not in TERMINAL_STATUSES  # its end announced the ended steps
        ):
            child = session.get(Run, ended_child)
            if child is not None:
                step_ended(parent, child)
        if parent is None or parent.status != RunStatus.RUNNING:
            if parent is not None:
                cancel_children(
                    session, parent_id, parent_ended(parent, parent.status, parent.error)
                )
            session.commit()
            return "ended"
        pkg = load_skill_cached(skill_source(context.settings(), parent))
        if not is_composite(pkg) or pkg.openevo is None:
            return "not a pipeline composite"
        pipeline = list(pkg.openevo.pipeline)
        runs = children(session, parent_id, parent.attempt)
        now = time.time()
        inputs = apply_defaults(pkg.input_schema, parent.input or {})
        # a cancel or the timeout first: nothing the steps' templates do can keep it running
        stop = _stop(parent, pkg, now)
        if stop is not None:
            status, stopped, since = stop
            stop_children(session, parent, runs, parent_ended(parent, status, stopped))
            runs = children(session, parent_id, parent.attempt)
            if any(r.status in ACTIVE_STATUSES for r in runs) and now < since + STOP_GRACE_SEC:
                # each killed child's end advances the parent; this is the backstop
                send_advance(parent_id, since + STOP_GRACE_SEC - now + 0.05)
                return "stopping"
            states = _states(pipeline, inputs, runs, parent, now, stopped)
            return end(session, parent, status, None, stopped, pipeline, runs, states)
        moves = next_moves(pipeline, inputs, attempts(runs), set(skipped(parent)), now)
        error: dict[str, Any] | None
        if moves.skip:
            record_skipped(parent, moves.skip)
            for name in moves.skip:
                events_of(parent).emit("step.skipped", {"step": name})
        if moves.failed:
            details = {"step": moves.failed["step"], "error": moves.failed["error"]}
            error = RunError(
                ErrorCode.COMPOSITE_STEP_FAILED, moves.failed["message"], {"details": details}
            ).as_dict()
            return end(session, parent, RunStatus.FAILED, None, error, pipeline, runs, moves.states)
        if moves.done:
            try:
                data = final_output(pipeline, pkg.openevo.output_mapping, inputs, moves.states)
            except Exception as exc:  # a template of outputMapping that fails
                details = {"step": None, "output_mapping": True, "error": None}
                error = RunError(
                    ErrorCode.COMPOSITE_STEP_FAILED, f"outputMapping: {exc}", {"details": details}
                ).as_dict()
                return end(
                    session, parent, RunStatus.FAILED, None, error, pipeline, runs, moves.states
                )
            status, error = _checked(pkg, data)
            return end(session, parent, status, data, error, pipeline, runs, moves.states)
        pkgs: dict[str, SkillPackage] = {}
        choice = steps_engine(session, parent) if moves.start else None
        created = save_children(
            session,
            [
                new_child(
                    parent,
                    in_run_attempt(launch.name, parent.attempt),
                    launch.skill,
                    launch.input,
                    launch.timeout_ms,
                    pkgs,
                    choice,
                )
                for launch in moves.start
            ],
        )
        try:
            session.commit()
        except IntegrityError:  # another callback started one of them first: look again
            session.rollback()
            send_advance(parent_id)
            return "raced"
    items: list[tuple[str, dict[str, Any] | None]] = []
    for launch, new in zip(moves.start, created, strict=True):
        started: dict[str, Any] = {"step": launch.step, "request_id": new.run.request_id}
        if launch.index is not None:
            started["index"] = launch.index
        started["attempt"] = launch.attempt
        items.append(("step.started", started))
    # the starts before any message: a child that ends at once writes its step.ended after
    # them (a fan-out's starts: one write, one round trip)
    events_of(parent).emit_many(items, before_end=True)
    for new in created:
        send_run(new.run, new.run.celery_task_id, new.queue)
    # a retry due later; not past the timeout, whose advance was sent at the start (a far
    # countdown overflows the message's date)
    if moves.wake_in is not None and now + moves.wake_in < _deadline(parent, pkg):
        send_advance(parent_id, moves.wake_in + 0.02)
    return "advanced"


def _stop(parent: Run, pkg: SkillPackage, now: float) -> tuple[str, dict[str, Any], float] | None:
    """A canceled parent (CANCELED_BY_USER, or why its cancel was asked: its own parent ended)
    or one past its timeout (TIMEOUT): its status, error and since when it stops; None while
    it goes on."""
    if parent.cancel_requested_at:
        error = recorded_cancel_error(parent).as_dict()
        return RunStatus.CANCELED, error, aware(parent.cancel_requested_at).timestamp()
    limit = time_limit(parent, pkg)
    if parent.started_at and now >= aware(parent.started_at).timestamp() + limit:
        error = RunError(
            ErrorCode.TIMEOUT,
            f"the composite's timeout ({round(limit * 1000)} ms) passed; "
            "its running steps were canceled",
        ).as_dict()
        return RunStatus.FAILED, error, aware(parent.started_at).timestamp() + limit
    return None


def _deadline(parent: Run, pkg: SkillPackage) -> float:
    """When the parent's timeout passes (epoch seconds)."""
    started = aware(parent.started_at).timestamp() if parent.started_at else time.time()
    return started + time_limit(parent, pkg)


def _states(
    pipeline: list[dict[str, Any]],
    inputs: dict[str, Any],
    runs: list[Run],
    parent: Run,
    now: float,
    error: dict[str, Any],
) -> dict[str, StepState]:
    """The steps' states for the result of a parent that stops, a step left without a running
    child canceled with it (none when they cannot be worked out: the entries then list each
    step's children without a step status)."""
    try:
        states = next_moves(pipeline, inputs, attempts(runs), set(skipped(parent)), now).states
    except Exception:
        log.warning("steps of composite %s: states not worked out", parent.id, exc_info=True)
        return {}
    busy = {a.step for a in attempts(runs) if a.status in ACTIVE_STATUSES}
    return stopped_steps(states, busy, error)


def _fail(parent_id: str, exc: Exception) -> str:
    """End a running parent FAILED (INTERNAL_ERROR) after its advance failed: its children
    canceled, its result listing what is known of its steps."""
    error = RunError(
        ErrorCode.INTERNAL_ERROR, f"the composite could not go on: {type(exc).__name__}: {exc}"
    ).as_dict()
    with sessions()() as session:
        parent = session.get(Run, parent_id, with_for_update=True)
        if parent is None or parent.status != RunStatus.RUNNING:
            session.commit()
            return "ended"
        runs = children(session, parent_id, parent.attempt)
        try:
            pkg = load_skill_cached(skill_source(context.settings(), parent))
            pipeline = list(pkg.openevo.pipeline if pkg.openevo else [])
        except Exception:
            pipeline = []
        return end(session, parent, RunStatus.FAILED, None, error, pipeline, runs, {})


def _checked(pkg: SkillPackage, data: Any) -> tuple[str, dict[str, Any] | None]:
    try:
        validator = new_validator(timed(Draft7Validator, pkg.output_schema), pkg.output_schema)
        errors = [e.message for e in all_errors(validator, data)]
    except RecursionError:  # a deep value under a recursive `$ref`, or a `$ref` loop
        errors = [TOO_DEEP_TO_VALIDATE]
    if not errors:
        return RunStatus.SUCCEEDED, None
    return RunStatus.FAILED, RunError(
        ErrorCode.OUTPUT_VALIDATION_FAILED,
        "the composite's output does not match its output schema",
        {"details": {"validation_errors": errors, "output": data}},
    ).as_dict()
