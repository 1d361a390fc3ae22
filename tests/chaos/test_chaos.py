"""Chaos: 300 jobs in flight on the deployed shape of the service (Postgres, Redis, gunicorn,
two Celery workers, beat) while a worker is SIGKILLed, Redis restarts empty, Postgres
restarts, the API is killed and the data disk fills up. Afterwards every accepted job has
ended, none ran more often than its declared retries allow, and every result is its input's.

"Restart Postgres" is a real crash of a private cluster (root: initdb as the `postgres` user);
without root it is the test database's backends terminated and new connections refused for the
same gap, on the shared server (tests/chaos/servers.py)."""

from __future__ import annotations

import os

import pytest

from runner_core.engines import get_adapter
from tests.chaos import scenario
from tests.databases import POSTGRES_URL
from tests.engines.harness import require_binary

pytestmark = pytest.mark.chaos


@pytest.mark.timeout(780)  # a slow machine's drain: scenario.Plan
def test_nothing_is_lost_or_done_twice_through_the_faults(tmp_path):
    require_binary(get_adapter("codex"))
    plan = scenario.Plan(codex_every=50, postgres_url=POSTGRES_URL)
    if os.environ.get("CHAOS_QUICK"):  # a smaller pass while working on the service
        plan = scenario.Plan(in_flight=60, baseline_sec=15, spacing_sec=12, codex_every=20,
                             postgres_url=POSTGRES_URL)  # fmt: skip
    out = scenario.run(tmp_path / "chaos", plan)
    report = out.report
    print()
    print(f"postgres: {'private cluster, crashed' if out.real_postgres else 'shared, closed'}")
    for line in report.lines():
        print(line)
    print(f"throughput: {out.baseline.rate:.2f} jobs/s without faults, "
          f"{out.faulted.rate:.2f} jobs/s through the faults")  # fmt: skip
    for fault in out.faults:
        print(fault.row())
    for run_id, what in list(report.failed.items())[:15]:
        print(f"failed {run_id}: {what}")
    assert report.lost == [], report.lost[:20]
    assert report.wrong == [], report.wrong[:20]
    assert report.over_limit == [] and report.beyond_claims == [], (
        report.over_limit[:20],
        report.beyond_claims[:20],
    )
    assert report.refused == 0, report.post_errors
    assert report.accepted > plan.in_flight
    assert all(f.recovery_sec is not None for f in out.faults if not f.skipped)
