"""Runs waiting for a reply hold nothing: auto-run throughput with 50 interactive runs waiting
against the same load with none waiting, same service, same 2 worker processes.

The waiting runs are real: codex turns against the fake LLM that asked a question
(bench.interactive). The load is the noop batch of noop-throughput (300 `bench-noop` runs at
once, runs/s until the last finished_at): the auto run whose throughput is most sensitive to the
service's own costs. Batches alternate between the two states in pairs whose order flips
(without, with | with, without | ...). Before every batch 50 interactive runs ask their
question; before a "without" batch they are canceled at once (a waiting run holds no process),
after a "with" batch they are checked still waiting and canceled: either batch follows the same
work. Each pair gives a ratio; the figure is their median.
"""

from __future__ import annotations

import statistics
import time

import psutil

from bench import interactive
from bench.context import Context
from bench.cpu import cpu_per_run, service_groups
from bench.engine import codex_setup
from bench.noop_jobs import runner_throughput
from bench.stack import Stack, StackOptions
from bench.stats import Row

FIGURE = "waiting-runs"
WAITING = 50
SETTLE_SEC = 1.0  # after the waiting runs change: their last turns' refills and writes end


def run(ctx: Context) -> list[Row]:
    pairs, batch = ctx.count(6, 1), ctx.count(300, 100)
    root = ctx.scratch(FIGURE)
    try:
        with (
            codex_setup(root, interactive.ask_script()) as codex,
            Stack(root / "stack", StackOptions(extra_env=codex.worker_env())) as stack,
        ):
            client = stack.client()
            runner_throughput(stack, client, 50)  # warm-up, not counted
            me = [psutil.Process()]
            broker = [psutil.Process(stack.broker.proc.pid)] if stack.broker.proc else []
            with_, without, ratios = [], [], []
            cpu: dict[bool, list[float]] = {True: [], False: []}
            for i in range(pairs):
                order = (False, True) if i % 2 == 0 else (True, False)
                rates = {}
                for state in order:
                    # the same work before either batch: 50 runs ask; "without" cancels them
                    waiting = make_waiting(client, WAITING)
                    if not state:
                        cancel(client, waiting)
                    time.sleep(SETTLE_SEC)
                    took, used = cpu_per_run(
                        service_groups(stack, me, broker),
                        lambda: runner_throughput(stack, client, batch),
                        batch,
                    )
                    rates[state] = batch / took
                    cpu[state].append(sum(used.values()))
                    if state:
                        check_still_waiting(client, waiting)
                        cancel(client, waiting)
                with_.append(rates[True])
                without.append(rates[False])
                ratios.append(rates[True] / rates[False])
                ctx.log(f"{FIGURE}: pair {i + 1}/{pairs}: ratio {ratios[-1]:.3f}")
    finally:
        ctx.cleanup(root)
    ratio = statistics.median(ratios)
    cpu_with, cpu_without = statistics.median(cpu[True]), statistics.median(cpu[False])
    return [
        Row(
            FIGURE,
            f"auto-run throughput ({batch} noop runs at once) with {WAITING} runs waiting",
            statistics.median(with_),
            "/s",
            statistics.median(without),
            "the same batches with no run waiting",
            ratio,
            ">= 0.95x",
            ratio >= 0.95,
            note=f"median of {pairs} pair ratios (order flipping each pair): "
            + ", ".join(f"{r:.3f}" for r in ratios)
            + f"; ratio of the median rates {statistics.median(with_) / statistics.median(without):.3f}"
            + "; 2 worker processes; the waiting runs are codex runs that asked",
            extra={"pair_ratios": ratios},
        ),
        Row(
            FIGURE,
            f"CPU per auto run of every process, {WAITING} runs waiting",
            cpu_with,
            "s",
            cpu_without,
            "the same batches with no run waiting",
            cpu_with / cpu_without,
            note="medians over the batches; gunicorn, Celery main and pool processes, the "
            "bench client, the broker (each process itself, not the spawned command): what the "
            "throughput follows when both cores are busy, and less moved by other load",
        ),
    ]


def make_waiting(client, count: int) -> list[str]:
    """`count` interactive codex runs that asked their question and now wait."""
    rids = [interactive.start(client)[0] for _ in range(count)]
    for rid in rids:
        interactive.waiting(client, rid)
    return rids


def cancel(client, rids: list[str]) -> None:
    for rid in rids:
        body = client.post(f"/v1/jobs/{rid}/cancel").body
        if body.get("status") != "canceled":
            raise RuntimeError(f"a waiting run did not cancel at once: {body}")


def check_still_waiting(client, rids: list[str]) -> None:
    """Nothing the batch did may have moved a waiting run."""
    for rid in rids:
        status = client.get(f"/v1/jobs/{rid}").body["status"]
        if status != "waiting_user":
            raise RuntimeError(f"run {rid} stopped waiting during the batch: {status}")
