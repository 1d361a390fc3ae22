"""The plan of a composite pipeline: given the child runs its steps have had so far, which
children start now (with their rendered input), which steps are skipped, whether it failed,
and its output at the end.

Steps without `depends` run after the step before them; steps with `depends` run once those
have settled, so independent steps start together. A `foreach` step runs one child per item of
its array, at most `maxConcurrency` at a time; its output is the array of their outputs in item
order. A failed child is tried again, as a new child, `retry` times after `retryDelay` ms.
Pure: the worker persists the children and calls this again when one ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.openevo.steps import Attempt, child_name
from runner_core.openevo.templates import TemplateFailure, evaluate, render, render_string

SUCCEEDED, FAILED, SKIPPED, RUNNING = "succeeded", "failed", "skipped", "running"
SETTLED = {SUCCEEDED, FAILED, SKIPPED, "canceled"}


@dataclass
class StepState:
    """What one step did: its status (a run status, `running` or `skipped`) and output."""

    status: str
    output: Any = None
    error: dict[str, Any] | None = None


@dataclass
class Launch:
    """A child run to start: its step, item and attempt, the skill and its rendered input."""

    step: str
    skill: str
    input: Any
    index: int | None = None
    attempt: int = 1
    timeout_ms: float | None = None

    @property
    def name(self) -> str:
        return child_name(self.step, self.index, self.attempt)


@dataclass
class Moves:
    """What to do now: children to start, steps to skip, or the end; `wake_in` seconds until
    a retry is due (call again then)."""

    start: list[Launch] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    failed: dict[str, Any] | None = None  # {step, message, error} of a step that ended it
    done: bool = False
    wake_in: float | None = None
    states: dict[str, StepState] = field(default_factory=dict)


def depends_of(pipeline: list[dict[str, Any]], index: int) -> list[str]:
    step = pipeline[index]
    if "depends" in step:
        return list(step["depends"] or [])
    return [pipeline[index - 1]["step"]] if index else []


def step_outputs(pipeline: list[dict[str, Any]], states: dict[str, StepState]) -> dict[str, Any]:
    """`steps.<name>` of the templates: outputs, `{_error, _failed}` for a tolerated failure
    (a foreach step keeps its array, the failed items marked so)."""
    outputs: dict[str, Any] = {}
    for step in pipeline:
        state = states.get(step["step"])
        if state is None:
            continue
        if state.status == SUCCEEDED or (state.status == FAILED and "foreach" in step):
            outputs[step["step"]] = state.output
        elif state.status in (FAILED, "canceled"):
            outputs[step["step"]] = failure_marker(state.status, state.error)
    return outputs


def failure_marker(status: str, error: dict[str, Any] | None) -> dict[str, Any]:
    return {"_error": (error or {}).get("message") or status, "_failed": True}


def next_moves(
    pipeline: list[dict[str, Any]],
    inputs: dict[str, Any],
    attempts: list[Attempt],
    skipped: set[str] | frozenset[str] = frozenset(),
    now: float = 0.0,
) -> Moves:
    """The moves after `attempts` (the children so far) and the steps `skipped` before. A
    skipped step's dependants may start in the same call."""
    moves = Moves()
    states = moves.states
    tries: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        tries.setdefault(attempt.step, []).append(attempt)
    for name in skipped:
        states[name] = StepState(SKIPPED)
    planned: set[str] = set(skipped)
    changed = True
    while changed:
        changed = False
        for index, step in enumerate(pipeline):
            name = step["step"]
            if name in planned:
                continue
            deps = depends_of(pipeline, index)
            if not all(d in states and states[d].status in SETTLED for d in deps):
                continue
            context = {"input": inputs, "steps": step_outputs(pipeline, states)}
            try:
                if name not in tries and "condition" in step:
                    if not _holds(step["condition"], context):
                        states[name] = StepState(SKIPPED)
                        moves.skip.append(name)
                        planned.add(name)
                        changed = True
                        continue
                state, launches, wake = _progress(step, tries.get(name, []), context, now)
            except Exception as exc:  # TemplateFailure, or anything a rendered value raises
                # the step failed before any child ran: its own entry says why
                error = {"code": ErrorCode.COMPOSITE_STEP_FAILED, "message": str(exc)}
                states[name] = StepState(FAILED, None, error)
                moves.failed = {"step": name, "message": f"step '{name}': {exc}", "error": error}
                moves.start, moves.wake_in = [], None
                return moves
            planned.add(name)
            states[name] = state
            moves.start += launches
            if wake is not None:
                moves.wake_in = min(wake, moves.wake_in or wake)
            changed = changed or state.status in SETTLED
            if state.status in (FAILED, "canceled") and not step.get("continueOnError"):
                moves.failed = {
                    "step": name,
                    "message": f"step '{name}' {state.status}",
                    "error": state.error,
                }
                moves.start, moves.wake_in = [], None
                return moves
    moves.done = not moves.start and all(
        s["step"] in states and states[s["step"]].status in SETTLED for s in pipeline
    )
    return moves


