"""The run event log written by several processes at once: no seq is used twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from runner_core.events import read_events

REPO = Path(__file__).resolve().parents[2]


def _seqs(run_dir: Path) -> list[int]:
    return [event["seq"] for event in read_events(run_dir)]


# Each writer is its own interpreter: a fork of this (threaded) test process could inherit a
# lock another thread holds and never finish.
_APPEND = """
import sys
from pathlib import Path
from runner_core.events import EventLog, RunRef
log = EventLog(Path(sys.argv[1]), RunRef("run-1", "req-1", "codex", attempt=2))
for i in range(int(sys.argv[2])):
    if i % 2:
        log.emit("one")
    else:
        log.emit_many([("two", None), ("two", None)])
"""


def test_writers_in_several_processes_never_reuse_a_seq(tmp_path):
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPEND, str(tmp_path), "40"], cwd=REPO)
        for _ in range(3)
    ]
    try:
        codes = [proc.wait(120) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert codes == [0, 0, 0]
    assert _seqs(tmp_path) == list(range(1, 3 * 60 + 1))
