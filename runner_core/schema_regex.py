"""Matching a skill schema's regular expressions with a time limit.

A skill's `pattern`s and `patternProperties` keys are matched against request input in the API
process. Python's `re` backtracks without limit (`(a|a)*$` on forty `a`s and a `!` runs for
days), so they are matched with the `regex` package, whose matches take a `timeout`: each match
has MATCH_SECONDS, and all the matches of one validation together VALIDATION_SECONDS (inside
`time_budget`), so ten thousand crafted strings cannot add up to an hour either.

`regex` writes a counted repeat out in full when it compiles (`a{1000000}` takes 250 MB, nested
ones multiply), so a pattern whose counted repeats add up to more than MAX_REPEAT_WEIGHT is not
compiled: `pattern_problem` says why.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import regex

from runner_core.bounded_cache import BoundedCache

MATCH_SECONDS = 0.1  # one pattern against one string
VALIDATION_SECONDS = 1.0  # every match of one validation, added up
# what counted repeats may write out: ~250 bytes each once compiled (10,000: 2.5 MB a pattern)
MAX_REPEAT_WEIGHT = 10_000
LIGHT_WEIGHT = 1_000  # compiled patterns kept: 256 of up to this (64 MB), 8 heavier (20 MB)

_VERSION1 = regex.compile(r"\(\?[a-zA-Z^-]*V1")
_light: BoundedCache[str, Any] = BoundedCache(256)
_heavy: BoundedCache[str, Any] = BoundedCache(8)
# seconds of matching left to the validation under way (None: no budget, MATCH_SECONDS a match)
_left: ContextVar[list[float] | None] = ContextVar("schema_regex_left", default=None)


class PatternTimeout(Exception):
    """A match ran out of time: its own MATCH_SECONDS, or (`budget`) the validation's."""

    def __init__(self, pattern: str, budget: bool) -> None:
        super().__init__(pattern)
        self.budget = budget


class PatternInvalid(Exception):
    """A pattern `regex` does not compile, or one whose counted repeats are too large."""


@contextmanager
def time_budget(seconds: float = VALIDATION_SECONDS) -> Iterator[None]:
    """Every match inside shares `seconds` (a nested budget keeps the outer one)."""
    if _left.get() is not None:
        yield
        return
    token = _left.set([seconds])
    try:
        yield
    finally:
        _left.reset(token)


def search(pattern: str, text: str) -> bool:
    """`re.search(pattern, text)` as jsonschema does it (unanchored), within the time limits
    (a compile counted in the validation's). Raises PatternTimeout or PatternInvalid."""
    left = _left.get()
    started = time.monotonic()
    try:
        compiled = compile_pattern(pattern)
        limit = MATCH_SECONDS
        if left is not None:
            limit = min(limit, left[0] - (time.monotonic() - started))
        if limit <= 0:
            raise PatternTimeout(pattern, budget=True)
        try:
            return compiled.search(text, timeout=limit) is not None
        except TimeoutError:
            raise PatternTimeout(pattern, budget=limit < MATCH_SECONDS) from None
    finally:
        if left is not None:
            left[0] -= time.monotonic() - started


def compile_pattern(pattern: str) -> Any:
    """The compiled `pattern`, kept for the next match; PatternInvalid when it cannot be."""
    hit = _light.get(pattern) or _heavy.get(pattern)
    if hit is not None:
        return hit
    weight = repeat_weight(pattern)
    compiled = _compiled(pattern, weight)
    if isinstance(compiled, str):
        raise PatternInvalid(compiled)
    (_light if weight <= LIGHT_WEIGHT else _heavy).put(pattern, compiled)
    return compiled


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be matched here, or None."""
    compiled = _compiled(pattern, repeat_weight(pattern))
    return compiled if isinstance(compiled, str) else None


def _compiled(pattern: str, weight: int) -> Any:
    """`pattern` compiled, or (a str) why it is not."""
    if weight > MAX_REPEAT_WEIGHT:
        return (
            f"its counted repeats ({{n}}, {{m,n}}) write out more than {MAX_REPEAT_WEIGHT} "
            "characters: use smaller counts, or maxLength"
        )
    if _VERSION1.search(pattern):  # its nested classes are read otherwise than repeat_weight does
        return "regex's VERSION1 syntax ((?V1)) is not supported"
    try:
        return regex.compile(pattern, cache_pattern=False)
    except (regex.error, RecursionError, OverflowError, MemoryError, ValueError) as exc:
        return f"not a regular expression: {exc}"


def repeat_weight(pattern: str) -> int:
    """An upper bound on how many atoms `pattern` holds once its counted repeats are written
    out: a sequence adds up, a repeat multiplies by its largest count. Read from the text
    (escapes, classes, groups and `{m,n}`); where regex could read the text otherwise than this
    scan (comments, verbose mode, a `[` inside a class, unbalanced groups), the bound is the
    pattern's length times every count found in it."""
    scanned = _scanned_weight(pattern)
    return scanned if scanned is not None else _coarse_weight(pattern)


_VERBOSE = regex.compile(r"\(\?[\^a-zA-Z-]*x")  # (?x) or (?x:...): whitespace, # comments
_ANY_COUNT = regex.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")


def _scanned_weight(pattern: str) -> int | None:
    if "#" in pattern or _VERBOSE.search(pattern):
        return None
    stack: list[list[int]] = [[0, 0]]  # per open group: [weight so far, weight of last atom]
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        frame = stack[-1]
        if char == "\\":
            i += 2
            frame[0], frame[1] = frame[0] + 1, 1
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end is None:
                return None
            i = end
            frame[0], frame[1] = frame[0] + 1, 1
            continue
        if char == "(":
            stack.append([0, 0])
        elif char == ")":
            if len(stack) == 1:
                return None
            inner = stack.pop()[0]
            stack[-1][0] += inner
            stack[-1][1] = inner
        elif char == "{" and (count := _count(pattern, i)) is not None:
            times, i = count
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            continue
        elif char not in "|*+?":
            frame[0], frame[1] = frame[0] + 1, 1
        i += 1
    return stack[0][0] if len(stack) == 1 else None


def _coarse_weight(pattern: str) -> int:
    """Length times the product of every count, whitespace ignored (verbose mode ignores it)."""
    weight = max(len(pattern), 1)
    for found in _ANY_COUNT.finditer("".join(pattern.split())):
        numbers = [_number(n) for n in found.groups() if n]
        weight *= max([*numbers, 1]) + 1
        if weight > MAX_REPEAT_WEIGHT:
            break
    return weight


def _class_end(pattern: str, start: int) -> int | None:
    """The index after the `]` closing the class opened at `start` (a first `]` is literal);
    None for a `[` inside it (a POSIX class, a nested set): where it ends is regex's to say."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "[":
            return None
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 12 else 10**12  # int() refuses 5,000 digits


def _count(pattern: str, start: int) -> tuple[int, int] | None:
    """(largest count, index after it) of a `{m}`, `{m,}`, `{,n}` or `{m,n}` at `start`."""
    end = pattern.find("}", start)
    if end < 0:
        return None
    parts = pattern[start + 1 : end].split(",")
    if len(parts) > 2 or not all(p.isdigit() or p == "" for p in parts):
        return None
    if not any(parts) or not all(p.isascii() for p in parts):
        return None
    numbers = [_number(p) for p in parts if p]
    # {m,} writes m copies and a loop
    return max(max(numbers) + (1 if parts[-1] == "" else 0), 1), end + 1
