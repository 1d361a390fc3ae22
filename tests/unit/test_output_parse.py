from __future__ import annotations

from runner_core.output.parse import extract_json, iter_extracted, iter_json_values, strip_fences


def test_strip_fences_removes_json_fence_and_trims() -> None:
    assert strip_fences('\n```json\n{"a": 1}\n```\n') == '{"a": 1}'


def test_strip_fences_handles_fence_on_the_json_line() -> None:
    assert strip_fences('```json {"a": 1}```') == '{"a": 1}'


def test_extract_json_finds_object_inside_prose() -> None:
    text = 'Here is the summary you asked for:\n{"title": "Q3", "count": 3}\nLet me know!'
    found = extract_json(text)
    assert found is not None
    assert found.value == {"title": "Q3", "count": 3}
    assert found.how == "embedded"


def test_braces_inside_json_strings_do_not_confuse_the_scan() -> None:
    text = 'Note {this is not json}. Result: {"code": "if (x) { return \\"}\\"; }", "list": "[1,"}'
    found = extract_json(text)
    assert found is not None
    assert found.value == {"code": 'if (x) { return "}"; }', "list": "[1,"}


def test_extract_json_returns_top_level_array() -> None:
    found = extract_json('Results:\n[{"id": 1}, {"id": 2}]\n')
    assert found is not None
    assert found.value == [{"id": 1}, {"id": 2}]


def test_whole_text_that_is_json_is_taken_as_is() -> None:
    found = extract_json('  {"a": [1, 2]}  ')
    assert found is not None
    assert (found.value, found.how) == ({"a": [1, 2]}, "whole_text")


def test_json_fenced_block_wins_over_earlier_python_block() -> None:
    text = (
        "First the code:\n```python\nsizes = [1, 2, 3]\n```\n"
        'And the answer:\n```json\n{"sizes": [1, 2, 3]}\n```\n'
    )
    found = extract_json(text)
    assert found is not None
    assert (found.value, found.how) == ({"sizes": [1, 2, 3]}, "fenced_block")


def test_unclosed_fence_from_truncated_output_still_parses() -> None:
    found = extract_json('```json\n{"done": true}\n')
    assert found is not None
    assert found.value == {"done": True}


def test_text_without_json_yields_nothing() -> None:
    assert extract_json("I could not complete the task {sorry} [oops") is None


def test_iter_json_values_yields_top_level_values_not_nested_ones() -> None:
    text = 'a {"x": {"y": 1}} b [2, [3]] c'
    assert list(iter_json_values(text)) == [{"x": {"y": 1}}, [2, [3]]]


def test_iter_extracted_lists_later_values_after_the_first() -> None:
    values = [e.value for e in iter_extracted('I cite [1] here. {"ok": true}')]
    assert values == [[1], {"ok": True}]
