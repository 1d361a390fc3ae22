"""/metrics merges the value files of every process (prometheus-client's multiprocess mode),
and a file another process is creating at that moment (still empty) is left out, not a 500."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.mmap_dict import MmapedDict, mmap_key

from api.metrics import ProcessFilesCollector


def write_counter(folder: Path, pid: int, value: float) -> None:
    values = MmapedDict(str(folder / f"counter_{pid}.db"))
    key = mmap_key("jobs_total", "jobs_total", ["engine"], ["codex"], "jobs")
    values.write_value(key, value, 0.0)
    values.close()


def test_an_empty_file_being_created_is_left_out_of_the_merge(tmp_path: Path) -> None:
    write_counter(tmp_path, 101, 2.0)
    write_counter(tmp_path, 102, 3.0)
    (tmp_path / "counter_103.db").touch()  # opened, not yet sized: what a scrape may meet
    families = list(ProcessFilesCollector(tmp_path).collect())
    (family,) = [f for f in families if f.name == "jobs_total"]
    totals = {s.name: s.value for s in family.samples}
    assert totals == {"jobs_total": 5.0}


def test_no_files_is_no_metrics(tmp_path: Path) -> None:
    assert list(ProcessFilesCollector(tmp_path / "none-yet").collect()) == []
