"""`runtime.dependencies` for engine runs (prompt and hybrid skills).

The agent's shell must be able to `python -c "import <dep>"`. Every command of the CLI runs
under the same `uv run --no-project --with <dep> ... --` that script skills run under: uv
starts the CLI with an environment holding the deps first on its PATH and as VIRTUAL_ENV,
so the tool calls the CLI makes inherit it. The packages come from uv's cache shared by all
runs (`<data>/uv-cache`), never from or into the service's own venv.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from runner_core.engines.base import (
    CommandSpec,
    EngineAdapter,
    EngineContext,
    EngineOutput,
    ProcessResult,
)
from runner_core.error_codes import ErrorCode
from runner_core.sandbox import FILLS_CACHE
from runner_core.skills.model import Runtime
from runner_core.workspace import read_log
from worker.execution.contexts import EntryContext
from worker.execution.failures import process_failure
from worker.execution.script import script_command, uv_cache_dir, uv_env, uv_run_argv
from worker.execution.supervisor import run_command

# makes uv resolve and install the deps, then exits; -S: no `.pth` file of theirs runs, as the
# cache is writable for this command (runner_core.sandbox.FILLS_CACHE)
CHECK_COMMAND = "python -S -c pass"
# Agents run tool calls in login shells (codex: `bash -lc`), whose /etc/profile resets PATH:
# the per-run home's profile puts uv's environment back in front.
LOGIN_PROFILE = """\
# runtime.dependencies: the skill's environment first on PATH, also in login shells
if [ -n "$VIRTUAL_ENV" ]; then PATH="$VIRTUAL_ENV/bin:$PATH"; export PATH; fi
"""


class DependencyAdapter:
    """An engine adapter whose every command (first turn, resumed turns, repair rounds) runs
    under `uv run --with <deps>`; the rest is the wrapped adapter's."""

    def __init__(self, adapter: EngineAdapter, runtime: Runtime, uv_cache: Path) -> None:
        self.adapter = adapter
        self.name, self.binary, self.skill_dirs = adapter.name, adapter.binary, adapter.skill_dirs
        self.prefix = uv_run_argv(runtime)
        self.uv_env = uv_env(uv_cache)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        spec = self.adapter.build_command(ctx)
        files = dict(spec.files)
        home = Path(spec.env.get("HOME", "/"))
        if home.is_relative_to(spec.cwd):  # a per-run home: its profile is the run's own
            files[str(home.relative_to(spec.cwd) / ".profile")] = LOGIN_PROFILE
        return replace(
            spec, argv=[*self.prefix, *spec.argv], env={**spec.env, **self.uv_env}, files=files
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        return self.adapter.parse_output(result)

    def __getattr__(self, name: str) -> Any:  # anything else an adapter offers
        return getattr(self.adapter, name)


def provide_dependencies(entry: EntryContext, adapter: EngineAdapter) -> EngineAdapter:
    """`adapter` itself for a skill without dependencies; else the deps are installed (into
    uv's cache) before the CLI starts, and the adapter runs the CLI under `uv run`. Raises
    RunFailed (DEPENDENCIES_UNAVAILABLE) when uv cannot provide them."""
    runtime = entry.pkg.loaded_manifest.runtime
    if runtime is None or not runtime.dependencies:
        return adapter
    cache = uv_cache_dir(entry.settings.data_dir)
    install_dependencies(entry, runtime, cache)
    return DependencyAdapter(adapter, runtime, cache)


def install_dependencies(entry: EntryContext, runtime: Runtime, uv_cache: Path) -> None:
    """Run `python -c pass` under uv first: a package uv cannot find fails the run with its
    own code and uv's words, not as a crash of the CLI (logs/dependencies_*.txt)."""
    paths, run = entry.paths, entry.run
    spec = script_command(
        CHECK_COMMAND,
        paths,
        entry.pkg.root,
        run.id,
        run.request_id,
        runtime,
        extra_env={FILLS_CACHE: "1"},
        uv_cache=uv_cache,
    )
    stdout, stderr = paths.logs / "dependencies_stdout.txt", paths.logs / "dependencies_stderr.txt"
    result = run_command(spec, stdout, stderr, entry.watch(engine=True))  # uv reaches its index
    failure = process_failure(result, ErrorCode.DEPENDENCIES_UNAVAILABLE)
    if failure is None:
        return
    if failure.code == ErrorCode.DEPENDENCIES_UNAVAILABLE:
        failure.message = "uv could not provide runtime.dependencies " + ", ".join(
            runtime.dependencies
        )
        failure.details["stderr"] = read_log(stderr, 16000)[-4000:]
    raise failure
