"""The child runs of a composite parent: reading them as attempts, creating one (a request and a
queued run stamped for sending after the commit), and canceling the ones still active."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runner_core import run_env
from runner_core.openevo.engines import (
    default_engine,
    engine_options,
    is_composite,
    runs_on_engine,
)
from runner_core.openevo.steps import Attempt, parse_child_name, run_attempt_of
from runner_core.queues import queue_for
from runner_core.results import RunEnd, RunError, read_result
from runner_core.skills import SkillPackage
from runner_core.skills.memo import load_skill_cached
from runner_core.skills.registry import SkillRegistry
from runner_core.statuses import RunStatus
from runner_core.store import cancels
from runner_core.store.models import Request, Run, utcnow
from runner_core.store.new_runs import Dispatch, NewRun, insert_runs
from runner_core.workspace import RunPaths
from worker import context
from worker.dispatch import send_advance
from worker.execution.lease import aware
from worker.recorder import record_end


def children(session: Session, parent_id: str, run_attempt: int | None = None) -> list[Run]:
    """The parent's children; only its `run_attempt`-th attempt's when given."""
    runs = session.scalars(select(Run).where(Run.parent_run_id == parent_id))
    if run_attempt is None:
        return list(runs)
    return [r for r in runs if run_attempt_of(r.step_name or "") == max(1, run_attempt)]


def attempts(runs: list[Run]) -> list[Attempt]:
    """The pipeline children as the planner's attempts (outputs read for succeeded ones)."""
    found = []
    for child in runs:
        parsed = parse_child_name(child.step_name or "")
        if parsed is None:
            continue
        step, index, attempt = parsed
        ended = aware(child.finished_at).timestamp() if child.finished_at else None
        output = output_of(child) if child.status == RunStatus.SUCCEEDED else None
        found.append(Attempt(step, index, attempt, child.status, output, child.error, ended))
    return found


def output_of(child: Run) -> Any:
    document = read_result(RunPaths(context.settings().runs_dir / child.id))
    return document.get("data") if isinstance(document, dict) else None


@dataclass(frozen=True, slots=True)
class StepsEngine:
    """What a composite's request names for its llm steps: the engine (None: each step's
    default), the model as the request's effort shaped it, and the engines' runtime options."""

    engine: str | None = None
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def steps_engine(session: Session, parent: Run) -> StepsEngine:
    """The parent composite's choice for its llm steps, from its request."""
    request = session.get(Request, parent.request_id)
    engine = (request.payload or {}).get("engine") if request is not None else None
    if parent.engine is not None or not isinstance(engine, str):
        return StepsEngine()
    return StepsEngine(engine, parent.model, engine_options(parent.runtime_options))


@dataclass
class NewChild:
    """A step's (or call's) child run and its request, not yet saved, and its queue; `run` is
    the row as it will be written (a Run outside any session, for sending)."""

    new: NewRun
    run: Run
    queue: str


def create_child(
    session: Session,
    parent: Run,
    step: str,
    skill_id: str,
    step_input: Any,
    timeout_ms: float | None = None,
) -> tuple[Run, str]:
    """One child saved in `session` (committed by the caller); the run and its queue."""
    choice = steps_engine(session, parent)
    (child,) = save_children(
        session, [new_child(parent, step, skill_id, step_input, timeout_ms, choice=choice)]
    )
    return child.run, child.queue


def save_children(session: Session, children: list[NewChild]) -> list[NewChild]:
    """Insert the runs, then their requests (which refer to them): one statement each."""
    insert_runs(session.connection(), [c.new for c in children])
    return children


