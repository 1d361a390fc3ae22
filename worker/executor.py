"""Execute one claimed run: workspace, inputs, entrypoint, output chain, artifacts.

Every failure becomes a RunOutcome with an error code; nothing here raises to the task
except the signals that must unwind it (SIGTERM, soft time limit), which `finally` covers.
"""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from runner_core.artifacts import index_artifacts, write_manifest
from runner_core.engines import get_adapter
from runner_core.inputs import InputError, resolve_inputs
from runner_core.output import NormalizeRequest, run_output_chain
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.run_pool import RunDirPool, pool_key
from runner_core.skill_copy import SkillCopies
from runner_core.skills.memo import load_skill_signed, relocated, tree_signature
from runner_core.skills.locks import locks_dir, skill_lock
from runner_core.store.models import Run
from runner_core.workspace import (
    SNAPSHOT_DIR, STORAGE_FULL, RunPaths, create_run_dir, disk_full, link_uploads, snapshot_skill,
    write_git_marker, write_json,
)
from worker.engine_entry import run_engine
from worker.script_entry import script_command, uv_cache_dir
from worker.supervisor import run_command

log = logging.getLogger(__name__)


class RunFailed(Exception):
    """A run ends here with `code` (and status failed unless told otherwise)."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None,
                 status: str = "failed") -> None:
        super().__init__(message)
        self.code, self.message, self.details, self.status = code, message, details or {}, status


@dataclass
class RunOutcome:
    status: str
    error: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    session_handle: str | None = None


class RunExecutor:
    """Runs one run end to end. `watch` is refreshed per process (deadline + cancel poll)."""

    def __init__(self, settings: Settings, run: Run, make_watch,
                 request_payload: dict[str, Any] | None = None) -> None:
        self.settings, self.run, self.make_watch = settings, run, make_watch
        self.request_payload = request_payload  # the client's JSON body, for input.json
        self.paths = RunPaths(settings.runs_dir / run.id)  # made (or taken ready) in _prepare
        self.pool = RunDirPool(settings.run_pool_dir, settings.run_pool)
        self.pool_layout: PoolLayout | None = None  # what the next run of this skill needs
        self.timings: dict[str, float] = {}
        self.warnings: list[dict[str, Any]] = []
        self.data: Any = None
        self.artifacts: list[str] = []
        self.session_handle: str | None = None
        self.repair = None  # N3 repair function, set by engine entrypoints
        self.engine_text_file: Path | None = None  # a script's stdout is its output text

    def execute(self) -> RunOutcome:
        """Execute and always write result/result.json in the seed's shape."""
        try:
            pkg = self._timed("prepare", self._prepare)
            text, envelope = self._timed("process", self._run_entrypoint, pkg)
            self._timed("output", self._output_chain, pkg, text, envelope)
            self._timed("artifacts", self._index_artifacts, pkg)
            outcome = RunOutcome("succeeded", None, self.warnings)
        except RunFailed as exc:
            error = {"code": exc.code, "message": exc.message, **exc.details}
            outcome = RunOutcome(exc.status, error, self.warnings)
        except SoftTimeLimitExceeded:
            raise  # unwinds to the task, which records TIMEOUT (the group is already killed)
        except Exception as exc:  # unexpected: recorded on the run, never lost
            outcome = RunOutcome("failed", self._unexpected(exc), self.warnings)
        try:
            if not self.paths.root.is_dir():  # a run that failed early has none
                create_run_dir(self.settings.runs_dir, self.run.id)
            self._write_result(outcome)  # the bundle is built on its first download
        except OSError as exc:
            # No result file: the API answers from the row, so the row must say what happened;
            # output that cannot be stored is no success.
            error = self._unexpected(exc)
            if outcome.status == "succeeded":
                outcome = RunOutcome("failed", error, self.warnings)
            elif outcome.error is not None:
                outcome.error = {**outcome.error, "result_not_written": error["message"]}
        outcome.timings = self.timings
        outcome.session_handle = self.session_handle
        return outcome

    def _unexpected(self, exc: Exception) -> dict[str, Any]:
        """The error of a failure no step expected: a full disk says so (STORAGE_FULL), the
        rest is INTERNAL_ERROR with the exception (logged with its traceback)."""
        if disk_full(exc):
            log.error("run %s: no space left for its files (%s)", self.run.id, exc)
            return {"code": STORAGE_FULL, "message": "the disk holding the run's directory is "
                    f"full: {exc.strerror} ({_run_relative(str(exc.filename), self.paths.root)})"}
        log.exception("run %s crashed", self.run.id)
        return {"code": "INTERNAL_ERROR", "message": f"{type(exc).__name__}: {exc}"}

    def _timed(self, name: str, fn, *args):
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.timings[name] = round(time.perf_counter() - started, 4)

    def _prepare(self) -> SkillPackage:
        source = skill_source(self.settings, self.run)
        if not (source / "SKILL.md").is_file():
            raise RunFailed("SKILL_NOT_FOUND", f"skill '{self.run.skill_id}' is not installed")
        # Shared lock: an install of this skill cannot swap it while it is being copied.
        with skill_lock(locks_dir(self.settings.data_dir), self.run.skill_id, shared=True):
            loaded, signature = load_skill_signed(source)  # validated once per version
            installed = self.run.kind == "job"  # one-off runs bring their own package
            layout = PoolLayout(source, self.run.skill_id, snapshot_dir(self.run, loaded),
                                git=is_engine_run(loaded), signature=signature,
                                copies=skill_copies(self.settings) if installed else None)
            if installed and loaded.health == "ok":  # one-off runs: no next run
                self.pool_layout = layout
            if self.pool_layout and self.pool.take(layout.key, self.paths.root):
                snapshot = layout.snapshot_in(self.paths.root)
            else:
                create_run_dir(self.settings.runs_dir, self.run.id)
                snapshot, _exact = layout.snapshot(self.paths)
        pkg = relocated(loaded, snapshot)
        if pkg.health != "ok":
            raise RunFailed("SKILL_INVALID", "; ".join(pkg.errors), {"errors": pkg.errors})
        request_dir = self.settings.requests_dir / self.run.request_id
        write_json(self.paths.input_json, self.request_payload or {
            "skill_id": self.run.skill_id, "parameter": self.run.parameter})
        link_uploads(request_dir / "uploads", self.paths)
        if (request_dir / "input_manifest.json").is_file():
            shutil.copy2(request_dir / "input_manifest.json", self.paths.root / "input_manifest.json")
        try:
            resolved = resolve_inputs(pkg.input_schema, pkg.parameter_schema, self.paths.uploads,
                                      self.run.input, self.run.parameter)
        except InputError as exc:
            raise RunFailed(exc.code, exc.message, exc.details) from exc
        write_json(self.paths.resolved_input, {"input": resolved.input,
                                               "parameter": resolved.parameter})
        self.resolved = resolved
        return pkg

    def refill_pool(self) -> int:
        """After the run: make the directories the next runs of this skill version will take
        (under the skill's shared lock, so no install swaps the files being copied)."""
        layout = self.pool_layout
        if layout is None or self.settings.run_pool <= 0:
            return 0
        with skill_lock(locks_dir(self.settings.data_dir), layout.skill_id, shared=True):
            return self.pool.fill(layout.key, layout.build)

    def _run_entrypoint(self, pkg: SkillPackage) -> tuple[str | None, Any]:
        entry = pkg.manifest.entrypoint
        if entry.type == "script":
            self.engine_text_file = self.paths.logs / "stdout.txt"
            return self._run_script(pkg, entry.script_command), None
        return run_engine(self, pkg)

    def _run_script(self, pkg: SkillPackage, command: str) -> str:
        spec = script_command(command, self.paths, pkg.root, self.run.id, self.run.request_id,
                              pkg.manifest.runtime, uv_cache=uv_cache_dir(self.settings.data_dir))
        result = run_command(spec, self.paths.logs / "stdout.txt", self.paths.logs / "stderr.txt",
                             self.make_watch(pkg))
        check_process(result, "SKILL_SCRIPT_FAILED", self.paths)
        return result.stdout_path.read_text(encoding="utf-8", errors="replace")

    def _output_chain(self, pkg: SkillPackage, text: str | None, envelope: Any) -> None:
        if self.paths.result_file.is_file():  # a copy: N1/N2 commands may rewrite it in place
            shutil.copy2(self.paths.result_file, self.paths.raw / "skill_result.json")
        manifest = pkg.manifest
        outcome = run_output_chain(
            self.paths.root, pkg.output_schema, engine_text=text, envelope=envelope,
            normalizer=self._skill_command(pkg, manifest.normalizer),
            fallback=self._skill_command(pkg, manifest.fallback),
            repair=self.repair, repair_rounds=self._repair_rounds(),
            schema_path=pkg.root / manifest.schemas["output"],
            engine_text_file=self.engine_text_file)
        self.warnings.extend(outcome.warnings)
        if not outcome.ok:
            raise RunFailed("OUTPUT_VALIDATION_FAILED",
                            "the output does not match the skill's output schema",
                            {"validation_errors": outcome.validation_errors,
                             "raw_output_path": _run_relative(outcome.raw_output_path,
                                                              self.paths.root)})
        self.data = outcome.data

    def _repair_rounds(self) -> int:
        """N3 is off unless the request or the server turns it on (bounded to 3 rounds)."""
        rounds = self.run.runtime_options.get("repair_rounds", self.settings.repair_rounds)
        return max(0, min(int(rounds or 0), 3)) if self.repair is not None else 0

    def _skill_command(self, pkg: SkillPackage, command):
        if command is None or not command.enabled:
            return None

        def run(request: NormalizeRequest) -> None:
            extra = {"SKILL_RUNNER_RAW_OUTPUT": str(request.raw_output_path),
                     "SKILL_RUNNER_OUTPUT_SCHEMA": str(request.schema_path),
                     "SKILL_RUNNER_NORMALIZATION_LEVEL": request.level}
            spec = script_command(command.command, self.paths, pkg.root, self.run.id,
                                  self.run.request_id, pkg.manifest.runtime, extra,
                                  uv_cache_dir(self.settings.data_dir))
            name = request.level.lower()
            result = run_command(spec, self.paths.logs / f"{name}_stdout.txt",
                                 self.paths.logs / f"{name}_stderr.txt", self.make_watch(pkg))
            check_process(result, f"{request.level}_COMMAND_FAILED", self.paths)
        return run

    def _index_artifacts(self, pkg: SkillPackage) -> None:
        manifest = index_artifacts(self.paths.root, pkg.artifacts)
        write_manifest(self.paths.root, manifest)
        self.artifacts = [a.path for a in manifest.artifacts]
        self.warnings.extend({"code": w.get("code", "ARTIFACT_WARNING"), "message": w.get("message", ""),
                              "level": "warning", "normalization_level": None, "details": w}
                             for w in manifest.warnings)
        if manifest.missing_required:
            missing = [s.pattern for s in manifest.missing_required]
            raise RunFailed("ARTIFACT_MISSING", "required artifacts were not produced: "
                            + ", ".join(missing), {"missing": missing})

    def _write_result(self, outcome: RunOutcome) -> None:
        error = outcome.error
        if error is not None:
            error = {**error, "stderr": _tail(self.paths.logs / "stderr.txt")}
        write_json(self.paths.result_file, {
            "status": outcome.status, "data": self.data if outcome.status == "succeeded" else None,
            "artifacts": self.artifacts, "validation_warnings": outcome.warnings, "error": error})


