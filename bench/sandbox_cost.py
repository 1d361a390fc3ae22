"""What the run box (runner_core/sandbox.py) costs.

Two services side by side: one with the box (SKILL_RUNNER_SANDBOX=auto: bwrap, the limits, a
pids cgroup), one with SKILL_RUNNER_SANDBOX=off. First the same codex prompt skill (one tool
call + final JSON from the fake LLM), runs alternating between them (boxed, unboxed, ...), so
drift on a shared machine hits both alike; each is observed as a client does (POST, then one
long poll of the result). Boxed, codex runs its tool calls without its own sandbox (the box is
the fence); unboxed, with its `workspace-write` sandbox: each side as the service runs it. Then
the `bench-noop` script skill (one process, `printf`), alternating the same way: the box's own
cost per process, with no engine around it.
"""

from __future__ import annotations

from bench.codex_overhead import submit_and_wait
from bench.context import Context
from bench.engine import codex_setup
from bench.noop_jobs import runner_once
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize
from runner_core.sandbox import find_bwrap

FIGURE = "sandbox-cost"
TARGET = 1.05


def run(ctx: Context) -> list[Row]:
    if find_bwrap() is None:
        raise RuntimeError("sandbox-cost needs a working bwrap: deploy/install-sandbox.sh")
    n = ctx.count(100, 6)
    root = ctx.scratch(FIGURE)
    try:
        with codex_setup(root) as codex:
            env = {**codex.worker_env(), "SKILL_RUNNER_SANDBOX": "auto"}
            off_env = {**env, "SKILL_RUNNER_SANDBOX": "off"}
            with (
                Stack(root / "boxed", StackOptions(extra_env=env)) as boxed,
                Stack(root / "unboxed", StackOptions(extra_env=off_env)) as unboxed,
            ):
                clients = boxed.client(), unboxed.client()
                for _ in range(2):  # warm-up, not counted
                    for client in clients:
                        submit_and_wait(client)
                        runner_once(client)
                codex_in, codex_out, noop_in, noop_out = [], [], [], []
                for i in range(n):
                    codex_in.append(submit_and_wait(clients[0]).elapsed)
                    codex_out.append(submit_and_wait(clients[1]).elapsed)
                    if (i + 1) % 10 == 0:
                        ctx.log(f"{FIGURE}: {i + 1}/{n} codex pairs")
                for _ in range(n):
                    noop_in.append(runner_once(clients[0])[0])
                    noop_out.append(runner_once(clients[1])[0])
    finally:
        ctx.cleanup(root)
    return [
        _row("codex run in the box (client time)", codex_in, codex_out, n, TARGET),
        _row("bench-noop script run in the box (client time)", noop_in, noop_out, n, None),
    ]


def _row(name: str, inside: list[float], outside: list[float], n: int, target: float | None) -> Row:
    a, b = summarize(inside), summarize(outside)
    lo, hi = median_ratio_interval(inside, outside)
    r = ratio(a.median, b.median)
    return Row(
        FIGURE,
        name,
        a.median,
        "s",
        b.median,
        "the same run with SKILL_RUNNER_SANDBOX=off",
        r,
        f"<= {target} at median" if target else "",
        (r is not None and r <= target) if target else None,
        p99=a.p99,
        baseline_p99=b.p99,
        note=f"n={n} pairs; p50 difference {1000 * (a.median - b.median):.1f} ms; "
        f"ratio's 95% interval {lo:.3f}-{hi:.3f}",
    )
