"""Token counts and cost a CLI reports for a turn, added up over a run's turns and repair
rounds, and priced from the operator's price table where one names the model.

A count is ``{input_tokens, output_tokens[, cached_input_tokens, reasoning_tokens, cost_usd]}``:
input counts cached input and output counts reasoning (runner_core.engines.streams.UsageKeys).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

COST = "cost_usd"
# token kinds a price is given for (USD per million tokens), and the count each one prices
PRICED = {"input": "input_tokens", "cached_input": "cached_input_tokens", "output": "output_tokens"}


class PriceTableError(ValueError):
    """The price table cannot be used; the message names the file and the entry."""


def add_tokens(
    total: Mapping[str, Any] | None, more: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Counts of two turns added up (None when neither reported any)."""
    if more is None:
        return dict(total) if total is not None else None
    if total is None:
        return dict(more)
    summed = {key: total.get(key, 0) + more.get(key, 0) for key in {**total, **more}}
    if COST in summed:
        summed[COST] = round(summed[COST], 6)
    return summed


def turn_tokens(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """What one turn added to a run's counts (None when it added nothing)."""
    if not after:
        return None
    before = before or {}
    added = {key: value - before.get(key, 0) for key, value in after.items()}
    if COST in added:
        added[COST] = round(added[COST], 6)
    return added if any(added.values()) else None


def read_prices(path: Path) -> dict[str, dict[str, float]]:
    """The operator's price table: a YAML (or JSON) map of `engine/model`, `model` or `engine`
    to USD per million tokens of `input`, `cached_input` (default: input) and `output`."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceTableError(f"price table {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise PriceTableError(f"price table {path} is not valid YAML: {exc}") from exc
    table = (data or {}).get("models", data) if isinstance(data, dict) else data
    if not isinstance(table, dict):
        raise PriceTableError(f"price table {path}: expected a map of model -> prices")
    prices: dict[str, dict[str, float]] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or not entry:
            raise PriceTableError(f"price table {path}: {name}: expected input/output prices")
        unknown = set(entry) - set(PRICED)
        bad = [k for k, v in entry.items() if not isinstance(v, (int, float)) or v < 0]
        if unknown or bad:
            what = f"unknown {sorted(unknown)}" if unknown else f"not a price: {sorted(bad)}"
            raise PriceTableError(f"price table {path}: {name}: {what}")
        prices[str(name)] = {kind: float(value) for kind, value in entry.items()}
    return prices


def priced(
    tokens: Mapping[str, Any] | None,
    prices: Mapping[str, Mapping[str, float]],
    engine: str | None,
    model: str | None,
) -> dict[str, Any] | None:
    """`tokens` with their cost from the price table where it names the model (`engine/model`,
    then `model`, then `engine`); the engine's own figure stays where the table has none."""
    if not tokens or not prices:
        return dict(tokens) if tokens else None
    names = [f"{engine}/{model}", str(model)] if model else []
    entry = next((prices[n] for n in [*names, str(engine)] if n in prices), None)
    if entry is None:
        return dict(tokens)
    cached = tokens.get("cached_input_tokens", 0)
    per_kind = {
        "input": tokens.get("input_tokens", 0) - cached,
        "cached_input": cached,
        "output": tokens.get("output_tokens", 0),
    }
    rate = {kind: entry.get(kind, entry.get("input", 0.0)) for kind in PRICED}
    rate["output"] = entry.get("output", 0.0)
    cost = sum(per_kind[kind] * rate[kind] for kind in PRICED) / 1_000_000
    return {**tokens, COST: round(cost, 6)}


def prices_at(path: Path | None) -> dict[str, dict[str, float]]:
    """The price table in `path` as it is now (re-read when the file changes; {}: none, or it
    became unreadable after the start checked it)."""
    if path is None:
        return {}
    try:
        return _read_once(Path(path), Path(path).stat().st_mtime_ns)
    except (OSError, PriceTableError):
        return {}


@lru_cache(maxsize=4)
def _read_once(path: Path, mtime_ns: int) -> dict[str, dict[str, float]]:
    return read_prices(path)
