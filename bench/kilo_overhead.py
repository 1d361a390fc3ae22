"""Kilo overhead: a run of the newest engine beside its bare CLI command.

The same prompt skill (one tool call + final JSON from the fake LLM), (a) as the bare `kilo run`
command with the worker's exact flags in a fresh run dir, and (b) through REST -> Redis ->
worker -> result (long-polled), alternating (a b a b ...) so drift hits both alike. Kilo (a
170 MB single-file binary) spends ~12 s of its own start-up per run, so few pairs suffice for
the ratio; the start-up dominates both sides.
"""

from __future__ import annotations

import time

from bench.context import Context
from bench.engine import RESULT, SKILL_ID, TEXT, codex_setup, prepare_bare, run_bare
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize

FIGURE = "kilo-overhead"
ENGINE = "kilo"
WAIT_SEC = 60


def submit_and_wait(client) -> float:
    """POST a kilo job and long-poll its result; the client's seconds."""
    t0 = time.perf_counter()
    body = {
        "skill_id": SKILL_ID,
        "engine": ENGINE,
        "input": {"text": TEXT},
        "runtime_options": {"no_cache": True},
    }
    resp = client.post("/v1/jobs", body)
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    rid = resp.body["request_id"]
    while True:
        result = client.get(f"/v1/jobs/{rid}/result?wait_sec={WAIT_SEC}")
        if result.status != 409:
            break
    elapsed = time.perf_counter() - t0
    if result.body["result"]["status"] != "succeeded" or result.body["result"]["data"] != RESULT:
        raise RuntimeError(f"runner kilo run failed: {result.body}")
    return elapsed


def run(ctx: Context) -> list[Row]:
    n = ctx.count(10, 3)
    root = ctx.scratch(FIGURE)
    try:
        with (
            codex_setup(root, engine=ENGINE) as setup,
            Stack(root / "stack", StackOptions(extra_env=setup.worker_env())) as stack,
        ):
            client = stack.client()
            bare_runs = root / "bare-runs"
            run_bare(prepare_bare(bare_runs, stack.skills_dir, engine=ENGINE))  # warm-up
            submit_and_wait(client)
            bare, runner = [], []
            for i in range(n):
                bare.append(run_bare(prepare_bare(bare_runs, stack.skills_dir, engine=ENGINE)))
                runner.append(submit_and_wait(client))
                ctx.log(f"{FIGURE}: {i + 1}/{n} pairs")
    finally:
        ctx.cleanup(root)
    b, r = summarize(bare), summarize(runner)
    lo, hi = median_ratio_interval(runner, bare)
    q = ratio(r.median, b.median)
    return [
        Row(
            FIGURE,
            "kilo run through REST->Redis->worker->result (client)",
            r.median,
            "s",
            b.median,
            "bare `kilo run` command, the worker's flags",
            q,
            "<= 1.05 at median",
            q is not None and q <= 1.05,
            p99=r.p99,
            baseline_p99=b.p99,
            note=f"n={n} pairs; overhead p50 {1000 * (r.median - b.median):.1f} ms; "
            f"ratio's 95% interval {lo:.3f}-{hi:.3f} (bootstrap over the pairs)",
            extra={"ratio_interval": [lo, hi]},
        )
    ]
