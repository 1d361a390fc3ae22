"""A served tree's own processes (the service's Python processes and its redis-server; engine
CLIs and skill scripts left out), their memory and CPU."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

SERVICE_NAMES = ("redis-server",)
SERVICE_SCRIPTS = ("skill-runner", "gunicorn", "celery")  # the service's Python processes


@dataclass(frozen=True)
class Memory:
    """RSS and PSS of a set of processes (MiB); PSS shares each shared page among its users."""

    processes: int
    rss_mib: float
    pss_mib: float


def service_processes(pid: int) -> list[psutil.Process]:
    """The live service processes of the tree under `pid` (zombies and engines left out)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    return [p for p in procs if _is_service(p)]


def _is_service(proc: psutil.Process) -> bool:
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        name, argv = proc.name(), proc.cmdline()
    except psutil.Error:
        return False
    if name in SERVICE_NAMES or name in SERVICE_SCRIPTS:
        return True
    # the same console scripts started through the interpreter; a skill script is not one
    return "python" in name and any(part.endswith(SERVICE_SCRIPTS) for part in argv[:2])


def memory(procs: list[psutil.Process]) -> Memory:
    """The processes' summed RSS and PSS (those that ended meanwhile are left out)."""
    rss = pss = 0
    count = 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except psutil.Error:
            continue
        rss, pss, count = rss + info.rss, pss + info.pss, count + 1
    return Memory(count, rss / 2**20, pss / 2**20)


def kind(proc: psutil.Process) -> str:
    """What a service process is: `serve`, `gunicorn master`, `gunicorn worker`, `celery main`,
    `celery child` (a prefork pool process or the embedded beat), `redis-server`."""
    try:
        name, argv = proc.name(), " ".join(proc.cmdline()[:3])
        parent = proc.parent()
        parent_argv = " ".join(parent.cmdline()[:3]) if parent else ""
    except psutil.Error:
        return "gone"
    if name == "redis-server":
        return name
    for script in ("gunicorn", "celery"):
        if script in argv:
            if script in parent_argv:
                return "gunicorn worker" if script == "gunicorn" else "celery child"
            return f"{script} {'master' if script == 'gunicorn' else 'main'}"
    return "serve"


def memory_by_kind(procs: list[psutil.Process]) -> dict[str, Memory]:
    """`memory` of each kind of process (`kind`)."""
    kinds: dict[str, list[psutil.Process]] = {}
    for proc in procs:
        kinds.setdefault(kind(proc), []).append(proc)
    return {name: memory(group) for name, group in sorted(kinds.items()) if name != "gone"}


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """User + system CPU seconds the processes have used so far."""
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def idle_cpu(pid: int, seconds: float) -> float:
    """CPU seconds per second the tree under `pid` uses over `seconds` of doing nothing."""
    procs = service_processes(pid)
    before = cpu_seconds(procs)
    time.sleep(seconds)
    return (cpu_seconds(procs) - before) / seconds
