"""A run's budget (`runtime_options.budget`): tokens and/or USD over all its turns and repair
rounds. A turn that reaches it is stopped; an interactive run that reached it waits for a reply
that raises it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": 2**53 - 1},
        "max_usd": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e9},
    },
    "additionalProperties": False,
    "minProperties": 1,
}
# CLIs that price their runs themselves: a USD budget holds for them without a price table
PRICED_BY_CLI = frozenset({"claude", "opencode", "kilo"})


@dataclass(frozen=True)
class Budget:
    max_tokens: int | None = None  # input + output tokens (cached input and reasoning counted in)
    max_usd: float | None = None

    @classmethod
    def of(cls, data: Any) -> Budget | None:
        """The budget of a stored `budget` object (None: no budget)."""
        if not isinstance(data, Mapping):
            return None
        tokens, usd = data.get("max_tokens"), data.get("max_usd")
        budget = cls(
            int(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
            float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None,
        )
        return budget if budget.max_tokens or budget.max_usd else None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("max_tokens", self.max_tokens), ("max_usd", self.max_usd)) if v}

    def exceeded(self, usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """What was spent against what was allowed, once `usage` reached the budget (else
        None)."""
        spent = spent_of(usage)
        over = (self.max_tokens is not None and spent["tokens"] >= self.max_tokens) or (
            self.max_usd is not None and spent["usd"] >= self.max_usd
        )
        return {"budget": self.as_dict(), "spent": spent} if over else None


def spent_of(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """{tokens, usd} of a run's token_usage."""
    usage = usage or {}
    tokens = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    return {"tokens": tokens, "usd": round(float(usage.get("cost_usd", 0.0)), 6)}


def message(found: Mapping[str, Any]) -> str:
    """'spent 1,234 tokens of 1,000 allowed' (and/or USD)."""
    budget, spent = found["budget"], found["spent"]
    parts = []
    if "max_tokens" in budget:
        parts.append(f"{spent['tokens']:,} tokens of {budget['max_tokens']:,}")
    if "max_usd" in budget:
        parts.append(f"${spent['usd']:.4f} of ${budget['max_usd']:.4f}")
    return "the run reached its budget: spent " + " and ".join(parts)


DEFAULT_WINDOW_SEC = 86400


@dataclass(frozen=True)
class Quota:
    """What one API token's runs may spend over a sliding window (its tokens-file entry's
    `quota`: {max_tokens?, max_usd?, window_sec?}); a job beyond it is 429 QUOTA_EXCEEDED."""

    limit: Budget
    window_sec: int = DEFAULT_WINDOW_SEC

    @classmethod
    def of(cls, data: Any) -> Quota:
        """The quota of a tokens-file entry; ValueError saying what is wrong."""
        if not isinstance(data, Mapping) or set(data) - {"max_tokens", "max_usd", "window_sec"}:
            raise ValueError("quota must be {max_tokens?, max_usd?, window_sec?}")
        window = data.get("window_sec", DEFAULT_WINDOW_SEC)
        if not isinstance(window, int) or isinstance(window, bool) or not 60 <= window <= 10**8:
            raise ValueError("quota.window_sec must be an integer of 60 seconds or more")
        limit = Budget.of(data)
        invalid = [
            key
            for key in ("max_tokens", "max_usd")
            if key in data and (isinstance(data[key], bool) or not (data[key] or 0) > 0)
        ]
        if limit is None or invalid:
            raise ValueError("quota needs a positive max_tokens and/or max_usd")
        return cls(limit, window)

    def as_dict(self) -> dict[str, Any]:
        return {**self.limit.as_dict(), "window_sec": self.window_sec}
