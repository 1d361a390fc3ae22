"""Pre-check of a skill's three JSON Schemas before they are trusted (whenever a skill is loaded).

Three checks per schema, both collecting every problem:

1. the schema is itself valid JSON Schema for the draft it declares (`$schema`, default 2020-12):
   every error jsonschema's `check_schema` would raise, not only the first;
2. the runner's extension keywords on its top-level properties are well formed, checked by a
   meta-schema: input fields' `x-input-source` (file|inline) and `extensions` (".ext" strings),
   output fields' `x-type` ("artifact", "file", "artifact-manifest"), `x-role` and
   `x-filename` (a plain file name). A property written as a local `$ref` is checked with its definition's keywords, which the
   runner reads too;
3. every `pattern` (and `patternProperties` key) compiles as it will be matched, with `regex`
   and a time limit, and no `unevaluatedProperties` sits in a schema with `patternProperties`
   (runner_core.schema_patterns).

And no `$ref` names another document (a file or URL): nothing is fetched (runner_core.schema_refs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import validator_for

from runner_core.schema_patterns import pattern_errors
from runner_core.schema_refs import outside_ref_errors, resolved_properties
from runner_core.schema_validators import schema_format_checker

DEFAULT_DRAFT = Draft202012Validator
# ".txt", ".tar.gz"; no path separators.
EXTENSION_PATTERN = r"^\.[^./\\][^/\\]*$"
# Any name without "/" or "\", and not "." or "..".
PLAIN_FILENAME_PATTERN = r"^(?!\.\.?$)[^/\\]+$"

INPUT_FIELD = {
    "type": "object",
    "properties": {
        "x-input-source": {"enum": ["file", "inline"]},
        "extensions": {"type": "array", "items": {"type": "string", "pattern": EXTENSION_PATTERN}},
    },
}
OUTPUT_FIELD = {
    "type": "object",
    "properties": {
        "x-type": {"enum": ["artifact", "file", "artifact-manifest"]},
        "x-role": {"type": "string", "minLength": 1},
        "x-filename": {"type": "string", "pattern": PLAIN_FILENAME_PATTERN},
    },
}
RULE_MESSAGES = {
    "x-input-source": "x-input-source must be 'file' or 'inline'",
    "extensions": "extensions must be a list of strings starting with '.' (e.g. \".txt\")",
    "x-type": "x-type must be 'artifact', 'file' or 'artifact-manifest'",
    "x-role": "x-role must be a non-empty string",
    "x-filename": "x-filename must be a plain file name (no '/' or '..')",
}


def extension_meta_schema(field_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The meta-schema for one kind: an object schema whose properties obey `field_schema`."""
    props: dict[str, Any] = {"type": "object"}
    if field_schema is not None:
        props["additionalProperties"] = field_schema
    return {"type": "object", "properties": {"type": {"const": "object"}, "properties": props}}


META_SCHEMAS = {
    "input": extension_meta_schema(INPUT_FIELD),
    "parameter": extension_meta_schema(None),
    "output": extension_meta_schema(OUTPUT_FIELD),
}


@dataclass
class SchemaCheck:
    """What the pre-check found in one schema file."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_skill_schema(kind: str, rel: str, schema: dict[str, Any]) -> SchemaCheck:
    """Check the `kind` schema (input|parameter|output) read from `rel`."""
    check = SchemaCheck(errors=draft_errors(rel, schema))
    check.errors.extend(extension_errors(kind, rel, schema))
    check.errors.extend(pattern_errors(rel, schema))
    check.errors.extend(outside_ref_errors(rel, schema))
    check.warnings.extend(extension_warnings(kind, rel, schema))
    return check


def draft_errors(rel: str, schema: dict[str, Any]) -> list[str]:
    """`schema` against the meta-schema of its declared draft."""
    declared = schema.get("$schema")
    cls = validator_for(schema, default=None) if declared is not None else DEFAULT_DRAFT
    if cls is None:
        return [f"{rel}: unknown $schema {declared!r}; use a JSON Schema draft URI"]
    meta = cls(cls.META_SCHEMA, format_checker=schema_format_checker(cls))
    return [
        f"{rel}: not a valid JSON Schema: {_where(e)}{e.message}"
        for e in sorted(meta.iter_errors(schema), key=_sort_key)
    ]


def extension_errors(kind: str, rel: str, schema: dict[str, Any]) -> list[str]:
    """The runner's extension keywords against the meta-schema of `kind`."""
    schema = _with_refs_resolved(schema)
    validator = Draft202012Validator(META_SCHEMAS[kind])
    errors = []
    for error in sorted(validator.iter_errors(schema), key=_sort_key):
        path = list(error.absolute_path)
        if len(path) >= 3 and path[0] == "properties" and path[2] in RULE_MESSAGES:
            value = schema["properties"][path[1]][path[2]]
            errors.append(f"{rel}: properties.{path[1]}: {RULE_MESSAGES[path[2]]}, got {value!r}")
        elif path == ["type"]:
            errors.append(f'{rel}: the schema must describe an object ("type": "object")')
        else:
            errors.append(f"{rel}: {_where(error)}{error.message}")
    return errors


def extension_warnings(kind: str, rel: str, schema: dict[str, Any]) -> list[str]:
    """Extension keywords that are well formed but have no effect where they are."""
    props = _with_refs_resolved(schema).get("properties")
    if not isinstance(props, dict):
        return []
    warnings = []
    for name, spec in props.items():
        if not isinstance(spec, dict):
            continue
        if kind == "input" and spec.get("x-input-source") == "inline" and "extensions" in spec:
            warnings.append(f"{rel}: properties.{name}: extensions only apply to file inputs")
        if kind == "output" and spec.get("x-type") not in ("artifact", "file"):
            marks = ("x-filename",) if spec.get("x-type") else ("x-role", "x-filename")
            ignored = [k for k in marks if k in spec]
            if ignored:
                warnings.append(
                    f"{rel}: properties.{name}: {', '.join(ignored)} ignored "
                    'without "x-type": "artifact"'
                )
    return warnings


def _with_refs_resolved(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its top-level properties' local `$ref`s merged in, as the runner reads them."""
    if not isinstance(schema.get("properties"), dict):
        return schema
    return {**schema, "properties": resolved_properties(schema)}


def _where(error: ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return f"{path}: " if path else ""


def _sort_key(error: ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path)
