"""A run form drawn from a skill's input and parameter JSON Schemas: one field per property,
typed from the schema (enums as selects, booleans as checkboxes, file inputs as file pickers
with their extensions, objects and arrays as JSON text)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runner_core.inputs import file_fields
from runner_core.schema_refs import resolved_properties


@dataclass(frozen=True)
class Choice:
    """One value of an enum: `value` is its JSON text (what the form sends back, parsed, so
    `2` stays the integer 2), `label` what the list shows."""

    value: str
    label: str


@dataclass(frozen=True)
class FormField:
    group: str  # "input" or "parameter": the job body's key it goes under
    name: str
    widget: str  # text, textarea, integer, number, boolean, select, file, json
    label: str
    required: bool
    description: str = ""
    default: str = ""  # as the widget shows it
    options: list[Choice] = field(default_factory=list)  # an enum's values
    extensions: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)  # min, max, minlength, maxlength

    @property
    def html_id(self) -> str:
        return f"f-{self.group}-{self.name}"


def form_fields(input_schema: dict | None, parameter_schema: dict | None) -> list[FormField]:
    files = set(file_fields(input_schema or {}))
    return _fields("input", input_schema or {}, files) + _fields(
        "parameter", parameter_schema or {}, set()
    )


def _fields(group: str, schema: dict, files: set[str]) -> list[FormField]:
    required = set(schema.get("required") or [])
    out = []
    # a property by local $ref ({"$ref": "#/$defs/mode"}) is drawn as what it refers to
    for name, prop in resolved_properties(schema).items():
        prop = prop if isinstance(prop, dict) else {}
        widget = "file" if name in files else _widget(prop)
        default = prop.get("default")
        out.append(
            FormField(
                group=group,
                name=name,
                widget=widget,
                label=prop.get("title") or name.replace("_", " "),
                required=name in required,
                description=prop.get("description", ""),
                default=_shown(default, widget),
                options=[_choice(v) for v in prop.get("enum", [])],
                extensions=list(prop.get("extensions", [])),
                attrs=_attrs(prop),
            )
        )
    return out


def _widget(prop: dict) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the first real type
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in prop:
        return "select"
    if kind == "string":
        # one line only where the schema makes it one (a browser's one-line box drops the line
        # breaks of a pasted text): a format (date, email), a pattern, 200 characters at most
        one_line = prop.get("format", "textarea") != "textarea" or "pattern" in prop
        one_line = one_line or 0 < prop.get("maxLength", 201) <= 200
        return "text" if one_line and prop.get("x-ui-widget") != "textarea" else "textarea"
    return {"integer": "integer", "number": "number", "boolean": "boolean"}.get(str(kind), "json")


def _shown(value: Any, widget: str) -> str:
    if value is None:
        return ""
    if widget in ("json", "select"):  # a select's options are JSON texts too (Choice)
        return json.dumps(value)
    if widget == "boolean":
        return "true" if value else ""
    return str(value)


def _choice(value: Any) -> Choice:
    return Choice(json.dumps(value), value if isinstance(value, str) else json.dumps(value))


def _attrs(prop: dict) -> dict[str, Any]:
    names = {"minimum": "min", "maximum": "max", "minLength": "minlength", "maxLength": "maxlength"}
    return {html: prop[key] for key, html in names.items() if key in prop}
