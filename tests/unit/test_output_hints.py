"""The hints of OUTPUT_VALIDATION_FAILED (seed 003 §7): per problem, and the likeliest cause."""

from __future__ import annotations

from runner_core.output.hints import failure_hints, summary
from runner_core.output.validate import build_validator, collect_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "normalized": {"type": "boolean"},
        "mode": {"enum": ["a", "b"]},
    },
    "required": ["text", "normalized"],
    "additionalProperties": False,
}


def hints_for(data):
    errors = collect_errors(build_validator(SCHEMA), data)
    return errors, failure_hints(errors, "raw/engine_output.txt")


def test_each_problem_names_the_field_what_was_wanted_and_what_came():
    errors, found = hints_for({"text": "x", "normalized": "hello world", "mode": "c", "x": 1})
    assert found["hints"] == [
        "$: Additional properties are not allowed ('x' was unexpected) "
        "(the schema allows no other fields)",
        '$.mode: should be one of ["a", "b"], got "c"',
        '$.normalized: should be boolean, got a string "hello world"',
    ]
    assert "names, types or allowed values" in found["likely_cause"]
    assert summary(errors).startswith(": $: Additional properties") and "(and 2 more)" in summary(
        errors
    )


def test_missing_fields_are_named_and_blamed_on_the_instructions():
    _errors, found = hints_for({"text": "x"})
    assert found["hints"] == ["$: missing required field(s) normalized"]
    assert found["likely_cause"].startswith("Fields the schema requires are missing")


def test_a_wrong_top_level_type_and_no_json_at_all():
    _errors, found = hints_for(["not", "an", "object"])
    assert found["hints"] == ['$: should be object, got an array ["not", "an", "object"]']
    assert found["likely_cause"].startswith("The answer is not the shape")
    parse = [{"path": "$", "message": "no JSON value found in engine_text", "validator": "parse"}]
    found = failure_hints(parse, "raw/engine_output.txt")
    assert found["likely_cause"].startswith("No JSON came back: the agent's answer (raw/engine_")


def test_long_values_are_cut_and_many_problems_counted():
    errors = collect_errors(build_validator({"type": "integer"}), "y" * 5000)
    assert len(errors[0]["got"]) == 200 and errors[0]["got"].endswith("...")
    many = [{"path": f"$.f{i}", "message": "bad", "validator": "minimum"} for i in range(8)]
    assert failure_hints(many, "raw")["hints"][-1] == (
        "... and 3 more (result/validation.json lists them all)"
    )
