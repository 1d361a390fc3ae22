"""The result document of a run (result/result.json), as GET .../result answers it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from runner_core.statuses import RunStatus
from runner_core.workspace import RunPaths, write_json

log = logging.getLogger(__name__)


def write_result(
    paths: RunPaths,
    status: str,
    data: Any,
    artifacts: list[str],
    warnings: list[dict[str, Any]],
    error: dict[str, Any] | None,
) -> None:
    """Write result/result.json; a failure carries the tail of the run's stderr."""
    if error is not None:
        error = {**error, "stderr": _tail(paths.logs / "stderr.txt")}
    write_json(
        paths.result_file,
        {
            "status": status,
            "data": data if status == RunStatus.SUCCEEDED else None,
            "artifacts": artifacts,
            "validation_warnings": warnings,
            "error": error,
        },
    )


def write_failure(runs_dir: Path, run_id: str, status: str, error: dict) -> None:
    """The result document of a run cut short (signal, crash, cancel while asking), when its
    directory exists; a write that fails is logged, the row still says what happened."""
    try:
        paths = RunPaths(runs_dir / run_id)
        if paths.root.is_dir():
            write_json(
                paths.result_file,
                {
                    "status": status,
                    "data": None,
                    "artifacts": [],
                    "validation_warnings": [],
                    "error": error,
                },
            )
    except OSError:
        log.warning("could not write the result of run %s", run_id, exc_info=True)


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.is_file():
        return ""
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", errors="replace")
