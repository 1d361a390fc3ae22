"""Hybrid entrypoint: the engine's turn, then the skill's script as a deterministic step.

The script runs like a script skill's (the skill's root as working directory, a minimal
environment, `uv run` with runtime.dependencies, its own process group under the run's time
limit and cancel) once the engine's turn succeeded, and sees what the engine produced:
SKILL_RUNNER_ENGINE_OUTPUT (a file holding the engine's final message), the result file the
engine may have written (SKILL_RUNNER_RESULT_FILE) and SKILL_RUNNER_ENGINE. It may rewrite
result/result.json and write artifacts. The output chain then reads result/result.json first,
then the script's stdout when it printed anything, else the engine's final message.
"""

from __future__ import annotations

import time
from dataclasses import replace

from runner_core.error_codes import ErrorCode
from runner_core.in_run import write_in_run
from runner_core.interaction import has_done_marker
from runner_core.workspace import read_log
from worker.execution.contexts import EntryContext, EntryResult
from worker.execution.engine import run_engine
from worker.execution.failures import RunFailed, process_failure
from worker.execution.script import script_command, uv_cache_dir
from worker.execution.supervisor import run_command
from worker.execution.turns import Resume, is_interactive

ENGINE_MESSAGE = "engine_message.txt"  # in raw/: the engine's final message, for the script


def run_hybrid(entry: EntryContext, resume: Resume | None = None) -> EntryResult:
    """The engine's turn, then (when it succeeded) the skill's script. In interactive mode the
    script runs only after the turn that finishes with the done marker."""
    engine = run_engine(entry, resume)
    if engine.failure is not None:
        return engine
    if is_interactive(entry.run) and not has_done_marker(engine.text):
        return engine  # a question (or a soft completion): no script step
    return run_hybrid_script(entry, engine)


def run_hybrid_script(entry: EntryContext, engine: EntryResult) -> EntryResult:
    """The script step after the engine's (last) turn. The result keeps the engine's session
    and tokens; N3 repair is off (a repaired answer would skip the script)."""
    paths, pkg, run = entry.paths, entry.pkg, entry.run
    command = pkg.loaded_manifest.entrypoint.script_command
    assert command is not None  # a loaded hybrid skill declares entrypoint.script.command
    message = paths.raw / ENGINE_MESSAGE
    write_in_run(paths.root, f"raw/{ENGINE_MESSAGE}", (engine.text or "").encode("utf-8"))
    extra = {"SKILL_RUNNER_ENGINE_OUTPUT": str(message), "SKILL_RUNNER_ENGINE": run.engine or ""}
    spec = script_command(
        command,
        paths,
        pkg.root,
        run.id,
        run.request_id,
        pkg.loaded_manifest.runtime,
        extra,
        uv_cache_dir(entry.settings.data_dir),
    )
    stdout, stderr = paths.logs / "script_stdout.txt", paths.logs / "script_stderr.txt"
    started = time.perf_counter()
    result = run_command(spec, stdout, stderr, entry.watch())
    timings = {**engine.timings, "script": round(time.perf_counter() - started, 4)}
    failure = process_failure(result, ErrorCode.SKILL_SCRIPT_FAILED)
    if failure is not None and failure.code == ErrorCode.SKILL_SCRIPT_FAILED:  # a non-zero exit
        failure = RunFailed(
            ErrorCode.SKILL_SCRIPT_FAILED,
            f"the skill's script (run after the engine) exited with code {result.exit_code}",
            {
                "exit_code": result.exit_code,
                "step": "script",
                "script_stderr": read_log(stderr, 16000)[-4000:],
            },
        )
    if failure is not None:
        return replace(engine, repair=None, timings=timings, failure=failure)
    printed = read_log(stdout)  # never through a link the script left in its place
    if printed.strip():
        return replace(engine, text=printed, text_file=stdout, repair=None, timings=timings)
    return replace(engine, repair=None, timings=timings)
