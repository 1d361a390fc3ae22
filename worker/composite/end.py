"""The end of a composite parent (its result document with every step, its recorded end) and
the step entries and `step.ended` events that describe its children."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from runner_core.events import TAIL_BYTES, Once, read_events
from runner_core.in_run import remove_in_run
from runner_core.openevo.steps import parse_child_name
from runner_core.openevo.workflow import SKIPPED, StepState
from runner_core.results import RunEnd, RunError, result_document, write_result
from runner_core.statuses import TERMINAL_STATUSES, RunStatus
from runner_core.store import runs as run_states
from runner_core.store.cancels import parent_ended
from runner_core.store.models import Run
from runner_core.workspace import RunPaths, write_json_in
from worker import context
from worker.composite.children import cancel_children
from worker.context import events_of
from worker.recorder import record_end
from worker.skill_retry import retry_failed

SKIPPED_FILE = "skipped_steps.json"


def end(
    session: Session,
    parent: Run,
    status: str,
    data: Any,
    error: dict[str, Any] | None,
    pipeline: list[dict[str, Any]],
    runs: list[Run],
    states: dict[str, StepState],
) -> str:
    """Cancel what still runs (saying the parent ended so); then queue a failed parent again
    when its skill's `retry` allows, or write its result (with its steps) and record its end."""
    stop_children(session, parent, runs, parent_ended(parent, status, error))
    announce_ended(parent, runs)
    if status == RunStatus.FAILED and retry_failed(parent, error):
        return RunStatus.QUEUED
    steps = step_entries(pipeline, runs, states)
    write_result(
        RunPaths(context.settings().runs_dir / parent.id),
        result_document(status, data, error=error, steps=steps),
    )
    record_end(
        parent,
        RunEnd(status, error, timings={"steps": steps}),
        "composite_finished",
        transition=lambda: run_states.finish_run(
            session, parent.id, status, error=error, timings={"steps": steps}
        ),
        cut_short=False,
    )
    return status


def stop_children(session: Session, parent: Run, runs: list[Run], reason: RunError) -> None:
    """Flag the parent's active children canceled with `reason` (committed): queued ones end at
    once (their `step.ended` written here: no worker will say they ended), running ones are
    killed by their worker, whose end of each advances the parent."""
    canceled = cancel_children(session, parent.id, reason)
    session.commit()
    for child in runs:
        if child.id in canceled:
            step_ended(parent, child, RunStatus.CANCELED, canceled[child.id].as_dict())


def announce_ended(parent: Run, runs: list[Run]) -> None:
    """`step.ended` for each ended child not yet on the parent's events, before its terminal
    event: a child that ended just before its parent did has its own `advance` still to come,
    which then finds the parent ended and writes none."""
    events = read_events(context.settings().runs_dir / parent.id)
    told = {e["data"].get("request_id") for e in events if e["type"] == "step.ended"}
    for child in runs:
        if child.status in TERMINAL_STATUSES and child.request_id not in told:
            step_ended(parent, child, whole_log=True)  # its own advance may be writing it now


def step_entries(
    pipeline: list[dict[str, Any]], runs: list[Run], states: dict[str, StepState]
) -> list[dict[str, Any]]:
    """One entry per step: its status, error, duration (first start to last end of its
    children), attempts and the latest child's request id; a foreach step lists its items
    (none for an empty array). A step whose template failed has no child: its error says why."""
    by_step: dict[str, list[tuple[int | None, int, Run]]] = {}
    for child in runs:
        parsed = parse_child_name(child.step_name or "")
        if parsed is not None:
            by_step.setdefault(parsed[0], []).append((parsed[1], parsed[2], child))
    entries = []
    for step in pipeline:
        name = step["step"]
        state = states.get(name)
        entry: dict[str, Any] = {"step": name, "status": state.status if state else "not_started"}
        tries = by_step.get(name, [])
        if tries or (state is not None and state.status != SKIPPED):
            entry["error"] = state.error if state else None
        if tries:
            entry.update(_span([c for _, _, c in tries]))
            items = sorted({index for index, _, _ in tries}, key=lambda i: -1 if i is None else i)
            if items == [None]:
                entry.update(_latest(tries, None))
            else:
                entry["items"] = [{"index": i, **_latest(tries, i)} for i in items]
        elif "foreach" in step and "error" in entry:
            entry["items"] = []
        entries.append(entry)
    return entries


def _latest(tries: list[tuple[int | None, int, Run]], index: int | None) -> dict[str, Any]:
    mine = [(attempt, child) for i, attempt, child in tries if i == index]
    attempt, child = max(mine, key=lambda pair: pair[0])
    entry: dict[str, Any] = {"request_id": child.request_id, "attempts": attempt}
    if index is not None:
        entry.update(status=child.status, error=child.error, **_span([child]))
    return entry


def _span(children: list[Run]) -> dict[str, Any]:
    starts = [c.started_at for c in children if c.started_at]
    ends = [c.finished_at for c in children if c.finished_at]
    if not starts or not ends or len(ends) < len(children):
        return {}
    return {"duration_ms": round((max(ends) - min(starts)).total_seconds() * 1000)}


def step_ended(
    parent: Run,
    child: Run,
    status: str | None = None,
    error: dict[str, Any] | None = None,
    *,
    whole_log: bool = False,
) -> None:
    """`step.ended` on the parent's events: the child's step, request id, status, duration,
    error (`status` and `error`: the child's end just recorded, not on the row read before);
    none once the parent's terminal event is written (a stream has closed there), and
    none when the log has it already: the child's own `advance` and the parent's end may both
    write it (`whole_log`: look through the whole log, else its tail, where a racing writer's
    is)."""
    parsed = parse_child_name(child.step_name or "")
    step, index, attempt = parsed if parsed else (child.step_name, None, 1)
    data: dict[str, Any] = {
        "step": step,
        "request_id": child.request_id,
        "status": status or child.status,
        "error": error if status else child.error,
        "attempt": attempt,
    }
    if index is not None:
        data["index"] = index
    if child.started_at and child.finished_at:
        seconds = (child.finished_at - child.started_at).total_seconds()
        data["duration_ms"] = round(seconds * 1000)
    once = Once("step.ended", "request_id", child.request_id, None if whole_log else TAIL_BYTES)
    events_of(parent).emit("step.ended", data, before_end=True, once=once)


def skipped(parent: Run) -> list[str]:
    path = context.settings().runs_dir / parent.id / SKIPPED_FILE
    try:
        return list(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def forget_skipped(parent: Run) -> None:
    remove_in_run(context.settings().runs_dir / parent.id, SKIPPED_FILE)


def record_skipped(parent: Run, names: list[str]) -> None:
    write_json_in(context.settings().runs_dir / parent.id, SKIPPED_FILE, skipped(parent) + names)
