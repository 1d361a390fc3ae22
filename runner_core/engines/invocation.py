"""How an engine CLI is found and started: its binary, the start of its argv, the child's
environment, where the prompt goes (argv or stdin) and the end every adapter's command shares
(`find_cli` opens a `build_command`, `command_spec` closes it).

A binary is the file ``SKILL_RUNNER_<BINARY>_BIN`` names (one engine's CLI, e.g.
``SKILL_RUNNER_CODEX_BIN``), else the one in the folder ``SKILL_RUNNER_ENGINE_BIN_DIR`` names,
else the repository's ``.engines/node_modules/.bin``, else PATH: an operator's explicit choice
wins over the default location. Each run's CLI gets its own HOME and
TMPDIR under the run dir, so nothing lands in a shared user config.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.engines.base import CommandSpec, EngineContext
from runner_core.engines.config import resolve_api_key

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR_ENV = "SKILL_RUNNER_ENGINE_BIN_DIR"
REPO_BIN_DIR = REPO_ROOT / ".engines" / "node_modules" / ".bin"
RUN_HOME = ".home"  # per-run HOME of the CLI, relative to the run dir
RUN_TMP = f"{RUN_HOME}/tmp"  # per-run TMPDIR
# Written with every command so the per-run temp dir exists before the CLI starts.
RUN_HOME_FILES = {f"{RUN_TMP}/.keep": ""}

# Variables the CLI may inherit from the service; everything else (database URLs, other
# secrets) stays out of the child's environment.
_INHERITED_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)

# Longer prompts go through stdin: one argv string may not exceed 128 KiB on Linux.
MAX_ARGV_PROMPT_BYTES = 100_000


def binary_env(binary: str) -> str:
    """The variable naming one CLI's file: SKILL_RUNNER_CODEX_BIN for `codex`."""
    return f"SKILL_RUNNER_{binary.upper().replace('-', '_')}_BIN"


def resolve_binary(binary: str) -> Path | None:
    """Find `binary`: $SKILL_RUNNER_<BINARY>_BIN, else in $SKILL_RUNNER_ENGINE_BIN_DIR, else in
    the repo's .engines bin dir, else on PATH. A variable naming a missing file finds nothing
    (no silent fall back to another version)."""
    chosen = os.environ.get(binary_env(binary))
    if chosen:
        path = Path(chosen)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    candidates = [REPO_BIN_DIR]
    if os.environ.get(BIN_DIR_ENV):
        candidates.insert(0, Path(os.environ[BIN_DIR_ENV]))
    for folder in candidates:
        path = folder / binary
        if path.is_file() and os.access(path, os.X_OK):
            return path
    found = shutil.which(binary)
    return Path(found) if found else None


def engine_env(
    *,
    home: Path,
    binary_path: Path | None,
    config: Mapping[str, Any],
    extra: Mapping[str, str],
    tmp_dir: Path | None = None,
) -> dict[str, str]:
    """The child's full environment: a few inherited variables, the per-run HOME (and TMPDIR
    when given: CLIs drop logs and crash reports there), the engine's bin dir first on PATH
    (it also holds `rg`), then `extra`, then the config's ``env``."""
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    path = env.get("PATH", os.defpath)
    if binary_path is not None:
        path = f"{binary_path.parent}{os.pathsep}{path}"
    env.update(PATH=path, HOME=str(home), NO_COLOR="1")
    if tmp_dir is not None:
        env["TMPDIR"] = str(tmp_dir)
    env.update(extra)
    env.update({key: str(value) for key, value in config.get("env", {}).items()})
    return env


def run_env(
    run_dir: Path, binary_path: Path | None, config: Mapping[str, Any], extra: Mapping[str, str]
) -> dict[str, str]:
    """`engine_env` with HOME and TMPDIR under `run_dir` (see RUN_HOME, RUN_HOME_FILES)."""
    return engine_env(
        home=run_dir / RUN_HOME,
        tmp_dir=run_dir / RUN_TMP,
        binary_path=binary_path,
        config=config,
        extra=extra,
    )


