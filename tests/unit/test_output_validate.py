from __future__ import annotations

import pytest

from runner_core.output.validate import OutputSchemaError, build_validator, collect_errors

SCHEMA = {
    "type": "object",
    "required": ["title", "count"],
    "properties": {
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


def test_collect_errors_lists_every_error_with_path_and_validator() -> None:
    errors = collect_errors(build_validator(SCHEMA), {"tags": ["ok", 3]})
    assert {(e["path"], e["validator"]) for e in errors} == {
        ("$", "required"),
        ("$.tags[1]", "type"),
    }
    assert sum(e["validator"] == "required" for e in errors) == 2
    assert all(e["message"] for e in errors)


def test_valid_data_has_no_errors() -> None:
    assert collect_errors(build_validator(SCHEMA), {"title": "t", "count": 1}) == []


def test_default_draft_is_2020_12() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    assert collect_errors(build_validator(schema), ["x"]) != []


def test_schema_keyword_selects_older_draft() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "prefixItems": [{"type": "integer"}],  # unknown to draft 7, so ignored
    }
    assert collect_errors(build_validator(schema), ["x"]) == []


def test_invalid_schema_raises_output_schema_error() -> None:
    with pytest.raises(OutputSchemaError):
        build_validator({"type": "no-such-type"})


def test_long_messages_are_truncated() -> None:
    errors = collect_errors(build_validator({"type": "string"}), ["x" * 5000])
    assert len(errors[0]["message"]) <= 500


def test_data_too_deep_to_validate_is_one_error_not_a_recursion() -> None:
    schema = {
        "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
        "$ref": "#/$defs/n",
    }
    data: list = []
    for _ in range(900):
        data = [data]
    errors = collect_errors(build_validator(schema), data)
    assert [(e["path"], e["validator"]) for e in errors] == [("$", "depth")]
    assert "nests too deeply" in errors[0]["message"]


def test_a_schema_too_deep_to_check_is_an_output_schema_error() -> None:
    schema: dict = {}
    for _ in range(3000):
        schema = {"items": schema}
    with pytest.raises(OutputSchemaError, match="nests too deeply"):
        build_validator(schema)


def test_nan_and_infinity_are_errors_wherever_they_sit():
    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    data = {"n": float("nan"), "deep": [1, {"x": float("-inf")}], "ok": 1.5}
    errors = collect_errors(build_validator(schema), data)
    assert sorted((e["path"], e["validator"]) for e in errors) == [
        ("$.deep[1].x", "finite"),
        ("$.n", "finite"),
    ]
    assert collect_errors(build_validator(schema), {"n": 1e308}) == []


def test_what_an_error_record_shows_of_the_value_is_always_json():
    """`got` of a record goes into result.json and the API answer: NaN (no JSON number) is
    shown as text, and a value too deep to write says so instead of failing the run."""
    import json

    from runner_core.output.validate import TOO_DEEP_TO_SHOW, _preview

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    errors = collect_errors(build_validator(schema), {"ok": float("nan")})
    assert [(e["validator"], e["got"]) for e in errors] == [("type", "NaN"), ("finite", "nan")]
    json.dumps(errors, allow_nan=False)  # raises on a NaN left in
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert _preview(deep) == TOO_DEEP_TO_SHOW
