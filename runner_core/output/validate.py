"""Validate output data against a skill's output JSON Schema."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from runner_core.inputs import by_identity

# jsonschema puts the whole failing instance into some messages; a 2 MB agent answer must not
# end up in every error record.
_MAX_MESSAGE_CHARS = 500


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
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise OutputSchemaError(exc.message) from exc
    return cls(schema)


def collect_errors(validator: Validator, data: Any) -> list[dict[str, str]]:
    """Return every validation error as {path, message, validator}, ordered by path."""
    errors = sorted(validator.iter_errors(data), key=lambda e: (e.json_path, str(e.validator)))
    return [error_record(e.json_path, e.message, str(e.validator)) for e in errors]


def error_record(path: str, message: str, validator: str) -> dict[str, str]:
    """Build one error record in the shape used by validation.json and API error details."""
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[: _MAX_MESSAGE_CHARS - 3] + "..."
    return {"path": path, "message": message, "validator": validator}


def is_root_type_mismatch(errors: list[dict[str, str]]) -> bool:
    """Tell whether the data has the wrong type altogether (e.g. a list where an object is due)."""
    return any(e["path"] == "$" and e["validator"] == "type" for e in errors)
