"""The run form's fields from a skill's schemas (read through the SDK), and the typed values of a
submitted form: a field per inline input and parameter property, a file picker per file input."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from werkzeug.datastructures import MultiDict


@dataclass(frozen=True)
class Field:
    group: str  # "input", "parameter" or "file"
    name: str
    widget: str  # text, textarea, integer, number, boolean, select, json, file
    required: bool
    description: str = ""
    default: Any = None
    options: list[Any] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.group}:{self.name}"


def _widget(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "select"
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in (None, "string") and not _one_line(prop):
        return "textarea"
    return {
        "integer": "integer",
        "number": "number",
        "boolean": "boolean",
        "object": "json",
        "array": "json",
    }.get(kind or "string", "text")


def engines(detail: Mapping[str, Any]) -> list[str]:
    """The engines the form offers: none for a script skill (it runs its own script), a
    skill.json skill's effective engines (none for code, its llm steps' for a composite, also
    one written as an index file, which runs as a script)."""
    is_script = (detail.get("entrypoint") or {}).get("type") == "script"
    if is_script and detail.get("format") != "skill.json":
        return []
    return list(detail.get("effective_engines") or [])


def _one_line(prop: dict[str, Any]) -> bool:
    """A string the schema makes one line (a format, a pattern, 200 characters at most): any
    other is a box of several lines, as a browser's one-line box drops a pasted text's breaks."""
    return "format" in prop or "pattern" in prop or 0 < prop.get("maxLength", 201) <= 200


def fields(schemas: dict[str, Any]) -> list[Field]:
    """Fields of the input schema (files apart) and of the parameter schema, in schema order."""
    found: list[Field] = []
    for group in ("input", "parameter"):
        schema = schemas.get(group) or {}
        required = set(schema.get("required") or [])
        for name, prop in (schema.get("properties") or {}).items():
            if not isinstance(prop, dict):
                continue
            is_file = group == "input" and prop.get("x-input-source", "file") == "file"
            found.append(
                Field(
                    "file" if is_file else group,
                    name,
                    "file" if is_file else _widget(prop),
                    name in required,
                    prop.get("description", ""),
                    prop.get("default"),
                    list(prop.get("enum") or []),
                    list(prop.get("extensions") or []),
                )
            )
    return found


class FormError(ValueError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


def values(form_fields: list[Field], form: MultiDict) -> dict[str, dict[str, Any]]:
    """`{"input": {...}, "parameter": {...}}` from the submitted form; an empty field is left
    out (the service applies the schema's default or says it is missing)."""
    out: dict[str, dict[str, Any]] = {"input": {}, "parameter": {}}
    for f in form_fields:
        if f.group == "file":
            continue
        if f.widget == "boolean":
            out[f.group][f.name] = form.get(f.key) == "on"
            continue
        raw = form.get(f.key, "")
        if raw == "":
            continue
        out[f.group][f.name] = _typed(f, raw)
    return out


def _typed(f: Field, raw: str) -> Any:
    try:
        if f.widget == "integer":
            return int(raw)
        if f.widget == "number":
            return float(raw)
        if f.widget == "json" or (f.widget == "select" and not isinstance(f.options[0], str)):
            return json.loads(raw)
    except ValueError as exc:
        raise FormError(f.name, f"not a valid {f.widget} value: {raw!r}") from exc
    # a form sends a box's line breaks as CRLF (HTML's rule): the text as typed has LF
    return raw.replace("\r\n", "\n") if f.widget == "textarea" else raw


def runtime_options(form: MultiDict) -> dict[str, Any]:
    """The common runtime options, the execution mode, and any extra JSON given."""
    options: dict[str, Any] = {}
    extra = form.get("runtime_options_json", "").strip()
    if extra:
        try:
            options = json.loads(extra)
        except ValueError as exc:
            raise FormError("runtime_options_json", "not valid JSON") from exc
        if not isinstance(options, dict):
            raise FormError("runtime_options_json", "must be a JSON object")
    if form.get("execution_mode"):
        options["execution_mode"] = form["execution_mode"]
    for flag in ("no_cache", "debug"):
        if form.get(flag) == "on":
            options[flag] = True
    if form.get("timeout_sec"):
        try:
            options["timeout_sec"] = int(form["timeout_sec"])
        except ValueError as exc:
            raise FormError("timeout_sec", "must be a whole number of seconds") from exc
    return options


def reply_response(kind: str, form: MultiDict) -> Any:
    """The reply's `response` for a question of `kind`: the chosen option's value (sent as
    JSON in the button), true/false, the text, or the filled fields."""
    if "choice" in form:
        return json.loads(form["choice"])
    if kind == "fill_fields":
        prefix = "field:"
        return {k[len(prefix) :]: v for k, v in form.items() if k.startswith(prefix)}
    return form.get("text", "")
