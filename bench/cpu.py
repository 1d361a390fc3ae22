"""The CPU time of processes (each process itself, not its children)."""

from __future__ import annotations

import psutil


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
