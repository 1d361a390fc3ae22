"""Footprint: what `skill-runner serve` costs at rest and after work, per layout.

Each layout is started as a user starts it, on the embedded default (SQLite, the embedded
broker): `serve` (one process) and `serve --layout processes` (gunicorn with 2 workers, a
prefork worker with 2 pool processes and its beat). Measured on the tree of service processes
(bench.service_tree: engines and scripts left out): the time from start to /healthz ok; the
process count, RSS and PSS idle after start; CPU while idle; RSS and PSS after 30 codex runs
one after another against the fake LLM, and after 20 submitted at once, with that burst's
throughput and latency (so that no memory is bought with speed).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.client import Client
from bench.codex_overhead import submit_and_wait
from bench.context import Context
from bench.engine import codex_setup
from bench.processes import bin_path
from bench.service_tree import idle_cpu, memory, memory_by_kind, service_processes
from bench.stack import copy_skills, free_port
from bench.stats import Row, ratio

FIGURE = "footprint"
LAYOUTS = {"one-process": [], "processes": ["--layout", "processes"]}
TARGETS = {"rss": 128.0, "processes": 3, "idle_cpu": 0.002, "healthz": 3.0}


def run(ctx: Context) -> list[Row]:
    idle_sec = ctx.count(60, 10)
    one_by_one, burst = ctx.count(30, 4), ctx.count(20, 4)
    root = ctx.scratch(FIGURE)
    seen: dict[str, dict] = {}
    try:
        with codex_setup(root) as _codex:
            for layout, argv in LAYOUTS.items():
                ctx.log(f"{FIGURE}: {layout}")
                seen[layout] = measure(root / layout, argv, idle_sec, one_by_one, burst)
    finally:
        ctx.cleanup(root)
    return rows(seen, one_by_one, burst)


def measure(root: Path, argv: list[str], idle_sec: float, one_by_one: int, burst: int) -> dict:
    """Start the layout, measure it at rest and after each batch of runs, stop it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(root / "data"),
        SKILL_RUNNER_SKILLS_DIR=str(copy_skills(root / "skills")),
        PORT=str(port),
        HOST="127.0.0.1",
        WEB_CONCURRENCY="2",
    )
    log = (root / "serve.log").open("wb")
    started = time.monotonic()
    proc = subprocess.Popen(
        [bin_path("skill-runner"), "serve", "--concurrency", "2", *argv],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    client = Client(f"http://127.0.0.1:{port}")
    try:
        out: dict[str, Any] = {"healthz": _wait_healthy(client, proc, started)}
        submit_and_wait(client)  # the worker is ready too: then the tree is at rest
        time.sleep(2)
        out["rest"] = memory(service_processes(proc.pid))
        out["idle_cpu"] = idle_cpu(proc.pid, idle_sec)
        for _ in range(one_by_one):
            submit_and_wait(client)
        out["after_runs"] = memory(service_processes(proc.pid))
        began = time.perf_counter()
        with ThreadPoolExecutor(burst) as pool:  # the client keeps a connection per thread
            seen = list(pool.map(lambda _: submit_and_wait(client), range(burst)))
        out["burst_sec"] = time.perf_counter() - began
        out["burst_latency"] = statistics.median(o.elapsed for o in seen)
        out["after_burst"] = memory(service_processes(proc.pid))
        out["kinds"] = memory_by_kind(service_processes(proc.pid))  # PSS per process kind
        return out
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _wait_healthy(client: Client, proc: subprocess.Popen, started: float) -> float:
    while time.monotonic() - started < 60:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with code {proc.returncode}")
        try:
            if client.get("/healthz").status == 200:
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("/healthz not ok within 60 s")


def rows(seen: dict[str, dict], one_by_one: int, burst: int) -> list[Row]:
    out = []
    for layout, m in seen.items():
        one = layout == "one-process"
        for when, what in (
            ("rest", "idle after start"),
            ("after_runs", f"after {one_by_one} codex runs"),
            ("after_burst", f"after {burst} at once"),
        ):
            mem = m[when]
            out.append(
                Row(
                    FIGURE,
                    f"{layout}: RSS of the tree, {what}",
                    mem.rss_mib,
                    "MiB",
                    target=f"<= {TARGETS['rss']:.0f} MiB" if one else "",
                    met=mem.rss_mib <= TARGETS["rss"] if one else None,
                    note=f"PSS {mem.pss_mib:.1f} MiB; {mem.processes} processes",
                    extra={"pss_mib": mem.pss_mib, "processes": mem.processes},
                )
            )
        kinds = m.get("kinds") or {}
        if len(kinds) > 1:
            out.append(
                Row(
                    FIGURE,
                    f"{layout}: PSS per process kind, after the burst",
                    sum(k.pss_mib for k in kinds.values()),
                    "MiB",
                    note="; ".join(
                        f"{name} x{k.processes} {k.pss_mib:.1f} MiB ({k.pss_mib / k.processes:.1f}"
                        " each)"
                        for name, k in kinds.items()
                    ),
                    extra={name: k.pss_mib for name, k in kinds.items()},
                )
            )
        rest = m["rest"].processes
        out += [
            Row(
                FIGURE,
                f"{layout}: processes at rest",
                rest,
                "",
                target="<= 3" if one else "",
                met=rest <= TARGETS["processes"] if one else None,
            ),
            Row(
                FIGURE,
                f"{layout}: CPU while idle",
                m["idle_cpu"],
                "CPU-s/s",
                target="<= 0.002" if one else "",
                met=m["idle_cpu"] <= TARGETS["idle_cpu"] if one else None,
            ),
            Row(
                FIGURE,
                f"{layout}: start to /healthz ok",
                m["healthz"],
                "s",
                target="<= 3 s" if one else "",
                met=m["healthz"] <= TARGETS["healthz"] if one else None,
            ),
        ]
    base, new = seen.get("processes"), seen.get("one-process")
    if base and new:
        out += [
            Row(
                FIGURE,
                f"one-process: {burst} codex runs at once, throughput",
                burst / new["burst_sec"],
                "/s",
                burst / base["burst_sec"],
                "processes layout",
                ratio(base["burst_sec"], new["burst_sec"]),
            ),
            Row(
                FIGURE,
                f"one-process: {burst} codex runs at once, median latency",
                new["burst_latency"],
                "s",
                base["burst_latency"],
                "processes layout",
                ratio(new["burst_latency"], base["burst_latency"]),
            ),
        ]
    return out
