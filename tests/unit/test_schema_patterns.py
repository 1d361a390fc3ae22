"""Patterns whose matching can take exponential time are told from ordinary ones."""

from __future__ import annotations

import pytest

from runner_core.schema_patterns import exponential, pattern_errors


@pytest.mark.parametrize(
    "pattern",
    [r"^(a+)+$", r"(a+|b)+", r"(\w+\s?)*$", r"(a*)*", r"(x+x+)+y", r"^([a-z0-9]+-?)+$"],
)
def test_nested_repeats_are_exponential(pattern):
    assert exponential(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"^(\d+\.)+\d+$", r"^[a-z]+$", r"^(ab|cd)+$", r"^\.[^./\\][^/\\]*$", r"^(\s*,\s*\w+)*$", "("],
)
def test_ordinary_patterns_are_not(pattern):
    assert not exponential(pattern)


def test_pattern_errors_name_where_the_pattern_is_and_skip_values():
    schema = {
        "type": "object",
        "properties": {"a": {"items": {"pattern": "(a+)+"}}, "pattern": {"type": "string"}},
        "default": {"pattern": "(a+)+"},
    }
    errors = pattern_errors("in.json", schema)
    assert len(errors) == 1 and errors[0].startswith("in.json: properties.a.items.pattern: ")
