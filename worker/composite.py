"""Composite skill.json runs as a workflow of child runs.

The parent run is claimed like any run, then holds no process: each step is a child run of its
own (a request and a run row with `parent_run_id` and `step_name`, sent as execute_run), so
status, cancel, events and Flower work per step. When a child ends, `advance` runs for its
parent: under the parent's row lock it reads the children, starts every step that became ready
(independent steps at once, on as many worker processes as are free), and at the end writes the
parent's outcome (outputMapping, validated against `output`). A unique (parent, step) index
keeps two racing callbacks from starting a step twice.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft7Validator
from sqlalchemy import Table, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from runner_core.error_codes import ErrorCode
from runner_core.inputs import apply_defaults
from runner_core.openevo.workflow import SKIPPED, StepState, final_output, next_moves
from runner_core.skills import SkillPackage, load_skill
from runner_core.skills.registry import SkillRegistry
from runner_core.statuses import ACTIVE_STATUSES, RunStatus
from runner_core.store import runs as run_states
from runner_core.store.models import Request, Run, utcnow
from runner_core.workspace import write_json
from worker.celery_app import app, settings
from worker.database import sessions
from worker.dispatch import announce_end, events_of, finished, send_run
from worker.run_layout import skill_source

log = logging.getLogger(__name__)
ADVANCE = "worker.composite.advance"
SKIPPED_FILE = "skipped_steps.json"


def is_composite(pkg: SkillPackage) -> bool:
    return pkg.manifest is not None and pkg.manifest.entrypoint.type == "composite"


def start(run: Run) -> str:
    """The parent was claimed: it keeps no lease (no process to watch), its steps start."""
    with sessions()() as session:
        session.execute(update(Run).where(Run.id == run.id).values(heartbeat_at=None, pgid=None))
        session.commit()
    (settings.runs_dir / run.id / "result").mkdir(parents=True, exist_ok=True)
    events_of(run).state_changed(RunStatus.QUEUED, RunStatus.RUNNING, "composite_started")
    advance(run.id)
    return RunStatus.RUNNING


def notify_parent(run: Run) -> None:
    """After a child's end is recorded: let its parent take the next steps."""
    if getattr(run, "parent_run_id", None):
        app.send_task(ADVANCE, args=[run.parent_run_id], queue="runs.script")


@app.task(name=ADVANCE)
def advance(parent_id: str) -> str:
    """Start the steps that are ready, or end the parent; idempotent."""
    with sessions()() as session:
        parent = session.get(Run, parent_id, with_for_update=True)
        if parent is None or parent.status != RunStatus.RUNNING:
            if parent is not None:
                _cancel_children(session, parent_id)
            session.commit()
            return "ended"
        pkg = load_skill(skill_source(settings, parent))
        if not is_composite(pkg) or pkg.openevo is None:
            return "not a composite"
        spec = pkg.openevo
        pipeline = list(spec.pipeline)
        children = {c.step_name: c for c in _children(session, parent_id)}
        states = _states(parent, children)
        if parent.cancel_requested_at:
            return _end(session, parent, RunStatus.CANCELED, None, _canceled(), children, states)
        inputs = apply_defaults(pkg.input_schema, parent.input or {})
        moves = next_moves(pipeline, inputs, states)
        if moves.skip:
            _record_skipped(parent, moves.skip)
            for name in moves.skip:
                events_of(parent).emit("step.skipped", {"step": name})
                states[name] = StepState(SKIPPED)
        if moves.failed:
            error = {
                "code": ErrorCode.COMPOSITE_STEP_FAILED,
                "message": moves.failed["message"],
                "details": {"step": moves.failed["step"], "error": moves.failed["error"]},
            }
            return _end(session, parent, RunStatus.FAILED, None, error, children, states)
        if moves.done:
            data = final_output(pipeline, spec.output_mapping, inputs, states)
            errors = [e.message for e in Draft7Validator(pkg.output_schema).iter_errors(data)]
            if errors:
                error = {
                    "code": ErrorCode.OUTPUT_VALIDATION_FAILED,
                    "message": "the composite's output does not match its output schema",
                    "details": {"validation_errors": errors, "output": data},
                }
                return _end(session, parent, RunStatus.FAILED, None, error, children, states)
            return _end(session, parent, RunStatus.SUCCEEDED, data, None, children, states)
        steps = {s["step"]: s for s in pipeline}
        created = [
            _create_child(session, parent, name, steps[name]["skill"], step_input)
            for name, step_input in moves.start.items()
        ]
        try:
            session.commit()
        except IntegrityError:  # another callback started them first
            session.rollback()
            return "raced"
    for child in created:
        events_of(parent).emit(
            "step.started", {"step": child.step_name, "request_id": child.request_id}
        )
        send_run(child, child.celery_task_id)
    return "advanced"