@dataclass(frozen=True)
class PoolLayout:
    """What a run directory of one skill version holds before the run starts: seed 002's
    folders, the skill snapshot at `rel_dir`, and for engine runs the git marker."""

    source: Path
    skill_id: str
    rel_dir: str
    git: bool
    signature: tuple
    copies: SkillCopies | None = field(default=None, compare=False)  # None: copy every file

    @property
    def key(self) -> str:
        return pool_key(self.skill_id, f"{self.rel_dir}|git={self.git}", self.signature)

    def snapshot_in(self, run_dir: Path) -> Path:
        return run_dir / self.rel_dir / self.skill_id

    def snapshot(self, paths: RunPaths) -> tuple[Path, bool]:
        """Put the skill's snapshot into the run: linked from the copy of exactly `signature`
        (True), or copied from the skill's folder as it is now (False)."""
        dest = paths.root / self.rel_dir / self.skill_id
        if self.copies is not None and self.copies.snapshot(self.source, self.skill_id,
                                                             self.signature, dest):
            return dest, True
        return snapshot_skill(self.source, paths, self.skill_id, self.rel_dir), False

    def build(self, path: Path) -> bool:
        """Make the directory at `path`; False when the skill changed since `signature`."""
        paths = create_run_dir(path.parent, path.name)
        _snapshot, exact = self.snapshot(paths)
        if self.git:
            write_git_marker(path)
        return exact or tree_signature(self.source) == self.signature


