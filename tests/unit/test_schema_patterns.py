"""A skill schema's patterns: matched with a time limit, refused at load only when they cannot be
matched at all (no regex, counted repeats too large to compile)."""

from __future__ import annotations

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from runner_core.inputs import schema_errors
from runner_core.output.validate import build_validator, collect_errors
from runner_core.schema_patterns import pattern_errors
from runner_core.schema_regex import MAX_REPEAT_WEIGHT, pattern_problem, repeat_weight
from runner_core.schema_validators import UNEVALUATED_WITH_PATTERNS, all_errors, timed
from runner_core.skills.schemas import check_skill_schema

# each backtracks through 2**40 ways (or more) on CRAFTED before failing on its "!"
SLOW = [r"(a|a)*$", r"(a|aa)+$", r"^(?:a|a)+b"]
CRAFTED = "a" * 40 + "!"


def string_schema(pattern: str) -> dict:
    return {"type": "object", "properties": {"text": {"type": "string", "pattern": pattern}}}


@pytest.mark.parametrize("pattern", SLOW)
def test_a_pattern_that_backtracks_for_ever_is_an_error_not_a_hang(pattern):
    errors = schema_errors(string_schema(pattern), {"text": CRAFTED})
    assert [e["path"] for e in errors] == ["text"]
    assert errors[0]["validator"] == "pattern"
    assert "took longer than 0.1 s to match" in errors[0]["message"]
    assert pattern in errors[0]["message"]


def test_the_alternation_the_nesting_heuristic_missed_is_caught():
    errors = schema_errors(string_schema(r"(a|a)*$"), {"text": CRAFTED})
    assert len(errors) == 1 and "took longer than" in errors[0]["message"]


def test_patterns_keep_jsonschema_search_semantics():
    schema = string_schema("b+")  # unanchored: found anywhere
    assert schema_errors(schema, {"text": "abba"}) == []
    (error,) = schema_errors(schema, {"text": "aaa"})
    assert error["message"] == "'aaa' does not match 'b+'"


def test_pattern_properties_and_additional_properties_match_with_a_time_limit():
    schema = {
        "type": "object",
        "patternProperties": {"^(x|x)*$": {"type": "integer"}, "^n_": {"type": "string"}},
        "additionalProperties": False,
    }
    assert schema_errors(schema, {"xx": 1, "n_a": "s"}) == []
    found = schema_errors(schema, {"xx": "s", "other": 1})
    assert sorted(e["message"] for e in found) == [
        "'other' does not match any of the regexes: '^(x|x)*$', '^n_'",
        "'s' is not of type 'integer'",
    ]
    slow = schema_errors(schema, {"x" * 40 + "!": 1})
    assert {e["validator"] for e in slow} == {"patternProperties", "additionalProperties"}
    assert all("took longer than" in e["message"] for e in slow)


def test_additional_properties_schema_applies_to_the_keys_no_pattern_matched():
    schema = {"patternProperties": {"^a": {}}, "additionalProperties": {"type": "integer"}}
    found = schema_errors(schema, {"ab": "s", "b": "s", "c": 1})
    assert [(e["path"], e["validator"]) for e in found] == [("b", "type")]


def test_many_crafted_strings_share_one_budget():
    schema = {"type": "array", "items": {"type": "string", "pattern": r"(a|a)*$"}}
    errors = schema_errors(schema, [CRAFTED] * 100)  # 100 x 0.1 s without a budget
    assert len(errors) == 100
    assert sum("took longer than" in e["message"] for e in errors) <= 11
    assert "ran out" in errors[-1]["message"]


def test_output_validation_matches_with_a_time_limit():
    schema = {**string_schema(r"(a|a)*$"), "$schema": "http://json-schema.org/draft-07/schema#"}
    (error,) = collect_errors(build_validator(schema), {"text": CRAFTED})
    assert error["path"] == "$.text" and "took longer than" in error["message"]


def test_a_draft_class_extended_keeps_its_other_keywords():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "pattern": "x"}}}
    validator = timed(Draft7Validator, schema)(schema)
    assert [e.message for e in all_errors(validator, {"n": "s"})] == [
        "'s' is not of type 'integer'",
        "'s' does not match 'x'",
    ]


def test_unevaluated_properties_next_to_pattern_properties_is_refused_not_matched_with_re():
    schema = {"patternProperties": {"^(x|x)*$": {}}, "unevaluatedProperties": False}
    validator = timed(Draft202012Validator, schema)(schema)
    assert [e.message for e in all_errors(validator, {"x" * 40 + "!": 1})][-1] == (
        UNEVALUATED_WITH_PATTERNS
    )
    assert pattern_errors("in.json", schema) == [f"in.json: {UNEVALUATED_WITH_PATTERNS}"]
    plain = {"properties": {"a": {}}, "unevaluatedProperties": False}
    assert pattern_errors("in.json", plain) == []
    assert schema_errors(plain, {"b": 1})[0]["validator"] == "unevaluatedProperties"


