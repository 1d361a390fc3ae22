"""Prompt and hybrid entrypoints: render the prompt, install the skill where the engine CLI
discovers it, drive the CLI under the supervisor, and hand its output to the output chain."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner_core.budget import Budget, spent_of
from runner_core.budget import message as budget_message
from runner_core.egress import provider_endpoints
from runner_core.engines import get_adapter
from runner_core.engines.base import EngineAdapter, EngineContext, EngineOutput, ProcessResult
from runner_core.engines.config import EngineConfigError, load_engine_config
from runner_core.engines.setting_types import check_setting_types
from runner_core.engines.streams import read_output
from runner_core.error_codes import ErrorCode
from runner_core.in_run import write_in_run
from runner_core.output import RepairReply, RepairRequest
from runner_core.prompts import PromptContext, PromptError, patch_skill_md, render_prompt
from runner_core.runtime_options import RuntimeOptions
from runner_core.tokens import add_tokens, priced, prices_at
from runner_core.workspace import (
    RunPaths,
    append_log,
    install_skill_copy,
    write_git_marker,
    write_json_in,
)
from worker.execution.boxing import boxes_engine
from worker.execution.contexts import EntryContext, EntryResult
from worker.execution.dependencies import provide_dependencies
from worker.execution.failures import RunFailed, process_failure, with_model_error
from worker.execution.output_tail import run_streamed
from worker.execution.supervisor import run_command
from worker.execution.turns import Resume, session_gone

log = logging.getLogger(__name__)


def checked_config(
    engine: str, model: str | None, options: RuntimeOptions, skill_dir: Path
) -> dict[str, Any]:
    """The run's merged engine config, checked as its job's creation checked it: a layer that
    does not load, or a CLI setting of the wrong type (say an operator's file changed since),
    raises EngineConfigError before the CLI starts."""
    sent = options.engine_config(engine)
    user = {"model": model, "runtime_options": options.as_dict(), f"{engine}_config": sent}
    config = load_engine_config(engine, skill_dir=skill_dir, user=user)
    check_setting_types(engine, config.get("settings") or {}, skill_dir=skill_dir, sent=sent)
    return config


def run_engine(entry: EntryContext, resume: Resume | None = None) -> EntryResult:
    """Run the skill through the run's engine: a first turn, or with `resume` the next turn of
    an interactive run's session. The answer is the final message; the CLI's envelope goes to
    raw/engine_envelope.json. Raises RunFailed before the CLI starts."""
    run, paths, pkg = entry.run, entry.paths, entry.pkg
    assert run.engine is not None  # the API names an engine for every run that is not a script
    setup_started = time.perf_counter()
    try:
        adapter = get_adapter(run.engine)
    except (KeyError, ImportError, AttributeError) as exc:
        raise RunFailed(
            ErrorCode.ENGINE_UNAVAILABLE, f"engine '{run.engine}' has no adapter: {exc}"
        ) from exc
    options = RuntimeOptions.from_dict(run.runtime_options)
    mode = options.execution_mode
    prompt_ctx = PromptContext(
        entry.inputs.input, entry.inputs.parameter, paths.root, run.engine, mode
    )
    try:
        config = checked_config(run.engine, run.model, options, pkg.root)
        if resume is None:
            prompt = render_prompt(pkg, prompt_ctx)
            patch_skill_md(pkg.root, pkg, prompt_ctx)
    except PromptError as exc:
        raise RunFailed(exc.code, str(exc)) from exc
    except EngineConfigError as exc:
        raise RunFailed(ErrorCode.ENGINE_CONFIG_INVALID, str(exc)) from exc
    if resume is None:
        write_in_run(paths.logs.parent, "logs/prompt.txt", prompt.encode("utf-8"))
        install_skill_copy(pkg.root, paths, adapter.skill_dirs)
        write_git_marker(paths.root)
    else:
        prompt = resume.prompt
        with append_log(paths.logs / "prompt.txt") as fh:  # not through a link the run left
            fh.write(f"\n\n--- turn {resume.turn} ---\n{prompt}".encode())
    ctx = EngineContext(
        run_dir=paths.root,
        skill_id=pkg.id,
        prompt=prompt,
        config=config,
        model=run.model or config.get("model"),
        output_schema_path=pkg.root / pkg.loaded_manifest.schemas["output"],
        execution_mode=mode,
        session_id=resume.session_id if resume else None,
        boxed=boxes_engine(entry.watch(engine=True).box),
    )
    adapter = provide_dependencies(entry, adapter)  # runtime.dependencies for its shell
    spec = adapter.build_command(ctx)
    timings = {"engine_setup": round(time.perf_counter() - setup_started, 4)}
    # earlier turns' tokens count against the budget too
    spending = Spending(entry, adapter, options.budget, run.token_usage if resume else None)
    result = run_streamed(
        entry,
        spec,
        run.engine,
        spending.over if options.budget else None,
        provider_endpoints(run.engine, config),
    )
    # wall clock (epoch s) when the CLI started: a reply's latency to its turn is read from it
    timings["engine_started_at"] = round(result.started, 4)
    if result.cut_short:  # the stop is the failure; the tokens spent before it still count
        written = written_output(adapter, result)
        tokens = written.tokens if written is not None else None
        failure = process_failure(result, ErrorCode.ENGINE_FAILED)
        if result.budget_exceeded:
            failure = spending.failure(tokens)
        elif result.timed_out and failure is not None and written is not None:
            failure = with_model_error(failure, written.error)
        return EntryResult(None, timings=timings, tokens=tokens, failure=failure)
    output = adapter.parse_output(result)
    if output.error is not None:
        failure = RunFailed(
            output.error.code, output.error.message, {"engine": run.engine, **output.error.details}
        )
        if resume is not None:
            failure = _resume_failure(result, failure)
        return EntryResult(
            None,
            session_handle=output.session_id or (resume.session_id if resume else None),
            timings=timings,
            usage=output.usage,
            tokens=output.tokens,
            failure=failure,
        )
    if output.envelope is not None:
        # The CLI's own envelope (session, stats, usage) is kept for audit; it is metadata, not
        # an answer, so it is not offered to the output chain as a candidate.
        write_json_in(paths.root, "raw/engine_envelope.json", output.envelope)
    session = output.session_id or (resume.session_id if resume else None)
    spending.add(output.tokens)  # what repair rounds start from
    return EntryResult(
        output.final_text,
        session_handle=session,
        timings=timings,
        repair=EngineRepair(entry, adapter, ctx, session, spending),
        usage=output.usage,
        tokens=output.tokens,
    )


def tokens_written(adapter: EngineAdapter, result: ProcessResult) -> dict[str, Any] | None:
    """The tokens a CLI stopped from outside recorded before it stopped (its output so far,
    its session log); None when there are none or they cannot be read: how the run ended does
    not depend on them."""
    written = written_output(adapter, result)
    return written.tokens if written is not None else None


def written_output(adapter: EngineAdapter, result: ProcessResult) -> EngineOutput | None:
    """What a CLI stopped from outside wrote before it stopped, parsed; None when it cannot
    be read."""
    try:
        return adapter.parse_output(result)
    except Exception:
        log.warning("the output of %s was not read", adapter.name, exc_info=True)
        return None


def tokens_so_far(
    paths: RunPaths, engine: str, logs_from: tuple[int, int]
) -> dict[str, Any] | None:
    """The tokens of the run's engine turn that a signal cut short (its process group already
    killed): what the CLI wrote from `logs_from` (stdout, stderr offsets) on, and its session
    log in the run directory."""
    try:
        adapter = get_adapter(engine)
    except (KeyError, ImportError, AttributeError):
        return None
    logs = paths.logs
    stopped = ProcessResult(
        None,
        logs / "stdout.txt",
        logs / "stderr.txt",
        0.0,
        0.0,
        canceled=True,
        stdout_from=logs_from[0],
        stderr_from=logs_from[1],
        cwd=paths.root,
    )
    return tokens_written(adapter, stopped)


def _resume_failure(result: ProcessResult, failure: RunFailed) -> RunFailed:
    """A resumed turn whose CLI could not find its session: SESSION_RESUME_FAILED, in the
    CLI's words."""
    words = session_gone(
        read_output(result.stderr_path, result.stderr_from),
        read_output(result.stdout_path, result.stdout_from),
        failure.message,
    )
    if words is None:
        return failure
    return RunFailed(
        ErrorCode.SESSION_RESUME_FAILED,
        f"the engine could not resume the session: {words}",
        {"engine_error": failure.code},
    )


