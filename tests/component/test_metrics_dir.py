from __future__ import annotations

import os
import subprocess
import sys

from runner_core import metrics


def test_the_metrics_dir_keeps_live_processes_files_and_drops_dead_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(metrics.ENV, "")  # restored after the test
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs
    folder = tmp_path / "metrics"
    folder.mkdir()
    names = [f"counter_{os.getpid()}.db", f"counter_{gone.pid}.db", f"gauge_livesum_{gone.pid}.db"]
    for name in names + ["notes.txt"]:
        (folder / name).write_bytes(b"x")
    assert metrics.use_metrics_dir(tmp_path) == folder
    assert os.environ[metrics.ENV] == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == [names[0], "notes.txt"]
