"""Reading a run's logs and result, and canceling it: the same for jobs and one-off runs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy.orm import Session

from api import job_service as jobs
from api.errors import ApiError
from runner_core.store import runs as run_states
from runner_core.store.models import TERMINAL_STATUSES, Request, Run

LOG_CAP = 2 * 1024 * 1024
LOG_NAMES = ("prompt", "stdout", "stderr")


def require_finished(req: Request, run: Run) -> None:
    """409 RUN_NOT_FINISHED unless the run has ended."""
    if run.status not in TERMINAL_STATUSES:
        waiting = run.needs_upload and run.status == "queued"
        message = ("the run waits for its input upload (POST .../upload)" if waiting
                   else f"the run is {run.status}; poll its status")
        raise ApiError(409, "RUN_NOT_FINISHED", message,
                       {"status": run.status, "waiting_for_upload": waiting}, req.id)


def result_body(req: Request, run: Run) -> dict[str, Any]:
    """`{request_id, result}` of a finished run."""
    require_finished(req, run)
    return {"request_id": req.id, "result": jobs.read_result(run)}


def log_snapshot(req: Request, run: Run) -> dict[str, Any]:
    """Prompt, stdout and stderr: the last 2 MiB of each, and which ones were cut."""
    logs = current_app.config["SETTINGS"].runs_dir / run.id / "logs"
    body: dict[str, Any] = {"request_id": req.id}
    truncated = []
    for name in LOG_NAMES:
        body[name], cut = tail(logs / f"{name}.txt")
        if cut:
            truncated.append(name)
    body["truncated"] = truncated
    return body


def tail(path: Path, cap: int = LOG_CAP) -> tuple[str | None, bool]:
    """The last `cap` bytes of a file as text, and whether anything was cut."""
    if not path.is_file():
        return None, False
    size = path.stat().st_size
    with path.open("rb") as fh:
        if size > cap:
            fh.seek(size - cap)
        return fh.read().decode("utf-8", errors="replace"), size > cap


def cancel_run(session: Session, req: Request, run: Run) -> dict[str, Any]:
    """Flag an active run canceled (revoking its queued message); finished runs: accepted false."""
    accepted = run_states.request_cancel(session, run.id)
    # The DB flag is the cancel: a running run's worker sees it within 0.5 s and kills the
    # process group; a queued or waiting run (no process) ends here, and the revoke only
    # spares a worker the message (if it is lost, the claim guard still refuses the run).
    if accepted and run_states.cancel_idle(session, run.id) and run.celery_task_id:
        current_app.extensions["queue"].revoke(run.celery_task_id)
    session.refresh(run)
    return {"request_id": req.id, "accepted": accepted, "status": run.status}
