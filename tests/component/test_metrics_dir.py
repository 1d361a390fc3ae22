from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from runner_core import metrics
from runner_core.settings import load_settings
from tests.helpers import run_python


def test_the_metrics_dir_keeps_live_processes_files_and_drops_dead_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(metrics.ENV, "")  # restored after the test
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs
    folder = tmp_path / "metrics"
    folder.mkdir()
    names = [f"counter_{os.getpid()}.db", f"counter_{gone.pid}.db", f"gauge_livesum_{gone.pid}.db"]
    for name in names + ["notes.txt"]:
        (folder / name).write_bytes(b"x")
    assert metrics.use_metrics_dir(folder, tmp_path / "data") == folder
    assert os.environ[metrics.ENV] == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == [".archive.lock", names[0], "notes.txt"]


def test_the_counts_of_gone_processes_are_kept_so_no_counter_goes_down(tmp_path, monkeypatch):
    """Dropping a gone process's file lowered the counter by its counts: Prometheus read the
    decrease as a reset and the counts still alive as new ones (a spike in rate())."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key
    from prometheus_client.multiprocess import MultiProcessCollector

    monkeypatch.setenv(metrics.ENV, "")
    folder = tmp_path / "metrics"
    folder.mkdir()
    key = mmap_key(
        "skill_runner_run_failures",
        "skill_runner_run_failures_total",
        ["engine", "code"],
        ["script", "TIMEOUT"],
        "Failed runs",
    )
    bucket = mmap_key(
        "skill_runner_run_duration_seconds",
        "skill_runner_run_duration_seconds_bucket",
        ["le"],
        ["1.0"],
        "Durations",
    )

    def gone_process(counted: float) -> None:
        done = subprocess.Popen([sys.executable, "-c", "pass"])
        done.wait()
        for kind, name in (("counter", key), ("histogram", bucket)):
            values = MmapedDict(str(folder / f"{kind}_{done.pid}.db"))
            values.write_value(name, counted, 0.0)
            values.close()

    def total(metric: str) -> float:
        files = [str(f) for f in folder.glob("*.db")]
        found = {m.name: m for m in MultiProcessCollector.merge(files, accumulate=False)}
        return sum(s.value for s in found[metric].samples if not s.name.endswith("_count"))

    gone_process(3)
    gone_process(4)
    live = MmapedDict(str(folder / f"counter_{os.getpid()}.db"))
    live.write_value(key, 5, 0.0)
    live.close()
    before = total("skill_runner_run_failures")
    metrics.use_metrics_dir(folder, tmp_path / "data")
    assert total("skill_runner_run_failures") == before == 12
    assert total("skill_runner_run_duration_seconds") == 7
    gone_process(1)  # another start later adds to the archive
    metrics.use_metrics_dir(folder, tmp_path / "data")
    assert total("skill_runner_run_failures") == 13
    assert {p.name for p in folder.glob("*.db")} == {
        "counter_archive.db",
        f"counter_{os.getpid()}.db",
        "histogram_archive.db",
    }


def test_each_data_dir_gets_its_own_folder_in_shared_memory(tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    one = metrics.default_dir(tmp_path / "one", shm)
    assert one.parent == shm / f"skill-runner-{os.getuid()}"
    assert one.parent.stat().st_mode & 0o777 == 0o700
    assert metrics.default_dir(tmp_path / "one", shm) == one  # every process finds the same
    assert metrics.default_dir(tmp_path / "two", shm) != one


def test_no_usable_shared_memory_keeps_the_values_in_the_data_dir(tmp_path):
    assert metrics.default_dir(tmp_path / "data", tmp_path / "none") == tmp_path / "data/metrics"
    shm = tmp_path / "shm"
    (shm / f"skill-runner-{os.getuid()}").mkdir(parents=True, mode=0o777)
    os.chmod(shm / f"skill-runner-{os.getuid()}", 0o777)  # others could plant files there
    assert metrics.default_dir(tmp_path / "data", shm) == tmp_path / "data/metrics"


def test_the_folders_of_services_whose_data_dir_is_gone_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(metrics.ENV, "")
    shm = tmp_path / "shm"
    shm.mkdir()
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.mkdir()
    gone.mkdir()
    gone_folder = metrics.use_metrics_dir(metrics.default_dir(gone, shm), gone)
    (gone_folder / f"counter_{os.getpid()}.db").write_bytes(b"x")
    gone.rmdir()
    kept_folder = metrics.use_metrics_dir(metrics.default_dir(kept, shm), kept)
    assert kept_folder.is_dir() and not gone_folder.exists()


def test_the_setting_names_the_folder(tmp_path):
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path / "data")}
    assert load_settings(env).metrics_dir == metrics.default_dir(tmp_path / "data")
    env["SKILL_RUNNER_METRICS_DIR"] = str(tmp_path / "m")
    assert load_settings(env).metrics_dir == tmp_path / "m"


RECORD_ON_A_FULL_DISK = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runner_core.metrics import use_metrics_dir
    from runner_core.settings import load_settings
    settings = load_settings({"SKILL_RUNNER_DATA_DIR": sys.argv[1]})
    use_metrics_dir(settings.metrics_dir, settings.data_dir)
    from prometheus_client import Counter
    counter = Counter("codes_total", "codes", ["code"], registry=None)
    counter.labels(code="FIRST").inc()
    try:
        with open(Path(sys.argv[1]) / "filler", "wb") as filler:
            while True:
                filler.write(b"x" * 65536)
                filler.flush()
    except OSError:
        pass
    for n in range(3000):  # new values past the file's first pages
        counter.labels(code=f"CODE_{n}").inc()
    print(settings.metrics_dir)
    """
)


def test_new_metric_values_on_a_full_data_disk_do_not_kill_the_process(tmp_path):
    disk = tmp_path / "data"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("a small disk is made by mounting a tmpfs, which needs root")
    try:
        done = run_python(RECORD_ON_A_FULL_DISK, str(disk))
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    # the value files are memory-mapped: on the full disk a new value was a SIGBUS (-7)
    assert done.returncode == 0, done.stderr
    assert not done.stdout.strip().startswith(str(disk))
