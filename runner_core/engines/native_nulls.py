"""The nulls an engine's strict schema made the model write, taken out of its answer again.

OpenAI's strict mode has no optional property: runner_core.engines.native_schema makes each one
required but nullable, so the model writes `null` where it means "absent". `drop_added_nulls`
walks the answer along the skill's own schema and removes such a key wherever its property is
optional and null is not one of the values it allows; a null the skill's schema allows stays.
"""

from __future__ import annotations

from typing import Any

from runner_core.schema_refs import deref

_CONSTRAINTS = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref")


def accepts_null(schema: Any, root: Any = None) -> bool:
    """Whether null is one of the values `schema` allows, as far as its own keywords tell,
    following its local `$ref`s in `root` (an artifact field is a path: never null unless its
    type says so)."""
    if root is not None:
        schema = deref(root, schema)
    if not isinstance(schema, dict):
        return schema is True
    if "type" in schema:
        types = schema["type"]
        return types == "null" or (isinstance(types, list) and "null" in types)
    if "enum" in schema:
        return None in (schema["enum"] or [])
    if "const" in schema:
        return schema["const"] is None
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return any(accepts_null(branch, root) for branch in schema[key])
    if schema.get("x-type") in ("artifact", "file", "artifact-manifest"):  # a path
        return False
    return not any(key in schema for key in _CONSTRAINTS)


def drop_added_nulls(root: Any, value: Any) -> Any:
    """`value` (an answer to `root`, the skill's output schema) without the nulls the strict
    form added; everything else as it was."""
    return _walk(root, root, value, 0)


def _walk(root: Any, schema: Any, value: Any, depth: int) -> Any:
    schema = deref(root, schema)
    if not isinstance(schema, dict) or depth > 64:
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_walk(root, schema["items"], item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    branch = _object_branch(root, schema, value)
    if branch is not schema:
        return _walk(root, branch, value, depth + 1) if branch is not None else value
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return value
    required = set(schema.get("required") or [])
    out: dict[str, Any] = {}
    for key, item in value.items():
        prop = properties.get(key)
        if prop is None:
            out[key] = item
        elif item is None and key not in required and not accepts_null(prop, root):
            continue
        else:
            out[key] = _walk(root, prop, item, depth + 1)
    return out


def _object_branch(root: Any, schema: dict[str, Any], value: dict[str, Any]) -> Any:
    """The schema whose properties describe `value`: `schema` itself when it has properties,
    else the anyOf/oneOf branch listing exactly `value`'s keys (strict mode writes every
    property), else None."""
    if "properties" in schema:
        return schema
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            props = deref(root, branch).get("properties") if isinstance(branch, dict) else None
            if isinstance(props, dict) and set(props) == set(value):
                return branch
    return None
