"""Local `$ref`s of a skill's schemas: a property written as `{"$ref": "#/$defs/..."}` keeps its
runner keywords in the definition (an input's `x-input-source`, `extensions` and `default`, an
output's `x-type`, `x-role`, `x-filename` and `x-mime`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

MAX_HOPS = 16  # a chain of refs this long is a loop


def deref(root: Any, prop: Any) -> Any:
    """`prop` with its local `$ref` (`#/...`, followed through chains) merged in: the
    definition's keywords, then the ones written beside the `$ref`. Anything else unchanged."""
    for _ in range(MAX_HOPS):
        if not isinstance(prop, dict) or not isinstance(prop.get("$ref"), str):
            return prop
        target = pointer(root, prop["$ref"])
        if not isinstance(target, dict):
            return prop
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def resolved_properties(schema: Any) -> dict[str, Any]:
    """The top-level `properties` of `schema`, each with its local `$ref` merged in (`deref`);
    {} when there are none."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    return {key: deref(schema, prop) for key, prop in props.items()}


def pointer(root: Any, ref: str) -> Any:
    """The value a same-document JSON pointer (`#/$defs/a`) names in `root`, or None."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in filter(None, ref[1:].split("/")):
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node
