"""Bounds on rendering a skill's Jinja2 template (its prompt, its SKILL.md).

Jinja2's sandbox keeps a template from the service's objects, not from making text: two nested
`range(100000)` loops, or `"x" * 10**10`, filled the worker's memory (a template comes with any
one-off run's package). The text a render makes is counted as it is made and cut at
MAX_CHARS, the render stopped after MAX_SECONDS (checked at each piece of text and each `range`), and `*` and `**` refuse results past those
bounds before they are computed. Each is a SecurityError, a TemplateError: the run fails with
the template's error code.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any

from jinja2 import Template
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment, safe_range

MAX_CHARS = 4 * 1024 * 1024  # far past any prompt a model takes
MAX_SECONDS = 10.0
MAX_EXPONENT_BITS = 4096  # 2**4096 has 1,234 digits
_deadline: ContextVar[float] = ContextVar("template_deadline", default=float("inf"))


class BoundedOperators(SandboxedEnvironment):
    """A sandbox whose `*` and `**` refuse results too large to make."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            _check_repeat(left, right)
            _check_repeat(right, left)
        elif operator == "**" and _too_big_power(left, right):
            raise SecurityError(f"{left!r} ** {right!r} is too large to compute in a template")
        return super().call_binop(context, operator, left, right)


class BoundedSandbox(BoundedOperators):
    """The sandbox of prompt templates: bounded operators, and a `range` that keeps time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = _timed_range


def bounded_render(template: Template, variables: dict[str, Any]) -> str:
    """`template` rendered with `variables`, or SecurityError once it passes MAX_CHARS or
    MAX_SECONDS."""
    pieces: list[str] = []
    size = 0
    token = _deadline.set(time.monotonic() + MAX_SECONDS)
    try:
        for piece in template.generate(**variables):
            size += len(piece)
            if size > MAX_CHARS:
                raise SecurityError(f"the rendered text passed {MAX_CHARS} characters")
            _check_time()
            pieces.append(piece)
    finally:
        _deadline.reset(token)
    return "".join(pieces)


def _check_time() -> None:
    if time.monotonic() > _deadline.get():
        raise SecurityError(f"rendering took longer than {MAX_SECONDS:g} s")


def _timed_range(*args: int) -> range:
    """The sandbox's range, which also ends a render past its time: loops printing nothing
    are timed at each inner `range`."""
    _check_time()
    return safe_range(*args)


def _check_repeat(sequence: Any, times: Any) -> None:
    if isinstance(sequence, str | bytes | list | tuple) and isinstance(times, int):
        if len(sequence) * times > MAX_CHARS:
            raise SecurityError(
                f"repeating {len(sequence)} items {times} times passes {MAX_CHARS} in a template"
            )


def _too_big_power(base: Any, exponent: Any) -> bool:
    if not isinstance(base, int) or not isinstance(exponent, int) or exponent <= 0:
        return False
    return abs(base) > 1 and abs(base).bit_length() * exponent > MAX_EXPONENT_BITS
