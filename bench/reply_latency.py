"""Reply latency: a reply to a waiting interactive run -> the next turn's engine process started.

The embedded default (SQLite, the embedded broker, 2 worker processes) with the real codex CLI
against the fake LLM: each run asks in turn 1, is answered over the API and finishes in turn 2,
one run at a time (the worker is idle when the reply comes, as it is when a person answers).
The start is the worker's own record, `timings.engine_started_at` (wall clock once Popen has
returned: the CLI is exec'd), so the figure is the service's latency, not codex's: codex only
makes the turns real. The reply's arrival is the client's clock just before it sends the
request on a loopback keep-alive connection (one machine, one clock).

Baselines in the same run: the same service's first turn (POST /v1/jobs -> turn 1's engine
process started) and a bare Celery task on the same broker spawning `date +%s.%N` (task sent
-> the time the process prints).
"""

from __future__ import annotations

import statistics
import time

from bench import interactive
from bench.bare_celery import BareWorker
from bench.context import Context
from bench.engine import codex_setup
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "reply-latency"
PAUSE_SEC = 0.1  # between steps: the worker is idle when a request comes, as in real use
TARGET = 0.050


def run(ctx: Context) -> list[Row]:
    n = ctx.count(200, 8)
    root = ctx.scratch(FIGURE)
    try:
        with (
            codex_setup(root, interactive.ask_script()) as codex,
            Stack(root / "stack", StackOptions(extra_env=codex.worker_env())) as stack,
            BareWorker(root / "bare", stack.broker_url) as bare,
        ):
            client = stack.client()
            for _ in range(2):  # warm-up, not counted
                one_run(stack, client)
                bare_spawn(bare, root)
            first, replies, bare_times = [], [], []
            for i in range(n):
                first_turn, replied = one_run(stack, client)
                first.append(first_turn)
                replies.append(replied)
                bare_times.append(bare_spawn(bare, root))
                if (i + 1) % 20 == 0:
                    ctx.log(f"{FIGURE}: {i + 1}/{n} runs")
            rows = interactive.engine_started(stack.database_url, [r.run_id for r in replies])
    finally:
        ctx.cleanup(root)
    latency, steps = [], {}
    for r in replies:
        row = rows[r.run_id]
        latency.append(row["engine_started_at"] - r.sent_at)
        for name, value in {
            "the reply's round trip at the client (overlaps the next steps)": r.seconds,
            "reply sent -> answer recorded (answered_at)": row["answered_at"] - r.sent_at,
            "answer recorded -> turn claimed (commit, send, Celery's hand-off, claim)": (
                row["started_at"] - row["answered_at"]
            ),
            "claimed -> engine process started (resume input, prepare, engine setup, spawn)": (
                row["engine_started_at"] - row["started_at"]
            ),
        }.items():
            steps.setdefault(name, []).append(value)
    s, f, b = summarize(latency), summarize(first), summarize(bare_times)
    split = {name: statistics.median(values) for name, values in steps.items()}
    return [
        Row(
            FIGURE,
            "reply -> next turn's engine process started (server side, SQLite + embedded broker)",
            s.median,
            "s",
            f.median,
            "POST /v1/jobs -> turn 1's engine process started",
            ratio(s.median, f.median),
            "p50 <= 50 ms",
            s.median <= TARGET,
            p99=s.p99,
            baseline_p99=f.p99,
            note=f"n={n} runs; engine: the real codex CLI (the start is the worker's record, "
            "so codex's own speed is not in it)",
        ),
        Row(
            FIGURE,
            "the same reply latency against a bare Celery task spawning a command",
            s.median,
            "s",
            b.median,
            "bare Celery task sent -> its command running",
            ratio(s.median, b.median),
            p99=s.p99,
            baseline_p99=b.p99,
            note=f"overhead p50 {1000 * (s.median - b.median):.1f} ms",
        ),
        Row(
            FIGURE,
            "where the reply latency goes (medians per run)",
            s.median,
            "s",
            note="; ".join(f"{k} {v * 1000:.1f} ms" for k, v in split.items()),
            extra=split,
        ),
    ]


def one_run(stack: Stack, client) -> tuple[float, interactive.Replied]:
    """One interactive run: (POST -> turn 1's engine start, its reply as sent). Turn 1's
    start is read from the row while the run waits (turn 2 overwrites the timings)."""
    time.sleep(PAUSE_SEC)
    rid, posted = interactive.start(client)
    status = interactive.waiting(client, rid)
    turn1 = interactive.engine_started(stack.database_url, [status["run_id"]])[status["run_id"]]
    time.sleep(PAUSE_SEC)
    sent = interactive.reply(client, status)
    done = interactive.settle(client, rid)
    if done["status"] != "succeeded":
        raise RuntimeError(f"turn 2 did not finish: {done}")
    return turn1["engine_started_at"] - posted, sent


def bare_spawn(bare: BareWorker, cwd) -> float:
    """A bare Celery task spawning `date`: task sent -> the time the command printed."""
    time.sleep(PAUSE_SEC)
    sent = time.time()
    printed = bare.send(["date", "+%s.%N"], cwd).get(timeout=30)
    return float(printed.strip()) - sent
