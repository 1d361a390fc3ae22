"""The record the output chain keeps: one step per action, warnings for every repair."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from runner_core.error_codes import ErrorCode
from runner_core.results import run_warning

LEVEL_PARSE = "parse"
LEVEL_VALIDATE = "validate"
LEVEL_SCHEMA = "schema"

WARNING_CODES = {
    "N0": ErrorCode.OUTPUT_NORMALIZED_N0,
    "N1": ErrorCode.OUTPUT_NORMALIZED_N1,
    "N2": ErrorCode.OUTPUT_FALLBACK_N2,
    "N3": ErrorCode.OUTPUT_REPAIRED_N3,
}

_WARNING_MESSAGES = {
    "N0": "The output needed syntax-only repair (fences, trailing commas, encoding) to parse.",
    "N1": "The skill's normalizer rewrote the output to match the output schema.",
    "N2": "The skill's fallback produced the output; the agent's own output did not validate.",
    "N3": (
        "The runner's repair step rewrote the output to match the output schema; "
        "its meaning may have shifted from what the skill produced."
    ),
}


@dataclass
class Step:
    """One action of the chain: a parse, a validation, or a normalization attempt."""

    name: str
    level: str  # parse | validate | schema | N0 | N1 | N2 | N3
    ok: bool
    duration_ms: float
    source: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return the step as written to validation.json."""
        return asdict(self)


class StepLog:
    """Steps in the order they happened."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def add(
        self,
        name: str,
        level: str,
        *,
        ok: bool,
        started: float,
        source: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        details: dict[str, Any] | None = None,
    ) -> Step:
        """Record a step that began at `started` (a `time.perf_counter()` value)."""
        duration_ms = round((time.perf_counter() - started) * 1000, 3)
        step = Step(name, level, ok, duration_ms, source, list(errors or []), dict(details or {}))
        self.steps.append(step)
        return step

    def to_list(self) -> list[dict[str, Any]]:
        """Return all steps as plain dicts."""
        return [step.to_dict() for step in self.steps]


def normalization_warning(level: str, details: dict[str, Any]) -> dict[str, Any]:
    """Build the warning that says output only validated after normalization at `level`."""
    return run_warning(WARNING_CODES[level], _WARNING_MESSAGES[level], details, level)


def result_file_warning(errors: list[dict[str, Any]], used_source: str) -> dict[str, Any]:
    """Build the warning that says result/result.json was invalid and another source was used."""
    return run_warning(
        ErrorCode.OUTPUT_RESULT_FILE_INVALID,
        f"result/result.json did not validate; the output was taken from {used_source}.",
        {"errors": errors, "used_source": used_source},
    )
