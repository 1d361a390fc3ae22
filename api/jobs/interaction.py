"""The pending question of an interactive run, and the reply that starts its next turn: the
same for jobs and one-off runs."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from api import context
from api.errors import ApiError
from api.jobs.create import submit
from api.jobs.validate import check_runtime_options
from runner_core.budget import Budget
from runner_core.budget import message as budget_message
from runner_core.error_codes import ErrorCode
from runner_core.interaction import (
    REPLY_MAX_CHARS,
    answer_text,
    check_response,
    from_typed,
    typed_text,
)
from runner_core.runtime_options import RuntimeOptions
from runner_core.skills import SkillPackage
from runner_core.statuses import RunStatus
from runner_core.store import interactions
from runner_core.store.models import Request, Run


def require_interactive(request_id: str, run: Run) -> None:
    """400 RUN_NOT_INTERACTIVE unless the run was created in interactive mode (by mode, not
    by status, as seed 003 §9 says)."""
    mode = RuntimeOptions.from_dict(run.runtime_options).execution_mode
    if mode != "interactive":
        raise ApiError(
            400,
            ErrorCode.RUN_NOT_INTERACTIVE,
            f"the run's execution_mode is '{mode}': it asks nothing",
            {"execution_mode": mode},
            request_id,
        )


def pending_body(session: Session, req: Request, run: Run) -> dict[str, Any]:
    """`{request_id, status, pending}`; pending is null unless the run waits for a reply."""
    require_interactive(req.id, run)
    asked = None
    if run.status == RunStatus.WAITING_USER:
        asked = interactions.get(session, run.id, run.pending_interaction_id)
    pending = interactions.pending_document(asked) if asked is not None else None
    return {"request_id": req.id, "status": run.status, "pending": pending}


def reply(
    session: Session,
    req: Request,
    run: Run,
    body: dict[str, Any],
    skill_for: Callable[[], SkillPackage],
    free: bool = False,
    before: Callable[[], None] | None = None,
    sha256: str | None = None,
    accepted: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Answer the pending question and queue the next turn (`free`: a response the agent
    reads as it is, unchecked, as files are; `before`: what to do once the reply is known to be
    for the pending question, before it is recorded; `accepted`: what to do once this reply is
    the one recorded, before the next turn is queued; `sha256`: what the reply sent, when more
    than `body`). A repeated idempotency key with the same reply gets the first answer and
    starts nothing, with another reply 409 IDEMPOTENCY_KEY_REUSED; of two replies racing for
    one question exactly one is accepted (the other gets 409)."""
    require_interactive(req.id, run)
    key, interaction_id = body.get("idempotency_key"), body["interaction_id"]
    sha256 = sha256 or _sha256(body)
    if key and (first := interactions.replied(session, run.id, key)) is not None:
        return _repeat(req, key, sha256, first)
    if run.status != RunStatus.WAITING_USER:
        raise _not_waiting(req.id, run.status)
    if interaction_id != run.pending_interaction_id:
        raise _stale(req.id, interaction_id, run.pending_interaction_id)
    asked = interactions.get(session, run.id, interaction_id)
    pending = interactions.pending_document(asked)
    text = None if free else typed_text(body.get("response"))
    if text is not None:  # typed by a person: matched to the question, else passed on as text
        body = {**body, "response": from_typed(pending, text)}
    unchecked = free or text is not None  # never a 400: Skill-Runner's clients end the run
    problem = None if unchecked else check_response(pending, body.get("response"))
    if problem is not None:
        raise ApiError(
            400,
            ErrorCode.INTERACTION_REPLY_INVALID,
            f"the reply does not answer the question: {problem}",
            {"kind": asked.kind, "interaction_id": interaction_id},
            req.id,
        )
    _within_length(req, body.get("response"))
    _within_budget(req, run, body.get("budget"))
    pkg = skill_for()  # before anything is recorded: a run with no skill left refuses the reply
    if before is not None:
        before()
    task_id = str(uuid.uuid4())
    answer = {"request_id": req.id, "status": RunStatus.QUEUED.value, "accepted": True}
    given = interactions.Answer(
        body.get("response"),
        key,
        task_id=task_id,
        sha256=sha256 if key else None,
        reply=answer if key else None,
    )
    outcome = interactions.answer(session, run.id, interaction_id, given)
    if outcome == interactions.ACCEPTED:
        if accepted is not None:
            accepted()
        log = context.run_events(run)  # never after the end a racing cancel wrote meanwhile
        log.emit(
            "interaction.reply.accepted",
            {"interaction_id": interaction_id, "response": body.get("response")},
            before_end=True,
        )
        log.state_changed(RunStatus.WAITING_USER, RunStatus.QUEUED, "reply", before_end=True)
        options = RuntimeOptions.from_dict(run.runtime_options)
        submit(pkg, run.id, run.engine, options, task_id, req.id)
    elif outcome == interactions.NOT_WAITING:
        session.refresh(run)
        raise _not_waiting(req.id, run.status)
    elif outcome == interactions.STALE:
        raise _stale(req.id, interaction_id, None)
    elif outcome == interactions.DUPLICATE and key:  # a racing reply with the same key won
        return _repeat(req, key, sha256, interactions.replied(session, run.id, key))
    return answer


