"""A run's token usage: the first turn's counts plus every repair round's."""

from __future__ import annotations

from runner_core.tokens import add_tokens


def test_counts_of_two_turns_are_added_key_by_key():
    total = add_tokens(
        {"input_tokens": 10, "output_tokens": 2}, {"input_tokens": 5, "output_tokens": 3}
    )
    assert total == {"input_tokens": 15, "output_tokens": 5}


def test_a_turn_without_counts_leaves_the_total_as_it_was():
    assert add_tokens({"input_tokens": 4, "output_tokens": 1}, None) == {
        "input_tokens": 4,
        "output_tokens": 1,
    }
    assert add_tokens(None, None) is None


def test_the_first_counts_are_copied_not_shared():
    first = {"input_tokens": 1, "output_tokens": 1}
    total = add_tokens(None, first)
    total = add_tokens(total, {"input_tokens": 2, "output_tokens": 0})
    assert first == {"input_tokens": 1, "output_tokens": 1} and total["input_tokens"] == 3
