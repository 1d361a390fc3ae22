"""What OpenAI's structured outputs refuse in a strict schema, checked like the provider does
before it decodes anything: the fake Responses server answers such a request 400
(`invalid_json_schema`), so a test with a real CLI sees the refusal a user would.

The rules (OpenAI's "supported schemas"): the root is an object; every object lists all its
properties in `required` and has `additionalProperties: false`; every schema names its `type`
(or is an `anyOf` or a `$ref`); a `$ref` stands alone and points inside the document; no
keyword outside the supported subset; a `format` from the known list only; an array
names its `items`.
"""

from __future__ import annotations

from typing import Any

UNSUPPORTED = frozenset({
    "allOf", "not", "oneOf", "if", "then", "else", "dependentRequired", "dependentSchemas",
    "patternProperties", "unevaluatedProperties", "propertyNames", "minProperties",
    "maxProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
    "uniqueItems", "prefixItems", "minLength", "maxLength", "nullable",
})  # fmt: skip
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4",
                     "ipv6", "uuid"})  # fmt: skip


def strict_problem(schema: Any) -> str | None:
    """The provider's complaint about `schema` as a strict response format, None if none."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "context=(), root schema must have type 'object' and not use 'anyOf'"
    return _check(schema, schema, ())


def _check(root: dict[str, Any], node: Any, context: tuple[str, ...]) -> str | None:
    where = f"context={context!r}, "
    if not isinstance(node, dict):
        return where + "schema must be a JSON object"
    if "$ref" in node:
        others = sorted(set(node) - {"$ref"})
        if others and context:
            return where + f"$ref cannot have keywords {set(others)!r}"
        if not _resolves(root, node["$ref"]):
            return where + f"reference {node['$ref']} cannot be resolved"
    elif "anyOf" not in node and "type" not in node:
        return where + "schema must have a 'type' key"
    bad = sorted(UNSUPPORTED & node.keys())
    if bad:
        return where + f"'{bad[0]}' is not permitted"
    if "format" in node and node["format"] not in FORMATS:
        return where + f"format {node['format']!r} is not supported"
    types = node.get("type")
    if (types == "array" or (isinstance(types, list) and "array" in types)) and "items" not in node:
        return where + "array schema missing items"
    if types == "object" or (isinstance(types, list) and "object" in types):
        props = node.get("properties") or {}
        if node.get("additionalProperties") is not False:
            return where + "'additionalProperties' is required to be supplied and to be false"
        missing = [key for key in props if key not in (node.get("required") or [])]
        if missing:
            return (where + "'required' is required to be supplied and to be an array "
                    f"including every key in properties. Missing '{missing[0]}'.")  # fmt: skip
    return _children(root, node, context)


def _children(root: dict[str, Any], node: dict[str, Any], context: tuple[str, ...]) -> str | None:
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (node.get(key) or {}).items():
            problem = _check(root, sub, (*context, key, name))
            if problem:
                return problem
    if "items" in node:
        problem = _check(root, node["items"], (*context, "items"))
        if problem:
            return problem
    for index, sub in enumerate(node.get("anyOf") or []):
        problem = _check(root, sub, (*context, "anyOf", str(index)))
        if problem:
            return problem
    return None


def _resolves(root: dict[str, Any], ref: Any) -> bool:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return False
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return isinstance(node, dict)
