"""Batch submission. 1,000 noop jobs POSTed by a script with 4 threads while 2 worker
processes drain them: accepted per second by gunicorn, per-POST latency, and the time until
the last run finished. Baseline from the same run: the same 4 threads publishing 1,000 bare
Celery tasks (bench/bare_celery.py) straight to the same broker, drained by a bare 2-process
worker.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from bench.bare_celery import BareWorker
from bench.context import Context
from bench.jobs import parse_time, wait_terminal
from bench.noop_jobs import COMMAND, body
from bench.stack import Stack
from bench.stats import Row, ratio, summarize

FIGURE = "batch-submit"
THREADS = 4


def run(ctx: Context) -> list[Row]:
    n = ctx.count(1000, 100)
    root = ctx.scratch(FIGURE)
    try:
        with Stack(root / "stack") as stack, BareWorker(root / "bare", stack.broker_url) as bare:
            client = stack.client()
            for _ in range(10):
                client.post("/v1/jobs", body())
            # baseline: publish straight to the broker, drain with the bare worker
            started = time.perf_counter()
            with ThreadPoolExecutor(THREADS) as pool:
                results = list(pool.map(lambda _i: bare.send(COMMAND, root), range(n)))
            bare_submit = time.perf_counter() - started
            for res in results:
                res.get(timeout=300)
            bare_drain = time.perf_counter() - started
            ctx.log(f"{FIGURE}: bare {n} tasks: submit {bare_submit:.2f}s drain {bare_drain:.2f}s")
            # the service
            latencies: list[float] = []
            started_wall, started = time.time(), time.perf_counter()

            def post(i: int) -> str:
                resp = client.post("/v1/jobs", body(i))
                if resp.status != 200:
                    raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
                latencies.append(resp.seconds)
                return resp.body["request_id"]

            with ThreadPoolExecutor(THREADS) as pool:
                ids = list(pool.map(post, range(n)))
            submit = time.perf_counter() - started
            statuses = wait_terminal(client, ids, timeout=1800)
            drain = max(parse_time(s["finished_at"]) for s in statuses.values()) - started_wall
            failed = sum(1 for s in statuses.values() if s["status"] != "succeeded")
    finally:
        ctx.cleanup(root)
    lat = summarize(latencies)
    return [
        Row(
            FIGURE,
            f"{n} jobs by {THREADS} threads: accepted per second",
            n / submit,
            "/s",
            n / bare_submit,
            "bare Celery publish rate",
            ratio(n / submit, n / bare_submit),
            note=f"POST p50 {lat.median * 1000:.1f} ms, p99 {lat.p99 * 1000:.1f} ms "
            "(while 2 workers drain)",
        ),
        Row(
            FIGURE,
            f"{n} jobs: time to drain with 2 worker processes",
            drain,
            "s",
            bare_drain,
            "bare Celery, 2 processes",
            ratio(drain, bare_drain),
            note=f"{n / drain:.1f} vs {n / bare_drain:.1f} runs/s; {failed} failed",
        ),
    ]