def _sha256(body: dict[str, Any]) -> str:
    """The hash of what a reply sent, but its idempotency key."""
    sent = {k: v for k, v in body.items() if k != "idempotency_key"}
    canonical = json.dumps(sent, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _repeat(req: Request, key: str, sha256: str, first: Any) -> dict[str, Any]:
    """The answer the first reply with `key` got; 409 IDEMPOTENCY_KEY_REUSED when this reply
    sends something else. (A key kept before answers were stored: the reply's usual answer.)"""
    if first.reply_sha256 is not None and first.reply_sha256 != sha256:
        raise ApiError(
            409,
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            "this idempotency_key was sent before with a different reply",
            {"idempotency_key": key, "interaction_id": first.id},
            req.id,
        )
    if first.reply_answer is not None:
        return dict(first.reply_answer)
    return {"request_id": req.id, "status": RunStatus.QUEUED.value, "accepted": True}


def _within_length(req: Request, response: Any) -> None:
    """413 PAYLOAD_TOO_LARGE for an answer longer than the agent can be sent: accepted, it
    would fail the run at its next turn (codex refuses such an input) instead of here."""
    chars = len(answer_text(response))
    if chars > REPLY_MAX_CHARS:
        raise ApiError(
            413,
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"the answer is {chars} characters, over the {REPLY_MAX_CHARS} a reply may hold; "
            "send longer material as files (POST .../interaction/reply/files)",
            {"chars": chars, "max_chars": REPLY_MAX_CHARS},
            req.id,
        )


def _within_budget(req: Request, run: Run, raised: Any) -> None:
    """A run that reached its budget takes a reply only with a budget it has not reached yet
    (`budget` in the reply, kept for the turns that follow); else 409 BUDGET_EXCEEDED. A
    malformed one is refused as in the job's runtime_options (400 SCHEMA_VALIDATION_FAILED)."""
    if raised is not None:
        check_runtime_options({"budget": raised}, req.id)
    options = RuntimeOptions.from_dict(run.runtime_options)
    budget = Budget.of(raised) if raised is not None else options.budget
    found = budget.exceeded(run.token_usage) if budget is not None else None
    if found is not None:
        hint = "; reply with a larger `budget` to go on" if raised is None else ""
        raise ApiError(409, ErrorCode.BUDGET_EXCEEDED, budget_message(found) + hint, found, req.id)
    if raised is not None:
        run.runtime_options = {**options.as_dict(), "budget": raised}


def _not_waiting(request_id: str, status: str) -> ApiError:
    return ApiError(
        409,
        ErrorCode.RUN_NOT_WAITING,
        f"the run is {status}: it is not waiting for a reply",
        {"status": status},
        request_id,
    )


def _stale(request_id: str, given: int, pending: int | None) -> ApiError:
    return ApiError(
        409,
        ErrorCode.INTERACTION_STALE,
        f"interaction {given} is not the pending question",
        {"interaction_id": given, "pending_interaction_id": pending},
        request_id,
    )
