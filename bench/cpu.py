"""CPU per run of each group of processes (each process itself, not its children), and the
figure row comparing the service's groups with the bare worker's."""

from __future__ import annotations

import statistics

import psutil

from bench.stack import Stack
from bench.stats import Row, ratio


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    """user+system CPU of each process itself (children excluded)."""
    out = {}
    for proc in procs:
        try:
            times = proc.cpu_times()
            out[proc.pid] = times.user + times.system
        except psutil.Error:
            pass
    return out


def cpu_now(groups: dict[str, list]) -> dict[str, float]:
    """CPU seconds so far of each group of processes (each process itself, not its children:
    the spawned command is the same work on both sides)."""
    return {name: sum(cpu_seconds(procs).values()) for name, procs in groups.items()}


def cpu_per_run(groups: dict[str, list], batch, n: int) -> tuple[float, dict[str, float]]:
    """Run `batch()` and return its result with each group's CPU seconds per run."""
    before = cpu_now(groups)
    result = batch()
    after = cpu_now(groups)
    return result, {name: (after[name] - before[name]) / n for name in groups}


def service_groups(stack: Stack, me: list, broker: list) -> dict[str, list]:
    """The processes whose CPU a batch through `stack` is charged with."""
    return {
        "gunicorn": stack.web_processes(),
        "celery main": stack.worker_processes()[:1],
        "celery pool": stack.worker_processes()[1:],
        "bench client": me,
        "broker": broker,
    }


def cpu_row(figure: str, runner: list[dict[str, float]], bare: list[dict[str, float]]) -> Row:
    """Machine CPU per noop run over the throughput batches (medians per process group): the
    ratio the throughput ratio follows when both cores are busy."""

    def medians(samples: list[dict[str, float]]) -> dict[str, float]:
        return {name: statistics.median(s[name] for s in samples) for name in samples[0]}

    r, b = medians(runner), medians(bare)
    total_r, total_b = sum(r.values()), sum(b.values())

    def split(parts: dict[str, float]) -> str:
        return ", ".join(f"{name} {value * 1000:.2f}" for name, value in parts.items())

    return Row(
        figure,
        "CPU per noop run in the throughput batches, every process",
        total_r,
        "s",
        total_b,
        "bare Celery task, every process",
        ratio(total_r, total_b),
        note=f"ms per run (medians over the batches): service {split(r)}; bare "
        f"{split(b)}; processes' own CPU, not the spawned command's",
        extra={"runner": r, "bare": b},
    )
