"""What an entrypoint (script or engine) is given and what it hands back to the executor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from runner_core import run_env
from runner_core.error_codes import ErrorCode
from runner_core.events import EventLog
from runner_core.inputs import ResolvedInputs
from runner_core.output import RepairReply, RepairRequest
from runner_core.secret_values import known, remember
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.store.models import Run
from runner_core.workspace import RunPaths
from worker.execution.failures import RunFailed
from worker.execution.supervisor import Watch


@dataclass(frozen=True)
class EntryContext:
    """A prepared run: its skill snapshot, resolved inputs and how its processes are watched."""

    run: Run
    paths: RunPaths
    pkg: SkillPackage
    inputs: ResolvedInputs
    settings: Settings
    make_watch: Callable[[SkillPackage], Watch]
    events: EventLog | None = None  # where the run's events go (None: not recorded)

    def watch(self, engine: bool = False) -> Watch:
        """A fresh watch (deadline, cancel poll, box) for one process of this run; `engine`:
        for an engine CLI (or its dependencies), which keeps the network."""
        watch = replace(self.make_watch(self.pkg), run_dir=self.paths.root, env=self.variables())
        if engine and watch.box is not None:
            watch = replace(watch, box=watch.box.for_engine())
        return watch

    def variables(self) -> dict[str, str]:
        """The variables the run's request gives each of its processes (runner_core.run_env),
        read for each process: a later turn may run on another host. Their values are masked
        from then on in this process's logs, the run's logs and its events."""
        env = run_variables(self.settings, self.run)
        new = [value for value in env.values() if value not in known()]
        if new:
            remember(*new)
        return env


def run_variables(settings: Settings, run: Run) -> dict[str, str]:
    """The variables kept for the run's request; the run fails RUNTIME_ENV_SECRET_MISSING
    when its request named some and their file is gone (its skill would run without them)."""
    names = run_env.declared(run.runtime_options)
    try:
        return run_env.read_declared(settings.requests_dir / run.request_id, names)
    except run_env.RunEnvMissing as exc:
        raise RunFailed(
            ErrorCode.RUNTIME_ENV_SECRET_MISSING, str(exc), {"variables": exc.names}
        ) from exc


class Repair(Protocol):
    """N3: one more turn of the engine session (it answers the session id the engine reports
    and the tokens the turn used)."""

    def __call__(self, request: RepairRequest) -> RepairReply: ...


@dataclass
class EntryResult:
    """The entrypoint's answer for the output chain, and what the run records about it.

    `failure` is a failure found once the process ran (returned, not raised, so the run still
    records the entrypoint's timings and engine session)."""

    text: str | None
    envelope: Any = None
    session_handle: str | None = None
    repair: Repair | None = None
    timings: dict[str, float] = field(default_factory=dict)
    text_file: Path | None = None  # the file `text` was read from, shown in warnings
    usage: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, Any] | None = None  # the CLI's token counts for this turn
    failure: RunFailed | None = None
