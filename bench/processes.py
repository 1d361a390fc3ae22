"""The processes of a started service: the console scripts that start them, their process
trees, waiting for one to log that it is ready, stopping them, their memory."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

from runner_core.processes import stop_process_group


def bin_path(name: str) -> str:
    """A console script of the interpreter running the bench (the project's venv)."""
    return str(Path(sys.executable).parent / name)


def family(proc: subprocess.Popen | None) -> list[psutil.Process]:
    if proc is None or proc.poll() is not None:
        return []
    try:
        root = psutil.Process(proc.pid)
        return [root] + root.children()
    except psutil.NoSuchProcess:
        return []


def is_python(proc: psutil.Process) -> bool:
    try:
        return "python" in Path(proc.exe()).name or "celery" in " ".join(proc.cmdline()[:2])
    except psutil.Error:
        return False


def wait_for_log(
    proc: subprocess.Popen, path: Path, offset: int, marker: bytes, timeout: float = 60.0
) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited: {path.read_text()[-3000:]}")
        with path.open("rb") as fh:
            fh.seek(offset)
            if marker in fh.read():
                return
        time.sleep(0.1)
    raise RuntimeError(f"not ready: {path.read_text()[-3000:]}")


def stop_group(proc: subprocess.Popen | None, timeout: float = 20.0) -> None:
    """SIGTERM the process group started for `proc`, SIGKILL it if it lingers."""
    if proc is not None:
        stop_process_group(proc, timeout)


def rss_mib(procs: list[psutil.Process]) -> list[float]:
    out = []
    for proc in procs:
        try:
            out.append(proc.memory_info().rss / 2**20)
        except psutil.Error:
            pass
    return out
