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


def _in_place(text: str) -> list:
    """The plain scan (each candidate decoded in the whole text): what the windows must match."""
    import json

    decoder, out, pos = json.JSONDecoder(), [], 0
    while (
        start := min((i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0), default=-1)
    ) >= 0:
        try:
            value, pos = decoder.raw_decode(text, start)
            out.append(value)
        except (json.JSONDecodeError, RecursionError):
            pos = start + 1
    return out


def test_windowed_decoding_finds_exactly_what_decoding_in_place_finds() -> None:
    import json
    import random

    rng = random.Random(7)
    big_string = "s" * 70_000  # crosses the 4 KiB and 64 KiB windows
    pieces = [
        '{"a": 1}',
        "[1, 2, 3]",
        "[INFO]",
        "[2026-11-23 10:00]",
        "{oops}",
        "[1, 2",
        '{"k": "v',
        "[true, false, null]",
        "[tru",
        '{"n": -12.5e3}',
        '["\\u00e9", "\\n"]',
        "]",
        "}",
        json.dumps({"big": big_string}),
        json.dumps(list(range(3000))),
        "[" * 50 + "]" * 50,
        json.dumps({"deep": [[{"x": [1, {"y": "}"}]}]]}),
        "prose with ] and [ and { }",
    ]
    for trial in range(300):
        parts = [rng.choice(pieces) for _ in range(rng.randint(1, 12))]
        filler = [" " * rng.randint(0, 5000) for _ in parts]  # moves values across window ends
        text = "".join(f"{f}{p}\n" for f, p in zip(filler, parts))
        assert list(iter_json_values(text)) == _in_place(text), trial


def test_a_long_log_is_scanned_in_linear_work(monkeypatch) -> None:
    """A 1.8 MB log with brackets on every line took 27 s: a failing decode reports its line
    and column by counting from the start of the string it was given, and each candidate was
    given the whole text. Counted here (not timed): the offsets failures are reported at."""
    from runner_core.output import parse

    counted = []

    class Counting:
        def raw_decode(self, s, idx=0):
            try:
                return parse.json.JSONDecoder().raw_decode(s, idx)
            except parse.json.JSONDecodeError as exc:
                counted.append(exc.pos)
                raise

    monkeypatch.setattr(parse, "_DECODER", Counting())
    text = (
        "".join(f"[2026-11-23 10:00:{i % 60:02d}] [INFO] step {i} done\n" for i in range(40_000))
        + '{"ok": true}\n'
    )
    assert extract_json(text).value == {"ok": True}
    assert len(counted) >= 80_000 and sum(counted) < 2 * len(text)  # in place: ~40,000x
