from __future__ import annotations

import json

from runner_core.output.repair import (
    FIX_BOM,
    FIX_FENCE,
    FIX_TRAILING_COMMA,
    decode_nested_json,
    remove_trailing_commas,
    repair_text,
)


def test_remove_trailing_commas_in_objects_and_arrays() -> None:
    text = '{"a": [1, 2,\n ],\n "b": {"c": 3, },\n}'
    assert json.loads(remove_trailing_commas(text)) == {"a": [1, 2], "b": {"c": 3}}


def test_remove_trailing_commas_leaves_commas_inside_strings() -> None:
    text = '{"a": "x,}", "b": "y, ]", "c": "q\\",}",}'
    assert json.loads(remove_trailing_commas(text)) == {"a": "x,}", "b": "y, ]", "c": 'q",}'}


def test_remove_trailing_commas_keeps_separating_commas() -> None:
    assert remove_trailing_commas('[1, 2, {"a": 1}]') == '[1, 2, {"a": 1}]'


def test_repair_text_strips_bom_fence_and_trailing_commas() -> None:
    repaired = repair_text('\ufeff```json\n{"a": 1,}\n```\n')
    assert repaired.text == '{"a": 1}'
    assert repaired.fixes == [FIX_BOM, FIX_FENCE, FIX_TRAILING_COMMA]


def test_repair_text_reports_no_fixes_for_clean_json() -> None:
    repaired = repair_text('  {"a": 1}\n')
    assert repaired.text == '{"a": 1}'
    assert repaired.fixes == []


def test_decode_nested_json_unwraps_double_encoded_object() -> None:
    value = json.loads(json.dumps(json.dumps({"a": {"b": [1]}})))
    assert decode_nested_json(value) == {"a": {"b": [1]}}


def test_decode_nested_json_unwraps_triple_encoded_array() -> None:
    value = json.dumps(json.dumps([1, 2]))
    assert decode_nested_json(value) == [1, 2]


def test_decode_nested_json_ignores_plain_strings_and_scalars() -> None:
    assert decode_nested_json("just a sentence") is None
    assert decode_nested_json("42") is None
    assert decode_nested_json({"a": 1}) is None
