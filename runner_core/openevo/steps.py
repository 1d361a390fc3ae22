"""A composite step's child runs: the name each one gets, and what one attempt did.

A step runs as one child run per attempt and, with `foreach`, per item; the child's
`step_name` says which: `search`, `search#2` (its second attempt), `fetch[3]` (item 3),
`fetch[3]#2`. The unique (parent, step_name) index then keeps two racing callbacks from
starting the same attempt twice. A call of an index-file composite is `<skill>@<n>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"^(?P<step>[^\[#@]+)(?:\[(?P<index>\d+)\])?(?:#(?P<attempt>\d+))?$")


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
