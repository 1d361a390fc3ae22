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


REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def outside_refs(schema: Any) -> list[str]:
    """The `$ref`s of `schema` naming another document (`file:///etc/passwd`, `https://...`,
    `other.json`): neither `#...` nor an `$id` the schema declares itself. Validators fetch
    nothing (runner_core.schema_validators), so these would never resolve."""
    ids: set[str] = set()
    refs: list[str] = []
    stack = [schema]
    while stack:  # not recursive: a package's schema may nest deeper than Python's stack
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str):
                ids.add(node["$id"].split("#")[0])
            refs.extend(node[k] for k in REF_KEYWORDS if isinstance(node.get(k), str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return [ref for ref in refs if not ref.startswith("#") and ref.split("#")[0] not in ids]


def outside_ref_errors(where: str, schema: Any) -> list[str]:
    """A package error for each of `outside_refs(schema)`, `where` naming the schema."""
    return [
        f"{where}: $ref {ref!r} points outside the schema; only refs inside it (#/$defs/...) "
        "resolve, nothing is fetched"
        for ref in outside_refs(schema)
    ]
