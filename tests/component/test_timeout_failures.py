"""A run that timed out while its engine's model calls were failing says so
(worker.execution.failures.with_model_error)."""

from __future__ import annotations

from runner_core.engines.base import EngineError
from runner_core.error_codes import ErrorCode
from worker.execution.failures import RunFailed, with_model_error

TIMED_OUT = RunFailed(ErrorCode.TIMEOUT, "the run exceeded its time limit")


def test_a_failing_model_call_is_named_in_the_timeout() -> None:
    error = EngineError(ErrorCode.MODEL_API_ERROR, "slow down", {"status": 429, "retrying": True})
    failure = with_model_error(TIMED_OUT, error)
    assert failure.code == ErrorCode.TIMEOUT
    assert failure.message == (
        "the run exceeded its time limit; the engine's model calls were failing (status 429): "
        "slow down"
    )
    assert failure.details == {
        "engine_error": {"code": "MODEL_API_ERROR", "message": "slow down", "status": 429}
    }


def test_any_other_engine_error_leaves_the_timeout_as_it_is() -> None:
    crashed = EngineError(ErrorCode.ENGINE_FAILED, "codex timed out")
    assert with_model_error(TIMED_OUT, crashed) is TIMED_OUT
    assert with_model_error(TIMED_OUT, None) is TIMED_OUT
