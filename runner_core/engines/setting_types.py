"""The JSON types of the well-known settings of each engine CLI's own settings file.

A CLI given a setting of the wrong type fails the run (codex: "Error loading config.toml:
invalid type"; opencode, kilo: "Configuration is invalid") or runs with other settings than
asked (gemini warns and goes on with the value; claude skips the whole file), so a job whose
merged settings hold one is refused when it is created. Each engine module declares
``SETTINGS_SCHEMA`` with the helpers below: only settings known to its CLI, each with the type
the CLI takes. Any other key is left to the CLI, which takes many more, and more with each
version; values are not checked either (a CLI's list of efforts or modes grows too).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, ValidationError

from runner_core.engines import settings_schema
from runner_core.engines.config import EngineConfigError, skill_files

STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
# draft 4 (the validator used): 1.0 is not an integer, and codex refuses a float for one
INTEGER: dict[str, Any] = {"type": "integer"}
NUMBER: dict[str, Any] = {"type": "number"}
OBJECT: dict[str, Any] = {"type": "object"}
STRINGS: dict[str, Any] = {"type": "array", "items": STRING}

_TYPE_NAMES = {
    "string": "a string",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
}


def table(**properties: dict[str, Any]) -> dict[str, Any]:
    """An object with these settings typed; it may hold any other."""
    return {"type": "object", "properties": properties}


def map_of(value: dict[str, Any]) -> dict[str, Any]:
    """An object whose keys the user names (providers, servers), each holding `value`."""
    return {"type": "object", "additionalProperties": value}


def check_setting_types(
    engine: str,
    settings: Mapping[str, Any],
    *,
    skill_dir: Path | None,
    sent: Mapping[str, Any] | None,
) -> None:
    """Raise EngineConfigError naming the first of a run's merged `settings` (its engine
    config's ``settings``) that `engine`'s CLI takes with another JSON type: the key as the
    request sent it (`sent`, its ``runtime_options.<engine>_config``) when the value is the
    request's, else as in the skill's config file, else as the operator's."""
    errors = sorted(
        _validator(engine).iter_errors(settings),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    if errors:
        error, path = errors[0], list(errors[0].absolute_path)
        where = _source(engine, path, error.instance, skill_dir, sent)
        raise EngineConfigError(f"{where}{_dotted(path)}: {_problem(engine, error)}")


def _source(
    engine: str, path: list[Any], value: Any, skill_dir: Path | None, sent: Mapping[str, Any] | None
) -> str:
    """The prefix naming the highest layer that holds `value` at `path`: the request's, a
    skill file's, else the operator's (the only layers left)."""
    sources = [(f"runtime_options.{engine}_config.", sent or {})]
    sources += [
        (f"assets/{name}: ", layer) for name, layer in reversed(skill_files(engine, skill_dir))
    ]
    return next(
        (prefix for prefix, layer in sources if _holds(layer, path, value)),
        f"the operator's {engine} config, settings.",
    )


def _problem(engine: str, error: ValidationError) -> str:
    if error.validator != "type":  # the schemas hold types only; kept for a schema that grows
        return error.message
    wanted = error.validator_value
    expected = " or ".join(
        _TYPE_NAMES.get(str(t), str(t)) for t in (wanted if isinstance(wanted, list) else [wanted])
    )
    return f"{engine} expects {expected}, got {_json_type(error.instance)}"


@functools.cache
def _validator(engine: str) -> Draft4Validator:
    return Draft4Validator(settings_schema(engine))


def _holds(layer: Any, path: Sequence[Any], value: Any) -> bool:
    """Whether `layer` holds `value` (the same JSON type, equal) at `path`."""
    for step in path:
        if isinstance(step, int) and isinstance(layer, list) and step < len(layer):
            layer = layer[step]
        elif isinstance(step, str) and isinstance(layer, Mapping) and step in layer:
            layer = layer[step]
        else:
            return False
    return type(layer) is type(value) and layer == value


def _dotted(path: Sequence[Any]) -> str:
    """`["a", "b", 0]` -> `a.b[0]`."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else str(step)
    return text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
