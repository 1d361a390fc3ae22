"""N1-N3: the chain calls functions the worker injects; it never starts a process itself.

N1 (the skill's normalizer) and N2 (its fallback) are expected to write result/result.json,
which is then read and validated. N3 (the runner's repair) returns new text. Whatever these
functions raise is recorded as a failed step and the chain goes on.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.output.parse import extract_json
from runner_core.output.stages import (
    Attempt,
    ChainContext,
    first_valid,
    log_attempt,
    repaired_values,
)
from runner_core.output.validate import error_record
from runner_core.output.workspace import read_result_file


@dataclass(frozen=True)
class NormalizeRequest:
    """What a skill's normalizer (N1) or fallback (N2) command is given."""

    level: str  # N1 | N2
    run_dir: Path
    raw_output_path: Path
    schema_path: Path
    result_path: Path  # the command must write its JSON here (result/result.json)
    envelope_path: Path | None = None


@dataclass(frozen=True)
class RepairRequest:
    """What the runner's repair function (N3) is given for one round."""

    round: int  # 1-based
    text: str  # the output to repair: the closest-to-valid output, then the previous answer
    errors: list[dict[str, Any]]
    schema: Any
    run_dir: Path
    raw_output_path: Path
    session_id: str | None = None  # the session the previous round continued (None: the first)


@dataclass(frozen=True)
class RepairReply:
    """What one repair round answered: its text (None: no answer, `error` says why), the
    session it continued and the tokens it used."""

    text: str | None
    session_id: str | None = None
    tokens: dict[str, Any] | None = None
    error: str | None = None


SkillCommand = Callable[[NormalizeRequest], None]
RepairFunction = Callable[[RepairRequest], "str | RepairReply | None"]


def run_skill_command(
    ctx: ChainContext,
    command: SkillCommand,
    request: NormalizeRequest,
    source: str,
) -> Attempt | None:
    """N1/N2: let the skill's command write result/result.json, then read and validate it."""
    name = f"{request.level} {source}"
    before = read_result_file(ctx.run_dir)
    started = time.perf_counter()
    try:
        command(request)
    except Exception as exc:  # a broken skill script must not end the chain
        message = _exception_message(exc)
        _log_failure(ctx, name, request.level, started, source, message, "exception")
        return None
    after = read_result_file(ctx.run_dir)
    if after is None or after == before:
        # An unchanged file already failed validation; reading it again proves nothing.
        what = "did not write" if after is None else "left unchanged"
        _log_failure(
            ctx,
            name,
            request.level,
            started,
            source,
            f"{source} {what} result/result.json",
            "parse",
        )
        return None
    extracted = extract_json(after)
    attempt = Attempt(source, request.level, after)
    if extracted is None:
        attempt.errors = [error_record("$", "no JSON value in result/result.json", "parse")]
    else:
        attempt.parsed, attempt.value = True, extracted.value
    ctx.check(attempt)
    log_attempt(ctx, name, request.level, attempt, started, source)
    return attempt


def run_repair_round(
    ctx: ChainContext,
    repair: RepairFunction,
    request: RepairRequest,
) -> Attempt | None:
    """N3: ask the repair function for new text, then parse it (with N0 fixes) and validate."""
    name = f"N3 repair round {request.round}"
    started = time.perf_counter()
    try:
        reply = repair(request)
    except Exception as exc:  # a failing repair backend is a failed step, not a crashed run
        _log_failure(ctx, name, "N3", started, "repair", _exception_message(exc), "exception")
        return None
    if isinstance(reply, RepairReply):
        ctx.repaired = ctx.repaired.after(reply)
        if reply.error is not None:
            _log_failure(ctx, name, "N3", started, "repair", reply.error, "exception")
            return None
    text = reply.text if isinstance(reply, RepairReply) else reply
    if not isinstance(text, str) or not text.strip():
        _log_failure(ctx, name, "N3", started, "repair", "repair returned no text", "parse")
        return None
    first = extract_json(text)
    plain: list[tuple[Any, list[str]]] = [(first.value, [])] if first is not None else []
    values = itertools.chain(plain, repaired_values(text))
    attempt = first_valid(ctx, "repair", "N3", text, values, seen=set())
    if attempt is None:
        errors = [error_record("$", "no JSON value in repair output", "parse")]
        attempt = Attempt("repair", "N3", text, errors=errors)
        ctx.attempts.append(attempt)
    log_attempt(ctx, name, "N3", attempt, started, "repair", {"round": request.round})
    return attempt


def _log_failure(
    ctx: ChainContext,
    name: str,
    level: str,
    started: float,
    source: str,
    message: str,
    validator: str,
) -> None:
    errors = [error_record("$", message, validator)]
    ctx.log.add(name, level, ok=False, started=started, source=source, errors=errors)


def _exception_message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