# A Node CLI's launcher that always starts the CLI again as a child Node process (about a
# second per run), whatever its no-relaunch variable says -> (the script it starts, the flags
# it starts it with): the worker starts that script itself, one process. Qwen Code >= 0.24.
RELAUNCHERS = {"cli-entry.js": ("cli.js", ("--expose-gc",))}


def program_argv(
    binary: str, binary_path: Path | None, config: Mapping[str, Any], env: Mapping[str, str]
) -> list[str]:
    """The start of an engine's argv: the CLI itself, or `node FLAGS SCRIPT` when the config
    has ``node_flags`` or the CLI is a relaunching launcher (RELAUNCHERS) and it is a Node
    script (V8 flags such as --liftoff-only are not allowed in NODE_OPTIONS). `node` is looked
    up on the child's PATH, as the script's own `#!/usr/bin/env node` line would."""
    program = [str(binary_path or binary)]
    if binary_path is None:
        return program
    script = Path(binary_path).resolve()
    flags = list(config.get("node_flags") or [])
    relaunched = RELAUNCHERS.get(script.name)
    if relaunched is not None and (script.parent / relaunched[0]).is_file():
        script, flags = script.parent / relaunched[0], [*relaunched[1], *flags]
    if not flags:
        return program
    node = shutil.which("node", path=env.get("PATH"))
    if node is None or not is_node_script(script):
        return program
    return [node, *flags, str(script)]


def is_node_script(path: Path) -> bool:
    """True when `path` starts with a `#!` line naming node."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def prompt_fits_argv(prompt: str) -> bool:
    """True when `prompt` can be passed as a command-line argument (else send it on stdin)."""
    return len(prompt.encode("utf-8")) <= MAX_ARGV_PROMPT_BYTES


def prompt_args(
    prompt: str, *, flag: str | None = None, stdin_args: Sequence[str] = ()
) -> tuple[list[str], str | None]:
    """(argv tail, stdin) that pass `prompt`: in argv when it fits, as ``FLAG=PROMPT`` or after
    ``--`` (so a prompt starting with "-" is not read as an option); else on stdin, with
    `stdin_args` telling the CLI to read it there."""
    if not prompt_fits_argv(prompt):
        return list(stdin_args), prompt
    return ([f"{flag}={prompt}"] if flag else ["--", prompt]), None


@dataclass(frozen=True)
class Cli:
    """What every adapter's `build_command` starts from: its CLI, the model and the key."""

    binary: str
    path: Path | None  # None when not installed: argv names it bare and the start fails (127)
    model: str | None  # the request's model, else the engine config's
    key: str | None  # the provider key (config.resolve_api_key)

    @property
    def program(self) -> str:
        """The first argv word: the CLI's path, else its bare name."""
        return str(self.path or self.binary)


def find_cli(binary: str, ctx: EngineContext) -> Cli:
    """`binary` found (see resolve_binary), with the model and the key `ctx` chooses."""
    return Cli(
        binary=binary,
        path=resolve_binary(binary),
        model=ctx.model or ctx.config.get("model"),
        key=resolve_api_key(ctx.config),
    )


def command_spec(
    ctx: EngineContext,
    argv: list[str],
    env: dict[str, str],
    *,
    resume: str = "--resume",
    prompt_flag: str | None = None,
    stdin_args: Sequence[str] = (),
    files: dict[str, str] | None = None,
) -> CommandSpec:
    """`argv` ended as every CLI here takes it, run in the run dir: `resume` and the session id
    when resuming, then the prompt (see prompt_args)."""
    if ctx.session_id:
        argv = [*argv, resume, ctx.session_id]
    prompt, stdin = prompt_args(ctx.prompt, flag=prompt_flag, stdin_args=stdin_args)
    return CommandSpec(
        argv=[*argv, *prompt], cwd=Path(ctx.run_dir), env=env, stdin=stdin, files=files or {}
    )


def run_home_files(settings_path: str, settings: Any) -> dict[str, str]:
    """RUN_HOME_FILES and `settings` as JSON at `settings_path` under the per-run HOME."""
    return {**RUN_HOME_FILES, f"{RUN_HOME}/{settings_path}": json.dumps(settings, indent=2)}
