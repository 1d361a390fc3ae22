"""revoke-watch: what the worker step that reads Celery's revoked set (worker/hooks/revokes.py's
RevokeWatch, not public API, SKILL_RUNNER_REVOKE_WATCH) buys. A worker with one process runs
three `bench-sleep` jobs (1 s each); a `bench-noop` job queued behind them is revoked as
Flower or `celery control revoke` would (no terminate). Figure: revoke -> the job canceled, as
a client polling its status sees it. Baseline: the same with SKILL_RUNNER_REVOKE_WATCH=0 (the
`task_revoked` signal alone: the run ends when the worker reaches its message), alternating.
Also: what a revoke without terminate does to a running run each way, and the step's own cost
per check (twice a second) in the worker's main process."""

from __future__ import annotations

import sqlite3
import time

from celery import Celery
from celery.utils.collections import LimitedSet

from bench.context import Context
from bench.jobs import TERMINAL, wait_terminal
from bench.noop_jobs import body
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "revoke-watch"
AHEAD = 3  # bench-sleep jobs ahead of the revoked one


def task_id(stack: Stack, request_id: str) -> str:
    with sqlite3.connect(stack.data_dir / "runs.db") as db:
        (found,) = db.execute(
            "SELECT celery_task_id FROM runs WHERE request_id = ?", (request_id,)
        ).fetchone()
    return found


def post(client, skill_id: str) -> str:
    resp = client.post("/v1/jobs", {**body(), "skill_id": skill_id})
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    return resp.body["request_id"]


def until_terminal(client, request_id: str, timeout: float = 60.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = client.get(f"/v1/jobs/{request_id}").body
        if status["status"] in TERMINAL:
            return status
        time.sleep(0.01)
    raise TimeoutError(request_id)


def queued_round(stack: Stack, control: Celery) -> float:
    """Seconds from the revoke of a job queued behind AHEAD runs to its cancel."""
    client = stack.client()
    ahead = [post(client, "bench-sleep") for _ in range(AHEAD)]
    while client.get(f"/v1/jobs/{ahead[0]}").body["status"] != "running":
        time.sleep(0.01)
    target = post(client, "bench-noop")
    revoked = time.monotonic()
    control.control.revoke(task_id(stack, target))
    status = until_terminal(client, target)
    took = time.monotonic() - revoked
    if status["status"] != "canceled":
        raise RuntimeError(f"the revoked job ended {status['status']}")
    wait_terminal(client, ahead)
    return took


def running_round(stack: Stack, control: Celery) -> tuple[str, float]:
    """(status, seconds from the revoke) of a running bench-sleep job revoked without terminate."""
    client = stack.client()
    rid = post(client, "bench-sleep")
    while client.get(f"/v1/jobs/{rid}").body["status"] != "running":
        time.sleep(0.01)
    revoked = time.monotonic()
    control.control.revoke(task_id(stack, rid))
    status = until_terminal(client, rid)
    return status["status"], time.monotonic() - revoked


def check_cost(ids: int) -> float:
    """Seconds of one RevokeWatch.check when the worker's revoked set holds `ids` ids and none
    is new (the step's own code: a copy of the set and a difference)."""
    revoked = LimitedSet(maxlen=50_000, expires=10_800)
    revoked.update(f"task-{i}" for i in range(ids))
    seen = set(revoked)
    samples = []
    for _ in range(50):
        started = time.perf_counter()
        current = set(revoked)
        _fresh, seen = current - seen, current
        samples.append(time.perf_counter() - started)
    return summarize(samples).median


def run(ctx: Context) -> list[Row]:
    rounds = ctx.count(6, 2)
    root = ctx.scratch(FIGURE)
    waits: dict[str, list[float]] = {"1": [], "0": []}
    running: dict[str, list[tuple[str, float]]] = {"1": [], "0": []}
    options = StackOptions(worker=False, concurrency=1)
    try:
        with Stack(root / "stack", options) as stack:
            control = Celery("bench-control", broker=stack.broker_url, set_as_current=False)
            for _ in range(rounds):
                for watch in ("1", "0"):
                    options.extra_env["SKILL_RUNNER_REVOKE_WATCH"] = watch
                    stack.start_worker()
                    waits[watch].append(queued_round(stack, control))
                    running[watch].append(running_round(stack, control))
                    stack.stop_worker()
                    ctx.log(
                        f"{FIGURE}: watch={watch} queued {waits[watch][-1]:.2f} s, "
                        f"running -> {running[watch][-1][0]}"
                    )
    finally:
        ctx.cleanup(root)
    on, off = summarize(waits["1"]), summarize(waits["0"])

    def ends(watch: str) -> str:
        statuses = {s for s, _ in running[watch]}
        took = summarize([t for _, t in running[watch]]).median
        return f"{'/'.join(sorted(statuses))} after {took:.2f} s"

    return [
        Row(
            FIGURE,
            f"revoke (no terminate) of a job queued behind {AHEAD} 1-second runs -> canceled",
            on.median,
            "s",
            off.median,
            "the task_revoked signal alone (SKILL_RUNNER_REVOKE_WATCH=0)",
            ratio(on.median, off.median),
            p99=on.p99,
            baseline_p99=off.p99,
            note=f"{rounds} rounds each; a running run revoked without terminate: {ends('1')} "
            f"with the watch, {ends('0')} without; the check's own cost in the worker's "
            f"main process, twice a second: {check_cost(0) * 1e6:.1f} us with no revoked "
            f"ids, {check_cost(50_000) * 1000:.1f} ms with 50,000 (Celery's cap)",
        )
    ]