_copies: dict[Path, SkillCopies] = {}


def skill_copies(settings: Settings) -> SkillCopies | None:
    """This process's view of the skill copies runs link from; None when every run copies."""
    if settings.snapshot_mode != "link":
        return None
    root = settings.skill_copies_dir
    if root not in _copies:
        _copies[root] = SkillCopies(root)
    return _copies[root]


def is_engine_run(pkg: SkillPackage) -> bool:
    return bool(pkg.manifest) and pkg.manifest.entrypoint.type != "script"


def snapshot_dir(run: Run, pkg: SkillPackage) -> str:
    """Run-relative folder of the skill's snapshot: for an engine run the first folder its CLI
    discovers skills in (seed 002: `.gemini/skills/<skill_id>/`), else `.skill`."""
    entry = pkg.manifest.entrypoint.type if pkg.manifest else "script"
    engine_dirs = engine_skill_dirs(run.engine) if entry != "script" else ()
    return engine_dirs[0] if engine_dirs else SNAPSHOT_DIR


def engine_skill_dirs(engine: str | None) -> tuple[str, ...]:
    """The folders `engine`'s CLI discovers skills in; () for script runs or unknown engines
    (run_engine reports those)."""
    if not engine:
        return ()
    try:
        return tuple(get_adapter(engine).skill_dirs)
    except (KeyError, ImportError, AttributeError):
        return ()


