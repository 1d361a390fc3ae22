"""What a skill.json code skill's execute raised becomes its run's message (result/error.json,
written by the harness); an earlier attempt's file is removed first, never through a link."""

from __future__ import annotations

import json

from runner_core.error_codes import ErrorCode
from runner_core.workspace import RunPaths
from worker.execution.failures import RunFailed, forget_raised, with_raised


def exited_1() -> RunFailed:
    return RunFailed(ErrorCode.SKILL_SCRIPT_FAILED, "process exited with code 1", {"exit_code": 1})


def test_the_exception_written_by_the_harness_is_the_message(tmp_path):
    (tmp_path / "result").mkdir()
    (tmp_path / "result" / "error.json").write_text(json.dumps({"message": "ValueError: no"}))
    failure = with_raised(exited_1(), RunPaths(tmp_path))
    assert failure.message == "execute raised ValueError: no"
    assert failure.code == ErrorCode.SKILL_SCRIPT_FAILED and failure.details == {"exit_code": 1}


def test_without_a_readable_message_the_failure_is_as_it_was(tmp_path):
    assert with_raised(exited_1(), RunPaths(tmp_path)).message == "process exited with code 1"
    (tmp_path / "result").mkdir()
    for text in ("not json", json.dumps({"message": 3}), json.dumps(["x"]), "{}"):
        (tmp_path / "result" / "error.json").write_text(text)
        assert with_raised(exited_1(), RunPaths(tmp_path)).message == "process exited with code 1"
    timeout = RunFailed(ErrorCode.TIMEOUT, "the run exceeded its time limit")
    (tmp_path / "result" / "error.json").write_text(json.dumps({"message": "ValueError: no"}))
    assert with_raised(timeout, RunPaths(tmp_path)) is timeout


def test_an_earlier_attempts_message_is_removed_and_no_link_is_followed(tmp_path):
    run = tmp_path / "run"
    (run / "result").mkdir(parents=True)
    (run / "result" / "error.json").write_text(json.dumps({"message": "ValueError: before"}))
    forget_raised(RunPaths(run))
    assert not (run / "result" / "error.json").exists()
    forget_raised(RunPaths(run))  # none: nothing to do
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "error.json").write_text("kept")
    (run / "result").rmdir()
    (run / "result").symlink_to(elsewhere)
    forget_raised(RunPaths(run))
    assert (elsewhere / "error.json").read_text() == "kept"
    assert with_raised(exited_1(), RunPaths(run)).message == "process exited with code 1"
