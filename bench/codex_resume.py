"""A resumed codex turn through the service against the bare `codex exec resume` command.

The fake LLM asks a question in turn 1 and finishes when the turn carries the runner's reply
message (bench.interactive). Service: an interactive run asks (not timed), then the reply is
POSTed and the result long-polled (`GET /result?wait_sec=60`): reply sent -> result answered.
Bare: turn 1 run bare in a prepared run dir (not timed), then `codex exec resume <thread_id>`
with the same reply message, timed; as the `codex` command a user types (the npm launcher) and
as the native binary the worker runs. The three alternate, so drift hits them alike.
"""

from __future__ import annotations

import time

from bench import interactive
from bench.context import Context
from bench.engine import as_cli_command, codex_setup
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize

FIGURE = "codex-resume"
WAIT_SEC = 60


def run(ctx: Context) -> list[Row]:
    n = ctx.count(100, 5)
    root = ctx.scratch(FIGURE)
    try:
        with (
            codex_setup(root, interactive.ask_script()) as codex,
            Stack(root / "stack", StackOptions(extra_env=codex.worker_env())) as stack,
        ):
            client = stack.client()
            runs_dir = root / "bare-runs"

            def bare(cli: bool) -> float:
                run, session, pending = interactive.bare_first_turn(runs_dir, stack.skills_dir)
                resume = interactive.bare_resume(run, session, pending)
                return interactive.run_resume(as_cli_command(resume) if cli else resume)

            for _ in range(2):  # warm-up, not counted
                bare(True), bare(False), service_turn(client)
            cli, native, seen = [], [], []
            for i in range(n):
                cli.append(bare(True))
                native.append(bare(False))
                seen.append(service_turn(client))
                if (i + 1) % 10 == 0:
                    ctx.log(f"{FIGURE}: {i + 1}/{n} triples")
            rows = interactive.engine_started(stack.database_url, [s[1].run_id for s in seen])
    finally:
        ctx.cleanup(root)
    service = [s[0] for s in seen]
    row_latency = [rows[r.run_id]["finished_at"] - r.sent_at for _, r in seen]
    process = [
        rows[r.run_id]["timings"]["process"] - rows[r.run_id]["timings"]["engine_setup"]
        for _, r in seen
    ]
    s, b, nb = summarize(service), summarize(cli), summarize(native)
    rl, p = summarize(row_latency), summarize(process)
    lo, hi = median_ratio_interval(service, cli)
    own_lo, own_hi = median_ratio_interval(service, native)
    return [
        Row(
            FIGURE,
            "resumed codex turn through the service: reply -> result readable (client)",
            s.median,
            "s",
            b.median,
            "bare `codex exec resume` command",
            ratio(s.median, b.median),
            "<= 1.05 at median",
            ratio(s.median, b.median) <= 1.05,
            p99=s.p99,
            baseline_p99=b.p99,
            note=f"n={n} triples; overhead p50 {1000 * (s.median - b.median):.1f} ms; ratio's 95% "
            f"interval {lo:.3f}-{hi:.3f} (bootstrap over the pairs); reply -> run finished_at "
            f"(row) p50 {1000 * rl.median:.1f} ms",
            extra={"ratio_interval": [lo, hi], "row_latency_p50": rl.median},
        ),
        Row(
            FIGURE,
            "the same turn against the native codex binary resumed bare (the service's own share)",
            s.median,
            "s",
            nb.median,
            "bare native `codex exec resume`",
            ratio(s.median, nb.median),
            p99=s.p99,
            baseline_p99=nb.p99,
            note=f"overhead p50 {1000 * (s.median - nb.median):.1f} ms; ratio's 95% interval "
            f"{own_lo:.3f}-{own_hi:.3f}",
            extra={"ratio_interval": [own_lo, own_hi]},
        ),
        Row(
            FIGURE,
            "codex process of the resumed turn inside the worker (timings.process - engine_setup)",
            p.median,
            "s",
            nb.median,
            "bare native `codex exec resume`",
            ratio(p.median, nb.median),
            p99=p.p99,
            baseline_p99=nb.p99,
        ),
    ]


def service_turn(client) -> tuple[float, interactive.Replied]:
    """An interactive run asks (not timed); its reply -> the result answered, in seconds."""
    rid, _posted = interactive.start(client)
    status = interactive.waiting(client, rid)
    started = time.perf_counter()
    sent = interactive.reply(client, status)
    while True:
        result = client.get(f"/v1/jobs/{rid}/result?wait_sec={WAIT_SEC}")
        if result.status != 409:
            break
    elapsed = time.perf_counter() - started
    data = result.body.get("result", {}).get("data") if isinstance(result.body, dict) else None
    if data != interactive.RESULT:
        raise RuntimeError(f"resumed turn did not finish: {result.status} {result.body}")
    return elapsed, sent