def _progress(
    step: dict[str, Any], tries: list[Attempt], context: dict[str, Any], now: float
) -> tuple[StepState, list[Launch], float | None]:
    """The state of a step whose dependencies settled, the children it starts now (first
    tries of items, within maxConcurrency, and retries that are due) and when to look again."""
    items = _items(step, context) if "foreach" in step else None
    keys: list[int | None] = [None] if items is None else list(range(len(items)))
    latest: dict[int | None, Attempt] = {}
    for attempt in tries:
        if attempt.index not in latest or attempt.attempt > latest[attempt.index].attempt:
            latest[attempt.index] = attempt
    retry, delay = int(step.get("retry") or 0), float(step.get("retryDelay") or 0) / 1000
    busy, fresh, relaunch, first_failure = 0, [], [], None
    wake: float | None = None
    for key in keys:
        last = latest.get(key)
        if last is None:
            fresh.append(key)
        elif last.status not in SETTLED:
            busy += 1
        elif last.status == FAILED and last.attempt <= retry:
            busy += 1  # a retry holds its item's place
            due = (last.ended_at or now) + delay
            if due <= now:
                relaunch.append((key, last.attempt + 1))
            else:
                wake = due - now if wake is None else min(wake, due - now)
        elif last.status != SUCCEEDED and first_failure is None:
            first_failure = last
    if first_failure is not None and not step.get("continueOnError"):
        return StepState(first_failure.status, None, _item_error(first_failure)), [], None
    room = int(step.get("maxConcurrency") or len(keys)) - busy
    starts = relaunch + [(key, 1) for key in fresh[: max(0, room)]]
    if not starts and busy == 0:
        return _settled(keys, latest, items is not None, first_failure), [], None
    launches = [_launch(step, context, items, key, n) for key, n in starts]
    return StepState(RUNNING), launches, wake


def _items(step: dict[str, Any], context: dict[str, Any]) -> list[Any]:
    value = render(step["foreach"], context)
    if not isinstance(value, list):
        raise TemplateFailure(f"foreach must give an array, got {type(value).__name__}")
    return value


def _launch(step, context, items, key: int | None, attempt: int) -> Launch:
    scope = context if items is None else {**context, "item": items[key], "index": key}
    return Launch(
        step=step["step"],
        skill=step["skill"],
        input=render(step.get("input") or {}, scope),
        index=key,
        attempt=attempt,
        timeout_ms=step.get("timeout"),
    )


def _settled(keys, latest: dict[int | None, Attempt], foreach: bool, failure) -> StepState:
    if not foreach:
        last = latest[None]
        return StepState(last.status, last.output, last.error)
    outputs = [
        latest[k].output
        if latest[k].status == SUCCEEDED
        else failure_marker(latest[k].status, latest[k].error)
        for k in keys
    ]
    if failure is None:
        return StepState(SUCCEEDED, outputs)
    return StepState(FAILED, outputs, _item_error(failure))


def _item_error(attempt: Attempt) -> dict[str, Any] | None:
    if attempt.index is None:
        return attempt.error
    return {**(attempt.error or {}), "item": attempt.index}


def final_output(
    pipeline: list[dict[str, Any]],
    mapping: dict[str, Any] | None,
    inputs: dict[str, Any],
    states: dict[str, StepState],
) -> Any:
    """`outputMapping` rendered over the steps, or the last step's output without one."""
    outputs = step_outputs(pipeline, states)
    if mapping is None:
        return outputs.get(pipeline[-1]["step"]) if pipeline else None
    return render(mapping, {"input": inputs, "steps": outputs})


def stopped_steps(
    states: dict[str, StepState], busy: set[str], error: dict[str, Any] | None
) -> dict[str, StepState]:
    """The steps of a composite that stopped (canceled, timed out): one still `running` with no
    child left in `busy` (waiting for a retry, items not yet started) was canceled with it."""
    return {
        name: StepState("canceled", None, error)
        if state.status == RUNNING and name not in busy
        else state
        for name, state in states.items()
    }


def _holds(condition: Any, context: dict[str, Any]) -> bool:
    """A condition: a template or a bare expression; false, empty or missing skips the step."""
    if isinstance(condition, bool):
        return condition
    text = str(condition)
    value = render_string(text, context) if "{{" in text else evaluate(text, context)
    return bool(value) and value not in ("false", "False", "0")