def _children(session: Session, parent_id: str) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.parent_run_id == parent_id)))


def _states(parent: Run, children: dict[str | None, Run]) -> dict[str, StepState]:
    states = {name: StepState(SKIPPED) for name in _skipped(parent)}
    for name, child in children.items():
        if name is None or child.status in ACTIVE_STATUSES:
            continue
        states[name] = StepState(child.status, _output(child), child.error)
    for name, child in children.items():  # started, still going: present, not settled
        if name is not None and name not in states:
            states[name] = StepState(child.status)
    return states


def _output(child: Run) -> Any:
    path = settings.runs_dir / child.id / "result" / "result.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("data")
    except (OSError, ValueError):
        return None


def _create_child(session: Session, parent: Run, step: str, skill_id: str, step_input: Any) -> Run:
    """A request and a queued run for one step, stamped for sending after the commit."""
    pkg = load_skill(SkillRegistry(settings.skills_dir).root_of(skill_id) or Path(skill_id))
    engine = pkg.effective_engines[0] if pkg.effective_engines else None
    now, request_id, run_id = utcnow(), str(uuid.uuid4()), str(uuid.uuid4())
    payload = {
        "skill_id": skill_id,
        "engine": engine,
        "parameter": {},
        "input": step_input,
        "model": None,
        "runtime_options": {},
        "parent_request_id": parent.request_id,
        "step": step,
    }
    child = Run(
        id=run_id,
        request_id=request_id,
        kind="job",
        skill_id=skill_id,
        skill_version=pkg.version,
        engine=engine,
        status=RunStatus.QUEUED,
        parameter={},
        input=step_input if isinstance(step_input, dict) else {},
        runtime_options={},
        celery_task_id=str(uuid.uuid4()),
        queued_at=now,
        dispatched_at=now,
        created_at=now,
        updated_at=now,
        parent_run_id=parent.id,
        step_name=step,
    )
    session.add(child)
    session.flush()
    session.execute(
        insert(cast(Table, Request.__table__)),
        {
            "id": request_id,
            "kind": "job",
            "skill_id": skill_id,
            "engine": engine,
            "run_id": run_id,
            "cache_hit": False,
            "payload": payload,
            "created_at": now,
        },
    )
    return child


def _end(
    session: Session,
    parent: Run,
    status: str,
    data: Any,
    error: dict[str, Any] | None,
    children: dict[str | None, Run],
    states: dict[str, StepState],
) -> str:
    """Write the parent's result (with its steps), record its end, cancel what still runs."""
    steps = [_step_entry(name, children.get(name), states.get(name)) for name in _order(parent)]
    write_json(
        settings.runs_dir / parent.id / "result" / "result.json",
        {
            "status": status,
            "data": data if status == RunStatus.SUCCEEDED else None,
            "artifacts": [],
            "validation_warnings": [],
            "error": error,
            "steps": steps,
        },
    )
    _cancel_children(session, parent.id)
    session.commit()
    if run_states.finish_run(session, parent.id, status, error=error, timings={"steps": steps}):
        announce_end(parent, RunStatus.RUNNING, status, error, "composite_finished")
    else:
        finished.publish(parent.id)
    return status


def _order(parent: Run) -> list[str]:
    pkg = load_skill(skill_source(settings, parent))
    return [s["step"] for s in pkg.openevo.pipeline]


def _step_entry(name: str, child: Run | None, state: StepState | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"step": name, "status": state.status if state else "not_started"}
    if child is not None:
        entry["request_id"] = child.request_id
        entry["status"] = child.status
        entry["error"] = child.error
        if child.started_at and child.finished_at:
            seconds = (child.finished_at - child.started_at).total_seconds()
            entry["duration_ms"] = round(seconds * 1000)
    return entry


def _cancel_children(session: Session, parent_id: str) -> None:
    """Cancel cascades by parent id: one UPDATE flags the active children (running ones are
    killed by their watch), queued ones end at once."""
    now = utcnow()
    session.execute(
        update(Run)
        .where(Run.parent_run_id == parent_id, Run.status.in_(ACTIVE_STATUSES))
        .values(cancel_requested_at=now, updated_at=now)
    )
    queued = session.scalars(
        select(Run.id).where(Run.parent_run_id == parent_id, Run.status == RunStatus.QUEUED)
    ).all()
    for run_id in queued:
        run_states.cancel_queued(session, run_id)


def _canceled() -> dict[str, Any]:
    return {"code": ErrorCode.CANCELED_BY_USER, "message": "canceled by user"}


def _skipped(parent: Run) -> list[str]:
    path = settings.runs_dir / parent.id / SKIPPED_FILE
    try:
        return list(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def _record_skipped(parent: Run, names: list[str]) -> None:
    write_json(settings.runs_dir / parent.id / SKIPPED_FILE, _skipped(parent) + names)
