"""broker-view: what the sweep's read of kombu's Redis keys (worker/recovery/broker_view.py, not public
API, SKILL_RUNNER_BROKER_VIEW) buys. No worker runs while N `bench-noop` jobs wait in the
broker past the sweep's grace (1 s here); three sweep passes 1.1 s apart run on them (as a
backlog waiting three graces would see), then a worker with 2 processes drains the queue.
Figure: messages sent again, the sweep pass's time, and the workers' time on the duplicates
(the last run finished -> the queue empty), with the view. Baseline: the same with SKILL_RUNNER_BROKER_VIEW=0 (the public API
only: every stale run is sent again; the claim guard drops the duplicates), alternating."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from api.queue import CeleryQueue
from bench.codex_throughput import submit_batch
from bench.context import Context
from bench.jobs import parse_time, wait_terminal
from bench.noop_jobs import body
from bench.stack import REPO_ROOT, Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "broker-view"
PASSES, GAP_SEC = 3, 1.1
QUEUE = "runs.script"


def backlog_round(stack: Stack, n: int, view: str) -> dict:
    """N jobs waiting past the grace, the sweep passes over them, then the drain."""
    _started, ids = submit_batch(stack, n, body)
    time.sleep(1.2)  # past the grace
    env = {**stack.env(), "SKILL_RUNNER_BROKER_VIEW": view}
    argv = [sys.executable, "-m", "bench.sweep_pass", str(PASSES), str(GAP_SEC)]
    done = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, check=True)
    sweep = json.loads(done.stdout.decode().strip().splitlines()[-1])
    stack.start_worker()
    statuses = wait_terminal(stack.client(), ids)
    queue = CeleryQueue(stack.broker_url)
    while queue.depths([QUEUE]).get(QUEUE, 0):  # the duplicates, if any, are behind the runs
        time.sleep(0.02)
    emptied = time.time()
    stack.stop_worker()
    failed = [s for s in statuses.values() if s["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} runs failed: {failed[0]}")
    first = min(parse_time(s["started_at"]) for s in statuses.values())
    last = max(parse_time(s["finished_at"]) for s in statuses.values())
    return {
        "resent": sum(p["resent"] for p in sweep["passes"]),
        "pass_sec": [p["sec"] for p in sweep["passes"]],
        "read_sec": sweep["read_sec"],
        "runs_sec": last - first,
        "tail_sec": emptied - last,  # the duplicates behind the runs, if any
    }


def run(ctx: Context) -> list[Row]:
    n, rounds = ctx.count(200, 50), ctx.count(3, 1)
    root = ctx.scratch(FIGURE)
    got: dict[str, list[dict]] = {"1": [], "0": []}
    options = StackOptions(worker=False, extra_env={"SKILL_RUNNER_SWEEP_GRACE_SEC": "1"})
    try:
        with Stack(root / "stack", options) as stack:
            for _ in range(rounds):
                for view in ("1", "0"):
                    got[view].append(backlog_round(stack, n, view))
                    last = got[view][-1]
                    ctx.log(
                        f"{FIGURE}: view={view} resent {last['resent']}, runs "
                        f"{last['runs_sec']:.2f} s, then {last['tail_sec']:.2f} s to an empty queue"
                    )
    finally:
        ctx.cleanup(root)

    def med(view: str, key: str) -> float:
        return statistics.median(r[key] for r in got[view])

    on_pass = summarize([s for r in got["1"] for s in r["pass_sec"]])
    off_pass = summarize([s for r in got["0"] for s in r["pass_sec"]])
    resent_on, resent_off = med("1", "resent"), med("0", "resent")
    tail_on, tail_off = med("1", "tail_sec"), med("0", "tail_sec")
    # two worker processes take the duplicates: process time per duplicate
    per_duplicate = 2 * (tail_off - tail_on) / resent_off if resent_off else 0.0
    return [
        Row(
            FIGURE,
            f"messages sent again for {n} runs waiting through {PASSES} sweeps past the grace",
            resent_on,
            "messages",
            resent_off,
            "the public API only (SKILL_RUNNER_BROKER_VIEW=0)",
            None,
            "0 with the view",
            resent_on == 0,
            note=f"median of {rounds} rounds; each duplicate is a message a worker takes and "
            "drops at its claim",
        ),
        Row(
            FIGURE,
            f"sweep pass over {n} stale runs",
            on_pass.median * 1000,
            "ms",
            off_pass.median * 1000,
            "the public API only (sends each again)",
            ratio(on_pass.median, off_pass.median),
            p99=on_pass.p99 * 1000,
            baseline_p99=off_pass.p99 * 1000,
            note=f"the view's read alone {med('1', 'read_sec') * 1000:.1f} ms "
            f"({n} waiting messages)",
        ),
        Row(
            FIGURE,
            f"2 worker processes, {n}-run backlog: its last run finished -> the queue empty",
            tail_on,
            "s",
            tail_off,
            "the public API only (the duplicates)",
            ratio(tail_on, tail_off),
            note=f"{per_duplicate * 1000:.1f} ms of a worker process per duplicate; the runs "
            f"themselves (first started -> last finished) {med('1', 'runs_sec'):.2f} s / "
            f"{med('0', 'runs_sec'):.2f} s",
        ),
    ]
