"""composite-chain: `bench_chain`, 20 sequential steps of the trivial `bench_inc` (returns
n + 1), on the default worker (2 processes). Figure: the overhead per step, the time from one
step's child run finishing to the next one's starting (the workflow's `advance`, the child's
creation, its message and its claim), p50 over every step boundary. Baseline: a client doing
the same by hand, 20 plain `bench_inc` jobs in a row (POST, long poll, POST the next), the
time from one job finishing to the next one starting."""

from __future__ import annotations

import statistics

from bench.composite_runs import nonce, run_composite, span
from bench.context import Context
from bench.jobs import parse_time, wait_terminal
from bench.stack import Stack
from bench.stats import Row, ratio, summarize

FIGURE = "composite-chain"
STEPS = 20


def gaps(docs: list[dict]) -> list[float]:
    """finished_at of each run -> started_at of the next."""
    return [
        parse_time(b["started_at"]) - parse_time(a["finished_at"])
        for a, b in zip(docs, docs[1:], strict=False)
    ]


def client_chain(stack: Stack) -> list[dict]:
    client, docs, n = stack.client(), [], 0
    for _ in range(STEPS):
        rid = client.post(
            "/v1/jobs", {"skill_id": "bench_inc", "input": {"n": n, "nonce": nonce()}}
        )
        doc = wait_terminal(client, [rid.body["request_id"]])[rid.body["request_id"]]
        docs.append(doc)
        n += 1
    return docs


def run(ctx: Context) -> list[Row]:
    rounds = ctx.count(10, 2)
    root = ctx.scratch(FIGURE)
    step_gaps, plain_gaps, per_step, works = [], [], [], []
    try:
        with Stack(root / "stack") as stack:
            run_composite(stack, "bench_chain")  # warm
            for _ in range(rounds):
                parent, children = run_composite(stack, "bench_chain")
                step_gaps += gaps(children)
                work = sum(span(c) for c in children)
                works.append(work / STEPS)
                per_step.append((span(parent) - work) / STEPS)
                plain_gaps += gaps(client_chain(stack))
                ctx.log(f"{FIGURE}: wall {span(parent):.3f} s, steps' own time {work:.3f} s")
    finally:
        ctx.cleanup(root)
    got, plain = summarize(step_gaps), summarize(plain_gaps)
    return [
        Row(
            FIGURE,
            f"{STEPS}-step sequential pipeline of trivial code steps: overhead per step",
            got.median * 1000,
            "ms",
            plain.median * 1000,
            "a client chaining the same jobs (POST, long poll, POST)",
            ratio(got.median, plain.median),
            "p50 <= 20 ms",
            got.median * 1000 <= 20,
            p99=got.p99 * 1000,
            baseline_p99=plain.p99 * 1000,
            note=f"{len(step_gaps)} step boundaries over {rounds} runs (one step finished -> "
            f"the next started); (wall - steps' own time) / {STEPS} per run: "
            + ", ".join(f"{s * 1000:.0f}" for s in per_step)
            + f" ms; a step's own started -> finished {statistics.median(works) * 1000:.0f} ms",
        )
    ]