REPAIR_PROMPT = """Your last answer does not match the required JSON Schema.
Validation errors:
{errors}

Answer again with ONLY the corrected JSON object (no prose, no code fence). The schema:
{schema}"""


class Spending:
    """A run's tokens against its budget while its turn runs: earlier turns', this turn's
    finished CLI invocations (the turn, repair rounds) and the running one's so far, priced
    like the run's record (runner_core.tokens)."""

    def __init__(
        self,
        entry: EntryContext,
        adapter: EngineAdapter,
        budget: Budget | None,
        before: dict[str, Any] | None,
    ) -> None:
        self.adapter, self.budget, self.spent = adapter, budget, before
        self.engine, self.model = entry.run.engine, entry.run.model
        self.prices = prices_at(entry.settings.prices_file)

    def add(self, tokens: dict[str, Any] | None) -> None:
        self.spent = add_tokens(self.spent, self._priced(tokens))

    def reached(self, running: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """What was spent against the budget, once reached (with the running CLI's tokens)."""
        if self.budget is None:
            return None
        return self.budget.exceeded(add_tokens(self.spent, self._priced(running)))

    def over(self, so_far: ProcessResult) -> bool:
        """Watch.over_budget: the running CLI's answers so far, from what it wrote."""
        return self.reached(tokens_written(self.adapter, so_far)) is not None

    def failure(self, tokens: dict[str, Any] | None) -> RunFailed:
        found = self.reached(tokens) or {"budget": self.budget.as_dict() if self.budget else {}}
        found.setdefault("spent", spent_of(add_tokens(self.spent, self._priced(tokens))))
        return RunFailed(ErrorCode.BUDGET_EXCEEDED, budget_message(found), found)

    def _priced(self, tokens: dict[str, Any] | None) -> dict[str, Any] | None:
        return priced(tokens, self.prices, self.engine, self.model)


class EngineRepair:
    """N3: re-ask the same engine session with the validation errors (one CLI turn a round).
    Each round answers its text, the session it continued and its tokens (a RepairReply)."""

    def __init__(
        self,
        entry: EntryContext,
        adapter: EngineAdapter,
        ctx: EngineContext,
        session_handle: str | None,
        spending: Spending | None = None,
    ) -> None:
        self.entry, self.adapter, self.ctx = entry, adapter, ctx
        self.spending = spending
        self.session_handle = session_handle  # the turn's session, which the first round continues

    def __call__(self, request: RepairRequest) -> RepairReply:
        errors = "\n".join(f"- {e.get('path')}: {e.get('message')}" for e in request.errors)
        prompt = REPAIR_PROMPT.format(
            errors=errors or "- (no JSON found)",
            schema=json.dumps(self.entry.pkg.output_schema, ensure_ascii=False),
        )
        session = request.session_id or self.session_handle
        spending = self.spending
        if spending is not None and spending.reached():  # no round past the budget
            found = spending.reached()
            return RepairReply(None, session, None, f"{ErrorCode.BUDGET_EXCEEDED}: {found}")
        spec = self.adapter.build_command(replace(self.ctx, prompt=prompt, session_id=session))
        logs, name = self.entry.paths.logs, f"repair_{request.round}"
        watch = self.entry.watch(engine=True)
        if spending is not None and spending.budget is not None:
            watch = replace(watch, over_budget=spending.over)
        result = run_command(spec, logs / f"{name}_stdout.txt", logs / f"{name}_stderr.txt", watch)
        output = self.adapter.parse_output(result)
        if spending is not None:
            spending.add(output.tokens)
        if output.error is not None:
            error = f"{output.error.code}: {output.error.message}"
            return RepairReply(None, session, output.tokens, error)
        return RepairReply(output.final_text, output.session_id or session, output.tokens)
