from __future__ import annotations

from pathlib import Path

from runner_core.results import (
    RunEnd,
    RunError,
    read_result,
    result_document,
    stderr_tail,
    write_failure,
)
from runner_core.statuses import RunStatus
from runner_core.workspace import RunPaths, create_run_dir


def test_a_run_error_serves_its_details_beside_code_and_message() -> None:
    error = RunError("TIMEOUT", "too slow", {"limit_sec": 5}).with_details(exit_code=-9)
    assert error.as_dict() == {
        "code": "TIMEOUT",
        "message": "too slow",
        "limit_sec": 5,
        "exit_code": -9,
    }


def test_the_document_carries_data_only_for_a_success() -> None:
    ok = result_document(RunStatus.SUCCEEDED, {"a": 1}, ["artifacts/x"], [{"code": "W"}])
    assert ok == {
        "status": "succeeded",
        "data": {"a": 1},
        "artifacts": ["artifacts/x"],
        "validation_warnings": [{"code": "W"}],
        "error": None,
    }
    failed = result_document(RunStatus.FAILED, {"a": 1}, error={"code": "E"}, steps=[])
    assert (failed["data"], failed["error"], failed["steps"]) == (None, {"code": "E"}, [])


def test_a_failure_is_written_only_into_an_existing_run_directory(tmp_path: Path) -> None:
    missing = RunPaths(tmp_path / "never-made")
    assert not write_failure(missing, RunStatus.CANCELED, {"code": "CANCELED_BY_USER"})
    assert not missing.root.exists()
    paths = create_run_dir(tmp_path, "r1")
    assert write_failure(paths, RunStatus.CANCELED, {"code": "CANCELED_BY_USER"})
    assert read_result(paths) == result_document(
        RunStatus.CANCELED, error={"code": "CANCELED_BY_USER"}
    )


def test_an_unreadable_document_reads_as_none(tmp_path: Path) -> None:
    paths = create_run_dir(tmp_path, "r1")
    assert read_result(paths) is None
    paths.result_file.write_text("{half", encoding="utf-8")
    assert read_result(paths) is None


def test_the_stderr_tail_is_the_end_of_the_log(tmp_path: Path) -> None:
    paths = create_run_dir(tmp_path, "r1")
    assert stderr_tail(paths) == ""
    (paths.logs / "stderr.txt").write_bytes(b"x" * 10 + b"the end")
    assert stderr_tail(paths, limit=7) == "the end"


def test_a_run_end_from_an_error_or_read_back_from_a_row() -> None:
    end = RunEnd.failed(RunError("TIMEOUT", "too slow"))
    assert (end.status, end.error) == ("failed", {"code": "TIMEOUT", "message": "too slow"})
    canceled = RunEnd.failed(RunError("CANCELED_BY_USER", "stop"), RunStatus.CANCELED)
    assert canceled.status == "canceled"

    class Row:
        status, error = "failed", {"code": "ORCHESTRATOR_RESTART_INTERRUPTED"}

    assert RunEnd.of_row(Row()) == RunEnd("failed", {"code": "ORCHESTRATOR_RESTART_INTERRUPTED"})
