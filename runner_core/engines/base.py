"""The one interface every engine adapter implements.

An adapter turns a prepared run (prompt, run directory, merged engine config) into a
`CommandSpec`; the worker's supervisor runs it and hands back a `ProcessResult`; the adapter
parses that into an `EngineOutput`. Adapters never spawn processes themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class EngineContext:
    """Everything an adapter needs to build one invocation."""

    run_dir: Path  # absolute run directory; the CLI's working directory
    skill_id: str
    prompt: str  # the rendered prompt (already saved to logs/prompt.txt)
    config: dict[str, Any]  # merged engine config (default < skill < user < enforced)
    model: str | None = None
    session_id: str | None = None  # set to resume a previous session
    output_schema_path: Path | None = None
    execution_mode: str = "auto"  # auto | interactive
    # the run's box (runner_core.sandbox, bwrap) holds the CLI: a CLI sandbox of its own that
    # needs to nest a user namespace cannot start in it, and is not needed
    boxed: bool = False


@dataclass(frozen=True)
class CommandSpec:
    """A process to start: built by an adapter, run by the supervisor."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]  # full environment for the child
    stdin: str | None = None  # None means /dev/null
    files: dict[str, str] = field(
        default_factory=dict
    )  # run-relative path -> content to write first


@dataclass(frozen=True)
class ProcessResult:
    """What the supervisor observed."""

    exit_code: int | None  # None when killed
    stdout_path: Path
    stderr_path: Path
    started: float
    ended: float
    timed_out: bool = False
    canceled: bool = False
    output_exceeded: bool = False  # killed for writing more than its output limit
    limit_exceeded: str | None = None  # "processes" or "memory": a resource limit ended it
    budget_exceeded: bool = False  # stopped: the run reached its budget (runner_core.budget)
    # where this process's output starts in its files (a resumed turn appends to the run's logs)
    stdout_from: int = 0
    stderr_from: int = 0
    # its working directory: for an engine CLI the run directory, which holds the CLI's own
    # HOME and session logs (read for the tokens of a turn cut short; None: not known)
    cwd: Path | None = None

    @property
    def cut_short(self) -> bool:
        """Stopped from outside (timeout, cancel, output or resource limit), not exited."""
        return bool(
            self.timed_out
            or self.canceled
            or self.output_exceeded
            or self.limit_exceeded
            or self.budget_exceeded
        )


@dataclass(frozen=True)
class EngineError:
    """A typed engine failure."""

    code: str  # AUTH_MISSING | MODEL_API_ERROR | CLI_NOT_INSTALLED | ENGINE_FAILED
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class EngineOutput:
    """An engine's finished output, parsed."""

    exit_code: int | None
    final_text: str | None = None
    parsed_json: Any = None
    envelope: Any = None  # the CLI's structured envelope, when it has one
    session_id: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # the CLI's own usage record, as printed
    # {"input_tokens": int, "output_tokens": int} as the CLI counts them; None when it has none
    tokens: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: EngineError | None = None


class EngineAdapter(Protocol):
    """One module per engine implements this (see runner_core.engines.ENGINES)."""

    name: str
    binary: str
    skill_dirs: tuple[str, ...]  # run-relative folders the CLI discovers skills in

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """Return the command (and per-run config files) for one invocation."""

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Parse a finished process into an EngineOutput; also a process cut short, whose
        tokens are what the CLI recorded before it stopped."""
