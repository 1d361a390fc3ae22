"""docs/operating.md's metrics table names every metric `/metrics` exposes, by the name a scrape
shows (a counter's with its `_total`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def exposed_names() -> set[str]:
    """Read from the sources: creating the instruments here would cache them outside the
    multiprocess mode for the tests that run after."""
    names = set()
    source = (ROOT / "runner_core" / "metrics.py").read_text(encoding="utf-8")
    for kind, name in re.findall(r'\b(Counter|Gauge|Histogram)\(\s*"([a-z_]+)"', source):
        names.add(name + ("_total" if kind == "Counter" else ""))
    # the gauges read at scrape time (api/metrics.py's ScrapeTimeCollector)
    source = (ROOT / "api" / "metrics.py").read_text(encoding="utf-8")
    names |= set(re.findall(r'GaugeMetricFamily\(\s*"([a-z_]+)"', source))
    return names


def test_the_metrics_table_lists_every_metric_by_its_scraped_name():
    text = (ROOT / "docs" / "operating.md").read_text(encoding="utf-8")
    table = text[text.index("## Metrics") :].split("\n\n")[2]
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.M))
    exposed = exposed_names()
    assert {"skill_runner_runs", "skill_runner_run_failures_total"} <= exposed
    assert listed == exposed
