"""Codex overhead: per-run overhead on a real engine.

The same codex prompt skill (one tool call + final JSON from the fake LLM), (a) as the bare CLI
command with the worker's exact flags in a fresh run dir, and (b) through REST -> Redis ->
worker -> result readable. The bare CLI command is `codex`, the npm launcher a user runs; the
worker runs the native binary behind it (runner_core/engines/codex.py), so (a') that binary run
bare with the same flags is measured too: b/a' is the service's own overhead on the same
process. The three alternate (a a' b a a' b ...) so drift on a shared machine hits all alike.
(b) is observed as a client should: one long poll of the result
(`GET /v1/jobs/{id}/result?wait_sec=60`), answered when the worker's finish notice arrives.
The row-based latency (client's POST time -> the run's finished_at) is reported beside it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from bench.context import Context
from bench.engine import RESULT, SKILL_ID, TEXT, as_cli_command, codex_setup, prepare_bare, run_bare
from bench.jobs import as_epoch, parse_time
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize

FIGURE = "codex-overhead"
WAIT_SEC = 60


@dataclass
class Observed:
    """One run through the service as the client saw it."""

    elapsed: float  # POST sent -> result answered (s)
    row_latency: float  # POST sent (wall clock) -> the run's finished_at (s)
    post: float  # the POST's own round trip (s)
    sent_at: float  # wall clock when the POST was sent
    run_id: str


def submit_and_wait(client) -> Observed:
    """POST a codex job and long-poll its result (`?wait_sec`)."""
    t0_wall, t0 = time.time(), time.perf_counter()
    resp = client.post(
        "/v1/jobs",
        {
            "skill_id": SKILL_ID,
            "engine": "codex",
            "input": {"text": TEXT},
            "runtime_options": {"no_cache": True},
        },
    )
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    rid = resp.body["request_id"]
    while True:
        result = client.get(f"/v1/jobs/{rid}/result?wait_sec={WAIT_SEC}")
        if result.status != 409:
            break
    elapsed = time.perf_counter() - t0
    status = client.get(f"/v1/jobs/{rid}").body  # for finished_at, after the clock stopped
    if status["status"] != "succeeded" or result.body["result"]["data"] != RESULT:
        raise RuntimeError(f"runner codex run failed: {status} {result.body}")
    row_latency = parse_time(status["finished_at"]) - t0_wall
    return Observed(elapsed, row_latency, resp.seconds, t0_wall, status["run_id"])


def run(ctx: Context) -> list[Row]:
    n = ctx.count(200, 6)  # enough runs for a narrow interval on the ratio of medians (bench.stats)
    root = ctx.scratch(FIGURE)
    try:
        with (
            codex_setup(root) as codex,
            Stack(root / "stack", StackOptions(extra_env=codex.worker_env())) as stack,
        ):
            client = stack.client()
            bare_runs = root / "bare-runs"
            for _ in range(2):  # warm-up, not counted
                run_bare(as_cli_command(prepare_bare(bare_runs, stack.skills_dir)))
                run_bare(prepare_bare(bare_runs, stack.skills_dir))
                submit_and_wait(client)
            bare, native, seen = [], [], []
            for i in range(n):
                bare.append(run_bare(as_cli_command(prepare_bare(bare_runs, stack.skills_dir))))
                native.append(run_bare(prepare_bare(bare_runs, stack.skills_dir)))
                seen.append(submit_and_wait(client))
                if (i + 1) % 10 == 0:
                    ctx.log(f"{FIGURE}: {i + 1}/{n} pairs")
            steps = run_steps(stack, seen)
    finally:
        ctx.cleanup(root)
    runner, rows_latency = [o.elapsed for o in seen], [o.row_latency for o in seen]
    process = steps["codex process"]
    split = {name: statistics.median(values) for name, values in steps.items()}
    b, r, rl = summarize(bare), summarize(runner), summarize(rows_latency)
    nb = summarize(native)
    lo, hi = median_ratio_interval(runner, bare)
    row_lo, row_hi = median_ratio_interval(rows_latency, bare)
    own_lo, own_hi = median_ratio_interval(runner, native)
    out = [
        Row(
            FIGURE,
            "codex run through REST->Redis->worker->result (client)",
            r.median,
            "s",
            b.median,
            "bare `codex` CLI command",
            ratio(r.median, b.median),
            "<= 1.03 at median",
            ratio(r.median, b.median) <= 1.03,
            p99=r.p99,
            baseline_p99=b.p99,
            note=f"n={n} pairs; overhead p50 {1000 * (r.median - b.median):.1f} ms; "
            f"ratio's 95% interval {lo:.3f}-{hi:.3f} (bootstrap over the pairs); "
            f"result long-polled (GET /result?wait_sec)",
            extra={"ratio_interval": [lo, hi]},
        ),
        Row(
            FIGURE,
            "codex run, POST -> run finished_at (row)",
            rl.median,
            "s",
            b.median,
            "bare `codex` CLI command",
            ratio(rl.median, b.median),
            "<= 1.03 at median",
            ratio(rl.median, b.median) <= 1.03,
            p99=rl.p99,
            baseline_p99=b.p99,
            note=f"ratio's 95% interval {row_lo:.3f}-{row_hi:.3f}",
            extra={"ratio_interval": [row_lo, row_hi]},
        ),
        Row(
            FIGURE,
            "the same run against the native codex binary run bare (the service's own share)",
            r.median,
            "s",
            nb.median,
            "bare native codex binary",
            ratio(r.median, nb.median),
            p99=r.p99,
            baseline_p99=nb.p99,
            note=f"overhead p50 {1000 * (r.median - nb.median):.1f} ms; ratio's 95% interval "
            f"{own_lo:.3f}-{own_hi:.3f}; the `codex` command's Node launcher costs "
            f"{1000 * (b.median - nb.median):.1f} ms per run",
            extra={"ratio_interval": [own_lo, own_hi]},
        ),
    ]
    if process:  # the CLI as the supervisor saw it (prompt, config and skill files excluded)
        p = summarize(process)
        out.append(
            Row(
                FIGURE,
                "codex process inside the worker (timings.process - engine_setup)",
                p.median,
                "s",
                nb.median,
                "bare native codex binary",
                ratio(p.median, nb.median),
                p99=p.p99,
                baseline_p99=nb.p99,
            )
        )
    out.append(
        Row(
            FIGURE,
            "where a run's time goes (medians per run)",
            r.median,
            "s",
            note="; ".join(f"{k} {v * 1000:.1f} ms" for k, v in split.items()),
            extra=split,
        )
    )
    return out


def run_steps(stack: Stack, seen: list[Observed]) -> dict[str, list[float]]:
    """Seconds of each step between the client's POST and its answer, per run, from the
    client's clock and the runs' rows (one machine, one wall clock): the codex process
    (`timings.process` less `engine_setup`) is the step the bare run also has; the rest is the
    service's."""
    from sqlalchemy import create_engine, select

    from runner_core.store.models import Run

    engine = create_engine(stack.database_url)
    try:
        with engine.connect() as conn:
            rows = {
                row.id: row
                for row in conn.execute(
                    select(Run).where(Run.id.in_([o.run_id for o in seen]))
                ).all()
            }
    finally:
        engine.dispose()
    steps: dict[str, list[float]] = {}
    for o in seen:
        row = rows[o.run_id]
        created = as_epoch(row.created_at)
        started, finished = as_epoch(row.started_at), as_epoch(row.finished_at)
        t = row.timings
        phases = {
            "prepare": t.get("prepare", 0.0),
            "engine setup": t.get("engine_setup", 0.0),
            "codex process": t.get("process", 0.0) - t.get("engine_setup", 0.0),
            "output chain": t.get("output", 0.0),
            "artifacts": t.get("artifacts", 0.0),
        }
        values = {
            "the POST's round trip at the client (overlaps the next steps)": o.post,
            "POST sent -> row created": created - o.sent_at,
            "row created -> claimed (commit, enqueue, Celery's hand-off, claim)": started - created,
            **phases,
            "claim, finish, rest in the worker": finished - started - sum(phases.values()),
            "finished_at -> answer at the client": o.sent_at + o.elapsed - finished,
        }
        for name, value in values.items():
            steps.setdefault(name, []).append(value)
    return steps
