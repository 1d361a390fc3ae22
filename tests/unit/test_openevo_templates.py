"""Composite templates: paths, filters in openEvo's syntax, typed whole-string values and
`||` fallbacks."""

from __future__ import annotations

import pytest

from runner_core.openevo.templates import TemplateFailure, compile_errors, render, to_jinja

CTX = {
    "input": {"topic": "tides", "n": 3, "empty": ""},
    "steps": {
        "search": {
            "results": [
                {"snippet": "moon", "score": 0.9, "meta": {"src": "a"}},
                {"snippet": "sun", "score": 0.5, "meta": {"src": "b"}},
                {"snippet": "wind", "score": 0.1, "meta": {"src": "c"}},
            ],
            "count": "42",
        },
        "broken": {"_error": "boom", "_failed": True},
    },
}


def test_whole_string_template_keeps_the_type():
    assert render("{{steps.search.results}}", CTX) == CTX["steps"]["search"]["results"]
    assert render("{{ input.n }}", CTX) == 3
    assert render("{{steps.search.count}}", CTX) == "42"  # a string stays a string


def test_templates_inside_a_string_interpolate_text_and_json():
    assert render("about {{input.topic}} x{{input.n}}", CTX) == "about tides x3"
    assert render("m={{steps.search.results.0.meta}}", CTX) == 'm={"src": "a"}'
    assert render("[{{steps.nope.x}}]", CTX) == "[]"


def test_map_and_join_with_escapes_understood_and_quotes_removed():
    # As written in skill.json: "{{... | join: '\\n\\n'}}" is the text join: '\n\n'.
    text = "{{steps.search.results | map: snippet | join: '\\n\\n'}}"
    assert render(text, CTX) == "moon\n\nsun\n\nwind"
    assert render("{{steps.search.results | map: meta.src | join: ', '}}", CTX) == "a, b, c"


def test_pluck_slice_default_json():
    assert render("{{steps.search.results | pluck: score}}", CTX) == [0.9, 0.5, 0.1]
    assert render("{{steps.search.results.1 | pluck: snippet}}", CTX) == "sun"
    assert render("{{steps.search.results | map: snippet | slice: 1, 3}}", CTX) == ["sun", "wind"]
    assert render("{{input.empty | default: 'none'}}", CTX) == "none"
    assert render("{{input.topic | default: 'none'}}", CTX) == "tides"
    assert (
        render("{{steps.search.results | map: snippet | json}}", CTX) == '["moon", "sun", "wind"]'
    )


def test_or_fallbacks_pick_the_first_present_value():
    assert render("{{steps.nope.text || input.empty || 'literal'}}", CTX) == "literal"
    assert render("{{steps.nope.text || input.topic}}", CTX) == "tides"
    assert render("{{steps.broken._error || 'ok'}}", CTX) == "boom"
    assert render("{{input.missing}}", CTX) is None


def test_render_walks_objects_and_arrays_and_leaves_other_values():
    value = {"q": "{{input.topic}}", "limit": 10, "list": ["{{input.n}}", True]}
    assert render(value, CTX) == {"q": "tides", "limit": 10, "list": [3, True]}


def test_pipes_and_bars_inside_quotes_are_not_split():
    assert to_jinja("a | join: ' | '") == "(a | join(' | '))"
    assert render("{{steps.search.results | map: snippet | join: ' || '}}", CTX) == (
        "moon || sun || wind"
    )


@pytest.mark.parametrize("bad", ["{{input.topic |}}", "{{ input.topic.__class__.__mro__ }}x{{1+}}"])
def test_a_broken_template_names_itself(bad):
    with pytest.raises(TemplateFailure, match="template"):
        render(bad, CTX)


def test_the_sandbox_hides_python_internals():
    assert render("{{ input.topic.__class__ }}", CTX) is None


@pytest.mark.parametrize(
    "bad",
    ["{{ 1/0 }}", "{{ 1//0 }}", "{{ 1%0 }}", "n: {{ input.n / input.zero }}", "{{ range(3) }}"],
)
def test_any_failure_of_an_expression_is_a_template_failure_naming_it(bad):
    with pytest.raises(TemplateFailure, match=r"template '\{\{"):
        render(bad, {"input": {"n": 1, "zero": 0}})


