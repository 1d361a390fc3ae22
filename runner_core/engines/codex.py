"""Codex adapter: `codex exec --json`, one JSONL event stream per run.

Config keys read from `ctx.config` (see runner_core.engines.config):

- ``base_url``: provider endpoint (Responses API, e.g. ``http://host:port/v1``). When set, a
  provider ``skillrunner`` is defined with ``-c`` overrides and selected; otherwise codex's
  built-in OpenAI provider is used with ``CODEX_API_KEY``.
- ``api_key`` / ``api_key_env``: the key, or the name of the service variable holding it. With a
  ``base_url`` the key reaches codex as the provider's ``env_key`` (``api_key_env`` if given,
  else ``SKILL_RUNNER_API_KEY``).
- ``model``: used when ``ctx.model`` is not set.
- ``env``: extra variables for the CLI.
- ``settings``: codex config.toml keys, flattened into ``-c dotted.key=<toml>`` overrides, e.g.
  ``{"model_providers": {"skillrunner": {"stream_max_retries": 0}}}``.

The npm ``codex`` command is a Node launcher that runs the platform package's native binary with
the same arguments. The worker runs that binary itself (`native_binary`), with the two variables
the launcher adds, to skip a Node start per run; it falls back to the launcher when the layout
is not the npm one.

Each run gets its own ``CODEX_HOME`` (and ``HOME``) at ``<run_dir>/.codex-home``; sessions live
there, so a resume must use the same run dir. The JSONL prints usage only at
``turn.completed``, and as the thread's running total: a resumed turn's is that total less the
total when the turn began, read from the session log. A turn cut short (timeout, cancel, crash) is counted from the session log,
where codex writes the running total after each model answer (runner_core.engines.session_logs).
Profiles (``-p``) are never used. An auto run's output schema, in OpenAI's strict form
(runner_core.engines.native_schema), goes to ``--output-schema`` unless the config says
``native_schema: false`` or the schema has no strict form; the skill's schema is kept beside
it, so the nulls the strict form made the model write for optional properties are taken out
of the answer (runner_core.engines.native_nulls). The prompt is the last argument (after ``--``), or ``-`` with
the prompt on stdin when it is too long for argv. ``ctx.execution_mode`` changes nothing: codex
exec has no way to ask the user.

``--sandbox workspace-write`` runs codex's shell commands in its own bubblewrap sandbox, which
needs a user namespace: inside the run's box (``ctx.boxed``) it cannot start ("setting up uid
map: Operation not permitted"), so a boxed run passes ``danger-full-access`` and the box does
the job. Codex takes a ``bwrap`` on PATH over its bundled one; Debian 12's cannot start codex's
helper when CODEX_HOME is under /tmp.
"""

from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.engines.base import (
    CommandSpec,
    EngineContext,
    EngineError,
    EngineOutput,
    ProcessResult,
)
from runner_core.engines.failures import (
    api_error,
    exit_error,
    http_status,
    missing_cli_error,
    provider_error,
)
from runner_core.engines.invocation import command_spec, engine_env, find_cli, resolve_binary
from runner_core.engines.native_nulls import drop_added_nulls
from runner_core.engines.native_schema import STRICT, native_schema_for
from runner_core.engines.session_logs import codex_total_before_turn, codex_turn_usage, less
from runner_core.engines.setting_types import (
    BOOLEAN,
    INTEGER,
    OBJECT,
    STRING,
    STRINGS,
    map_of,
    table,
)
from runner_core.engines.streams import (
    UsageKeys,
    json_lines,
    json_of_text,
    read_output,
    token_counts,
)
from runner_core.error_codes import ErrorCode
from runner_core.in_run import remove_in_run, run_folder

HOME_DIR = ".codex-home"
SCHEMA_FILE = "output-schema.json"  # the output schema in strict form, in HOME_DIR
SOURCE_FILE = "output-schema.source.json"  # the skill's own schema behind it, in HOME_DIR
PROVIDER = "skillrunner"
DEFAULT_KEY_ENV = "SKILL_RUNNER_API_KEY"
TOOL_ITEMS = ("command_execution", "mcp_tool_call", "file_change", "web_search")
_AUTH_PATTERNS = ("missing environment variable", "not logged in", "no api key", "please login")
# what codex says for a provider's 500 (the body's message is not shown)
_SERVER_ERROR = "currently experiencing high demand"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
# config.toml keys as codex's config reference types them (each refused by codex 0.171 with
# "Error loading config.toml: invalid type" when given another type)
SETTINGS_SCHEMA = table(
    model=STRING,
    review_model=STRING,
    model_provider=STRING,
    model_reasoning_effort=STRING,
    model_reasoning_summary=STRING,
    model_verbosity=STRING,
    approval_policy={"type": ["string", "object"]},  # a policy name, or {granular = {...}}
    sandbox_mode=STRING,
    developer_instructions=STRING,
    model_context_window=INTEGER,
    model_auto_compact_token_limit=INTEGER,
    check_for_update_on_startup=BOOLEAN,
    notify=STRINGS,
    analytics=table(enabled=BOOLEAN),
    features=table(plugins=BOOLEAN),
    skills=table(bundled=table(enabled=BOOLEAN)),
    sandbox_workspace_write=table(network_access=BOOLEAN, writable_roots=STRINGS),
    shell_environment_policy=table(inherit=STRING, include_only=STRINGS),
    model_providers=map_of(
        table(
            name=STRING,
            base_url=STRING,
            env_key=STRING,
            wire_api=STRING,
            stream_max_retries=INTEGER,
            request_max_retries=INTEGER,
            stream_idle_timeout_ms=INTEGER,
        )
    ),
    mcp_servers=map_of(OBJECT),
)
# (system, machine) -> the launcher's target triple and its platform package (bin/codex.js)
_TARGETS = {
    ("Linux", "x86_64"): ("x86_64-unknown-linux-musl", "codex-linux-x64"),
    ("Linux", "aarch64"): ("aarch64-unknown-linux-musl", "codex-linux-arm64"),
    ("Darwin", "x86_64"): ("x86_64-apple-darwin", "codex-darwin-x64"),
    ("Darwin", "arm64"): ("aarch64-apple-darwin", "codex-darwin-arm64"),
}


