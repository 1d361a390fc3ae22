"""Processes that left their run's process group (setsid, a daemon's double fork) and outlived it.

Killing the run's group (worker.execution.supervisor) reaches every process that stayed in it; one that
started a session of its own escaped it and, adopted by init, would run on after the
run ended. A pool process that is a child subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux) adopts
such orphans instead, so once a command and its group are gone, whatever is still a child of
the pool process is a stray of that command: it is ended (SIGTERM, grace, SIGKILL, with its own
descendants) and reaped. A pool of threads runs several commands in one process, and an orphan
does not say whose it is: there the strays are ended when the last running command ends. Checking costs one read of /proc/self/task/<tid>/children when there
are none, plus a waitpid for each orphan that has already exited (agent CLIs leave short-lived
helpers behind: codex does on every run); only a stray still running costs a process scan.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Collection

import psutil

from runner_core.processes import terminate_processes

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
_adopting: dict[str, int | None]
_adopting = {"pid": None}  # the process that became a subreaper (not one forked from it)
_running = {"commands": 0}  # commands of this process started and not yet through end_strays
_running_lock = threading.Lock()


def become_subreaper() -> bool:
    """Adopt this process's orphaned descendants (once per process, at pool start). Only a
    process that did this ends strays: elsewhere (tests, tools) its children are its own."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):  # not Linux: strays stay init's
        return False
    _adopting["pid"] = os.getpid()
    return True


def child_pids() -> list[int]:
    """Direct children of this thread (the one that spawns commands) and of the process."""
    pids: set[int] = set()
    for tid in {threading.get_native_id(), os.getpid()}:
        try:
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as fh:
                pids.update(int(pid) for pid in fh.read().split())
        except OSError:  # no /proc/.../children: ask psutil (a scan of every process)
            pids.update(child.pid for child in psutil.Process().children())
            break
    return sorted(pids)


def command_started() -> None:
    """Count a command of this process until its `end_strays`."""
    with _running_lock:
        _running["commands"] += 1


def end_strays(grace_sec: float, spared: Collection[int] = frozenset()) -> list[int]:
    """End every child of this process (and their descendants) but `spared`; returns the pids
    of the children ended. Call it when the command's own group is gone, once for each
    `command_started`: while another command of the process runs, its orphans are left alone."""
    with _running_lock:
        _running["commands"] = max(0, _running["commands"] - 1)
        others = _running["commands"]
    if _adopting["pid"] != os.getpid() or others:
        return []
    pids = [pid for pid in child_pids() if pid not in spared]
    if not pids:
        return []
    # Most are orphans that already exited (a CLI's short-lived helpers): collecting their
    # status is all they need, and it spares the process scan below.
    running = [pid for pid in pids if not _collected(pid)]
    if not running:
        return pids
    procs: list[psutil.Process] = []
    for pid in running:
        try:
            proc = psutil.Process(pid)
            procs += [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    live = [p for p in procs if _alive(p)]
    if live:
        log.warning(
            "ending %d process(es) that outlived their run's process group: %s",
            len(live),
            ", ".join(f"{p.pid}" for p in live),
        )
    terminate_processes(live, grace_sec)
    _reap(spared)  # the ended processes' own children were adopted too
    return pids


def _collected(pid: int) -> bool:
    """Reap `pid` if it has exited (a zombie); False while it runs."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not (or no longer) our child
        return True
    return done == pid


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _reap(spared: Collection[int]) -> None:
    """Collect the exit status of adopted children that have ended, so no zombie is left."""
    for pid in child_pids():
        if pid not in spared:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
