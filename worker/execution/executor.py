"""Execute one claimed run: prepare it, run its entrypoint, the output chain and the artifact
index, and record what happened.

Every failure becomes a RunOutcome with an error code; nothing here raises to the task
except the signals that must unwind it (SIGTERM, soft time limit), which `finally` covers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner_core import scratch
from runner_core.artifact_manifest import resolve_manifests
from runner_core.artifacts import index_artifacts, other_writes, write_manifest
from runner_core.error_codes import ErrorCode
from runner_core.events import EventLog
from runner_core.in_run import write_in_run
from runner_core.interaction import Pending, has_done_marker
from runner_core.openevo.engines import model_ignored
from runner_core.output import OutputOutcome, run_output_chain
from runner_core.output.hints import failure_hints, summary
from runner_core.output.stages import RepairRounds
from runner_core.results import (
    RunEnd,
    RunError,
    result_document,
    run_warning,
    stderr_tail,
    write_failure,
    write_result,
)
from runner_core.run_pool import RunDirPool
from runner_core.runtime_options import RuntimeOptions, unused_keys
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.skills.locks import locks_dir, skill_lock
from runner_core.statuses import RunStatus
from runner_core.store.models import Run
from runner_core.tokens import add_tokens, priced, prices_at
from runner_core.workspace import RunPaths, create_run_dir, disk_full, open_run_file
from runner_core.workspace_reuse import copy_to_namespace
from worker.execution.boxing import network_warning
from worker.execution.contexts import EntryContext, EntryResult, run_variables
from worker.execution.engine import tokens_so_far
from worker.execution.entrypoint import run_entrypoint
from worker.execution.failures import RunFailed
from worker.execution.lease import aware
from worker.execution.network import bridge_warning
from worker.execution.prepare import (
    enter_workspace,
    resumed_context,
    stage_skill,
    write_inputs,
)
from worker.execution.run_layout import PoolLayout, run_relative
from worker.execution.script import skill_command
from worker.execution.supervisor import Watch
from worker.execution.turns import AwaitUser, Resume, decide, is_interactive, turn_number

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """What one execution of a run came to (a turn of an interactive run)."""

    status: str
    error: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    session_handle: str | None = None
    token_usage: dict[str, Any] | None = None
    pending: Pending | None = None  # the question of a turn that ended waiting_user
    data: Any = None
    artifacts: list[str] = field(default_factory=list)

    def end(self) -> RunEnd:
        """The run's end as its row records it."""
        return RunEnd(
            self.status,
            self.error,
            self.warnings,
            self.timings,
            self.session_handle,
            self.token_usage,
        )