def native_binary(launcher: Path | None) -> tuple[Path, Path] | None:
    """(native codex binary, @openai/codex package root) behind the npm launcher, found where
    the launcher looks (the platform package next to or inside the codex package, else the
    package's own vendor dir); None when `launcher` is not that script or nothing is there."""
    target = _TARGETS.get((platform.system(), platform.machine()))
    if launcher is None or target is None:
        return None
    try:
        script = Path(launcher).resolve(strict=True)
    except OSError:
        return None
    if script.suffix != ".js" or script.parent.name != "bin":
        return None
    triple, package = target
    root = script.parent.parent
    vendors = (
        root / "node_modules" / "@openai" / package / "vendor",
        root.parent / package / "vendor",
        root / "vendor",
    )
    for vendor in vendors:
        binary = vendor / triple / "bin" / "codex"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary, root
    return None


def toml_value(value: Any) -> str:
    """Encode a JSON-like value as an inline TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot encode {type(value).__name__} as TOML")


def toml_key(key: str) -> str:
    """A TOML key, quoted unless bare."""
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def config_overrides(settings: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Flatten nested settings into `dotted.key=<toml value>` strings for `-c`."""
    out: list[str] = []
    for key, value in settings.items():
        path = f"{prefix}{toml_key(str(key))}"
        if isinstance(value, Mapping) and value:
            out += config_overrides(value, prefix=f"{path}.")
        else:
            out.append(f"{path}={toml_value(value)}")
    return out


def split_model(value: Any) -> tuple[str | None, str | None]:
    """`name@reasoning_effort` (the API's codex model form) -> (name, effort)."""
    if not value:
        return None, None
    name, _, effort = str(value).partition("@")
    return name or None, effort or None


# turn.completed.usage (and the session log's total_token_usage)
USAGE = UsageKeys(cached="cached_input_tokens", reasoning="reasoning_output_tokens")


