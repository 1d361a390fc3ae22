"""The interactive protocol's pure parts: the done marker, questions and reply checks."""

from __future__ import annotations

from runner_core.interaction import (
    check_response,
    has_done_marker,
    parse_question,
    reply_prompt,
    without_marker,
)


def test_the_marker_is_found_in_the_final_text_and_dropped_from_the_output():
    assert has_done_marker('{"__SKILL_DONE__": true, "a": 1}')
    assert not has_done_marker("all done") and not has_done_marker(None)
    assert without_marker({"__SKILL_DONE__": True, "a": 1}) == {"a": 1}
    assert without_marker([1]) == [1]


def test_a_yaml_block_gives_the_question_its_shape():
    text = """Two drafts.
<ASK_USER_YAML>
kind: choose_one
prompt: Pick one
options:
  - {label: First, value: one}
  - two
ui_hints: {widget: radio}
</ASK_USER_YAML>"""
    pending, warning = parse_question(text)
    assert warning is None
    assert pending.kind == "choose_one" and pending.prompt == "Pick one"
    assert pending.options == [
        {"label": "First", "value": "one"},
        {"label": "two", "value": "two"},
    ]
    assert pending.ui_hints == {"widget": "radio"}


def test_a_yaml_block_with_aliases_is_asked_as_open_text_unexpanded():
    # each level ten of the one before: written out, the hints hold a million strings (nine
    # levels, what a model could be talked into writing, would be a billion)
    levels = ["a0: &a0 [xxxxxxxx, xxxxxxxx, xxxxxxxx, xxxxxxxx, xxxxxxxx]"] + [
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 6)
    ]
    text = "Which?\n<ASK_USER_YAML>\nkind: open_text\nui_hints:\n  " + "\n  ".join(levels)
    pending, warning = parse_question(text + "\n</ASK_USER_YAML>")
    assert warning is not None and "aliases" in warning["message"]
    assert pending.kind == "open_text" and pending.ui_hints == {}
    assert pending.prompt == "Which?"


def test_a_message_without_a_block_is_an_open_question():
    pending, warning = parse_question("Which file do you mean?")
    assert (pending.kind, pending.prompt, warning) == ("open_text", "Which file do you mean?", None)


def test_a_bad_block_falls_back_to_open_text_with_a_warning():
    for block in ("kind: [unclosed", "kind: pick_many\nprompt: x", "kind: choose_one\nprompt: x"):
        pending, warning = parse_question(
            f"Please decide.\n<ASK_USER_YAML>\n{block}\n</ASK_USER_YAML>"
        )
        assert pending.kind == "open_text" and pending.prompt == "Please decide.", block
        assert warning is not None and warning["code"] == "INTERACTIVE_ASK_YAML_INVALID"


def test_replies_are_checked_against_the_kind_of_question():
    choose = {"kind": "choose_one", "options": [{"label": "A", "value": "a"}]}
    assert check_response(choose, "a") is None and check_response(choose, "b")
    assert check_response({"kind": "confirm"}, True) is None
    assert check_response({"kind": "risk_ack"}, "ok")
    fill = {"kind": "fill_fields", "required_fields": ["name", "year"]}
    assert check_response(fill, {"name": "x", "year": 1}) is None
    assert "year" in check_response(fill, {"name": "x"})
    assert (
        check_response({"kind": "open_text"}, "")
        and check_response({"kind": "open_text"}, "x") is None
    )


def test_the_reply_message_quotes_the_question_and_the_answer():
    text = reply_prompt({"prompt": "Pick one"}, {"name": "Zoë"})
    assert "Pick one" in text and '{"name": "Zoë"}' in text and "__SKILL_DONE__" in text