class RunExecutor:
    """Runs one run end to end. `make_watch` gives each process a fresh watch (deadline +
    cancel poll); `unwinds`: the exceptions that must reach the task as they are (Celery's
    soft time limit), which records the end itself; `cancel_error`: the error a canceled run
    ends with (the reason its cancel request recorded, else CANCELED_BY_USER)."""

    def __init__(
        self,
        settings: Settings,
        run: Run,
        make_watch: Callable[[SkillPackage], Watch],
        request_payload: dict[str, Any] | None = None,
        load_resume: Callable[[], Resume | None] = lambda: None,
        events: EventLog | None = None,
        unwinds: tuple[type[Exception], ...] = (),
        record_skill: Callable[[str | None, str | None], object] | None = None,
        cancel_error: Callable[[], RunError] | None = None,
    ) -> None:
        self.cancel_error = cancel_error
        self.unwinds = unwinds
        # records the skill version the run runs and its cache key (run row) when they are
        # not the ones the run was created with
        self.record_skill = record_skill
        self.events = events  # the run's event log (None: no events recorded)
        self.settings, self.run, self.make_watch = settings, run, make_watch
        self.request_payload = request_payload  # the client's JSON body, for input.json
        self.load_resume = load_resume  # the next turn of an interactive run, if it is one
        self.resume: Resume | None = None
        self.interactive = is_interactive(run) and run.engine is not None
        self.turn = turn_number(run)
        # made (or taken ready) in _prepare; in local scratch when SKILL_RUNNER_WORK_DIR is set
        self.shared = settings.runs_dir / run.id
        self.paths = RunPaths(
            settings.work_runs_dir / run.id, self.shared if settings.work_dir else None
        )
        self.pool = RunDirPool(settings.run_pool_dir, settings.run_pool)
        self.pool_layout: PoolLayout | None = None  # what the next run of this skill needs
        self.timings: dict[str, float] = {}
        self.warnings: list[dict[str, Any]] = []
        self.data: Any = None
        self.artifacts: list[str] = []
        self.entry: EntryResult | None = None
        self.repaired = RepairRounds()  # what the output chain's repair rounds added up to
        self.logs_from: tuple[int, int] | None = None  # where this turn's output starts in logs/

    def execute(self) -> RunOutcome:
        """Execute and always write result/result.json in the run directory's shape."""
        try:
            ctx = replace(self._timed("prepare", self._prepare), events=self.events)
            if self.events is not None:
                self.events.state_changed(RunStatus.QUEUED, RunStatus.RUNNING, f"turn {self.turn}")
            self._process(ctx)
            if self.events is not None and self.entry is not None and self.entry.text:
                self.events.emit("assistant.message.final", {"text": self.entry.text})
            self._timed(
                "output", self._turn_output if self.interactive else self._output_chain, ctx
            )
            self._timed("artifacts", self._index_artifacts, ctx.pkg)
            outcome = RunOutcome(RunStatus.SUCCEEDED, None, self.warnings)
        except AwaitUser as ask:
            self.warnings.extend([ask.warning] if ask.warning else [])
            outcome = RunOutcome(RunStatus.WAITING_USER, None, self.warnings, pending=ask.pending)
        except RunFailed as exc:
            outcome = RunOutcome(exc.status, self._failure(exc).as_dict(), self.warnings)
        except self.unwinds:
            raise  # the task records TIMEOUT (the process group is already killed)
        except Exception as exc:  # unexpected: recorded on the run, never lost
            outcome = RunOutcome(RunStatus.FAILED, self._unexpected(exc), self.warnings)
        outcome = self._write_result(replace(outcome, data=self.data, artifacts=self.artifacts))
        outcome = self._timed("publish", self._publish, outcome)
        if self.events is not None:
            for warning in self.warnings:
                self.events.emit("diagnostic.warning", warning)
        warnings, tokens = outcome.warnings, self._token_usage()
        if self.resume is not None:  # earlier turns' warnings and tokens are the run's too
            warnings = list(self.run.warnings or []) + warnings
            tokens = add_tokens(self.run.token_usage, tokens)
        return replace(
            outcome,
            warnings=warnings,
            timings=self.timings,
            session_handle=self._session_handle(),
            token_usage=tokens,
        )

    def _failure(self, exc: RunFailed) -> RunError:
        """The error of a failed step; a cancel's says why it was asked (its process saw only
        the flag)."""
        if exc.status != RunStatus.CANCELED or self.cancel_error is None:
            return exc.error
        try:
            return self.cancel_error()
        except Exception:  # the database away: the cancel is still one
            log.warning("run %s: its cancel reason was not read", self.run.id, exc_info=True)
            return exc.error

    def _write_result(self, outcome: RunOutcome) -> RunOutcome:
        """result/result.json of an ended run (a waiting run has no result yet). A document that
        cannot be written leaves the row to say what happened: output that cannot be stored is
        no success."""
        try:
            if not self.paths.root.is_dir():  # a run that failed early has none
                create_run_dir(self.paths.root.parent, self.paths.root.name)
            if (
                outcome.status != RunStatus.WAITING_USER
            ):  # the bundle is built on its first download
                error = outcome.error
                if error is not None:
                    error = {**error, "stderr": stderr_tail(self.paths)}
                document = result_document(
                    outcome.status, outcome.data, outcome.artifacts, outcome.warnings, error
                )
                write_result(self.paths, document)
                copy_to_namespace(self.paths.root, self.run.skill_id, document)
            return outcome
        except OSError as exc:
            error = self._unexpected(exc)
            if outcome.status == RunStatus.SUCCEEDED:
                return replace(outcome, status=RunStatus.FAILED, error=error)
            if outcome.status == RunStatus.FAILED and disk_full(exc):
                # a run that failed on a full disk (a script that could not write its output
                # exits 1) failed for want of space: STORAGE_FULL says so, and retrying later
                # helps; what the run itself reported stays beside it
                return replace(outcome, error={**error, "run_error": outcome.error})
            if outcome.error is not None:
                return replace(
                    outcome, error={**outcome.error, "result_not_written": error["message"]}
                )
            return outcome

    def _publish(self, outcome: RunOutcome) -> RunOutcome:
        """A run in local scratch: its files to the shared run directory before its status is
        recorded. Files that cannot be stored there fail the run (its result is written to
        the shared directory alone, and a waiting run could not resume)."""
        if self.paths.shared is None:
            return outcome
        try:
            scratch.publish(self.paths.root, self.shared)
            return outcome
        except OSError as exc:
            error = self._unexpected(exc)
            scratch.remove_quietly(self.paths.root)
            write_failure(RunPaths(self.shared), RunStatus.FAILED, error)
            return RunOutcome(RunStatus.FAILED, error, self.warnings)

    def publish_cut_short(self) -> None:
        """A run ended by a signal (the task records it): what its scratch holds goes to the
        shared directory as it is; the logs are there already. Never raises."""
        if self.paths.shared is None:
            return
        try:
            scratch.publish(self.paths.root, self.shared)
        except Exception:
            log.warning("run %s: its files were not moved to the shared runs/", self.run.id)
            scratch.remove_quietly(self.paths.root)

    def tokens_cut_short(self) -> dict[str, Any] | None:
        """The run's tokens when a signal ended it (the task records that end; call it before
        `publish_cut_short`): the engine turn's, read from what its CLI recorded before it was
        killed when the turn itself was cut, and earlier turns'. Never raises."""
        tokens = self._token_usage()
        if self.entry is None and self.run.engine is not None and self.logs_from is not None:
            tokens = self._priced(tokens_so_far(self.paths, self.run.engine, self.logs_from))
        return add_tokens(self.run.token_usage, tokens) if self.resume is not None else tokens

    def refill_pool(self) -> int:
        """After the run: make the directories the next runs of this skill version will take
        (under the skill's shared lock, so no install swaps the files being copied)."""
        layout = self.pool_layout
        if layout is None or self.settings.run_pool <= 0:
            return 0
        with skill_lock(locks_dir(self.settings.data_dir), layout.skill_id, shared=True):
            return self.pool.fill(layout.key, layout.build)

    def _unexpected(self, exc: Exception) -> dict[str, Any]:
        """The error of a failure no step expected: a full disk says so (STORAGE_FULL), the
        rest is INTERNAL_ERROR with the exception (logged with its traceback)."""
        if disk_full(exc):
            log.error("run %s: no space left for its files (%s)", self.run.id, exc)
            where = f" ({self._relative(str(exc.filename))})" if exc.filename else ""
            message = f"the disk holding the run's directory is full: {exc.strerror}{where}"
            return RunError(ErrorCode.STORAGE_FULL, message).as_dict()
        log.exception("run %s crashed", self.run.id)
        return RunError(ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}").as_dict()

    def _relative(self, path: str) -> str:
        """A path shown to clients: relative to the run directory (local or shared)."""
        return run_relative(run_relative(path, self.paths.root), self.shared)

    def _timed(self, name: str, fn, *args):
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.timings[name] = round(time.perf_counter() - started, 4)

    def _prepare(self) -> EntryContext:
        self.resume = self.load_resume() if self.interactive else None
        run_variables(self.settings, self.run)  # each turn: fail at once when they are lost
        ignored = unused_keys(self.run.runtime_options) if self.resume is None else []
        if ignored:  # said once, on the first turn
            self.warnings.append(
                run_warning(
                    ErrorCode.RUNTIME_OPTION_IGNORED,
                    "runtime_options keys this service does not act on were ignored: "
                    + ", ".join(ignored),
                    {"keys": ignored},
                )
            )
        unused = (
            model_ignored(self.run.engine, self.request_payload) if self.resume is None else None
        )
        self.warnings.extend([unused] if unused else [])
        if self.paths.shared is not None:
            uploads = self.settings.requests_dir / self.run.request_id / "uploads"
            scratch.enter(self.shared, self.paths.root, uploads, self.resume is not None)
        if self.resume is not None:
            return resumed_context(self.settings, self.run, self.paths, self.make_watch)
        staged = stage_skill(self.settings, self.run, self.paths, self.pool)
        self.pool_layout = staged.pool_layout  # refilled even when this run's inputs fail
        changed = (staged.version, staged.cache_key) != (self.run.skill_version, self.run.cache_key)
        if changed and self.record_skill is not None:
            self.record_skill(staged.version, staged.cache_key)
        inputs = write_inputs(self.settings, self.run, self.paths, staged.pkg, self.request_payload)
        enter_workspace(self.settings, self.run, self.paths)
        return EntryContext(
            self.run, self.paths, staged.pkg, inputs, self.settings, self.make_watch
        )

    def _process(self, ctx: EntryContext) -> None:
        """Run the entrypoint; its own timings come before the step's total."""
        if self.resume is None:  # later turns keep the first turn's warnings
            warning = network_warning(
                ctx.watch().box,
                ctx.pkg,
                self.run.engine,
                self.settings.engine_network,
                self.settings.network_on,
            )
            self.warnings.extend([warning] if warning else [])
            bridge = bridge_warning(ctx, ctx.watch().box, self.run.engine)
            self.warnings.extend([bridge] if bridge else [])
        started = time.perf_counter()
        self.logs_from = _log_sizes(ctx.paths.logs)
        try:
            self.entry = run_entrypoint(ctx, self.resume)
        finally:
            if self.entry is not None:
                self.timings.update(self.entry.timings)
            self.timings["process"] = round(time.perf_counter() - started, 4)
        if self.entry.failure is not None:
            raise self.entry.failure

    def _session_handle(self) -> str | None:
        """The engine session at the end: a repair round may have continued it."""
        if self.entry is None:
            return None
        return self.repaired.session_id or self.entry.session_handle

    def _token_usage(self) -> dict[str, Any] | None:
        """The tokens of the engine's first turn and of any repair rounds."""
        if self.entry is None:
            return None
        return self._priced(add_tokens(self.entry.tokens, self.repaired.tokens))

    def _priced(self, tokens: dict[str, Any] | None) -> dict[str, Any] | None:
        """A turn's counts with their cost from the operator's price table, if it names the
        run's model."""
        prices = prices_at(self.settings.prices_file)
        return priced(tokens, prices, self.run.engine, self.run.model)

    def _turn_output(self, ctx: EntryContext) -> None:
        """An interactive turn: the done marker runs the whole output chain; without it, a
        valid output (no fallback, no repair) completes with a warning, else the agent asked."""
        assert self.entry is not None  # set by _process, which ran first
        if has_done_marker(self.entry.text):
            return self._output_chain(ctx)
        soft = self._chain(ctx, complete=False)
        warning = decide(self.entry.text, self.turn, ctx.pkg.loaded_manifest.max_attempt, soft)
        self.data = soft.data
        self.warnings.extend([*soft.warnings, *([warning] if warning else [])])

    def _chain(self, ctx: EntryContext, complete: bool = True) -> OutputOutcome:
        """The output chain; `complete=False` stops before the fallback and repair steps."""
        paths, pkg, entry = ctx.paths, ctx.pkg, self.entry
        assert entry is not None  # set by _process, which ran first
        manifest = pkg.loaded_manifest
        written = manifest.entrypoint.result_path
        kept = open_run_file(paths.root, written.as_posix()) if written is not None else None
        if kept is not None:  # a copy (N1/N2 commands may rewrite it in place), never a link's
            with kept:
                write_in_run(paths.root, "raw/skill_result.json", kept.read())
        return run_output_chain(
            paths.root,
            pkg.output_schema,
            engine_text=entry.text,
            envelope=entry.envelope,
            normalizer=skill_command(ctx, manifest.normalizer),
            fallback=skill_command(ctx, manifest.fallback) if complete else None,
            repair=entry.repair if complete else None,
            repair_rounds=self._repair_rounds() if complete else 0,
            schema_path=pkg.root / manifest.schemas["output"],
            engine_text_file=entry.text_file,
            result_file=written,
        )

    def _output_chain(self, ctx: EntryContext) -> None:
        outcome = self._chain(ctx)
        self.repaired = outcome.repaired
        paths = ctx.paths
        self.warnings.extend(outcome.warnings)
        if not outcome.ok:
            raw_output = run_relative(outcome.raw_output_path, paths.root)
            errors = outcome.validation_errors
            raise RunFailed(
                ErrorCode.OUTPUT_VALIDATION_FAILED,
                "the output does not match the skill's output schema" + summary(errors),
                {
                    "validation_errors": errors,
                    "raw_output_path": raw_output,
                    "validation_record": "result/validation.json",
                    **failure_hints(errors, _answer_file(paths.root, raw_output)),
                },
            )
        self.data = outcome.data

    def _repair_rounds(self) -> int:
        """N3 is off unless the request or the server turns it on (bounded to 3 rounds)."""
        if self.entry is None or self.entry.repair is None:
            return 0
        options = RuntimeOptions.from_dict(self.run.runtime_options)
        return options.repair_rounds_or(self.settings.repair_rounds)

    def _index_artifacts(self, pkg: SkillPackage) -> None:
        listed = resolve_manifests(self.paths.root, self.data, pkg.artifact_manifests)
        manifest = index_artifacts(self.paths.root, pkg.artifacts, listed.roles)
        manifest.warnings.extend(listed.warnings)
        if self.run.started_at is not None:  # what the skill wrote outside its outputs
            manifest.other_writes, manifest.other_writes_truncated = other_writes(
                self.paths.root, aware(self.run.started_at).timestamp()
            )
        write_manifest(self.paths.root, manifest)
        self.artifacts = [a.path for a in manifest.artifacts]
        self.warnings.extend(
            run_warning(w["code"], w.get("message", ""), {"path": w["path"]})
            for w in manifest.warnings
        )
        if manifest.missing_required or listed.missing_required:
            missing = [s.pattern for s in manifest.missing_required] + listed.missing_required
            raise RunFailed(
                ErrorCode.ARTIFACT_MISSING,
                "required artifacts were not produced: " + ", ".join(missing),
                {"missing": missing},
            )


def _log_sizes(logs: Path) -> tuple[int, int]:
    """Where the next process's output starts in the run's stdout and stderr logs."""
    out, err = (logs / "stdout.txt", logs / "stderr.txt")
    return (out.stat().st_size if out.exists() else 0, err.stat().st_size if err.exists() else 0)


def _answer_file(run_dir: Path, raw_output: str) -> str:
    """Where the answer the hints are about is: the result file the skill wrote (kept as
    raw/skill_result.json) when there was one, else the engine's raw output."""
    kept = "raw/skill_result.json"
    return kept if (run_dir / kept).is_file() else raw_output
