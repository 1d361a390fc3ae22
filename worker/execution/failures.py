"""How a run step fails: `RunFailed` carries the error code the run ends with, and
`check_process` turns what the supervisor saw (cancel, timeout, output cap, exit code) into one."""

from __future__ import annotations

import json
import os
from typing import Any

from runner_core.engines.base import EngineError, ProcessResult
from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import RunStatus
from runner_core.workspace import RunPaths, open_run_file

RAISED_MAX_CHARS = 2000  # of the exception a skill.json code skill's execute raised


class RunFailed(Exception):
    """A run ends here with `code` (and status failed unless told otherwise)."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        status: str = RunStatus.FAILED,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.details, self.status = code, message, details or {}, status

    @property
    def error(self) -> RunError:
        """The error the run records."""
        return RunError(self.code, self.message, self.details)


def process_failure(result: ProcessResult, failure_code: str) -> RunFailed | None:
    """The failure a ProcessResult means (cancel, resource limit, timeout, output cap, non-zero
    exit), or None."""
    if result.canceled:
        return RunFailed(ErrorCode.CANCELED_BY_USER, "canceled by user", status=RunStatus.CANCELED)
    if result.limit_exceeded is not None:
        return RunFailed(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"the run's process hit its {result.limit_exceeded} limit",
            {"limit": result.limit_exceeded, "exit_code": result.exit_code},
        )
    if result.timed_out:
        return RunFailed(
            ErrorCode.TIMEOUT, "the run exceeded its time limit; the process group was killed"
        )
    if result.output_exceeded:
        size = result.stdout_path.stat().st_size + result.stderr_path.stat().st_size
        return RunFailed(
            ErrorCode.OUTPUT_TOO_LARGE,
            "the process wrote more output (stdout + "
            "stderr) than the server allows; the process group was killed",
            {"written_bytes": size},
        )
    if result.exit_code != 0:
        return RunFailed(
            failure_code,
            f"process exited with code {result.exit_code}",
            {"exit_code": result.exit_code},
        )
    return None


def check_process(result: ProcessResult, failure_code: str) -> None:
    """Raise the failure `result` means, if any."""
    failure = process_failure(result, failure_code)
    if failure is not None:
        raise failure


def with_model_error(failure: RunFailed, error: EngineError | None) -> RunFailed:
    """A run that timed out while its engine's model calls were failing (a CLI retrying a 429
    or a 500 until the time limit) still fails TIMEOUT, its message naming the failure and its
    `details.engine_error` holding it ({code, message, status}); any other `failure` as it is."""
    if error is None or error.code != ErrorCode.MODEL_API_ERROR:
        return failure
    said = error.message.strip()[:500]
    engine_error: dict[str, Any] = {"code": error.code, "message": said}
    if error.details.get("status") is not None:
        engine_error["status"] = error.details["status"]
    status = f" (status {engine_error['status']})" if "status" in engine_error else ""
    return RunFailed(
        failure.code,
        f"{failure.message}; the engine's model calls were failing{status}: {said}",
        {**failure.details, "engine_error": engine_error},
        failure.status,
    )


def with_raised(failure: RunFailed, paths: RunPaths) -> RunFailed:
    """A skill.json code skill that exited 1 because its execute raised: the message names the
    exception, as the harness wrote it to result/error.json (the traceback stays in stderr), so a
    composite's `_error` and a failed ctx.call say what went wrong. Any other failure as it is."""
    if failure.code != ErrorCode.SKILL_SCRIPT_FAILED:
        return failure
    fh = open_run_file(paths.root, "result/error.json")  # never through a planted link
    if fh is None:
        return failure
    try:
        with fh:
            raised = json.loads(fh.read(64 * 1024).decode("utf-8", errors="replace"))["message"]
    except (OSError, ValueError, TypeError, KeyError):
        return failure
    if not isinstance(raised, str) or not raised.strip():
        return failure
    message = f"execute raised {raised.strip()[:RAISED_MAX_CHARS]}"
    return RunFailed(failure.code, message, failure.details, failure.status)


def forget_raised(paths: RunPaths) -> None:
    """An earlier attempt's result/error.json is not this attempt's (removed in the folder
    itself, never through a link the run left for result/)."""
    try:
        folder = os.open(paths.root / "result", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        os.unlink("error.json", dir_fd=folder)
    except OSError:
        pass
    finally:
        os.close(folder)
