"""Reading a run's logs and result, and canceling it: the same for jobs and one-off runs."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from api import context
from api.errors import ApiError
from api.jobs.files import manifest_artifacts, with_urls
from api.jobs.read import read_result
from api.jobs.rows import JobRow, RunState, waiting_for_upload
from runner_core.error_codes import ErrorCode
from runner_core.secret_values import mask_bytes
from runner_core.statuses import TERMINAL_STATUSES, RunStatus
from runner_core.store import cancels
from runner_core.store.models import Request, Run
from runner_core.workspace import open_run_file

log = logging.getLogger(__name__)
LOG_CAP = 2 * 1024 * 1024
RANGE_CAP = 1024 * 1024  # bytes per logs/range answer
LOG_NAMES = ("prompt", "stdout", "stderr")


def require_finished(request_id: str, run: RunState) -> None:
    """409 RUN_NOT_FINISHED unless the run has ended."""
    if run.status not in TERMINAL_STATUSES:
        waiting = waiting_for_upload(run)
        message = (
            "the run waits for its input upload (POST .../upload)"
            if waiting
            else f"the run is {run.status}; poll its status"
        )
        raise ApiError(
            409,
            ErrorCode.RUN_NOT_FINISHED,
            message,
            {"status": run.status, "waiting_for_upload": waiting},
            request_id,
        )


def result_body(job: JobRow) -> dict[str, Any]:
    """`{request_id, result, artifacts, token_usage}` of a finished run: `artifacts` the
    manifest's entries with their download urls (the result document lists the paths)."""
    require_finished(job.request_id, job)
    kind = "temp" if job.request_kind == "temp" else "job"
    return {
        "request_id": job.request_id,
        "result": read_result(job),
        "artifacts": with_urls(kind, job.request_id, manifest_artifacts(job.run_id)),
        "token_usage": job.token_usage,
    }


def log_snapshot(job: JobRow) -> dict[str, Any]:
    """Prompt, stdout and stderr: the last 2 MiB of each, and which ones were cut."""
    run_dir = context.settings().runs_dir / job.run_id
    body: dict[str, Any] = {"request_id": job.request_id}
    truncated = []
    for name in LOG_NAMES:
        body[name], cut = tail(run_dir, f"logs/{name}.txt")
        if cut:
            truncated.append(name)
    body["truncated"] = truncated
    return body


def log_range(job: JobRow, stream: str, byte_from: int, byte_to: int | None) -> dict[str, Any]:
    """Bytes [byte_from, byte_to) of one log as text, capped at RANGE_CAP, on UTF-8 character
    boundaries: starting after a character byte_from would split (its bytes belong to the range
    before) and ending before one byte_to would split (unless that is the end of a finished
    run's log). The answer's byte_from and byte_to are the bytes it holds."""
    if byte_to == 0:  # Skill-Runner's clients send 0 for "to the end"
        byte_to = None
    if byte_to is not None and byte_to < byte_from:
        raise ApiError(
            400,
            ErrorCode.INVALID_LOG_RANGE,
            "byte_to is before byte_from",
            {"byte_from": byte_from, "byte_to": byte_to},
            job.request_id,
        )
    asked, stream = stream, "stdout" if stream == "pty" else stream  # CLIs run on pipes here
    data, size, start = b"", 0, 0
    # a regular file reached through no symlink, or nothing (the run could plant either)
    fh = open_run_file(context.settings().runs_dir / job.run_id, f"logs/{stream}.txt")
    if fh is not None:
        with fh:
            size = os.fstat(fh.fileno()).st_size
            start = min(byte_from, size)
            end = min(size if byte_to is None else byte_to, size, start + RANGE_CAP)
            fh.seek(start)
            data = fh.read(end - start)
    inside = _continuation_bytes(data) if start > 0 else 0
    data, start = data[inside:], start + inside
    if start + len(data) < size or job.status not in TERMINAL_STATUSES:
        data = _whole_characters(data)  # a live log may end in half a character, too
    return {
        "request_id": job.request_id,
        "stream": asked,
        "byte_from": start,
        "byte_to": start + len(data),
        "size": size,
        "status": job.status,
        "text": (text := mask_bytes(data).decode("utf-8", errors="replace")),
        "chunk": text,
    }


def _continuation_bytes(data: bytes) -> int:
    """How many bytes `data` starts with that continue a character begun before it (at most 3,
    as in UTF-8)."""
    count = 0
    while count < min(3, len(data)) and data[count] & 0xC0 == 0x80:
        count += 1
    return count


def _whole_characters(data: bytes) -> bytes:
    """`data` without a UTF-8 character cut at its end (the next range starts with it)."""
    for cut in range(1, min(4, len(data)) + 1):
        lead = data[-cut]
        if lead & 0xC0 != 0x80:  # the last character's first byte
            width = (
                2
                if lead >> 5 == 0b110
                else 3
                if lead >> 4 == 0b1110
                else 4
                if lead >> 3 == 0b11110
                else 1
            )
            return data[:-cut] if width > cut else data
    return data


def tail(run_dir: Path, rel: str, cap: int = LOG_CAP) -> tuple[str | None, bool]:
    """The last `cap` bytes of a run's file as text, and whether anything was cut (None: no
    regular file there, or one reached through a symlink)."""
    fh = open_run_file(run_dir, rel)
    if fh is None:
        return None, False
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > cap:
            fh.seek(size - cap)
        return mask_bytes(fh.read()).decode("utf-8", errors="replace"), size > cap


def cancel_run(session: Session, req: Request, run: Run) -> dict[str, Any]:
    """Flag an active run canceled (revoking its queued message); finished runs: accepted false."""
    before = run.status
    accepted = cancels.request_cancel(session, run.id)
    # The DB flag is the cancel: a running run's worker sees it and kills the process group; a
    # queued or waiting run (no process) ends here, and the revoke only spares a worker the
    # message (if it is lost, the claim guard still refuses the run).
    # CANCELED_BY_USER, unless a cancel asked before said why (its composite parent ended)
    error = cancels.cancel_error_of(session, run.id)
    if accepted and cancels.cancel_idle(session, run.id, error):
        context.run_events(run).state_changed(
            before, RunStatus.CANCELED, "cancel", error=error.as_dict(), terminal=True
        )
        if run.celery_task_id and before == RunStatus.QUEUED:  # a waiting run's task ended
            context.queue().revoke(run.celery_task_id)
    elif accepted and run.engine is None and run.heartbeat_at is None:
        # a running composite parent holds no process: its steps are flagged here (no free
        # worker process is needed for their workers to kill them), and the workflow ends it
        reason = cancels.parent_ended(run, RunStatus.CANCELED, error.as_dict())
        cancels.request_cancel_descendants(session, run.id, reason)
        context.queue().wake_composite(run.id)
    session.refresh(run)
    log.info(
        "cancel of run %s: accepted %s, now %s",
        run.id,
        accepted,
        run.status,
        extra={"run_id": run.id},
    )
    # run_id and message: the fields Skill-Runner's cancel answers beside these three
    return {
        "request_id": req.id,
        "run_id": run.id,
        "accepted": accepted,
        "status": run.status,
        "message": _cancel_message(accepted, run.status),
    }


def _cancel_message(accepted: bool, status: str) -> str:
    if not accepted:
        return f"the run had already ended ({status}): nothing to cancel"
    if status == RunStatus.CANCELED:
        return "the run is canceled"
    return "cancel requested: the run stops shortly"
