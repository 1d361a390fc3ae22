"""Commands for skill scripts: the entrypoint, the normalizer (N1) and the fallback (N2).

The contract for skill authors (also in the README): the working directory is the skill's
root inside the run, `python` is the service's interpreter, and these variables are set:
SKILL_RUNNER_RUN_DIR, SKILL_RUNNER_SKILL_DIR, SKILL_RUNNER_INPUT_FILE (resolved_input.json:
{"input": ..., "parameter": ...}), SKILL_RUNNER_RESULT_FILE (result/result.json),
SKILL_RUNNER_ARTIFACTS_DIR (artifacts/), SKILL_RUNNER_REQUEST_ID, SKILL_RUNNER_RUN_ID.

A skill with `runtime.dependencies` runs under `uv run --no-project --with <dep> ...` on the
service's interpreter. HOME is per run, so uv gets a shared cache (`<data>/uv-cache`) and the
operator's index settings (UV_* and proxy variables) explicitly.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import sys
from pathlib import Path

from runner_core.engines.base import CommandSpec
from runner_core.error_codes import ErrorCode
from runner_core.output import NormalizeRequest, SkillCommand
from runner_core.secret_values import held
from runner_core.skills.model import Command, Runtime
from runner_core.workspace import RunPaths, open_run_file
from worker.execution.contexts import EntryContext, EntryResult
from worker.execution.failures import (
    check_process,
    forget_raised,
    process_failure,
    with_raised,
)
from worker.execution.output_tail import run_streamed
from worker.execution.supervisor import run_command

BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")
# What uv needs to reach (or avoid) a package index; UV_* variables are passed as well.
NETWORK_ENV_KEYS = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def uv_cache_dir(data_dir: Path) -> Path:
    """uv's cache, shared by every run of the service."""
    return data_dir / "uv-cache"


def uv_env(cache_dir: Path | None) -> dict[str, str]:
    """The operator's uv and proxy settings, plus the shared cache."""
    service = {**held(), **os.environ}  # an index URL with a password is a held secret
    env = {k: v for k, v in service.items() if k.startswith("UV_") or k in NETWORK_ENV_KEYS}
    if cache_dir is not None:
        env["UV_CACHE_DIR"] = str(cache_dir)
    return env


def uv_binary() -> str:
    """The uv installed with the service (the `uv` wheel), else the one on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv") or "uv"


def script_env(
    paths: RunPaths,
    skill_dir: Path,
    run_id: str,
    request_id: str,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """A minimal environment: no API keys or service secrets leak into skill scripts."""
    env = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", os.defpath)
    env["HOME"] = str(paths.root / ".home")
    env.update(
        {
            "PYTHONUNBUFFERED": "1",
            "SKILL_RUNNER_RUN_DIR": str(paths.root),
            "SKILL_RUNNER_SKILL_DIR": str(skill_dir),
            "SKILL_RUNNER_INPUT_FILE": str(paths.resolved_input),
            "SKILL_RUNNER_RESULT_FILE": str(paths.result_file),
            "SKILL_RUNNER_ARTIFACTS_DIR": str(paths.artifacts),
            "SKILL_RUNNER_RUN_ID": run_id,
            "SKILL_RUNNER_REQUEST_ID": request_id,
        }
    )
    env.update(extra or {})
    return env


def script_argv(command: str, runtime: Runtime | None) -> list[str]:
    """Split the command (no shell); wrap it in `uv run --with ...` when it declares deps."""
    argv = shlex.split(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    if runtime and runtime.dependencies:
        if argv and argv[0] == sys.executable:
            argv[0] = "python"
        return uv_run_argv(runtime) + argv
    return argv


def uv_run_argv(runtime: Runtime) -> list[str]:
    """`uv run ... --with <dep> --`: what follows runs with an environment holding the deps
    first on PATH (and as VIRTUAL_ENV), built from uv's cache."""
    argv = [uv_binary(), "run", "--no-project", "--quiet", "--python", _python(runtime)]
    for dep in runtime.dependencies:
        argv += ["--with", dep]
    return argv + ["--"]


def _python(runtime: Runtime) -> str:
    """The service's interpreter unless the skill asks for another version (uv finds it)."""
    current = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not runtime.version or runtime.version in (current, sys.version.split()[0]):
        return sys.executable
    return runtime.version


def script_command(
    command: str,
    paths: RunPaths,
    skill_dir: Path,
    run_id: str,
    request_id: str,
    runtime: Runtime | None,
    extra_env: dict[str, str] | None = None,
    uv_cache: Path | None = None,
) -> CommandSpec:
    """The CommandSpec for a skill script run from the skill's root."""
    env = script_env(paths, skill_dir, run_id, request_id, extra_env)
    if runtime and runtime.dependencies:
        env.update(uv_env(uv_cache))
    return CommandSpec(argv=script_argv(command, runtime), cwd=skill_dir, env=env)


def run_script(entry: EntryContext) -> EntryResult:
    """The script entrypoint: its stdout is its output text."""
    paths, pkg = entry.paths, entry.pkg
    command = pkg.loaded_manifest.entrypoint.script_command
    assert command is not None  # a loaded script skill declares entrypoint.script.command
    spec = script_command(
        command,
        paths,
        pkg.root,
        entry.run.id,
        entry.run.request_id,
        pkg.loaded_manifest.runtime,
        uv_cache=uv_cache_dir(entry.settings.data_dir),
    )
    if pkg.format == "skill.json":
        forget_raised(paths)
    result = run_streamed(entry, spec, None)  # progress lines become raw.stdout events
    failure = process_failure(result, ErrorCode.SKILL_SCRIPT_FAILED)
    if failure is not None:
        raise with_raised(failure, paths) if pkg.format == "skill.json" else failure
    # the log as the worker wrote it: a link the script left in its place is not read through
    # (it would make any file the worker can read the run's output); such a run has no output
    out = open_run_file(result.stdout_path.parent, result.stdout_path.name)
    with out if out is not None else io.BytesIO() as fh:
        text = fh.read().decode("utf-8", errors="replace")
    return EntryResult(text, text_file=paths.logs / "stdout.txt")


def skill_command(entry: EntryContext, command: Command | None) -> SkillCommand | None:
    """The skill's normalizer (N1) or fallback (N2) command as the output chain calls it."""
    if command is None or not command.enabled:
        return None
    paths, pkg = entry.paths, entry.pkg

    def run(request: NormalizeRequest) -> None:
        extra = {
            "SKILL_RUNNER_RAW_OUTPUT": str(request.raw_output_path),
            "SKILL_RUNNER_OUTPUT_SCHEMA": str(request.schema_path),
            "SKILL_RUNNER_NORMALIZATION_LEVEL": request.level,
        }
        spec = script_command(
            command.command,
            paths,
            pkg.root,
            entry.run.id,
            entry.run.request_id,
            pkg.loaded_manifest.runtime,
            extra,
            uv_cache_dir(entry.settings.data_dir),
        )
        name = request.level.lower()
        result = run_command(
            spec,
            paths.logs / f"{name}_stdout.txt",
            paths.logs / f"{name}_stderr.txt",
            entry.watch(),
        )
        check_process(result, f"{request.level}_COMMAND_FAILED")

    return run
