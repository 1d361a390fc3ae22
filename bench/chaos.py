"""Throughput through faults, and how long each fault takes to recover from.

The chaos test's scenario (tests/chaos/scenario.py) on its own scratch directory: Postgres
(a private cluster as root), a Redis of its own, gunicorn, two Celery workers and beat; 300
jobs kept in flight (the `chaos-ledger` script skill, sleeping 0.2 s, and every 50th a codex
run against the fake LLM); a baseline window with no fault, then a worker SIGKILLed, Postgres
crashed and restarted, the API killed and restarted, the data disk (a tmpfs) filled and freed,
Redis restarted empty, one after another. The figure is the successful jobs/s of the
fault window against the baseline window of the same run; each fault's row is the time from
its end (the process restarted, the disk freed) to the first run that started since the fault
and succeeded, beside the outage imposed.
"""

from __future__ import annotations

from bench.context import Context
from bench.databases import POSTGRES_ADMIN_URL
from bench.stats import Row

FIGURE = "chaos"


def run(ctx: Context) -> list[Row]:
    from runner_core.engines import get_adapter
    from runner_core.engines.invocation import resolve_binary
    from tests.chaos import scenario

    codex = resolve_binary(get_adapter("codex").binary) is not None
    server = POSTGRES_ADMIN_URL  # the stand-in's server when no private cluster can run
    plan = scenario.Plan(codex_every=50 if codex else 0, postgres_url=server)
    if ctx.quick:
        plan = scenario.Plan(in_flight=60, baseline_sec=15, spacing_sec=12,
                             codex_every=20 if codex else 0, postgres_url=server)  # fmt: skip
    root = ctx.scratch(FIGURE)
    try:
        out = scenario.run(root, plan)
    finally:
        ctx.cleanup(root)
    report = out.report
    for line in report.lines():
        ctx.log(f"{FIGURE}: {line}")
    ratio = out.faulted.rate / out.baseline.rate if out.baseline.rate else None
    postgres = "a private cluster crashed" if out.real_postgres else "the database closed"
    rows = [
        Row(
            FIGURE,
            f"successful jobs/s through {len(out.faults)} faults ({plan.in_flight} in flight)",
            out.faulted.rate,
            "/s",
            out.baseline.rate,
            "the same load with no fault, same run",
            ratio,
            note=f"{report.accepted} jobs accepted, {len(report.lost)} lost, "
            f"{len(report.over_limit)} executed beyond their retries, {report.repeated} "
            f"executions repeated (a killed worker's runs, one declared retry); failures "
            f"{dict(report.errors)}; Postgres: {postgres}; codex runs: "
            + ("every 50th" if plan.codex_every else "none (CLI not installed)"),
            extra={"lost": len(report.lost), "repeated": report.repeated},
        ),
        Row(
            FIGURE,
            "accepted jobs lost or executed beyond their declared retries",
            float(len(report.lost) + len(report.over_limit) + len(report.beyond_claims)),
            "",
            target="0",
            met=not (report.lost or report.over_limit or report.beyond_claims),
        ),
    ]
    for fault in out.faults:
        if fault.skipped:
            rows.append(Row(FIGURE, f"recovery: {fault.kind}", float("nan"), "s",
                            note=f"skipped: {fault.skipped}"))  # fmt: skip
            continue
        outage = fault.cleared - fault.injected
        rows.append(
            Row(
                FIGURE,
                f"recovery: {fault.kind} (fault cleared -> a new run succeeded)",
                fault.recovery_sec if fault.recovery_sec is not None else float("nan"),
                "s",
                outage,
                "the outage imposed (fault -> cleared)",
                None,
                note=f"{len(fault.running)} running at the fault, {fault.interrupted} "
                "interrupted"
                + (
                    f", recovered by the sweep {fault.reconciled_sec:.1f} s after the fault"
                    if fault.reconciled_sec is not None
                    else ""
                ),
            )
        )
    return rows
