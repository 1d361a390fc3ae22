"""A skill's output schema in the form an engine's own structured-output flag accepts.

Two dialects:

- ``strict``: OpenAI structured outputs in strict mode (codex ``--output-schema``; codex sends
  it as the Responses ``text.format``). Every object lists all its properties as required and
  has ``additionalProperties: false``; only a subset of keywords is accepted.
- ``tool``: the schema of a CLI's synthetic answer tool, checked by the CLI itself (claude and
  qwen ``--json-schema``). Any JSON Schema the CLI's validator compiles.

In both, ``x-*`` keys are dropped (an artifact field, ``"x-type": "artifact"``, is a path: a
string) and so are keywords that only narrow a value the provider would refuse (``minLength``,
an unknown ``format``...): the output chain validates every answer against the skill's own
schema afterwards. When the engine's form would change which answers are allowed (an optional
property, free-form keys, ``allOf``...), there is no native form: `native_schema` answers None
and the run relies on the output chain alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner_core.engines.base import EngineContext

CONFIG_KEY = "native_schema"  # engine config: false turns the engine's own enforcement off
STRICT, TOOL = "strict", "tool"
# what OpenAI's strict mode accepts and enforces
_STRICT_KEEP = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "definitions", "description", "title", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
# narrowing or annotation only: dropped, the output chain still checks them
_STRICT_DROP = {
    "$schema", "$id", "$comment", "default", "examples", "minLength", "maxLength",
    "uniqueItems", "minProperties", "maxProperties", "readOnly", "writeOnly", "deprecated",
    "contentEncoding", "contentMediaType",
}  # fmt: skip
_STRICT_FORMATS = {
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
}  # fmt: skip
# keys whose value maps names to subschemas, and keys holding one subschema or a list of them
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_ONES = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
                "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


class NotFaithful(ValueError):
    """The engine's form of the schema would allow or refuse other answers."""


def native_schema(schema: Any, dialect: str) -> dict[str, Any] | None:
    """`schema` converted for `dialect` (STRICT or TOOL); None when its top level is not an
    object or the conversion cannot be faithful."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    try:
        return _convert(schema, dialect)
    except NotFaithful:
        return None


def _convert(node: Any, dialect: str) -> Any:
    if isinstance(node, bool):
        if dialect == STRICT:
            raise NotFaithful("boolean schema")
        return node
    if not isinstance(node, dict):
        raise NotFaithful(f"not a schema: {node!r}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-") or key in ("$schema", "$id"):
            continue
        if key == "format" and (dialect == TOOL or value not in _STRICT_FORMATS):
            continue  # a CLI validator may not know it; strict mode refuses the rest
        if dialect == STRICT and key not in _STRICT_KEEP:
            if key in _STRICT_DROP:
                continue
            raise NotFaithful(f"strict mode has no {key!r}")
        out[key] = _sub(key, value, dialect)
    if node.get("x-type") == "artifact":  # the field holds the artifact's path
        if out.setdefault("type", "string") != "string":
            raise NotFaithful("an artifact field that is not a string")
    if dialect == STRICT:
        _strict_object(out)
    return out


def _sub(key: str, value: Any, dialect: str) -> Any:
    if key in _SCHEMA_MAPS and isinstance(value, dict):
        return {name: _convert(sub, dialect) for name, sub in value.items()}
    if key in _SCHEMA_ONES and not (key == "additionalProperties" and isinstance(value, bool)):
        return _convert(value, dialect)
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [_convert(sub, dialect) for sub in value]
    return value


def _strict_object(out: dict[str, Any]) -> None:
    """Strict mode: an object lists every property as required, allows no other key."""
    types = out.get("type")
    if not (types == "object" or (isinstance(types, list) and "object" in types)):
        return
    properties = out.get("properties")
    if not properties:
        raise NotFaithful("an object with free-form keys")
    if set(out.get("required") or []) != set(properties):
        raise NotFaithful("an object with optional properties")
    if out.get("additionalProperties", False) is not False:
        raise NotFaithful("an object allowing other keys")
    out["required"] = list(properties)
    out["additionalProperties"] = False


def native_schema_for(ctx: EngineContext, dialect: str) -> dict[str, Any] | None:
    """The run's output schema for the engine's own flag, or None to leave the flag off: the
    engine config's ``native_schema`` is false, the run is interactive (a question turn is
    free text, which the engines' enforcement refuses), there is no schema, or no faithful
    form of it."""
    if ctx.config.get(CONFIG_KEY) is False or ctx.execution_mode != "auto":
        return None
    if ctx.output_schema_path is None:
        return None
    try:
        schema = json.loads(Path(ctx.output_schema_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return native_schema(schema, dialect)
