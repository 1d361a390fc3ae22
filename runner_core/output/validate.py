"""Validate output data against a skill's output JSON Schema."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from runner_core.inputs import TOO_DEEP_TO_VALIDATE, by_identity
from runner_core.schema_validators import (
    all_errors,
    new_validator,
    schema_format_checker,
    validator_class,
)

# jsonschema puts the whole failing instance into some messages; a 2 MB agent answer must not
# end up in every error record.
_MAX_MESSAGE_CHARS = 500
_PREVIEW_CHARS = 200  # `expected` and `got` of an error record
TOO_DEEP_TO_SHOW = "(a value nested too deeply to show)"


class OutputSchemaError(ValueError):
    """The skill's output schema itself is not a valid JSON Schema."""


def build_validator(schema: dict[str, Any] | bool) -> Validator:
    """Return a validator for `schema`: Draft 2020-12 unless its `$schema` names another draft.

    Raises OutputSchemaError when the schema is not valid under its own metaschema. A checked
    validator is reused for the same schema object (a skill's schemas are loaded once per
    version): checking a schema costs more than most validations.
    """
    return by_identity(schema, _checked_validator)


def _checked_validator(schema: dict[str, Any] | bool) -> Validator:
    cls = validator_class(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema, format_checker=schema_format_checker(cls))
    except SchemaError as exc:
        raise OutputSchemaError(exc.message) from exc
    except RecursionError as exc:
        raise OutputSchemaError("the output schema nests too deeply to check") from exc
    return new_validator(cls, schema)


def collect_errors(validator: Validator, data: Any) -> list[dict[str, Any]]:
    """Return every validation error as {path, message, validator, expected, got}, ordered by
    path: `expected` is what the schema's keyword asks, `got` the start of the value found."""
    try:
        errors = sorted(all_errors(validator, data), key=lambda e: (e.json_path, str(e.validator)))
    except RecursionError:  # a deep value under a recursive `$ref`, or a `$ref` loop
        return [{**error_record("$", TOO_DEEP_TO_VALIDATE, "depth"), "expected": None, "got": None}]
    found = [
        {
            **error_record(e.json_path, e.message, str(e.validator)),
            "expected": _preview(e.validator_value),
            "got": _preview(e.instance),
        }
        for e in errors
    ]
    for path, number in non_finite(data):  # NaN and Infinity are not JSON: no client parses them
        found.append(
            {
                **error_record(path, f"{number} is not a JSON number", "finite"),
                "expected": "a finite number",
                "got": str(number),
            }
        )
    return found


def non_finite(data: Any) -> Iterator[tuple[str, float]]:
    """(JSON path, value) of every NaN or infinite number in `data`; without recursion."""
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            yield path, value
        elif isinstance(value, dict):
            stack.extend((f"{path}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))


def error_record(path: str, message: str, validator: str) -> dict[str, str]:
    """Build one error record in the shape used by validation.json and API error details."""
    return {"path": path, "message": _cut(message), "validator": validator}


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _preview(value: Any) -> Any:
    """`value` itself when small, else its JSON text cut short. A value holding NaN or Infinity
    is always text (JSON has no such number: the record and the API answer must stay JSON), and
    one nested too deeply to write says so."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
        plain = True
    except ValueError:
        text, plain = json.dumps(value, ensure_ascii=False, default=str), False
    except RecursionError:
        return TOO_DEEP_TO_SHOW
    if plain and len(text) <= _PREVIEW_CHARS:
        return value
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 3] + "..."


def is_root_type_mismatch(errors: list[dict[str, str]]) -> bool:
    """Tell whether the data has the wrong type altogether (e.g. a list where an object is due)."""
    return any(e["path"] == "$" and e["validator"] == "type" for e in errors)
