"""A composite step's child runs: the name each one gets, and what one attempt did.

A step runs as one child run per attempt and, with `foreach`, per item; the child's
`step_name` says which: `search`, `search#2` (its second attempt), `fetch[3]` (item 3),
`fetch[3]#2`. The unique (parent, step_name) index then keeps two racing callbacks from
starting the same attempt twice. A call of an index-file composite is `<skill>@<n>`. When the
composite itself is retried (its skill's `retry`), the children of its k-th attempt (k >= 2)
carry `k:` in front (`2:search`, `2:fetch[3]#2`, `2:summarize@1`), so each attempt starts afresh.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"^(?:\d+:)?(?P<step>[^\[#@:]+)(?:\[(?P<index>\d+)\])?(?:#(?P<attempt>\d+))?$")
_RUN_ATTEMPT = re.compile(r"^(\d+):")


@dataclass(frozen=True)
class Attempt:
    """One child run of a step: which item and attempt, its status, output and error."""

    step: str
    index: int | None
    attempt: int
    status: str
    output: Any = None
    error: dict[str, Any] | None = None
    ended_at: float | None = None  # epoch seconds, once it ended


def child_name(step: str, index: int | None = None, attempt: int = 1) -> str:
    name = step if index is None else f"{step}[{index}]"
    return name if attempt <= 1 else f"{name}#{attempt}"


def in_run_attempt(name: str, run_attempt: int | None) -> str:
    """`name` as a child of the composite's `run_attempt`-th attempt."""
    return name if (run_attempt or 1) <= 1 else f"{run_attempt}:{name}"


def run_attempt_of(name: str) -> int:
    """Which attempt of its composite a child (named by in_run_attempt) belongs to."""
    match = _RUN_ATTEMPT.match(name)
    return int(match[1]) if match else 1


def parse_child_name(name: str) -> tuple[str, int | None, int] | None:
    """(step, item index or None, attempt) of a child's step_name; None for a call's name."""
    match = _NAME.match(name)
    if match is None:
        return None
    index = match["index"]
    return match["step"], int(index) if index is not None else None, int(match["attempt"] or 1)


def call_name(skill: str, number: int) -> str:
    """The step_name of the n-th `ctx.call` of an index-file composite."""
    return f"{skill}@{number}"
