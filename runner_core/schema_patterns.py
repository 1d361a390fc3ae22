"""The regular expressions of a skill's schemas, checked when the skill is loaded.

Every request's input is validated against its skill's input schema in the API process, its
patterns matched with a time limit (runner_core.schema_validators): a pattern that backtracks
for ever (`^(a+)+$`) costs a crafted value a tenth of a second and a validation error, so it is
not refused here. Refused: a pattern `regex` does not compile (or whose counted repeats would
take too much memory compiled, runner_core.schema_regex), and `unevaluatedProperties` in a
schema with `patternProperties`, which jsonschema would match with `re`, without a limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runner_core.schema_regex import MAX_REPEAT_WEIGHT, pattern_problem, repeat_weight
from runner_core.schema_validators import UNEVALUATED_WITH_PATTERNS, has_pattern_properties

_LEAVES = ("const", "enum", "default", "examples")  # values, not schemas
MAX_SCHEMA_WEIGHT = 5 * MAX_REPEAT_WEIGHT  # all the patterns of one schema file


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


def has_unevaluated_properties(schema: Any) -> bool:
    """Whether `unevaluatedProperties` is a key of `schema` or of a schema inside it."""
    if isinstance(schema, list):
        return any(has_unevaluated_properties(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    if "unevaluatedProperties" in schema:
        return True
    return any(has_unevaluated_properties(v) for k, v in schema.items() if k not in _LEAVES)


def pattern_errors(rel: str, schema: Any) -> list[str]:
    """An error for each pattern of `schema` that cannot be matched with a time limit."""
    patterns = list(schema_patterns(schema))
    weights = [repeat_weight(regex) for _where, regex in patterns]
    # each compile writes its repeats out (one too large is not compiled): not thousands of them
    total = sum(w for w in weights if w <= MAX_REPEAT_WEIGHT)
    if total > MAX_SCHEMA_WEIGHT:
        return [
            f"{rel}: the counted repeats of its patterns add up to {total} characters, "
            f"more than {MAX_SCHEMA_WEIGHT}: use smaller counts, or maxLength"
        ]
    errors = []
    for where, regex in patterns:
        problem = pattern_problem(regex)
        if problem is not None:
            errors.append(f"{rel}: {where}: the pattern {regex!r}: {problem}")
    if has_unevaluated_properties(schema) and has_pattern_properties(schema):
        errors.append(f"{rel}: {UNEVALUATED_WITH_PATTERNS}")
    return errors
