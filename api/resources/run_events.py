"""The events routes of a run (jobs and one-off runs alike): the SSE stream and the history."""

from __future__ import annotations

from typing import Any

from flask import Response, request, stream_with_context

from api import auth, context
from api.jobs import events
from api.jobs.chat import chat_frames, chat_history, history_bounds
from api.jobs.read import load_job, read_job
from api.jobs.rows import JobRow
from runner_core.metrics import counted_subscriber
from runner_core.statuses import TERMINAL_STATUSES, RunStatus
from runner_core.store import interactions


def sse_response(request_id: str, kind: str | None, cursor: int, chat: bool = False) -> Response:
    """`text/event-stream` from `cursor` (or the Last-Event-ID header) to the terminal event;
    `chat`: each event as the chat message a person reads (`/chat`)."""
    with context.connect() as conn:
        job = read_job(conn, request_id, kind)  # 404 before the stream starts
    last_id = request.headers.get("Last-Event-ID", "").strip()
    if last_id.isdigit():
        cursor = max(cursor, int(last_id))
    settings = context.settings()

    def snapshot() -> dict[str, Any]:
        with context.db_session() as session:
            _req, run = load_job(session, request_id, kind)
            asked = None
            if run.status == RunStatus.WAITING_USER:
                asked = interactions.get(session, run.id, run.pending_interaction_id)
            pending = interactions.pending_document(asked) if asked is not None else None
            return {"request_id": request_id, "status": run.status, "pending": pending}

    def ended() -> bool:
        with context.connect() as conn:
            return read_job(conn, request_id, kind).status in TERMINAL_STATUSES

    frames = events.stream(
        settings.runs_dir / job.run_id,
        job.run_id,
        context.event_hub(),
        cursor,
        snapshot,
        ended,
        allowed=auth.still_allowed,
    )
    if chat:
        frames = chat_frames(frames)
    return Response(
        stream_with_context(counted_subscriber(frames)),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def empty_history(job: JobRow) -> dict[str, Any]:
    """history_body of a request with no run yet (its package still to come): no events."""
    return {
        "request_id": job.request_id,
        "status": job.status,
        "events": [],
        "count": 0,
        "source": "events.jsonl",
        "cursor_floor": 0,
        "cursor_ceiling": 0,
    }


def history_body(
    request_id: str, kind: str | None, args: dict[str, Any], chat: bool = False
) -> dict[str, Any]:
    """The stored events asked for (`chat`: as chat messages), with `count` and the seq range
    the run holds (`cursor_floor`, `cursor_ceiling`) for clients that page through it."""
    with context.connect() as conn:
        job = read_job(conn, request_id, kind)
    run_dir = context.settings().runs_dir / job.run_id
    found = events.history(run_dir, args)
    if chat:
        found = chat_history(found)
    floor, ceiling = history_bounds(run_dir)
    return {
        "request_id": request_id,
        "status": job.status,
        "events": found,
        "count": len(found),
        "source": "events.jsonl",
        "cursor_floor": floor,
        "cursor_ceiling": ceiling,
    }
