"""The runner's own stages of the output chain: parse + validate and N0 repair.

Each stage turns one source of output into an `Attempt`, validates it and records a step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from jsonschema.protocols import Validator

from runner_core.interaction import without_marker
from runner_core.output.parse import extract_json, iter_extracted, strip_fences
from runner_core.output.record import LEVEL_PARSE, LEVEL_VALIDATE, StepLog
from runner_core.output.repair import (
    FIX_DOUBLE_ENCODED,
    FIX_LATER_VALUE,
    decode_nested_json,
    repair_text,
)
from runner_core.output.validate import collect_errors, error_record, is_root_type_mismatch
from runner_core.tokens import add_tokens

# Bounds the validation work N0 does on a long, list-heavy transcript.
_MAX_VALUES_PER_TEXT = 50


@dataclass(frozen=True)
class Candidate:
    """One place the output may be: result/result.json, the envelope, or the engine's text."""

    source: str  # result_file | envelope | engine_text
    text: str | None  # None when the value is already structured (a parsed envelope)
    value: Any = None


@dataclass
class Attempt:
    """A value taken from a source at a normalization level, and how it validated."""

    source: str
    level: str | None  # None: as the skill produced it; else N0..N3
    text: str | None
    parsed: bool = False
    value: Any = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when a value was found and it validates."""
        return self.parsed and not self.errors

    def rank(self) -> tuple[bool, bool, int]:
        """Sort key for 'closest to valid': parsed, then of the right type, then fewest errors."""
        return (not self.parsed, is_root_type_mismatch(self.errors), len(self.errors))


@dataclass(frozen=True)
class RepairRounds:
    """What the repair rounds (N3) of a chain added up to: the session the last one continued
    and the tokens they used."""

    session_id: str | None = None
    tokens: dict[str, Any] | None = None

    def after(self, reply: Any) -> RepairRounds:
        """These rounds and one more (a runner_core.output.commands.RepairReply)."""
        return RepairRounds(
            reply.session_id or self.session_id, add_tokens(self.tokens, reply.tokens)
        )


@dataclass
class ChainContext:
    """State shared by the stages of one chain run."""

    run_dir: Path
    validator: Validator
    log: StepLog
    attempts: list[Attempt] = field(default_factory=list)
    repaired: RepairRounds = field(default_factory=RepairRounds)

    def check(self, attempt: Attempt) -> Attempt:
        """Validate a parsed attempt and remember it for choosing the best failure. The
        interactive completion marker is not part of the output: it is dropped first."""
        if attempt.parsed:
            attempt.value = without_marker(attempt.value)
            attempt.errors = collect_errors(self.validator, attempt.value)
        self.attempts.append(attempt)
        return attempt

    def best(self) -> Attempt | None:
        """The attempt closest to valid; the earliest wins a tie."""
        return min(self.attempts, key=Attempt.rank, default=None)


def parse_candidate(ctx: ChainContext, candidate: Candidate) -> Attempt:
    """Parse + validate: take the candidate's JSON as produced and validate it."""
    started = time.perf_counter()
    attempt = Attempt(candidate.source, None, candidate.text)
    how = "structured"
    if candidate.text is None:
        attempt.parsed, attempt.value = True, candidate.value
    elif (extracted := extract_json(candidate.text)) is not None:
        attempt.parsed, attempt.value, how = True, extracted.value, extracted.how
        # Taking JSON out of fences or prose is a (syntax-only) normalization: say so (N0).
        if how != "whole_text" or strip_fences(candidate.text) != candidate.text.strip():
            attempt.level = "N0"
            attempt.fixes = [
                "stripped_code_fence"
                if how == "fenced_block" or how == "whole_text"
                else "extracted_embedded_json"
            ]
    else:
        attempt.errors = [error_record("$", f"no JSON value found in {candidate.source}", "parse")]
    ctx.log.add(
        f"parse {candidate.source}",
        LEVEL_PARSE,
        ok=attempt.parsed,
        started=started,
        source=candidate.source,
        errors=attempt.errors,
        details={"how": how},
    )
    if attempt.parsed:
        started = time.perf_counter()
        ctx.check(attempt)
        ctx.log.add(
            f"validate {candidate.source}",
            LEVEL_VALIDATE,
            ok=attempt.ok,
            started=started,
            source=candidate.source,
            errors=attempt.errors,
        )
    else:
        ctx.attempts.append(attempt)
    return attempt


def repaired_values(text: str) -> Iterator[tuple[Any, list[str]]]:
    """Yield each JSON value in `text` after the N0 fixes, with the fixes that apply to it."""
    fixed = repair_text(text)
    for index, extracted in enumerate(islice(iter_extracted(fixed.text), _MAX_VALUES_PER_TEXT)):
        value, fixes = extracted.value, list(fixed.fixes)
        if (decoded := decode_nested_json(value)) is not None:
            value = decoded
            fixes.append(FIX_DOUBLE_ENCODED)
        if index:
            fixes.append(FIX_LATER_VALUE)
        yield value, fixes


def first_valid(
    ctx: ChainContext,
    source: str,
    level: str,
    text: str,
    values: Iterator[tuple[Any, list[str]]],
    seen: set[str],
) -> Attempt | None:
    """Validate unseen values (by `json_key`) until one passes; return it, else the best failure."""
    tried: list[Attempt] = []
    for value, fixes in values:
        key = json_key(value)
        if key in seen:
            continue  # it already failed validation; re-trying it only repeats the errors
        seen.add(key)
        attempt = ctx.check(Attempt(source, level, text, True, value, fixes=fixes))
        if attempt.ok:
            return attempt
        tried.append(attempt)
    return min(tried, key=Attempt.rank, default=None)


def json_key(value: Any) -> str:
    """A comparison key for JSON values; unlike ==, it tells `true` from `1`."""
    return json.dumps(value, sort_keys=True, default=str)


def repair_candidate(ctx: ChainContext, candidate: Candidate) -> Attempt | None:
    """N0: re-read the candidate's text with syntax fixes; None if it has no text to fix."""
    if candidate.text is None:
        return None
    started = time.perf_counter()
    seen = {json_key(a.value) for a in ctx.attempts if a.source == candidate.source and a.parsed}
    values = repaired_values(candidate.text)
    attempt = first_valid(ctx, candidate.source, "N0", candidate.text, values, seen)
    log_attempt(ctx, f"N0 repair {candidate.source}", "N0", attempt, started, candidate.source)
    return attempt


def log_attempt(
    ctx: ChainContext,
    name: str,
    level: str,
    attempt: Attempt | None,
    started: float,
    source: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record a normalization step from the attempt it produced (None: nothing to validate)."""
    if attempt is None:
        errors = [error_record("$", "no new JSON value after deterministic repair", "parse")]
        ctx.log.add(
            name, level, ok=False, started=started, source=source, errors=errors, details=details
        )
        return
    ctx.log.add(
        name,
        level,
        ok=attempt.ok,
        started=started,
        source=source,
        errors=attempt.errors,
        details={**(details or {}), "fixes": attempt.fixes},
    )
