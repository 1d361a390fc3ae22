"""A bench ended by SIGTERM stops what it started, as after Ctrl-C (bench.context)."""

from __future__ import annotations

import subprocess
import sys

from runner_core.settings import REPO_ROOT

SCRIPT = """
import os, signal, sys, time
from bench.context import stop_on_signals
stop_on_signals()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
finally:
    os.kill(os.getpid(), signal.SIGTERM)  # a second one must not cut the cleanup short
    time.sleep(0.05)
    print("services stopped", flush=True)
"""


def test_sigterm_unwinds_the_bench_once_and_lets_its_cleanup_finish():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 128 + 15, done.stderr
    assert done.stdout == "services stopped\n"
    assert "SIGTERM: stopping its services" in done.stderr
