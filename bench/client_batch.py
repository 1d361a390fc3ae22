"""`skill-runner batch` of N noop jobs (10,000; --quick 300) against the embedded default,
beside a bare HTTP submission loop (the same number of threads POSTing the same jobs) in the
same run: accepted jobs per second, the batch client's peak RSS, and the time from its last
submission to its last result on disk. Accepted rates come from the requests' created_at.
The bare loop runs half its jobs before the batch and half after, so a machine that speeds up
or slows down during the figure moves the baseline as it moves the batch."""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from bench.context import Context
from bench.jobs import parse_time, wait_terminal
from bench.noop_jobs import body
from bench.processes import bin_path
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio

FIGURE = "client-batch"
THREADS = 8  # the batch's --concurrency and the bare loop's threads


def accepted_rate(created: list[float]) -> float:
    """Jobs per second between the first and the last request's created_at."""
    span = max(created) - min(created)
    return (len(created) - 1) / span if span > 0 else float("inf")


def bare_loop(client, indexes: range) -> float:
    """The baseline: THREADS threads POSTing the jobs, drained; its accepted rate."""
    with ThreadPoolExecutor(THREADS) as pool:
        ids = list(pool.map(lambda i: client.post("/v1/jobs", body(i)).body["request_id"], indexes))
    done = wait_terminal(client, ids, timeout=3600)
    return accepted_rate([parse_time(s["created_at"]) for s in done.values()])


def run_batch(stack: Stack, root: Path, n: int) -> tuple[float, float, float, float]:
    """The batch command as a user runs it: (peak RSS bytes, its end (epoch), wall seconds,
    its CPU seconds as last sampled)."""
    jobs = root / "jobs.jsonl"
    with jobs.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"key": f"j{i}", **body(i)}) + "\n")
    argv = [bin_path("skill-runner-client"), "--server", stack.base_url, "batch", str(jobs)]
    argv += ["--out", str(root / "out"), "--concurrency", str(THREADS), "--max-queued", str(n)]
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watched, peak, cpu = psutil.Process(proc.pid), 0, 0.0
    while proc.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
            times = watched.cpu_times()
            cpu = times.user + times.system
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    if proc.returncode != 0:
        raise RuntimeError(f"skill-runner batch exited {proc.returncode}")
    return peak, time.time(), time.monotonic() - started, cpu


def run(ctx: Context) -> list[Row]:
    n = ctx.count(10_000, 300)
    root = ctx.scratch(FIGURE)
    options = StackOptions(extra_env={"SKILL_RUNNER_QUEUE_MAX": str(n * 4)})
    try:
        with Stack(root / "stack", options) as stack:
            client = stack.client()
            before = bare_loop(client, range(n // 2))
            peak, ended, wall, cpu = run_batch(stack, root, n)
            summary = [json.loads(line) for line in (root / "out" / "summary.jsonl").open()]
            ids = [entry["request_id"] for entry in summary]
            statuses = wait_terminal(client, ids, timeout=600)
            created = [parse_time(s["created_at"]) for s in statuses.values()]
            failed = sum(1 for e in summary if e["status"] != "succeeded")
            after = bare_loop(client, range(n // 2, n))
            bare_rate = (before + after) / 2
    finally:
        ctx.cleanup(root)
    rate = accepted_rate(created)
    return [
        Row(
            FIGURE,
            f"skill-runner batch of {n} noop jobs, --concurrency {THREADS}: accepted per second",
            rate,
            "/s",
            bare_rate,
            f"bare HTTP loop, {THREADS} threads",
            ratio(rate, bare_rate),
            ">= 0.8x",
            rate >= 0.8 * bare_rate,
            note=f"{failed} failed; the whole batch took {wall:.1f} s; bare loop {n // 2} jobs"
            f" before the batch {before:.1f} /s, {n - n // 2} after {after:.1f} /s",
        ),
        Row(
            FIGURE,
            "batch client peak RSS",
            peak / 2**20,
            "MiB",
            target="<= 100 MiB",
            met=peak <= 100 * 2**20,
        ),
        Row(FIGURE, "batch client CPU per job (submit, collect, write)", cpu / n * 1000, "ms"),
        Row(
            FIGURE,
            "last submission -> last result on disk",
            ended - max(created),
            "s",
        ),
    ]
