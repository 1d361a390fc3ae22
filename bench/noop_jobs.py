"""The noop job (`bench-noop` runs `printf '{"ok": true}'`), sent to the runner and, as the same
command, to the bare Celery worker: one at a time and in batches."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from bench.bare_celery import BareWorker
from bench.codex_throughput import makespan, submit_batch
from bench.jobs import TERMINAL, parse_time, wait_terminal
from bench.stack import Stack

SKILL_ID = "bench-noop"
COMMAND = ["printf", '{"ok": true}']
_counter = iter(range(10**9))


def body(_i: int = 0) -> dict:
    """A unique request (a cache miss, as real traffic mostly is)."""
    return {"skill_id": SKILL_ID, "input": {"n": next(_counter)}}


def runner_once(client) -> tuple[float, float]:
    """POST, long-poll the status until it ends: (client-observed s, POST -> finished_at s)."""
    t_wall, t0 = time.time(), time.perf_counter()
    resp = client.post("/v1/jobs", body())
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    rid = resp.body["request_id"]
    while True:
        status = client.get(f"/v1/jobs/{rid}?wait_sec=30").body
        if status["status"] in TERMINAL:
            break
    elapsed = time.perf_counter() - t0
    if status["status"] != "succeeded":
        raise RuntimeError(f"noop run failed: {status}")
    return elapsed, parse_time(status["finished_at"]) - t_wall


def bare_once(bare: BareWorker, cwd) -> float:
    t0 = time.perf_counter()
    bare.send(COMMAND, cwd).get(timeout=30)
    return time.perf_counter() - t0


def bare_throughput(bare: BareWorker, cwd, n: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _i: bare.send(COMMAND, cwd), range(n)))
    for res in results:
        res.get(timeout=120)
    return time.perf_counter() - started


def runner_throughput(stack: Stack, client, n: int) -> float:
    """Seconds from the first POST of `n` noop jobs at once to the last run's finished_at."""
    started, ids = submit_batch(stack, n, body)
    statuses = wait_terminal(client, ids)
    failed = [s for s in statuses.values() if s["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} noop runs failed: {failed[0]}")
    return makespan(started, statuses)
