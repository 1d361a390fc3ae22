"""Processes that leave their run's group are ended with it (worker.execution.strays)."""

from __future__ import annotations

import subprocess
import time

from tests.helpers import run_python

SCRIPT = """
import os, psutil, sys, tempfile
from pathlib import Path
from runner_core.engines.base import CommandSpec
from tests.helpers import wait_for
from worker.execution.strays import become_subreaper
from worker.execution.supervisor import run_command
assert become_subreaper()
d = Path(tempfile.mkdtemp())
# a daemon's double fork: the grandchild starts its own session, its parent exits at once
cmd = "(setsid sh -c 'sleep 300 & echo $! > %s/pids; sleep 300' &) ; sleep 0.2" % d
result = run_command(CommandSpec(argv=["sh", "-c", cmd], cwd=d, env=dict(os.environ)),
                     d / "out", d / "err")
escaped = [int(p) for p in (d / "pids").read_text().split()]

def alive():
    left = []
    for pid in escaped:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left

try:  # the kill is sent, not awaited: give it until the processes are gone and reaped
    wait_for(lambda: not alive() and not psutil.Process().children())
except AssertionError:
    pass  # the line below says what is left
print(result.exit_code, alive(), [c.status() for c in psutil.Process().children()])
"""


def test_a_double_forked_daemon_is_ended_with_its_command_and_reaped():
    out = run_python(SCRIPT)
    assert out.returncode == 0, out.stderr
    # the command succeeded; the processes that escaped its group are gone and reaped (the
    # subreaper is left with no child, not even a zombie)
    assert out.stdout.split("\n")[0] == "0 [] []", out.stdout


ZOMBIE_SCRIPT = """
import os, subprocess, tempfile, types
from pathlib import Path
import psutil
from tests.helpers import wait_for
from worker.execution import strays
assert strays.become_subreaper()
lookups = []
strays.psutil = types.SimpleNamespace(  # count the process lookups end_strays makes
    Process=lambda pid: lookups.append(pid) or psutil.Process(pid),
    wait_procs=psutil.wait_procs, NoSuchProcess=psutil.NoSuchProcess,
    STATUS_ZOMBIE=psutil.STATUS_ZOMBIE)
d = Path(tempfile.mkdtemp())
# a helper that leaves the group and exits at once: an orphan the subreaper adopts as a zombie
cmd = "(setsid sh -c 'echo $$ > %s/pid' &) ; sleep 0.05" % d
subprocess.run(["sh", "-c", cmd], start_new_session=True, check=True)

def adopted_zombie():
    pid = (d / "pid").read_text().strip() if (d / "pid").exists() else ""
    return pid and any(c.pid == int(pid) and c.status() == psutil.STATUS_ZOMBIE
                       for c in psutil.Process().children())

wait_for(adopted_zombie)  # the helper has exited and is ours to reap
helper = int((d / "pid").read_text())
print(strays.end_strays(1.0) == [helper], lookups, psutil.Process().children())
"""


def test_an_orphan_that_already_exited_is_reaped_without_a_process_scan():
    out = run_python(ZOMBIE_SCRIPT)
    assert out.returncode == 0, out.stderr
    # end_strays reports the helper, looked no process up (a scan of /proc would run on
    # every run: codex leaves such helpers behind), and left no zombie
    assert out.stdout.split("\n")[0] == "True [] []", out.stdout


def test_a_process_that_did_not_become_a_subreaper_leaves_its_children_alone():
    from worker.execution.strays import end_strays

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert end_strays(0.1) == []
        time.sleep(0.05)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
