"""What recording a run's events costs on a real engine run.

Two services side by side, the same codex prompt skill (one tool call + final JSON from the fake
LLM): one with events on (the default: events.jsonl, pub/sub, the CLI's stream translated as it
prints), one with SKILL_RUNNER_EVENTS=0. Runs alternate between them (on, off, off, on, ...),
so drift on a shared machine and the order within a pair hit both alike; each is observed as a
client does (POST, then one long poll of the result).
"""

from __future__ import annotations

from bench.codex_overhead import submit_and_wait
from bench.context import Context
from bench.engine import codex_setup
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize

FIGURE = "events-cost"


def run(ctx: Context) -> list[Row]:
    n = ctx.count(100, 6)
    root = ctx.scratch(FIGURE)
    try:
        with codex_setup(root) as codex:
            env = codex.worker_env()
            off_env = {**env, "SKILL_RUNNER_EVENTS": "0"}
            with (
                Stack(root / "on", StackOptions(extra_env=env)) as on,
                Stack(root / "off", StackOptions(extra_env=off_env)) as off,
            ):
                clients = on.client(), off.client()
                for _ in range(2):  # warm-up, not counted
                    for client in clients:
                        submit_and_wait(client)
                with_events, without = [], []
                for i in range(n):  # on-off, then off-on: neither goes first every time
                    order = (0, 1) if i % 2 == 0 else (1, 0)
                    for side in order:
                        elapsed = submit_and_wait(clients[side]).elapsed
                        (with_events if side == 0 else without).append(elapsed)
                    if (i + 1) % 10 == 0:
                        ctx.log(f"{FIGURE}: {i + 1}/{n} pairs")
    finally:
        ctx.cleanup(root)
    a, b = summarize(with_events), summarize(without)
    lo, hi = median_ratio_interval(with_events, without)
    r = ratio(a.median, b.median)
    return [
        Row(
            FIGURE,
            "codex run with events on (client time)",
            a.median,
            "s",
            b.median,
            "the same run with SKILL_RUNNER_EVENTS=0",
            r,
            "<= 1.01 at median",
            r is not None and r <= 1.01,
            p99=a.p99,
            baseline_p99=b.p99,
            note=f"n={n} pairs; ratio's 95% interval {lo:.3f}-{hi:.3f}",
        )
    ]
