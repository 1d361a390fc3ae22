"""Replies as people type them (Skill-Runner's clients send `{"text": ...}` for any question):
matched to the question where they can be, else passed to the agent as text."""

from __future__ import annotations

import pytest

from runner_core.interaction import from_typed, typed_text

CHOOSE = {
    "kind": "choose_one",
    "options": [{"label": "The bold one", "value": "TITLE-B"}, {"label": "Plain", "value": 2}],
}


def test_only_the_text_form_is_typed():
    assert typed_text({"text": "yes"}) == "yes"
    assert typed_text("yes") is None and typed_text({"text": "a", "x": 1}) is None
    assert typed_text({"text": 3}) is None


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("TITLE-B", "TITLE-B"),
        (" the BOLD one ", "TITLE-B"),
        ("2", 2),
        ("plain", 2),
        ("neither", "neither"),
    ],
)
def test_a_choice_is_found_by_value_then_label_else_passed_on(said, meant):
    assert from_typed(CHOOSE, said) == meant


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("yes", True),
        ("Y", True),
        ("OK.", True),
        ("确认", True),
        ("no", False),
        ("取消", False),
        ("only the first part", "only the first part"),
    ],
)
def test_confirm_takes_yes_and_no_in_the_users_words(said, meant):
    assert (
        from_typed({"kind": "confirm"}, said) is meant
        or from_typed({"kind": "confirm"}, said) == meant
    )
    assert from_typed({"kind": "risk_ack"}, said) == meant


def test_fields_spelled_as_json_and_open_text():
    assert from_typed({"kind": "fill_fields"}, '{"a": 1}') == {"a": 1}
    assert from_typed({"kind": "fill_fields"}, "{not json") == "{not json"
    assert from_typed({"kind": "open_text"}, "  keep my spaces ") == "  keep my spaces "
