"""Gemini CLI adapter: `gemini --yolo --output-format stream-json -p PROMPT`.

Each run gets its own HOME (`<run>/.home`) holding `.gemini/settings.json`, so nothing is
written to a shared user config and sessions (kept under HOME) stay with the run for
`--resume`. The provider comes from the merged engine config: ``base_url`` becomes
GOOGLE_GEMINI_BASE_URL and the key GEMINI_API_KEY.

stream-json events: ``init{session_id}``, ``message{role, content, delta}``,
``tool_use{tool_name, tool_id, parameters}``, ``tool_result{tool_id, status, output}``,
``error{severity, message}``, ``result{status, error?, stats}``. The tokens are only in
``result``: a turn cut short is counted from the chat log gemini keeps under its HOME.
"""

from __future__ import annotations

import re
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
from runner_core.engines.config import deep_merge
from runner_core.engines.failures import api_error, http_status, process_error, provider_error
from runner_core.engines.invocation import (
    RUN_HOME,
    command_spec,
    find_cli,
    program_argv,
    run_env,
    run_home_files,
)
from runner_core.engines.session_logs import gemini_usage
from runner_core.engines.setting_types import (
    BOOLEAN,
    NUMBER,
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

BASE_SETTINGS: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
# settings.json keys as gemini's settings schema types them (a value of another type is
# reported "Invalid configuration" and used all the same)
SETTINGS_SCHEMA = table(
    model=table(name=STRING, maxSessionTurns=NUMBER),
    general=table(enableAutoUpdate=BOOLEAN, enableAutoUpdateNotification=BOOLEAN),
    privacy=table(usageStatisticsEnabled=BOOLEAN),
    telemetry=table(enabled=BOOLEAN),
    security=table(auth=table(selectedType=STRING), folderTrust=table(enabled=BOOLEAN)),
    skills=table(enabled=BOOLEAN, disabled=STRINGS),
    mcpServers=map_of(OBJECT),
)
# Printed when no key is configured (exit 41); a refused key is a MODEL_API_ERROR instead.
_AUTH_HINTS = ("must specify the GEMINI_API_KEY", "Invalid auth method")
_RETRY = re.compile(r"Attempt \d+ failed with status (\d{3})\. Retrying[^\n]*?([^\n]*)")

# stats (and the chat log's counts): output leaves out thoughts, which only the total holds
USAGE = UsageKeys(output=("output_tokens", "thoughts"), cached="cached", reasoning="thoughts")


def gemini_tokens(usage: dict[str, Any]) -> dict[str, Any] | None:
    """Token counts from gemini's stats: the thoughts are what the total has beyond input and
    output."""
    total, given, made = (usage.get(k) for k in ("total_tokens", "input_tokens", "output_tokens"))
    if isinstance(total, int) and isinstance(given, int) and isinstance(made, int):
        usage = {**usage, "thoughts": max(0, total - given - made)}
    return token_counts(usage, USAGE)


@dataclass(frozen=True)
class GeminiAdapter:
    """Runs the Gemini CLI headless; see the module docstring."""

    name: str = "gemini"
    binary: str = "gemini"
    skill_dirs: tuple[str, ...] = (".gemini/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """Per-run HOME with settings.json, provider env, stream-json output."""
        config = ctx.config
        cli = find_cli(self.binary, ctx)
        extra = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
        if cli.key:
            extra["GEMINI_API_KEY"] = cli.key
        if config.get("base_url"):
            extra["GOOGLE_GEMINI_BASE_URL"] = str(config["base_url"]).rstrip("/")
        env = run_env(ctx.run_dir, cli.path, config, extra)
        argv = program_argv(self.binary, cli.path, config, env)
        argv += ["--yolo", "--output-format", "stream-json"]
        if cli.model:
            argv += ["-m", cli.model]
        settings = deep_merge(BASE_SETTINGS, config.get("settings", {}))
        return command_spec(
            ctx,
            argv,
            env,
            prompt_flag="--prompt",  # piped stdin alone is headless too
            files=run_home_files(".gemini/settings.json", settings),
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Read the stream-json events; fall back to stderr for failures before the stream."""
        stderr = read_output(result.stderr_path, result.stderr_from)
        events = json_lines(read_output(result.stdout_path, result.stdout_from))
        output = parse_stream_events(events, result.exit_code)
        if output.envelope is None and result.cwd is not None:  # cut short before `result`
            output.usage = cut_short_usage(Path(result.cwd) / RUN_HOME, events, output.session_id)
            output.tokens = gemini_tokens(output.usage)
        if output.error is None and result.exit_code != 0:
            output.error = startup_error(stderr, result.exit_code)
        if output.error is None and output.envelope is None:  # stopped while retrying a call
            output.error = retry_error(stderr)
        if output.error is None:
            output.error = process_error(result, self.binary, stderr, printed=bool(events))
        return output


def parse_stream_events(events: list[dict[str, Any]], exit_code: int | None) -> EngineOutput:
    """Turn gemini stream-json events into an EngineOutput (no stderr fallback)."""
    output = EngineOutput(exit_code=exit_code)
    calls: dict[str, dict[str, Any]] = {}
    text = ""
    for event in events:
        kind = event.get("type")
        if kind == "init":  # a new invocation (resumed turns append to the same log)
            output.session_id = event.get("session_id") or output.session_id
            text, output.error = "", None
        elif kind == "message" and event.get("role") == "assistant":
            text += str(event.get("content") or "")
        elif kind == "tool_use":
            text = ""  # like the CLI's json mode: the answer is what follows the last tool call
            call = {
                "id": event.get("tool_id"),
                "name": event.get("tool_name"),
                "input": event.get("parameters") or {},
            }
            calls[str(call["id"])] = call
            output.tool_calls.append(call)
        elif kind == "tool_result" and str(event.get("tool_id")) in calls:
            calls[str(event.get("tool_id"))].update(
                status=event.get("status"), output=event.get("output")
            )
        elif kind == "result":
            output.envelope = event
            output.usage = dict(event.get("stats") or {})
            output.tokens = gemini_tokens(output.usage)
            if event.get("status") == "error":
                output.error = result_error(event.get("error") or {})
    output.final_text = text or None
    output.parsed_json = json_of_text(output.final_text)
    return output


def cut_short_usage(
    home: Path, events: list[dict[str, Any]], session_id: str | None
) -> dict[str, Any]:
    """The tokens of the invocation's answers so far, from gemini's chat log (the stream
    prints them only in its `result`): the messages logged since the last `init`."""
    starts = [e for e in events if e.get("type") == "init" and e.get("timestamp")]
    if not starts:
        return {}
    return gemini_usage(home, session_id, str(starts[-1]["timestamp"]))


def result_error(error: dict[str, Any]) -> EngineError:
    """Map a stream-json ``result.error`` to a typed error."""
    message = str(error.get("message") or "gemini reported an error")
    status = http_status(message)
    if any(hint in message for hint in _AUTH_HINTS):
        return EngineError(ErrorCode.AUTH_MISSING, message, {"type": error.get("type")})
    relayed = provider_error(message)  # "[API Error: {the provider's JSON body}]"
    if relayed is not None:
        text, named, details = relayed
        return api_error(text, named or status, type=error.get("type"), **details)
    return api_error(message, status, type=error.get("type"))


def retry_error(stderr: str) -> EngineError | None:
    """The failed model call gemini was retrying when it was stopped ("Attempt 3 failed with
    status 429. Retrying with backoff... <the provider's body>"), else None."""
    attempts = _RETRY.findall(stderr)
    if not attempts:
        return None
    status, rest = attempts[-1]
    relayed = provider_error(rest)
    message = relayed[0] if relayed is not None else f"model call failed with status {status}"
    return api_error(message, int(status), retrying=True)


def startup_error(stderr: str, exit_code: int | None) -> EngineError | None:
    """Errors gemini prints before its stream starts (auth is checked at startup: exit 41)."""
    if any(hint in stderr for hint in _AUTH_HINTS) or exit_code == 41:
        return EngineError(
            ErrorCode.AUTH_MISSING,
            stderr.strip()[-2000:] or "gemini auth failed",
            {"exit_code": exit_code},
        )
    return None


ADAPTER = GeminiAdapter()
