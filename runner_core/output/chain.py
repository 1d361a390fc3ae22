"""The output chain: parse, validate, then normalize N0 -> N1 -> N2 -> N3.

Sources are tried in order (result/result.json, the engine's envelope, the engine's text) at
each level before moving to the next level, so the least-normalized valid output always wins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner_core.output.commands import (
    NormalizeRequest,
    RepairFunction,
    RepairRequest,
    SkillCommand,
    run_repair_round,
    run_skill_command,
)
from runner_core.output.record import (
    LEVEL_SCHEMA,
    StepLog,
    normalization_warning,
    result_file_warning,
)
from runner_core.output.stages import (
    Attempt,
    Candidate,
    ChainContext,
    RepairRounds,
    parse_candidate,
    repair_candidate,
)
from runner_core.output.validate import OutputSchemaError, build_validator, error_record
from runner_core.output.workspace import (
    OUTPUT_FILE,
    RESULT_FILE,
    VALIDATION_FILE,
    RawOutput,
    ensure_schema_file,
    read_result_file,
    write_raw_output,
    write_results,
)


@dataclass
class OutputOutcome:
    """What the chain concluded about a run's output."""

    ok: bool
    data: Any
    warnings: list[dict[str, Any]]
    validation_errors: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    normalization_level: str | None  # None: valid as produced (or not valid at all)
    raw_output_path: str
    # result_file | envelope | engine_text | normalizer | fallback | repair
    source: str | None = None
    record: dict[str, Any] = field(default_factory=dict)  # the content of result/validation.json
    repaired: RepairRounds = field(default_factory=RepairRounds)  # what N3 rounds added up to


def run_output_chain(
    run_dir: Path,
    output_schema: dict[str, Any],
    *,
    engine_text: str | None,
    envelope: Any = None,
    normalizer: SkillCommand | None = None,
    fallback: SkillCommand | None = None,
    repair: RepairFunction | None = None,
    repair_rounds: int = 0,
    schema_path: Path | None = None,
    engine_text_file: Path | None = None,
    result_file: Path | None = RESULT_FILE,
) -> OutputOutcome:
    """Turn an engine's output into data valid against `output_schema`, or say why it is not.

    Writes raw/engine_output.txt (and raw/engine_output.json for an envelope) first, then
    result/validation.json always and result/output.json when the output validates.
    `engine_text_file`: a file already holding exactly `engine_text` (a script's stdout),
    hard-linked as raw/engine_output.txt instead of written again. `result_file`: where the
    skill writes its result in the run (None: it prints it, `result_mode: stdout`).
    """
    raw = write_raw_output(run_dir, engine_text, envelope, engine_text_file)
    log = StepLog()
    started = time.perf_counter()
    try:
        validator = build_validator(output_schema)
    except OutputSchemaError as exc:
        errors = [error_record("$", f"output schema is invalid: {exc}", "schema")]
        log.add("check output schema", LEVEL_SCHEMA, ok=False, started=started, errors=errors)
        return _finish(run_dir, raw, log, None, errors, [])
    ctx = ChainContext(run_dir, validator, log)
    result_text = read_result_file(run_dir, result_file) if result_file is not None else None
    candidates = _candidates(result_text, envelope, engine_text)
    attempts = _attempts(
        ctx,
        candidates,
        output_schema,
        raw,
        schema_path,
        normalizer,
        fallback,
        repair,
        repair_rounds,
    )
    winner = next((a for a in attempts if a is not None and a.ok), None)
    if winner is None:
        best = ctx.best()
        no_output = [error_record("$", "the engine produced no output", "parse")]
        errors = best.errors if best else no_output
        return _finish(run_dir, raw, log, None, errors, [], ctx.repaired)
    return _finish(run_dir, raw, log, winner, [], _warnings(ctx, winner), ctx.repaired)


def _candidates(result_text: str | None, envelope: Any, engine_text: str | None) -> list[Candidate]:
    candidates = []
    if result_text is not None:
        candidates.append(Candidate("result_file", result_text))
    if isinstance(envelope, str):
        candidates.append(Candidate("envelope", envelope))
    elif envelope is not None:
        candidates.append(Candidate("envelope", None, envelope))
    if engine_text is not None:
        candidates.append(Candidate("engine_text", engine_text))
    return candidates


def _attempts(
    ctx: ChainContext,
    candidates: list[Candidate],
    schema: Any,
    raw: RawOutput,
    schema_path: Path | None,
    normalizer: SkillCommand | None,
    fallback: SkillCommand | None,
    repair: RepairFunction | None,
    repair_rounds: int,
) -> Iterator[Attempt | None]:
    """Yield attempts lazily, least normalized first; the caller stops at the first valid one."""
    for candidate in candidates:
        yield parse_candidate(ctx, candidate)
    for candidate in candidates:
        yield repair_candidate(ctx, candidate)
    for level, command, source in (("N1", normalizer, "normalizer"), ("N2", fallback, "fallback")):
        if command is not None:
            request = NormalizeRequest(
                level,
                ctx.run_dir,
                raw.primary_path,
                ensure_schema_file(ctx.run_dir, schema, schema_path),
                ctx.run_dir / RESULT_FILE,
                raw.envelope_path,
            )
            yield run_skill_command(ctx, command, request, source)
    if repair is None:
        return
    previous = ctx.best()
    for round_number in range(1, repair_rounds + 1):
        repair_request = RepairRequest(
            round_number,
            _repair_text(previous, raw),
            previous.errors if previous else [],
            schema,
            ctx.run_dir,
            raw.primary_path,
            ctx.repaired.session_id,
        )
        attempt = run_repair_round(ctx, repair, repair_request)
        previous = attempt or previous  # a round that failed outright leaves the input as it was
        yield attempt


def _repair_text(attempt: Attempt | None, raw: RawOutput) -> str:
    if attempt is not None and attempt.text is not None:
        return attempt.text
    return raw.primary_path.read_text(encoding="utf-8")


def _warnings(ctx: ChainContext, winner: Attempt) -> list[dict[str, Any]]:
    warnings = []
    if winner.level is not None:
        details: dict[str, Any] = {"source": winner.source, "fixes": winner.fixes}
        warnings.append(normalization_warning(winner.level, details))
    if winner.source in ("envelope", "engine_text"):
        for attempt in ctx.attempts:
            if attempt.source == "result_file" and attempt.level is None:
                warnings.append(result_file_warning(attempt.errors, winner.source))
    return warnings


def _finish(
    run_dir: Path,
    raw: RawOutput,
    log: StepLog,
    winner: Attempt | None,
    errors: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    repaired: RepairRounds | None = None,
) -> OutputOutcome:
    ok = winner is not None
    level = winner.level if winner else None
    source = winner.source if winner else None
    record: dict[str, Any] = {
        "ok": ok,
        "source": source,
        "normalization_level": level,
        "warnings": warnings,
        "validation_errors": errors,
        "steps": log.to_list(),
        "raw_output_path": raw.primary_path.relative_to(run_dir).as_posix(),
    }
    written = {OUTPUT_FILE: winner.value} if winner is not None else {}
    write_results(run_dir, {**written, VALIDATION_FILE: record})
    return OutputOutcome(
        ok,
        winner.value if winner else None,
        warnings,
        errors,
        record["steps"],
        level,
        str(raw.primary_path),
        source,
        record,
        repaired or RepairRounds(),
    )
