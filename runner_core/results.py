"""A run's error and its result document (result/result.json), as GET .../result answers them.

The worker writes the document when a run ends; the API reads it back, or answers from the
run's row when the run ended before its directory existed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner_core.statuses import RunStatus
from runner_core.workspace import RunPaths, open_run_file, write_json_in

log = logging.getLogger(__name__)
STDERR_TAIL_BYTES = 4000


@dataclass(frozen=True)
class RunError:
    """The error a run ends with: its code, a message for people, and details (flat beside
    them in the stored and served form)."""

    code: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"code": str(self.code), "message": self.message, **self.details}

    def with_details(self, **more: Any) -> RunError:
        return RunError(self.code, self.message, {**self.details, **more})

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> RunError:
        """The error of its stored form (`as_dict`)."""
        details = {k: v for k, v in stored.items() if k not in ("code", "message")}
        return cls(str(stored.get("code")), str(stored.get("message", "")), details)


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, as its row records it."""

    status: str
    error: Mapping[str, Any] | None = None
    warnings: Sequence[Mapping[str, Any]] | None = None
    timings: Mapping[str, Any] | None = None
    session_handle: str | None = None
    token_usage: Mapping[str, Any] | None = None

    @classmethod
    def failed(cls, error: RunError, status: str = RunStatus.FAILED) -> RunEnd:
        return cls(status, error.as_dict())

    @classmethod
    def of_row(cls, run: Any) -> RunEnd:
        """The end a guarded UPDATE already wrote into a run row (read back)."""
        return cls(run.status, run.error)


def run_warning(
    code: str,
    message: str,
    details: Mapping[str, Any] | None = None,
    normalization_level: str | None = None,
) -> dict[str, Any]:
    """One of a run's `warnings` (and of the result's `validation_warnings`)."""
    return {
        "code": str(code),
        "message": message,
        "level": "warning",
        "normalization_level": normalization_level,
        "details": dict(details or {}),
    }


def result_document(
    status: str,
    data: Any = None,
    artifacts: Sequence[str] = (),
    warnings: Sequence[Mapping[str, Any]] = (),
    error: Mapping[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The document: data only on success; `extra` adds members (a composite's `steps`)."""
    return {
        "status": status,
        "data": data if status == RunStatus.SUCCEEDED else None,
        "artifacts": list(artifacts),
        "validation_warnings": list(warnings),
        "error": dict(error) if error is not None else None,
        **extra,
    }


def write_result(paths: RunPaths, document: dict[str, Any]) -> None:
    """Write the document into the run directory (raises OSError: a caller decides)."""
    write_json_in(paths.root, "result/result.json", document)  # through no link of the run


def write_failure(paths: RunPaths, status: str, error: Mapping[str, Any]) -> bool:
    """The document of a run cut short (signal, crash, cancel while asking) when its directory
    exists; a write that fails is logged (the row still says what happened)."""
    try:
        if not paths.root.is_dir():
            return False
        write_result(paths, result_document(status, error=error))
        return True
    except OSError:
        log.warning("could not write the result of run %s", paths.root.name, exc_info=True)
        return False


def read_result(paths: RunPaths) -> dict[str, Any] | None:
    """The document, or None when the run wrote none (or it cannot be read)."""
    fh = open_run_file(paths.root, "result/result.json")  # never through a planted link
    if fh is None:
        return None
    try:
        with fh:
            return json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


def stderr_tail(paths: RunPaths, limit: int = STDERR_TAIL_BYTES) -> str:
    """The end of the run's stderr, which a failed run's error carries."""
    fh = open_run_file(paths.root, "logs/stderr.txt")  # never through a link the run planted
    if fh is None:
        return ""
    with fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - limit))
        return fh.read().decode("utf-8", errors="replace")
