"""The run form drawn from a skill's schemas: one field per property, typed from the schema."""

from __future__ import annotations

from api.ui.forms import Choice, form_fields

INPUT = {
    "type": "object",
    "properties": {
        "paper": {"type": "string", "x-input-source": "file", "extensions": [".pdf"]},
        "title": {"type": "string", "x-input-source": "inline", "maxLength": 80},
        "notes": {"type": "string", "x-input-source": "inline", "maxLength": 5000},
    },
    "required": ["paper"],
}
PARAMETER = {
    "type": "object",
    "properties": {
        "format": {"type": "string", "enum": ["json", "md"], "default": "md"},
        "level": {"type": "integer", "enum": [1, 2, None], "default": 2},
        "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        "ratio": {"type": ["number", "null"]},
        "strict": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
    },
    "required": ["format"],
}


def test_each_property_gets_the_widget_of_its_type():
    fields = {(f.group, f.name): f for f in form_fields(INPUT, PARAMETER)}
    paper = fields[("input", "paper")]
    assert (paper.widget, paper.required, paper.extensions) == ("file", True, [".pdf"])
    assert paper.html_id == "f-input-paper"
    title, notes = fields[("input", "title")], fields[("input", "notes")]
    assert (title.widget, title.attrs, notes.widget) == ("text", {"maxlength": 80}, "textarea")
    fmt = fields[("parameter", "format")]
    assert (fmt.widget, fmt.options, fmt.default, fmt.required) == (
        "select",
        [Choice('"json"', "json"), Choice('"md"', "md")],
        '"md"',
        True,
    )
    # an enum's values are JSON texts, so the form sends the integer 2 back, not "2"
    level = fields[("parameter", "level")]
    assert (level.widget, level.default) == ("select", "2")
    assert level.options == [Choice("1", "1"), Choice("2", "2"), Choice("null", "null")]
    count = fields[("parameter", "count")]
    assert (count.widget, count.default, count.attrs) == ("integer", "3", {"min": 1, "max": 9})
    assert fields[("parameter", "ratio")].widget == "number"  # the first type that is not null
    strict, tags = fields[("parameter", "strict")], fields[("parameter", "tags")]
    assert (strict.widget, strict.default) == ("boolean", "true")
    assert (tags.widget, tags.default) == ("json", '["a"]')


def test_no_schema_is_no_field():
    assert form_fields(None, {"type": "object", "properties": {}}) == []
