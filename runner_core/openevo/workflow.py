"""The plan of a composite pipeline: given what its steps have done so far, which steps start
now (with their rendered input), which are skipped, whether it failed, and its output at the end.

Steps without `depends` run after the step before them; steps with `depends` run once those
have settled, so independent steps start together. Pure: the worker persists the states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner_core.openevo.templates import TemplateFailure, evaluate, render, render_string

SUCCEEDED, FAILED, SKIPPED = "succeeded", "failed", "skipped"
SETTLED = {SUCCEEDED, FAILED, SKIPPED, "canceled"}


@dataclass
class StepState:
    """What one step did: its status (a run status, or `skipped`) and output."""

    status: str
    output: Any = None
    error: dict[str, Any] | None = None


@dataclass
class Moves:
    """What to do now: steps to start (name -> input), steps to skip, or the end."""

    start: dict[str, Any] = field(default_factory=dict)
    skip: list[str] = field(default_factory=list)
    failed: dict[str, Any] | None = None  # {step, message, error} of a step that ended it
    done: bool = False


def depends_of(pipeline: list[dict[str, Any]], index: int) -> list[str]:
    step = pipeline[index]
    if "depends" in step:
        return list(step["depends"] or [])
    return [pipeline[index - 1]["step"]] if index else []


def step_outputs(pipeline: list[dict[str, Any]], states: dict[str, StepState]) -> dict[str, Any]:
    """`steps.<name>` of the templates: outputs, `{_error, _failed}` for a tolerated failure."""
    outputs: dict[str, Any] = {}
    for step in pipeline:
        state = states.get(step["step"])
        if state is None:
            continue
        if state.status == SUCCEEDED:
            outputs[step["step"]] = state.output
        elif state.status in (FAILED, "canceled"):
            message = (state.error or {}).get("message") or state.status
            outputs[step["step"]] = {"_error": message, "_failed": True}
    return outputs


def next_moves(
    pipeline: list[dict[str, Any]], inputs: dict[str, Any], states: dict[str, StepState]
) -> Moves:
    """The moves after `states` (steps not in it have not started). A skipped step's
    dependants may start in the same call."""
    moves, states = Moves(), dict(states)
    changed = True
    while changed:
        changed = False
        context = {"input": inputs, "steps": step_outputs(pipeline, states)}
        for index, step in enumerate(pipeline):
            name = step["step"]
            state = states.get(name)
            if state is not None and state.status in (FAILED, "canceled"):
                if not step.get("continueOnError"):
                    moves.failed = {
                        "step": name,
                        "message": f"step '{name}' {state.status}",
                        "error": state.error,
                    }
                    return moves
            if state is not None or name in moves.start:
                continue
            deps = depends_of(pipeline, index)
            if not all(d in states and states[d].status in SETTLED for d in deps):
                continue
            try:
                if "condition" in step and not _holds(step["condition"], context):
                    states[name] = StepState(SKIPPED)
                    moves.skip.append(name)
                    changed = True
                    continue
                moves.start[name] = render(step.get("input") or {}, context)
            except TemplateFailure as exc:
                moves.failed = {"step": name, "message": f"step '{name}': {exc}", "error": None}
                return moves
    moves.done = not moves.start and all(
        s["step"] in states and states[s["step"]].status in SETTLED for s in pipeline
    )
    return moves


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


def _holds(condition: Any, context: dict[str, Any]) -> bool:
    """A condition: a template or a bare expression; false, empty or missing skips the step."""
    if isinstance(condition, bool):
        return condition
    text = str(condition)
    value = render_string(text, context) if "{{" in text else evaluate(text, context)
    return bool(value) and value not in ("false", "False", "0")
