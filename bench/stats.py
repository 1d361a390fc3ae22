"""Small statistics and the result rows every figure reports."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Summary:
    """Median and p99 (nearest rank) of a sample."""

    n: int
    median: float
    p99: float
    mean: float
    minimum: float
    maximum: float


def summarize(values: Sequence[float]) -> Summary:
    """Summary of `values` (must not be empty)."""
    data = sorted(values)
    if not data:
        raise ValueError("no samples")
    rank = max(1, math.ceil(0.99 * len(data)))
    return Summary(
        len(data),
        statistics.median(data),
        data[rank - 1],
        statistics.fmean(data),
        data[0],
        data[-1],
    )


def median_ratio_interval(
    values: Sequence[float], baselines: Sequence[float], level: float = 0.95, rounds: int = 2000
) -> tuple[float, float]:
    """Bootstrap interval of median(values) / median(baselines), resampling the pairs
    (values[i], baselines[i]) together: how far the ratio of two medians of this many runs
    moves by chance alone. Seeded, so a report is reproducible from its samples."""
    if len(values) != len(baselines) or not values:
        raise ValueError("need paired samples")
    rng = random.Random(0)
    n, ratios = len(values), []
    for _ in range(rounds):
        picks = [rng.randrange(n) for _ in range(n)]
        ratios.append(
            statistics.median(values[i] for i in picks)
            / statistics.median(baselines[i] for i in picks)
        )
    ratios.sort()
    tail = (1 - level) / 2
    return ratios[int(tail * rounds)], ratios[min(rounds - 1, int((1 - tail) * rounds))]


@dataclass
class Row:
    """One printed figure: a value, its baseline from the same run, their ratio, a target."""

    figure: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    p99: float | None = None
    baseline_p99: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ratio(value: float, baseline: float | None) -> float | None:
    """value / baseline, or None when there is no usable baseline."""
    if baseline is None or baseline == 0:
        return None
    return value / baseline


def fmt(value: float | None, unit: str = "") -> str:
    """A compact human form: ms for seconds below 10, else the unit as given."""
    if value is None:
        return "-"
    if unit == "s" and abs(value) < 10:
        return f"{value * 1000:.1f} ms"
    if unit in ("MiB", "/s", "x"):
        return f"{value:.2f}{'' if unit == 'x' else ' '}{unit}"
    return f"{value:.3g} {unit}".strip()


def render_row(row: Row) -> str:
    """One line of the report."""
    parts = [f"[{row.figure}] {row.name}: {fmt(row.value, row.unit)}"]
    if row.p99 is not None:
        parts.append(f"(p99 {fmt(row.p99, row.unit)})")
    if row.baseline is not None:
        base = f"vs {row.baseline_name or 'baseline'} {fmt(row.baseline, row.unit)}"
        if row.baseline_p99 is not None:
            base += f" (p99 {fmt(row.baseline_p99, row.unit)})"
        parts.append(base)
    if row.ratio is not None:
        parts.append(f"ratio {row.ratio:.3f}")
    if row.target:
        verdict = "" if row.met is None else (" MET" if row.met else " NOT MET")
        parts.append(f"[target {row.target}{verdict}]")
    if row.note:
        parts.append(f"-- {row.note}")
    return " ".join(parts)