@dataclass(frozen=True)
class CodexAdapter:
    """Builds `codex exec` invocations and parses their JSONL."""

    name: str = "codex"
    binary: str = "codex"
    skill_dirs: tuple[str, ...] = (".agents/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """`codex exec --json ... [resume SID] -- PROMPT` with a per-run CODEX_HOME."""
        home = Path(ctx.run_dir) / HOME_DIR
        # codex refuses a missing CODEX_HOME; a link an earlier turn left there is replaced
        os.close(run_folder(ctx.run_dir, HOME_DIR))
        cli = find_cli(self.binary, ctx)
        native = native_binary(cli.path)
        settings: dict[str, Any] = {
            "analytics": {"enabled": False},
            "check_for_update_on_startup": False,
            # the curated plugin catalogue is fetched at every start (git ls-remote, then
            # api.github.com and chatgpt.com): a fresh CODEX_HOME per run has no use for it
            "features": {"plugins": False},
        }
        extra = {"CODEX_HOME": str(home)}
        if native is not None:  # what the launcher would add before running the binary
            extra.update(CODEX_MANAGED_BY_NPM="1", CODEX_MANAGED_PACKAGE_ROOT=str(native[1]))
        if ctx.config.get("base_url"):
            key_env = ctx.config.get("api_key_env") or DEFAULT_KEY_ENV
            settings["model_provider"] = PROVIDER
            settings["model_providers"] = {
                PROVIDER: {
                    "name": PROVIDER,
                    "base_url": ctx.config["base_url"],
                    "env_key": key_env,
                    "wire_api": "responses",
                }
            }
            if cli.key:
                extra[key_env] = cli.key
        elif cli.key:
            extra["CODEX_API_KEY"] = cli.key
        argv = [
            str(native[0]) if native is not None else cli.program,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access" if ctx.boxed else "workspace-write",
        ]
        for override in config_overrides(settings) + config_overrides(
            ctx.config.get("settings") or {}
        ):
            argv += ["-c", override]
        model, effort = split_model(cli.model)
        if effort:
            argv += ["-c", f"model_reasoning_effort={toml_value(effort)}"]
        if model:
            argv += ["-m", model]
        files: dict[str, str] = {}
        schema = native_schema_for(ctx, STRICT)
        if schema is not None:  # before `resume`: exec resume takes it too (codex >= 0.132)
            files[f"{HOME_DIR}/{SCHEMA_FILE}"] = json.dumps(schema, ensure_ascii=False)
            source = Path(str(ctx.output_schema_path)).read_text(encoding="utf-8")
            files[f"{HOME_DIR}/{SOURCE_FILE}"] = source
            argv += ["--output-schema", str(home / SCHEMA_FILE)]
        else:  # this turn's answer owes nothing to an earlier turn's strict form
            remove_in_run(ctx.run_dir, f"{HOME_DIR}/{SOURCE_FILE}")
        env = engine_env(home=home, binary_path=cli.path, config=ctx.config, extra=extra)
        # "-": read the prompt from stdin
        return command_spec(ctx, argv, env, resume="resume", stdin_args=["-"], files=files)

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Session id, final message, usage, tool calls and a typed error from the JSONL."""
        events = last_invocation(json_lines(read_output(result.stdout_path, result.stdout_from)))
        out = EngineOutput(exit_code=result.exit_code)
        errors: list[str] = []
        failed: str | None = None
        for event in events:
            kind = event.get("type")
            if kind == "thread.started" and not out.session_id:
                out.session_id = event.get("thread_id")
            elif kind == "item.completed":
                item = event.get("item") or {}
                if item.get("type") == "agent_message":
                    out.final_text = item.get("text")
                elif item.get("type") in TOOL_ITEMS:
                    out.tool_calls.append(item)
            elif kind == "turn.completed":
                out.usage = dict(event.get("usage") or {})
            elif kind == "error":
                errors.append(str(event.get("message", "")))
            elif kind == "turn.failed":
                failed = str((event.get("error") or {}).get("message", "")) or "turn failed"
        if result.cwd is not None:
            home = Path(result.cwd) / HOME_DIR
            if not out.usage:  # no turn.completed (cut short, or failed): codex's own log
                out.usage = codex_turn_usage(home, out.session_id)
            else:  # turn.completed holds the thread's total: a resumed turn's earlier turns too
                out.usage = less(out.usage, codex_total_before_turn(home, out.session_id))
        out.tokens = token_counts(out.usage, USAGE)
        out.parsed_json = json_of_text(out.final_text)
        if result.cwd is not None and out.parsed_json is not None:
            _drop_added_nulls(out, Path(result.cwd) / HOME_DIR / SOURCE_FILE)
        out.error = self._error(result, events, failed, errors)
        return out

    def _error(
        self,
        result: ProcessResult,
        events: list[dict[str, Any]],
        failed: str | None,
        errors: list[str],
    ) -> EngineError | None:
        if not events and (result.exit_code == 127 or resolve_binary(self.binary) is None):
            return missing_cli_error(self.binary)
        message = failed or (errors[-1] if errors and result.exit_code != 0 else None)
        if message is not None:
            return classify_api_error(message, timed_out=result.timed_out)
        return exit_error(result, self.binary, read_output(result.stderr_path, result.stderr_from))


def _drop_added_nulls(out: EngineOutput, source: Path) -> None:
    """The answer without the nulls the strict form (made from `source`, when this turn
    passed one) added for optional properties."""
    try:
        schema = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    answer = drop_added_nulls(schema, out.parsed_json)
    if answer != out.parsed_json:
        out.parsed_json = answer
        out.final_text = json.dumps(answer, ensure_ascii=False)


def last_invocation(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the last codex process: resumed turns append to the same stdout log."""
    starts = [i for i, e in enumerate(events) if e.get("type") == "thread.started"]
    return events[starts[-1] :] if starts else events


def classify_api_error(message: str, timed_out: bool = False) -> EngineError:
    """AUTH_MISSING for a missing key, else MODEL_API_ERROR (with the HTTP status if known).
    codex relays the body of a 400 as it came (`{"error": {"message", "type", "code"}}`), with
    no status: the provider's message is the error's, its type and code go in the details."""
    if any(p in message.lower() for p in _AUTH_PATTERNS):
        return EngineError(ErrorCode.AUTH_MISSING, message, {"timed_out": timed_out})
    relayed = provider_error(message) if message.lstrip().startswith("{") else None
    if relayed is None:
        status = http_status(message)
        if status is None and _SERVER_ERROR in message:  # its words for a 500, status unsaid
            status = 500
        return api_error(message, status, timed_out=timed_out)
    text, status, details = relayed
    return api_error(text, status or 400, timed_out=timed_out, **details)


ADAPTER = CodexAdapter()