def test_jinja_sequence_filters_give_arrays_to_the_output_and_to_the_next_filter():
    results = "steps.search.results"
    assert render(f"{{{{{results} | map: snippet | reverse}}}}", CTX) == ["wind", "sun", "moon"]
    picked = f"{{{{{results} | selectattr('score', 'gt', 0.3) | map: snippet | join: ', '}}}}"
    assert render(picked, CTX) == "moon, sun"  # not a map over the iterator as one item
    assert render(f"{{{{{results} | rejectattr('score', 'gt', 0.3) | pluck: snippet}}}}", CTX) == [
        "wind"
    ]
    assert render(f"{{{{{results} | map: snippet | unique | slice: 1, 2}}}}", CTX) == ["sun"]


def test_map_and_pluck_take_an_index():
    pairs = {"input": {"pairs": [["a", 1], ["b", 2]]}}
    assert render("{{ input.pairs | map: 0 }}", pairs) == ["a", "b"]
    assert render("{{ input.pairs | pluck: 1 }}", pairs) == [1, 2]


def test_jinja_keyword_forms_of_map_join_and_default_work():
    rows = {"input": {"rows": [{"n": "a", "k": 0}, {"n": "b", "k": 2}], "zero": 0}}
    assert render("{{ input.rows | map(attribute='n') }}", rows) == ["a", "b"]
    assert render("{{ input.rows | join(', ', attribute='n') }}", rows) == "a, b"
    assert render("{{ input.rows | pluck(attribute='k') }}", rows) == [0, 2]
    assert render("{{ input.zero | default: 5 }}", rows) == 0  # present: kept
    assert render("{{ input.zero | default(5, true) }}", rows) == 5  # Jinja2's: any false one


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{{ input.rows | map }}", "`| map` needs one field, a name or an index"),
        ("{{ input.rows | pluck(key='n') }}", "`| pluck` takes one field"),
        (
            "{{ input.rows | join: 5 }}",
            "`| join` takes one separator, a text (`| join: ', '`), not 5",
        ),
        ("{{ input.rows | slice: 'a' }}", "`| slice` takes a start and an end, whole numbers"),
        ("{{ input.rows | slice: 1, 2, 3 }}", "`| slice` takes a start and an end"),
        ("{{ input.rows | json: 'x' }}", "`| json` takes an indent, a whole number"),
    ],
)
def test_a_filter_argument_that_would_fail_every_run_is_a_compile_error(template, why):
    (error,) = compile_errors(template)
    assert why in error and error.startswith("template '{{input.rows |"), error


def test_filter_arguments_that_fit_or_come_from_data_are_no_compile_error():
    for fine in (
        "{{ a | map: name }}",
        "{{ a | map: 0 }}",
        "{{ a | map(attribute='n') }}",
        "{{ a | join(input.sep) }}",
        "{{ a | slice: -2, none }}",
        "{{ a | default: 1, true }}",
        "{{ a | json: 2 }}",
        "{{ a | select('odd') | join }}",
    ):
        assert compile_errors(fine) == [], fine


def test_a_key_whose_whole_template_is_a_missing_path_is_left_out():
    context = {"input": {"given": None, "n": 0}}
    value = {
        "gone": "{{ input.missing }}",
        "chained": "{{ input.missing.deeper || input.other }}",
        "null": "{{ input.given }}",
        "zero": "{{ input.n }}",
        "text": "x {{ input.missing }}",
        "items": ["{{ input.missing }}"],
        "forced": "{{ input.missing | default: none }}",
        "nested": {"gone": "{{ input.missing }}"},
    }
    assert render(value, context) == {
        "null": None,
        "zero": 0,
        "text": "x ",
        "items": [None],
        "forced": None,
        "nested": {},
    }
    assert render("{{ input.missing }}", context) is None  # a whole value: null


@pytest.mark.parametrize("expression", ["'x' * 100000000", "input.text * 100000000", "7 ** 100000"])
def test_an_expression_too_large_to_make_fails_as_a_template(expression):
    with pytest.raises(TemplateFailure, match="too large|repeating"):
        render("{{ " + expression + " }}", {"input": {"text": "abc"}})
    assert render("{{ input.text * 2 }}", {"input": {"text": "abc"}}) == "abcabc"