def skill_source(settings: Settings, run: Run) -> Path:
    """Where a run's skill comes from: installed skills, or the package of a one-off run
    (`data/requests/<request_id>/skill/<skill_id>`, kind 'temp')."""
    if run.kind == "temp":
        return settings.requests_dir / run.request_id / "skill" / run.skill_id
    return settings.skills_dir / run.skill_id


def check_process(result, failure_code: str, paths: RunPaths) -> None:
    """Turn a ProcessResult into RunFailed for timeout, cancel and non-zero exits."""
    if result.canceled:
        raise RunFailed("CANCELED_BY_USER", "canceled by user", status="canceled")
    if result.timed_out:
        raise RunFailed("TIMEOUT", "the run exceeded its time limit; the process group was killed")
    if result.output_exceeded:
        size = result.stdout_path.stat().st_size + result.stderr_path.stat().st_size
        raise RunFailed("OUTPUT_TOO_LARGE", "the process wrote more output (stdout + stderr) than "
                        "the server allows; the process group was killed",
                        {"written_bytes": size})
    if result.exit_code != 0:
        raise RunFailed(failure_code, f"process exited with code {result.exit_code}",
                        {"exit_code": result.exit_code})


def _run_relative(path: str, root: Path) -> str:
    """Paths shown to clients are relative to the run directory."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.is_file():
        return ""
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", errors="replace")