def new_child(
    parent: Run,
    step: str,
    skill_id: str,
    step_input: Any,
    timeout_ms: float | None = None,
    pkgs: dict[str, SkillPackage] | None = None,
    choice: StepsEngine | None = None,
) -> NewChild:
    """A request and a queued run for one step (or call), stamped for sending after the
    commit; a step's `timeout` becomes the child's time limit (whole seconds). `pkgs`: the
    skills loaded so far by the caller (a fan-out loads its skill once). `choice`: the
    parent's engine, model and engine options, which an llm step runs with and a composite
    step hands on to its own steps (a code step ignores them)."""
    pkg = (pkgs or {}).get(skill_id)
    if pkg is None:
        pkg = load_skill_cached(
            SkillRegistry(context.settings().skills_dir).root_of(skill_id) or Path(skill_id)
        )
        if pkgs is not None:
            pkgs[skill_id] = pkg
    choice = choice or StepsEngine()
    engine, model, options, asked = None, None, {}, None
    if is_composite(pkg):  # runs on no engine itself: hands the choice on in its request
        asked, model, options = choice.engine, choice.model, dict(choice.options)
    elif runs_on_engine(pkg):  # the parent's engine when it runs on it, else its own default
        engine = choice.engine if choice.engine in pkg.effective_engines else default_engine(pkg)
        if engine is not None and engine == choice.engine:
            model, options = choice.model, dict(choice.options)
        asked = engine
    now, request_id, run_id = utcnow(), str(uuid.uuid4()), str(uuid.uuid4())
    requests = context.settings().requests_dir  # the step's processes get the request's variables
    run_env.write(requests / request_id, run_env.read(requests / parent.request_id))
    if timeout_ms:
        options["timeout_sec"] = max(1, math.ceil(timeout_ms / 1000))
    payload = {
        "skill_id": skill_id,
        "engine": asked,
        "parameter": {},
        "input": step_input,
        "model": model,
        "runtime_options": options,
        "parent_request_id": parent.request_id,
        "step": step,
    }
    new = NewRun(
        run_id=run_id,
        request_id=request_id,
        skill_id=skill_id,
        skill_version=pkg.version,
        engine=engine,
        model=model,
        parameter={},
        input=step_input if isinstance(step_input, dict) else {},
        runtime_options=options,
        payload=payload,
        created_at=now,
        dispatch=Dispatch(str(uuid.uuid4()), now, now),
        parent_run_id=parent.id,
        step_name=step,
    )
    return NewChild(new, Run(**new.run_row()), queue_for(pkg, engine))


def cancel_children(session: Session, parent_id: str, reason: RunError) -> dict[str, RunError]:
    """Cancel cascades by parent id, committed: the active children and their descendants are
    flagged with `reason` (cancels.parent_ended; running ones are killed by their watch and end
    with it), queued ones end at once, each recorded like any run canceled while queued (its
    terminal event included); returns the error each of the latter ended with, by id. A
    running child composite holds no process to see its flag: it is woken to end."""
    cancels.request_cancel_descendants(session, parent_id, reason)
    queued = session.scalars(
        select(Run).where(Run.parent_run_id == parent_id, Run.status == RunStatus.QUEUED)
    ).all()
    canceled = {}
    for child in queued:
        error = cancels.cancel_error_of(session, child.id)  # a cancel asked before keeps its own
        if _cancel_queued(session, child, error):
            canceled[child.id] = error
    idle = session.scalars(
        select(Run.id).where(
            Run.parent_run_id == parent_id,
            Run.status == RunStatus.RUNNING,
            Run.engine.is_(None),
            Run.heartbeat_at.is_(None),  # a composite keeps no lease
        )
    ).all()
    session.commit()
    for child_id in idle:
        send_advance(child_id)
    return canceled


def _cancel_queued(session: Session, child: Run, error: RunError) -> bool:
    ended = record_end(
        child,
        RunEnd.failed(error, RunStatus.CANCELED),
        "cancel",
        before=RunStatus.QUEUED,
        transition=partial(cancels.cancel_queued, session, child.id, error),
        cut_short=False,  # it never started: the API answers from the row
        advance_parent=_no_advance,
    )
    return ended is not None


def _no_advance(parent_id: str, child_id: str) -> None:
    """The parent that cancels its children is ending (or has ended): it needs no advance."""
