"""A run's token counts and cost: turns added up, one turn's share, and the operator's price
table (runner_core.tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.settings import SettingsError, load_settings
from runner_core.tokens import (
    PriceTableError,
    add_tokens,
    priced,
    prices_at,
    read_prices,
    turn_tokens,
)

TURN = {"input_tokens": 1_000_000, "cached_input_tokens": 400_000, "output_tokens": 10_000}


def test_turns_add_up_and_the_cost_stays_a_short_decimal() -> None:
    first = {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.1}
    second = {"input_tokens": 5, "output_tokens": 1, "reasoning_tokens": 1, "cost_usd": 0.2}
    total = add_tokens(first, second)
    assert total == {
        "input_tokens": 15,
        "output_tokens": 3,
        "reasoning_tokens": 1,
        "cost_usd": 0.3,  # not 0.30000000000000004
    }
    assert add_tokens(None, None) is None and add_tokens(first, None) == first


def test_a_turns_share_is_what_it_added() -> None:
    before = {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.1}
    after = {"input_tokens": 15, "output_tokens": 3, "cost_usd": 0.3}
    assert turn_tokens(before, after) == {"input_tokens": 5, "output_tokens": 1, "cost_usd": 0.2}
    assert turn_tokens(None, after) == after
    assert turn_tokens(after, after) is None  # a turn that spent nothing
    assert turn_tokens(before, None) is None


def test_the_price_table_prices_cached_input_at_its_own_rate() -> None:
    prices = {"codex/gpt-x": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}
    # 600k uncached x 2 + 400k cached x 0.5 + 10k x 8, per million
    assert priced(TURN, prices, "codex", "gpt-x")["cost_usd"] == pytest.approx(1.2 + 0.2 + 0.08)


def test_the_table_names_a_model_alone_or_an_engines_default() -> None:
    prices = {"gpt-x": {"input": 1.0, "output": 1.0}, "claude": {"input": 3.0, "output": 15.0}}
    assert priced(TURN, prices, "opencode", "gpt-x")["cost_usd"] == pytest.approx(1.01)
    # no model named: the engine's entry; cached input at the input rate when not given
    assert priced(TURN, prices, "claude", None)["cost_usd"] == pytest.approx(3.0 + 0.15)


def test_the_engines_own_cost_stays_where_the_table_has_no_entry() -> None:
    own = {**TURN, "cost_usd": 0.42}
    assert priced(own, {"other": {"input": 1.0}}, "claude", "m")["cost_usd"] == 0.42
    assert priced(own, {}, "claude", "m") == own
    assert priced(None, {"claude": {"input": 1.0}}, "claude", "m") is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gpt-x: {input: 1, outptu: 2}", "unknown ['outptu']"),
        ("gpt-x: {input: -1}", "not a price"),
        ("gpt-x: 3", "expected input/output prices"),
        ("[1, 2]", "expected a map"),
        ("gpt-x: {input: [", "not valid YAML"),
    ],
)
def test_a_bad_price_table_is_named_with_its_entry(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(PriceTableError, match=words.replace("[", r"\[").replace("]", r"\]")):
        read_prices(path)


def test_a_bad_price_table_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("gpt-x: {input: nope}")
    with pytest.raises(SettingsError, match="SKILL_RUNNER_PRICES_FILE"):
        load_settings(
            {"SKILL_RUNNER_PRICES_FILE": str(path), "SKILL_RUNNER_DATA_DIR": str(tmp_path)}
        )


def test_the_table_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  gpt-x: {input: 1, output: 2}\n")
    assert prices_at(path) == {"gpt-x": {"input": 1.0, "output": 2.0}}
    path.write_text("models:\n  gpt-x: {input: 3, output: 4}\n")
    import os

    os.utime(path, ns=(1, 10**18))  # a new modification time, whatever the clock's grain
    assert prices_at(path)["gpt-x"]["input"] == 3.0
    assert prices_at(None) == {} and prices_at(tmp_path / "gone.yaml") == {}
