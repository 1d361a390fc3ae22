"""A skill's output schema in the form an engine's own structured-output flag accepts.

Two dialects:

- ``strict``: OpenAI structured outputs in strict mode (codex ``--output-schema``; codex sends
  it as the Responses ``text.format``). Every object lists all its properties as required and
  has ``additionalProperties: false``; only a subset of keywords is accepted, and a ``$ref``
  stands alone (the provider refuses "$ref cannot have keywords"). An optional property
  becomes a required one that may be null: `drop_added_nulls` takes those nulls out of the
  answer again (runner_core.engines.native_nulls).
- ``tool``: the schema of a CLI's synthetic answer tool, checked by the CLI itself (claude and
  qwen ``--json-schema``). Any JSON Schema the CLI's validator compiles.

In both, ``x-*`` keys are dropped (an artifact field, ``"x-type": "artifact"``, is a path: a
string) and so are keywords that only narrow a value the provider would refuse (``minLength``,
an unknown ``format``...): the output chain validates every answer against the skill's own
schema afterwards. When the engine's form would change which answers are allowed (free-form
keys, ``allOf``...), there is no native form: `native_schema` answers None and the run relies
on the output chain alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner_core.engines.base import EngineContext
from runner_core.engines.native_nulls import accepts_null
from runner_core.schema_refs import deref

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
        return _convert(schema, dialect, schema)
    except NotFaithful:
        return None


def _convert(node: Any, dialect: str, root: dict[str, Any]) -> Any:
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
        out[key] = _sub(key, value, dialect, root)
    if node.get("x-type") in ("artifact", "file", "artifact-manifest"):  # a path
        _artifact(node, out, root)
    if dialect == STRICT:
        out = _strict_ref(out, root)
        _strict_typed(out)
        _strict_object(out, root)
    return out


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (type(None), "null"))  # fmt: skip


def _strict_typed(out: dict[str, Any]) -> None:
    """Strict mode: every schema names its type ("schema must have a 'type' key"), an enum's
    or a const's from its values; a schema that allows anything has no strict form."""
    if {"type", "$ref", "anyOf"} & out.keys():
        return
    values = out["enum"] if isinstance(out.get("enum"), list) else None
    if values is None and "const" in out:
        values = [out["const"]]
    if not values:
        raise NotFaithful("a schema with no type")
    types: list[str] = []
    for value in values:
        name = next((n for t, n in _JSON_TYPES if type(value) is t), None)
        if name is None:
            raise NotFaithful(f"an enum or const holding {value!r}")
        if name not in types:
            types.append(name)
    out["type"] = types[0] if len(types) == 1 else types


def _artifact(node: dict[str, Any], out: dict[str, Any], root: dict[str, Any]) -> None:
    """An artifact field is a string: typed so when it says nothing, refused when it says
    otherwise (through its `$ref` too, whose definition then types it)."""
    resolved = deref(root, node) if "$ref" in node else node
    kind = resolved.get("type", "string") if isinstance(resolved, dict) else None
    if kind != "string":
        raise NotFaithful("an artifact field that is not a string")
    if "$ref" not in out:
        out.setdefault("type", "string")


def _strict_ref(out: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Strict mode: a `$ref` with no keyword beside it. Annotations beside it go; any other
    keyword gets the definition inlined, merged with it."""
    if "$ref" not in out:
        return out
    rest = {k: v for k, v in out.items() if k not in ("$ref", "description", "title")}
    if not rest:
        return {"$ref": out["$ref"]}
    target = deref(root, {"$ref": out["$ref"]})
    if not isinstance(target, dict) or "$ref" in target:
        raise NotFaithful(f"a $ref with keywords beside it: {out['$ref']}")
    merged = _convert(target, STRICT, root)
    for key, value in rest.items():
        if merged.setdefault(key, value) != value:
            raise NotFaithful(f"{key!r} beside a $ref that says otherwise")
    return merged


def _sub(key: str, value: Any, dialect: str, root: dict[str, Any]) -> Any:
    if key in _SCHEMA_MAPS and isinstance(value, dict):
        return {name: _convert(sub, dialect, root) for name, sub in value.items()}
    if key in _SCHEMA_ONES and not (key == "additionalProperties" and isinstance(value, bool)):
        return _convert(value, dialect, root)
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [_convert(sub, dialect, root) for sub in value]
    return value


def _strict_object(out: dict[str, Any], root: dict[str, Any]) -> None:
    """Strict mode: an object lists every property as required, allows no other key; an
    optional property may be null instead (unless null is already one of its values)."""
    types = out.get("type")
    if (types == "array" or (isinstance(types, list) and "array" in types)) and (
        "items" not in out
    ):
        raise NotFaithful("an array of any items")
    if not (types == "object" or (isinstance(types, list) and "object" in types)):
        return
    properties = out.get("properties")
    if not properties:
        raise NotFaithful("an object with free-form keys")
    if out.get("additionalProperties", False) is not False:
        raise NotFaithful("an object allowing other keys")
    required = set(out.get("required") or [])
    for name, prop in properties.items():
        if name not in required:
            properties[name] = _nullable(prop, root)
    out["required"] = list(properties)
    out["additionalProperties"] = False


def _nullable(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """`prop` that may also be null: a null type beside a scalar type, else a null branch."""
    if accepts_null(prop, root):
        return prop
    types = prop.get("type")
    listed = types if isinstance(types, list) else [types]
    scalar = types is not None and not ({"object", "array"} & set(listed))
    if scalar and not ({"$ref", "anyOf", "enum", "const"} & prop.keys()):
        return {**prop, "type": [*listed, "null"]}
    if set(prop) <= {"anyOf", "description", "title"}:
        return {**prop, "anyOf": [*prop["anyOf"], {"type": "null"}]}
    return {"anyOf": [prop, {"type": "null"}]}


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
