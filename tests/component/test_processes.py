"""Ending process groups and processes (runner_core.processes), with real processes."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from runner_core.processes import (
    group_alive,
    stop_process_group,
    terminate_group,
    terminate_processes,
)
from tests.helpers import wait_for

IGNORES_TERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(120)"
)
EXITS_ON_TERM = "import sys, time; print('ready', flush=True); time.sleep(120)"
# the leader exits on SIGTERM, its child (same group) ignores it and reports its pid
LEADER_WITH_STUBBORN_CHILD = (
    "import subprocess, sys, time; "
    f"c = subprocess.Popen([sys.executable, '-c', {IGNORES_TERM!r}], stdout=subprocess.PIPE); "
    "c.stdout.readline(); print(c.pid, flush=True); time.sleep(120)"
)


def start(code: str) -> tuple[subprocess.Popen, str]:
    """Start `code` in a session of its own; returns once it printed its first line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True, text=True
    )
    return proc, proc.stdout.readline().strip()


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace():
    proc, _ready = start(IGNORES_TERM)
    started = time.monotonic()
    assert terminate_group(proc.pid, 0.5, proc) is False
    assert time.monotonic() - started >= 0.5
    assert proc.wait(10) == -9


def test_a_group_that_exits_on_sigterm_is_not_waited_for_the_whole_grace():
    proc, _ready = start(EXITS_ON_TERM)
    started = time.monotonic()
    assert terminate_group(proc.pid, 30.0, proc) is True
    assert time.monotonic() - started < 10.0
    assert proc.returncode == -15


def test_a_member_left_behind_by_its_leader_is_killed_with_the_group():
    proc, child_pid = start(LEADER_WITH_STUBBORN_CHILD)
    assert stop_process_group(proc, 0.5) is False
    assert proc.returncode == -15
    # SIGKILL is delivered asynchronously: the member is gone moments after it was sent
    wait_for(lambda: not group_alive(proc.pid), 10.0)
    child = int(child_pid)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_a_group_with_no_process_left_ends_at_once():
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait(10)
    started = time.monotonic()
    assert terminate_group(proc.pid, 30.0) is True
    assert time.monotonic() - started < 5.0


def test_terminate_processes_kills_only_those_that_ignore_sigterm():
    stubborn, _ = start(IGNORES_TERM)
    polite, _ = start(EXITS_ON_TERM)
    procs = [psutil.Process(stubborn.pid), psutil.Process(polite.pid)]
    killed = terminate_processes(procs, 0.5)
    assert [p.pid for p in killed] == [stubborn.pid]
    assert not any(p.is_running() for p in procs)  # both ended and reaped by the wait
