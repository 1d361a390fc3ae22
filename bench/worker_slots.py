"""Worker slots: how throughput grows with the worker's run slots when runs wait rather than
compute. `bench-sleep` sleeps 1 s and prints a constant, so N slots can at best finish N runs
per second (the ideal, the baseline here). One service; its worker is restarted with
`--concurrency 2`, `4` and `8`, and at each size batches of `rounds x slots` jobs are POSTed at
once and timed from the first POST to the last run's finished_at. The runner's own CPU per run
(gunicorn, the Celery main process and its pool processes, not the sleeping command) is read
around each batch: how the service's cost per run moves as slots are added."""

from __future__ import annotations

import statistics
from itertools import count

from bench.codex_throughput import makespan, submit_batch
from bench.context import Context
from bench.cpu import cpu_per_run
from bench.jobs import parse_time, wait_terminal
from bench.stack import Stack
from bench.stats import Row, ratio

FIGURE = "worker-slots"
SKILL_ID = "bench-sleep"
SLOTS = (2, 4, 8)
SLEEP_SEC = 1.0
RUNNER = ("gunicorn", "celery main", "celery pool")
_ids = count()


def body(_i: int = 0) -> dict:
    """A unique request: a cache miss."""
    return {"skill_id": SKILL_ID, "input": {"n": next(_ids)}}


def sleep_batch(stack: Stack, n: int, durations: list[float]) -> float:
    """Seconds from the first of `n` POSTs to the last run's finished_at; each run's
    started_at -> finished_at is added to `durations`."""
    started, ids = submit_batch(stack, n, body)
    statuses = wait_terminal(stack.client(), ids)
    failed = [s for s in statuses.values() if s["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} sleep runs failed: {failed[0]}")
    durations += [
        parse_time(s["finished_at"]) - parse_time(s["started_at"]) for s in statuses.values()
    ]
    return makespan(started, statuses)


def measure(stack: Stack, slots: int, rounds: int, batches: int) -> dict:
    """Restart the worker with `slots` processes, warm it, then time `batches` batches."""
    stack.stop_worker()
    stack.options.concurrency = slots
    stack.start_worker(f"slots{slots}")
    sleep_batch(stack, slots, [])  # warm: every pool process has run once
    n = slots * rounds
    tputs, cpus, durations = [], [], []
    for _ in range(batches):
        groups = {
            "gunicorn": stack.web_processes(),
            "celery main": stack.worker_processes()[:1],
            "celery pool": stack.worker_processes()[1:],
        }
        took, used = cpu_per_run(groups, lambda: sleep_batch(stack, n, durations), n)
        tputs.append(n / took)
        cpus.append(used)
    return {
        "n": n,
        "throughput": tputs,
        "run_duration": statistics.median(durations),
        "cpu": {name: statistics.median(c[name] for c in cpus) for name in RUNNER},
    }


def run(ctx: Context) -> list[Row]:
    rounds, batches = ctx.count(10, 2), ctx.count(3, 1)
    root = ctx.scratch(FIGURE)
    results = {}
    try:
        with Stack(root / "stack") as stack:
            for slots in SLOTS:
                results[slots] = measure(stack, slots, rounds, batches)
                ctx.log(
                    f"{FIGURE}: {slots} slots: {[round(t, 2) for t in results[slots]['throughput']]} /s"
                )
    finally:
        ctx.cleanup(root)
    rows = []
    for slots, got in results.items():
        tput, ideal = statistics.median(got["throughput"]), slots / SLEEP_SEC
        rows.append(
            Row(
                FIGURE,
                f"1 s sleep-bound script runs, {slots} worker slots: throughput",
                tput,
                "/s",
                ideal,
                "ideal: slots / 1 s",
                ratio(tput, ideal),
                ">= 0.9x",
                tput / ideal >= 0.9,
                note=f"median of {len(got['throughput'])} batches of {got['n']} jobs posted at "
                f"once, first POST -> last finished_at; per batch "
                + ", ".join(f"{t:.2f}" for t in got["throughput"])
                + f"; a run's started_at -> finished_at {got['run_duration'] * 1000:.0f} ms (median)",
                extra=got,
            )
        )
    base = sum(results[SLOTS[0]]["cpu"].values())
    for slots, got in results.items():
        total = sum(got["cpu"].values())
        rows.append(
            Row(
                FIGURE,
                f"runner CPU per run, {slots} worker slots",
                total,
                "s",
                base,
                f"the same at {SLOTS[0]} slots",
                ratio(total, base),
                note="ms per run (medians over the batches): "
                + ", ".join(f"{k} {v * 1000:.2f}" for k, v in got["cpu"].items())
                + "; the processes' own CPU, not the sleeping command's",
                extra=got["cpu"],
            )
        )
    return rows
