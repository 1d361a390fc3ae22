"""Interactive codex runs for the bench: a fake LLM script whose first turn asks a question and
whose turn after a reply finishes, runs sent through the API and answered, and the same two
turns run bare (`codex exec`, then `codex exec resume <thread_id>`) in a prepared run dir."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench.client import Client
from bench.engine import RESULT, TEXT, BareRun, bare_command, prepare_bare, run_command_bare
from bench.jobs import as_epoch

SKILL_ID = "bench-codex-ask"
ANSWER = "as-is"
REPLIED = "The user answered your question"  # how the runner's reply message starts
QUESTION = """Which spelling of the text should I use?
<ASK_USER_YAML>
kind: choose_one
prompt: Which spelling of the text should I use?
options:
  - label: As it is
    value: as-is
  - label: Upper case
    value: upper
</ASK_USER_YAML>"""
ACTIVE = ("queued", "running")


def ask_script() -> Any:
    """Turn 1: one tool call, then the question; a turn that carries a reply: one tool call,
    then the result with the done marker. Stateless, so the bare CLI gets the same answers."""
    from fake_llm import Script

    done = json.dumps({"__SKILL_DONE__": True, **RESULT})
    return Script(
        command=f"echo {TEXT}",
        final_text=QUESTION,
        when=({"contains": REPLIED, "command": "echo writing", "final_text": done},),
    )


def start(client: Client) -> tuple[str, float]:
    """POST an interactive run: (request_id, wall clock just before the POST was sent)."""
    sent = time.time()
    resp = client.post(
        "/v1/jobs",
        {
            "skill_id": SKILL_ID,
            "engine": "codex",
            "input": {"text": TEXT},
            "runtime_options": {"execution_mode": "interactive"},
        },
    )
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    return resp.body["request_id"], sent


def settle(client: Client, rid: str, timeout: float = 300.0) -> dict:
    """Long-poll the status until the run is neither queued nor running (it waits or ended)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        body = client.get(f"/v1/jobs/{rid}?wait_sec=30").body
        if body["status"] not in ACTIVE:
            return body
    raise TimeoutError(f"run {rid} still active")


def waiting(client: Client, rid: str) -> dict:
    """The run's status once it asked; raises unless it is waiting for a reply."""
    body = settle(client, rid)
    if body["status"] != "waiting_user":
        raise RuntimeError(f"interactive run did not ask: {body}")
    return body


@dataclass
class Replied:
    """One reply as the client sent it."""

    rid: str
    run_id: str
    sent_at: float  # wall clock just before the reply was sent
    seconds: float  # the reply's round trip at the client


def reply(client: Client, status: dict) -> Replied:
    """Answer a waiting run's pending question (the first option)."""
    rid = status["request_id"]
    body = {"interaction_id": status["pending_interaction_id"], "response": ANSWER}
    sent = time.time()
    resp = client.post(f"/v1/jobs/{rid}/interaction/reply", body)
    if resp.status != 200 or not resp.body.get("accepted"):
        raise RuntimeError(f"reply: {resp.status} {resp.body}")
    return Replied(rid, status["run_id"], sent, resp.seconds)


def engine_started(database_url: str, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per run: its turn's `timings.engine_started_at`, started_at, finished_at and the answered
    question's answered_at (epoch seconds), read from the rows."""
    from sqlalchemy import create_engine, select

    from runner_core.store.models import Interaction, Run

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            runs = conn.execute(select(Run).where(Run.id.in_(run_ids))).all()
            answered = conn.execute(
                select(Interaction.run_id, Interaction.answered_at).where(
                    Interaction.run_id.in_(run_ids), Interaction.answered_at.is_not(None)
                )
            ).all()
    finally:
        engine.dispose()
    replies = {row.run_id: as_epoch(row.answered_at) for row in answered}
    return {
        row.id: {
            "engine_started_at": (row.timings or {}).get("engine_started_at"),
            "started_at": as_epoch(row.started_at),
            "finished_at": as_epoch(row.finished_at),
            "answered_at": replies.get(row.id),
            "timings": row.timings or {},
        }
        for row in runs
    }


def bare_first_turn(runs_dir: Path, skills_dir: Path) -> tuple[BareRun, str, dict]:
    """Run turn 1 bare in a fresh run dir (not timed): (run, thread id, the pending question)."""
    from runner_core.interaction import parse_question

    run = prepare_bare(runs_dir, skills_dir, SKILL_ID, "interactive")
    _, output = run_command_bare(run)
    pending, _warning = parse_question(output.final_text)
    if not output.session_id or pending.kind != "choose_one":
        raise RuntimeError(f"bare turn 1 did not ask: {output.final_text!r}")
    return run, output.session_id, asdict(pending)


def bare_resume(run: BareRun, session_id: str, pending: dict) -> BareRun:
    """The resume command of the run's session with the reply message the worker sends."""
    from runner_core.interaction import reply_prompt

    ctx = replace(run.ctx, prompt=reply_prompt(pending, ANSWER), session_id=session_id)
    return bare_command(run.run_dir, ctx)


def run_resume(run: BareRun) -> float:
    """Run a resume command to completion; its wall seconds. Raises unless it finished."""
    elapsed, output = run_command_bare(run, "resume_")
    if json.loads(output.final_text or "null") != {"__SKILL_DONE__": True, **RESULT}:
        raise RuntimeError(f"bare resume answered {output.final_text!r}")
    return elapsed
