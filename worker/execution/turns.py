"""Interactive runs, worker side: what a resumed turn says to the agent, and what the end of a
turn means (done, done without the marker, or a question for the user).

A turn is one execute_run task. Between turns the run is `waiting_user` in SQL with its
session handle and pending question; nothing else is held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from runner_core.error_codes import ErrorCode
from runner_core.interaction import (
    Pending,
    auto_decision_prompt,
    parse_question,
    reply_prompt,
)
from runner_core.output import OutputOutcome
from runner_core.results import run_warning
from runner_core.runtime_options import RuntimeOptions
from runner_core.store import interactions
from runner_core.store.models import Run
from worker.execution.failures import RunFailed


@dataclass(frozen=True)
class Resume:
    """The input of a resumed turn: the session to continue and the user message to send."""

    turn: int
    session_id: str
    prompt: str


class AwaitUser(Exception):
    """The turn ended with a question: the run waits for a reply."""

    def __init__(self, pending: Pending, warning: dict[str, Any] | None) -> None:
        super().__init__(pending.prompt)
        self.pending, self.warning = pending, warning


def is_interactive(run: Run) -> bool:
    return RuntimeOptions.from_dict(run.runtime_options).is_interactive


def turn_number(run: Run) -> int:
    """1 for the first turn; each question asked before starts one more."""
    return int(run.interaction_count or 0) + 1


def resume_input(conn: Connection, run: Run, cap_sec: int) -> Resume | None:
    """The next turn of an interactive run that has asked before (None for a first turn).
    Raises RunFailed SESSION_RESUME_FAILED when there is no session or answer to resume with."""
    turn = turn_number(run)
    if not is_interactive(run) or turn == 1:
        return None
    answered = interactions.last_answered(conn, run.id)
    if not run.session_handle or answered is None:
        raise RunFailed(
            ErrorCode.SESSION_RESUME_FAILED,
            "the run has no engine session or answered question to resume"
            f" (session: {run.session_handle or 'none'})",
        )
    pending = interactions.pending_document(answered)
    if answered.state == interactions.AUTO:
        waited = RuntimeOptions.from_dict(run.runtime_options).reply_timeout(cap_sec)
        prompt = auto_decision_prompt(pending, waited)
    else:
        prompt = reply_prompt(pending, answered.response)
    return Resume(turn, run.session_handle, prompt)


def decide(
    text: str | None,
    turn: int,
    max_attempt: int | None,
    soft: OutputOutcome,
) -> dict[str, Any] | None:
    """After a turn without the done marker, given the output chain's verdict without fallback
    or repair (`soft`): a warning to record when the output validated (soft completion), else
    AwaitUser, or RunFailed when the turn limit is reached."""
    if soft.ok:
        return run_warning(
            ErrorCode.INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER,
            f"turn {turn}'s output validated without the __SKILL_DONE__ marker",
            {"turn": turn},
        )
    if max_attempt is not None and turn >= max_attempt:
        raise RunFailed(
            ErrorCode.INTERACTIVE_MAX_ATTEMPT_EXCEEDED,
            f"turn {turn} reached the skill's max_attempt ({max_attempt}) without a valid output",
            {"turn": turn, "max_attempt": max_attempt},
        )
    pending, warning = parse_question(text)
    raise AwaitUser(pending, warning)


_SESSION_GONE = (
    "no session",
    "session not found",
    "session does not exist",
    "could not find session",
    "unknown session",
    "no conversation found",
    "conversation not found",
    "thread not found",
    "no rollout found",
    "invalid session",
    "failed to resume",
    "not found for session",
)


def session_gone(*texts: str) -> str | None:
    """The CLI's words when a resumed turn failed because its session is gone (else None)."""
    for text in texts:
        for line in text.splitlines():
            low = line.lower()
            if any(p in low for p in _SESSION_GONE):
                return line.strip()[:500]
    return None
