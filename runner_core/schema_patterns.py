"""Regular expressions in a skill's schemas that could take exponential time to match.

Every request's input is validated against its skill's input schema in the API process, and
Python's `re` backtracks: a `pattern` such as `^(a+)+$` takes minutes on thirty `a`s and a `!`,
holding an API worker (and a one-off run's package is anybody's with the `submit` scope). A
pattern whose repeated part can be matched by repeats alone (`(a+)+`, `(\\w+\\s?)*`,
`(a*|b)+`) splits one run of characters between its iterations in exponentially many ways, so
it is refused; `(\\d+\\.)+`, whose every iteration needs its `.`, is not.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Iterator
from typing import Any

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)
_LEAVES = ("const", "enum", "default", "examples")  # values, not schemas


def schema_patterns(schema: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(where, regex) of every `pattern` and `patternProperties` key in `schema`."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from schema_patterns(item, f"{where}[{index}]")
        return
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        here = f"{where}.{key}" if where else key
        if key in _LEAVES:
            continue
        if key == "pattern" and isinstance(value, str):
            yield here, value
        elif key == "patternProperties" and isinstance(value, dict):
            yield from ((here, name) for name in value)
        yield from schema_patterns(value, here)


def exponential(pattern: str) -> bool:
    """Whether `pattern` repeats a part that repeats alone could match (nested quantifiers)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return False  # not a regex: the draft check says so
    return _nested(list(parsed))


def _nested(items: list) -> bool:
    for op, av in items:
        if op in _REPEATS:
            _low, high, sub = av
            if high > 1 and _only_repeats(list(sub)):
                return True
            if _nested(list(sub)):
                return True
        elif op == sre.SUBPATTERN:
            if _nested(list(av[3])):
                return True
        elif op == sre.BRANCH:
            if any(_nested(list(branch)) for branch in av[1]):
                return True
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            if _nested(list(av[1])):
                return True
        elif op == sre.ATOMIC_GROUP:
            if _nested(list(av)):
                return True
    return False


def _only_repeats(items: list) -> bool:
    """Whether `items` hold an unbounded repeat and need nothing but repeats and optional parts."""
    unbounded = False
    for op, av in items:
        if op in _REPEATS:
            low, high, sub = av
            if high == sre.MAXREPEAT:
                unbounded = True
            elif low > 0 and not _only_repeats(list(sub)):
                return False
        elif op == sre.SUBPATTERN:
            if _only_repeats(list(av[3])):
                unbounded = True
            else:
                return False
        elif op == sre.BRANCH:
            if any(_only_repeats(list(branch)) for branch in av[1]):
                unbounded = True
            else:
                return False
        elif op not in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            return False
    return unbounded


def pattern_errors(rel: str, schema: Any) -> list[str]:
    """An error for each pattern of `schema` that could take exponential time to match."""
    return [
        f"{rel}: {where}: the pattern {regex!r} nests repeats ((a+)+): matching it can take "
        "exponential time; write it without a repeat inside a repeat"
        for where, regex in schema_patterns(schema)
        if exponential(regex)
    ]
