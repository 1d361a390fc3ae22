"""A time limit on following a schema's `$ref`s during one validation.

A few definitions that each name the next twice (`{"allOf": [{"$ref": "#/$defs/d2"},
{"$ref": "#/$defs/d2"}]}`) make jsonschema take 2**n steps for any value: thirty of them held
an API thread for hours on each job POST. Each `$ref` followed checks the validation's clock;
past REF_SECONDS the validation stops with RefsTooSlow (runner_core.schema_validators turns it
into one validation error).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

REF_SECONDS = 5.0
_deadline: ContextVar[float | None] = ContextVar("ref_deadline", default=None)

Keyword = Callable[[Any, Any, Any, Any], Iterator[Any]]


class RefsTooSlow(Exception):
    """Following the schema's `$ref`s took longer than REF_SECONDS."""


@contextmanager
def ref_clock(seconds: float | None = None) -> Iterator[None]:
    """Every `$ref` followed inside shares `seconds` (a nested clock keeps the outer one)."""
    if _deadline.get() is not None:
        yield
        return
    token = _deadline.set(time.monotonic() + (REF_SECONDS if seconds is None else seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def timed_keyword(original: Keyword) -> Keyword:
    """`original` (jsonschema's `$ref` or `$dynamicRef`), first checking the clock."""

    def keyword(validator: Any, ref: Any, instance: Any, schema: Any) -> Iterator[Any]:
        deadline = _deadline.get()
        if deadline is not None and time.monotonic() > deadline:
            raise RefsTooSlow(ref)
        yield from original(validator, ref, instance, schema)

    return keyword
