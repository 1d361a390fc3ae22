"""runtime_options.budget read and compared (runner_core.budget)."""

from __future__ import annotations

from runner_core.budget import Budget, message
from runner_core.runtime_options import RuntimeOptions


def test_a_budget_is_read_from_the_options_and_nothing_else_is_one() -> None:
    assert RuntimeOptions.from_dict({"budget": {"max_tokens": 5}}).budget == Budget(5, None)
    assert Budget.of({"max_usd": 2}) == Budget(None, 2.0)
    for nothing in (None, {}, {"max_tokens": True}, {"max_tokens": "5"}, 7):
        assert Budget.of(nothing) is None, nothing


def test_the_budget_is_reached_by_tokens_or_by_cost_whichever_comes_first() -> None:
    budget = Budget(max_tokens=1_000, max_usd=0.5)
    assert budget.exceeded({"input_tokens": 900, "output_tokens": 99, "cost_usd": 0.4}) is None
    by_tokens = budget.exceeded({"input_tokens": 900, "output_tokens": 100})
    assert by_tokens == {
        "budget": {"max_tokens": 1_000, "max_usd": 0.5},
        "spent": {"tokens": 1_000, "usd": 0.0},
    }
    assert budget.exceeded({"input_tokens": 1, "output_tokens": 1, "cost_usd": 0.5}) is not None
    assert Budget(max_usd=1.0).exceeded(None) is None


def test_the_message_says_what_was_spent_of_what() -> None:
    found = Budget(max_tokens=1_000, max_usd=0.5).exceeded(
        {"input_tokens": 1_200, "output_tokens": 34, "cost_usd": 0.25}
    )
    assert found is not None
    assert message(found) == (
        "the run reached its budget: spent 1,234 tokens of 1,000 and $0.2500 of $0.5000"
    )
