"""What the run box (runner_core/sandbox.py) costs.

Two services side by side: one with the box (SKILL_RUNNER_SANDBOX=auto: bwrap, the limits, a
pids cgroup), one with SKILL_RUNNER_SANDBOX=off. First the `bench-noop` script skill (one
process, `printf`), runs alternating between them (boxed then unboxed, then the other way
round, by turns), so drift on a shared machine hits both alike: the box's own cost per process,
with no engine around it (target: <= 5 ms at p50). Then the same codex prompt skill (one tool
call + final JSON from the fake LLM), alternating the same way; each run is observed as a
client does (POST, then one long poll of the result). Boxed, codex runs its tool calls without
its own sandbox (the box is the fence); unboxed, with its `workspace-write` sandbox: each side
as the service runs it.
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
NOOP_TARGET_SEC = 0.005


def run(ctx: Context) -> list[Row]:
    if find_bwrap() is None:
        raise RuntimeError("sandbox-cost needs a working bwrap: deploy/install-sandbox.sh")
    n, n_noop = ctx.count(100, 6), ctx.count(200, 40)
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
                noop_in, noop_out = _alternate(
                    clients, n_noop, lambda client: runner_once(client)[0]
                )
                ctx.log(f"{FIGURE}: {n_noop} noop pairs")
                codex_in, codex_out = _alternate(
                    clients, n, lambda client: submit_and_wait(client).elapsed
                )
    finally:
        ctx.cleanup(root)
    return [
        _noop_row(noop_in, noop_out, n_noop),
        _row("codex run in the box (client time)", codex_in, codex_out, n, TARGET),
    ]


def _alternate(clients, n: int, once) -> tuple[list[float], list[float]]:
    """n runs on each side, by pairs; every other pair starts with the unboxed side."""
    inside: list[float] = []
    outside: list[float] = []
    for i in range(n):
        if i % 2 == 0:
            inside.append(once(clients[0]))
            outside.append(once(clients[1]))
        else:
            outside.append(once(clients[1]))
            inside.append(once(clients[0]))
    return inside, outside


def _noop_row(inside: list[float], outside: list[float], n: int) -> Row:
    """The box's own cost per script process: the p50 difference, boxed minus unboxed."""
    row = _row("bench-noop script run in the box (client time)", inside, outside, n, None)
    cost = row.value - (row.baseline or 0.0)
    row.target = f"box's own cost <= {NOOP_TARGET_SEC * 1000:.0f} ms at p50"
    row.met = cost <= NOOP_TARGET_SEC
    row.extra = {"cost_p50_sec": cost}
    return row


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