@pytest.mark.parametrize(
    "pattern",
    [
        *SLOW,
        r"^#[0-9a-fA-F]{6}$",
        r"^[[:alpha:]]{2,5}$",
        r"^(a+)+$",
        r"^(\d+\.)+\d+$",
        r"\p{L}+",
        r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{12}$",
        r"^.{0,5000}$",
    ],
)
def test_patterns_that_compile_load(pattern):
    assert pattern_problem(pattern) is None
    assert pattern_errors("in.json", string_schema(pattern)) == []


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(", "not a regular expression"),
        ("(" * 5000 + ")" * 5000, "not a regular expression"),
        ("a{1000001}", "counted repeats"),
        ("(?:(?:a{1000}){1000}){1000}", "counted repeats"),  # compiled: MemoryError, or worse
        ("(?:ab{100}c){101}", "counted repeats"),
        ("a{" + "9" * 5000 + "}", "counted repeats"),
        ("(?V1)[[a-z]--[aeiou]]", "VERSION1"),
        # read otherwise by regex than by a plain scan: each is 9,000 x 1,000 once compiled
        ("(?x)(?:b{9000}#)\n#(\n){1000}", "counted repeats"),  # comments hide the groups
        ("(?:b{9000}[[:alpha:](]){1000}", "counted repeats"),  # a POSIX class holds a "("
        ("(?#[)(?:b{9000}[)]){1000}", "counted repeats"),
        ("(?x)a{1 0 0 0 0 0}", "counted repeats"),  # verbose: spaces inside a count too
    ],
)
def test_patterns_that_cannot_be_matched_are_refused_at_load(pattern, reason):
    assert reason in (pattern_problem(pattern) or "")
    (error,) = pattern_errors("in.json", string_schema(pattern))
    assert error.startswith("in.json: properties.text.pattern: the pattern ")


def test_a_pattern_refused_at_load_is_an_error_if_it_reaches_validation():
    (error,) = schema_errors(string_schema("("), {"text": "x"})
    assert error["message"].startswith("the pattern '(' cannot be matched: not a regular")


def test_repeat_weight_adds_a_sequence_and_multiplies_nested_counts():
    assert repeat_weight("ab{3}") == 4
    assert repeat_weight("(?:ab{3}){2}") == 2 * (1 + 1 + 3)  # the group's ":" counted too
    assert repeat_weight(r"[{]{5}\{") == 5 + 1  # a class and an escape are one atom each
    assert repeat_weight("a{,7}b{2,}") == 7 + 3
    assert repeat_weight("a{1001}" * 10) > MAX_REPEAT_WEIGHT


def test_pattern_errors_name_where_the_pattern_is_and_skip_values():
    schema = {
        "type": "object",
        "properties": {"a": {"items": {"pattern": "("}}, "pattern": {"type": "string"}},
        "default": {"pattern": "("},
    }
    errors = pattern_errors("in.json", schema)
    assert len(errors) == 1 and errors[0].startswith("in.json: properties.a.items.pattern: ")


def test_the_skill_schema_check_reports_a_bad_pattern_once_and_takes_what_regex_takes():
    (error,) = check_skill_schema("input", "in.json", string_schema("(")).errors
    assert error.startswith("in.json: properties.text.pattern: the pattern '(': not a regular")
    # re knows no \p{...}; regex, which matches the patterns, does (ECMA-262 has it too)
    assert check_skill_schema("input", "in.json", string_schema(r"^\p{L}+$")).errors == []
    assert schema_errors(string_schema(r"^\p{L}+$"), {"text": "été"}) == []


def test_a_schema_whose_patterns_add_up_to_too_many_repeats_is_refused_whole():
    props = {f"p{i}": {"type": "string", "pattern": "a{9000}"} for i in range(6)}
    (error,) = pattern_errors("in.json", {"properties": props})
    assert error == (
        "in.json: the counted repeats of its patterns add up to 54000 characters, more than "
        "50000: use smaller counts, or maxLength"
    )
    assert pattern_errors("in.json", {"properties": dict(list(props.items())[:5])}) == []


def test_a_value_of_format_regex_is_not_compiled():
    # formats are annotations in these validators: a value is never compiled, with re or regex
    schema = {"type": "object", "properties": {"re": {"type": "string", "format": "regex"}}}
    assert schema_errors(schema, {"re": "(?:(?:a{1000}){1000}){1000}"}) == []
    assert schema_errors(schema, {"re": "("}) == []
