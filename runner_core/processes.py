"""Ending processes: SIGTERM, a grace period, then SIGKILL for what is left.

A process group (a command started with `start_new_session=True`) is ended as a whole, so no
child or grandchild that stayed in it outlives it; `terminate_processes` ends processes that
left their group, one by one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

POLL_SEC = 0.05


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of the group `pgid` (a scan of every process)."""
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def group_alive(pgid: int) -> bool:
    """Does the group still have a live member? Zombies do not count: orphans are reparented
    to init, and an init that never reaps (some containers) would keep them forever."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return bool(group_members(pgid))


def terminate_group(pgid: int, grace_sec: float, proc: subprocess.Popen | None = None) -> bool:
    """SIGTERM the group, wait up to `grace_sec` for it to end, then SIGKILL what is left.

    Returns True when the group ended without SIGKILL. `proc` (the group leader, when it is
    our child) is reaped while waiting, so it is not left a zombie that keeps the group
    looking alive; while it runs, the group is alive without a process scan."""
    if not _signal_group(pgid, signal.SIGTERM):
        return True
    end = time.monotonic() + grace_sec
    while time.monotonic() < end:
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=max(0.0, min(POLL_SEC, end - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
            continue
        if not group_alive(pgid):
            return True
        time.sleep(POLL_SEC)
    return not _signal_group(pgid, signal.SIGKILL)


def stop_process_group(proc: subprocess.Popen, grace_sec: float) -> bool:
    """`terminate_group` for a child started in a session of its own, then reap it."""
    ended = terminate_group(proc.pid, grace_sec, proc)
    proc.wait()
    return ended


def terminate_processes(procs: list[psutil.Process], grace_sec: float) -> list[psutil.Process]:
    """SIGTERM each process, wait up to `grace_sec`, SIGKILL those left (waited for up to a
    second more); returns the processes that needed SIGKILL."""
    for proc in procs:
        _signal_process(proc, terminate=True)
    _gone, alive = psutil.wait_procs(procs, timeout=grace_sec)
    for proc in alive:
        _signal_process(proc, terminate=False)
    psutil.wait_procs(alive, timeout=1.0)
    return alive


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal the group; False when it has no process left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # members we may not signal: the caller still waits for them
        pass
    return True


def _signal_process(proc: psutil.Process, terminate: bool) -> None:
    try:
        proc.terminate() if terminate else proc.kill()
    except psutil.NoSuchProcess:
        pass
