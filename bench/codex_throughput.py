"""Codex throughput and runner CPU on a real engine.

Codex throughput: N codex jobs submitted at once (4 client threads) with the default configuration
(worker concurrency 2), time until all are terminal (the last run's finished_at, so slow
polling does not blur it), vs the bare codex command run 2 at a time over the same N: the
`codex` CLI command (the npm launcher a user runs), and the native binary behind it that the
worker runs (the service's own cost on the same processes).

Runner CPU, measured over the same batches: CPU seconds (user+system of the processes
themselves, never their children) of the gunicorn master+workers and of the celery main
process + pool children, per run; and the RSS of each. Baselines: the engine's own CPU per run
(the bare codex process trees), and the RSS of a bare Celery worker with 2 processes.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.bare_celery import BareWorker
from bench.context import Context
from bench.cpu import cpu_seconds
from bench.engine import (
    SKILL_ID,
    TEXT,
    as_cli_command,
    children_cpu,
    codex_setup,
    prepare_bare,
    run_bare,
)
from bench.jobs import parse_time, wait_terminal
from bench.processes import rss_mib
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "codex-throughput"
CPU_FIGURE = "runner-cpu"  # measured over the same batches
CLIENT_THREADS = 4


def submit_batch(stack: Stack, n: int, body: dict) -> tuple[float, list[str]]:
    """POST `body` n times from CLIENT_THREADS threads; (wall start, request ids)."""
    client = stack.client()
    started = time.time()

    def post(i: int) -> str:
        resp = client.post("/v1/jobs", body(i) if callable(body) else body)
        if resp.status != 200:
            raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
        return resp.body["request_id"]

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        ids = list(pool.map(post, range(n)))
    return started, ids


def makespan(started: float, statuses: dict[str, dict]) -> float:
    return max(parse_time(s["finished_at"]) for s in statuses.values()) - started


def runner_batch(stack: Stack, n: int) -> dict:
    """One batch through the service with CPU accounting around it."""
    procs_web, procs_worker = stack.web_processes(), stack.worker_processes()
    cpu_web0, cpu_worker0 = cpu_seconds(procs_web), cpu_seconds(procs_worker)
    body = {
        "skill_id": SKILL_ID,
        "engine": "codex",
        "input": {"text": TEXT},
        "runtime_options": {"no_cache": True},
    }
    client = stack.client()
    started, ids = submit_batch(stack, n, body)
    statuses = wait_terminal(client, ids)
    bad = [s for s in statuses.values() if s["status"] != "succeeded"]
    if bad:
        raise RuntimeError(f"{len(bad)} codex jobs did not succeed: {bad[0]}")
    cpu_web1, cpu_worker1 = cpu_seconds(procs_web), cpu_seconds(procs_worker)
    return {
        "makespan": makespan(started, statuses),
        "web_cpu": sum(cpu_web1[p] - cpu_web0.get(p, 0) for p in cpu_web1) / n,
        "worker_cpu": sum(cpu_worker1[p] - cpu_worker0.get(p, 0) for p in cpu_worker1) / n,
        "worker_main_cpu": (
            cpu_worker1.get(procs_worker[0].pid, 0) - cpu_worker0.get(procs_worker[0].pid, 0)
        )
        / n,
        "requests": n + client.requests,
    }


def bare_batch(runs_dir: Path, skills_dir: Path, n: int, cli: bool = True) -> dict:
    """The same n codex runs, 2 at a time, dirs prepared beforehand: the `codex` command
    (`cli`), else the native binary with the same flags."""
    prepared = [prepare_bare(runs_dir, skills_dir) for _ in range(n)]
    if cli:
        prepared = [as_cli_command(run) for run in prepared]
    cpu0 = children_cpu()
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(run_bare, prepared))
    elapsed = time.perf_counter() - started
    return {"makespan": elapsed, "engine_cpu": (children_cpu() - cpu0) / n}


def run(ctx: Context) -> list[Row]:
    n, reps = ctx.count(40, 10), ctx.count(5, 1)
    root = ctx.scratch(FIGURE)
    runner, bare, native = [], [], []
    try:
        with (
            codex_setup(root) as codex,
            Stack(root / "stack", StackOptions(extra_env=codex.worker_env())) as stack,
        ):
            bare_batch(root / "bare-runs", stack.skills_dir, 2)
            bare_batch(root / "bare-runs", stack.skills_dir, 2, cli=False)
            runner_batch(stack, 2)
            for rep in range(reps):
                bare.append(bare_batch(root / "bare-runs", stack.skills_dir, n))
                native.append(bare_batch(root / "bare-runs", stack.skills_dir, n, cli=False))
                runner.append(runner_batch(stack, n))
                ctx.log(
                    f"{FIGURE}: rep {rep + 1}/{reps}: bare {bare[-1]['makespan']:.2f}s "
                    f"native {native[-1]['makespan']:.2f}s runner {runner[-1]['makespan']:.2f}s"
                )
            rss_web = rss_mib(stack.web_processes())
            rss_worker = rss_mib(stack.worker_processes())
            with BareWorker(root / "bare", stack.broker_url) as bw:
                rss_bare = rss_mib(bw.processes())
    finally:
        ctx.cleanup(root)
    rm, bm = summarize([r["makespan"] for r in runner]), summarize([b["makespan"] for b in bare])
    nm = summarize([b["makespan"] for b in native])
    tput, own = ratio(bm.median, rm.median), ratio(nm.median, rm.median)
    web = summarize([r["web_cpu"] for r in runner])
    wrk = summarize([r["worker_cpu"] for r in runner])
    tot = summarize([r["web_cpu"] + r["worker_cpu"] for r in runner])
    eng = summarize([b["engine_cpu"] for b in native])
    main = summarize([r["worker_main_cpu"] for r in runner])
    reqs = runner[-1]["requests"] / n
    rows = [
        Row(
            FIGURE,
            f"{n} codex jobs at once, all terminal (worker concurrency 2)",
            rm.median,
            "s",
            bm.median,
            "bare `codex` command, 2 in parallel",
            tput,
            ">= 0.95x throughput",
            tput is not None and tput >= 0.95,
            p99=rm.p99,
            baseline_p99=bm.p99,
            note=f"ratio = bare/runner time = throughput ratio; {reps} batches; "
            f"{n / rm.median:.2f} vs {n / bm.median:.2f} jobs/s",
        ),
        Row(
            FIGURE,
            f"{n} codex jobs at once against the native binary (the service's own share)",
            rm.median,
            "s",
            nm.median,
            "bare native codex binary, 2 in parallel",
            own,
            p99=rm.p99,
            baseline_p99=nm.p99,
            note=f"ratio = bare/runner time; {n / rm.median:.2f} vs {n / nm.median:.2f} jobs/s",
        ),
        Row(
            CPU_FIGURE,
            "runner CPU per run (gunicorn + celery processes, engines excluded)",
            tot.median,
            "s",
            eng.median,
            "native codex CPU per run",
            ratio(tot.median, eng.median),
            "<= 0.03 s",
            tot.median <= 0.03,
            p99=tot.p99,
            note=f"gunicorn {web.median * 1000:.1f} ms (incl. ~{reqs:.1f} HTTP requests/run of "
            f"the bench client), celery {wrk.median * 1000:.1f} ms (main process "
            f"{main.median * 1000:.1f} ms, pool children the rest)",
        ),
        Row(
            CPU_FIGURE,
            "RSS gunicorn master / workers",
            rss_web[0] if rss_web else 0,
            "MiB",
            rss_bare[0] if rss_bare else None,
            "bare Celery main",
            note="workers " + ", ".join(f"{v:.1f}" for v in rss_web[1:]) + " MiB",
        ),
        Row(
            CPU_FIGURE,
            "RSS celery main / pool children",
            rss_worker[0] if rss_worker else 0,
            "MiB",
            rss_bare[0] if rss_bare else None,
            "bare Celery main",
            ratio(rss_worker[0], rss_bare[0]) if rss_worker and rss_bare else None,
            note="children "
            + ", ".join(f"{v:.1f}" for v in rss_worker[1:])
            + " MiB vs bare children "
            + ", ".join(f"{v:.1f}" for v in rss_bare[1:])
            + " MiB",
        ),
    ]
    return rows
