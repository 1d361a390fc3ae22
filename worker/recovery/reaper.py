"""Find and kill engine process groups that outlived their run.

A hard kill (SIGKILL of the worker, a hard time limit, OOM) skips the supervisor's cleanup, so
the group recorded on the run (`runs.pgid`, on the host named in `runs.worker`) keeps running.
Before killing a recorded group the reaper checks that it still belongs to the run (a member's
working directory is inside the run directory, or its environment names the run): process
group ids are reused, and a stale id must never kill an unrelated process.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psutil

from runner_core.processes import group_members, terminate_group

GONE, KILLED, FOREIGN, REMOTE = "gone", "killed", "foreign", "remote"


def this_host() -> str:
    return socket.gethostname()


def parse_worker(worker: str | None) -> tuple[str | None, int | None]:
    """'host:pid' -> (host, pid); the host may itself contain ':'."""
    if not worker or ":" not in worker:
        return worker, None
    host, _, pid = worker.rpartition(":")
    return host, int(pid) if pid.isdigit() else None


def pid_alive(pid: int) -> bool:
    """True when `pid` runs and is not a zombie (an unreaped zombie is dead for us)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def belongs_to_run(members: list[psutil.Process], run_dir: Path, run_id: str) -> bool:
    """Does any member work inside the run directory, or carry the run id in its environment?"""
    root = str(run_dir.resolve())
    for proc in members:
        try:
            cwd = proc.cwd()
            if cwd == root or cwd.startswith(root + os.sep):
                return True
            if proc.environ().get("SKILL_RUNNER_RUN_ID") == run_id:
                return True
        except psutil.Error:
            continue
    return False


def reap_group(pgid: int, worker: str | None, run_dir: Path, run_id: str, grace_sec: float) -> str:
    """Kill the run's recorded group when it is on this host and still the run's.

    Returns GONE (nothing left), KILLED, FOREIGN (the id now names someone else's group: left
    alone) or REMOTE (recorded on another host: its own worker reaps it when it starts)."""
    host, _ = parse_worker(worker)
    if host != this_host():
        return REMOTE
    members = group_members(pgid)
    if not members:
        return GONE
    if not belongs_to_run(members, run_dir, run_id):
        return FOREIGN
    terminate_group(pgid, grace_sec)
    return KILLED
