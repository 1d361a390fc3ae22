"""composite-fanout: `bench_fanout`, 8 independent steps that each sleep 1 s (`bench_nap`),
on a worker with 8 processes. Figures: the composite's wall time (its started_at ->
finished_at) against its longest step (the ideal: every step at once), and each child's
created -> started (the time from the workflow creating a step's run to a worker process
starting it). Baseline for the latter: 8 plain `bench_nap` jobs POSTed at once."""

from __future__ import annotations

import statistics

from bench.composite_runs import nonce, plain_batch, run_composite, span
from bench.context import Context
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "composite-fanout"
SLOTS = 8


def run(ctx: Context) -> list[Row]:
    rounds = ctx.count(10, 2)
    root = ctx.scratch(FIGURE)
    walls, longest, waits, plain_waits = [], [], [], []
    try:
        with Stack(root / "stack", StackOptions(concurrency=SLOTS)) as stack:
            run_composite(stack, "bench_fanout")  # warm: every pool process has run once
            for _ in range(rounds):
                parent, children = run_composite(stack, "bench_fanout")
                walls.append(span(parent))
                longest.append(max(span(c) for c in children))
                waits += [span(c, "created_at", "started_at") for c in children]
                plain = plain_batch(stack, "bench_nap", [{"ms": 1000, "tag": nonce()}] * SLOTS)
                plain_waits += [span(c, "created_at", "started_at") for c in plain]
                ctx.log(f"{FIGURE}: wall {walls[-1]:.3f} s, longest step {longest[-1]:.3f} s")
    finally:
        ctx.cleanup(root)
    ratios = [w / step for w, step in zip(walls, longest, strict=True)]
    wall, step = statistics.median(walls), statistics.median(longest)
    wait, plain_wait = summarize(waits), summarize(plain_waits)
    return [
        Row(
            FIGURE,
            f"8 independent 1 s code steps, {SLOTS} worker processes: composite wall time",
            wall,
            "s",
            step,
            "its longest step (started -> finished)",
            statistics.median(ratios),
            "<= 1.3x",
            statistics.median(ratios) <= 1.3,
            note=f"median of {rounds} runs; per run " + ", ".join(f"{r:.2f}x" for r in ratios),
            extra={"walls": walls, "longest": longest},
        ),
        Row(
            FIGURE,
            "a step's child run: created -> started",
            wait.median * 1000,
            "ms",
            plain_wait.median * 1000,
            "8 plain jobs of the step's skill posted at once",
            ratio(wait.median, plain_wait.median),
            "p50 <= 20 ms",
            wait.median * 1000 <= 20,
            p99=wait.p99 * 1000,
            baseline_p99=plain_wait.p99 * 1000,
            note=f"{len(waits)} children over {rounds} runs",
        ),
    ]
