"""Composite templates: paths, filters in openEvo's syntax, typed whole-string values and
`||` fallbacks."""

from __future__ import annotations

import pytest

from runner_core.openevo.templates import TemplateFailure, render, to_jinja

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
