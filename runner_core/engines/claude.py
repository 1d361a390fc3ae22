"""Claude Code adapter: `claude --print --output-format stream-json --verbose`.

Config keys read from `ctx.config` (see runner_core.engines.config):

- ``base_url``: Anthropic Messages endpoint root (``ANTHROPIC_BASE_URL``, no ``/v1``).
- ``api_key`` / ``api_key_env``: the key, or the name of the service variable holding it;
  it reaches the CLI as ``ANTHROPIC_API_KEY``.
- ``model``: used when ``ctx.model`` is not set (``--model``).
- ``env``: extra variables for the CLI (e.g. ``CLAUDE_CODE_MAX_RETRIES``).
- ``settings``: written to the per-run user settings file ``settings.json``.

Each run gets ``HOME=<run_dir>/.claude-home`` and ``CLAUDE_CONFIG_DIR`` below it; sessions live
there, so a resume (``--resume``) must use the same run dir. The stream's usage is in its final
``result`` (its ``total_cost_usd`` is the session's, carried over by a resume: the turn's cost
is read from ``model_usage_since_last_result``); a turn cut short is counted per answer, from the session log there (the stream's
own events carry each answer's counts as it started). Tools the skill needs are
pre-approved with ``--allowedTools``; in ``auto`` mode the ask-the-user tool is disallowed.

An auto run's output schema goes to ``--json-schema`` (runner_core.engines.native_schema;
``native_schema: false`` in the config turns it off): claude offers the model a
``StructuredOutput`` tool with that schema, checks its input, and prints the accepted answer
as the result's ``structured_output``, which is then the final text.
"""

from __future__ import annotations

import json
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
from runner_core.engines.claude_stream import Stream, read_stream
from runner_core.engines.failures import api_error, exit_error, missing_cli_error
from runner_core.engines.invocation import command_spec, engine_env, find_cli, resolve_binary
from runner_core.engines.native_schema import TOOL, native_schema_for
from runner_core.engines.session_logs import claude_message_usage
from runner_core.engines.setting_types import BOOLEAN, INTEGER, OBJECT, STRING, STRINGS, table
from runner_core.engines.streams import (
    UsageKeys,
    json_lines,
    json_of_text,
    read_output,
    token_counts,
)
from runner_core.error_codes import ErrorCode

HOME_DIR = ".claude-home"
ALLOWED_TOOLS = ("Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "Skill", "TodoWrite")
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
_AUTH_PATTERNS = ("not logged in", "invalid api key", "/login")

# settings.json keys as Claude Code's settings documentation types them (claude skips a whole
# settings file that holds a value of another type)
SETTINGS_SCHEMA = table(
    model=STRING,
    apiKeyHelper=STRING,
    cleanupPeriodDays=INTEGER,
    includeCoAuthoredBy=BOOLEAN,
    env=OBJECT,
    permissions=table(allow=STRINGS, deny=STRINGS, ask=STRINGS, defaultMode=STRING),
)

# the result's usage (Anthropic counts cache reads and writes beside input_tokens) and cost
USAGE = UsageKeys(
    input=("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
    cached="cache_read_input_tokens",
    cost="cost_usd",
)


@dataclass(frozen=True)
class ClaudeAdapter:
    """Builds `claude --print` invocations and parses their stream-json."""

    name: str = "claude"
    binary: str = "claude"
    skill_dirs: tuple[str, ...] = (".claude/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """`claude --print --output-format stream-json ... [--resume SID] -- PROMPT`."""
        home = Path(ctx.run_dir) / HOME_DIR
        config_dir = home / ".claude"
        cli = find_cli(self.binary, ctx)
        extra = {**QUIET_ENV, "CLAUDE_CONFIG_DIR": str(config_dir)}
        if ctx.config.get("base_url"):
            extra["ANTHROPIC_BASE_URL"] = str(ctx.config["base_url"])
        if cli.key:
            extra["ANTHROPIC_API_KEY"] = cli.key
        argv = [
            cli.program,
            "--print",
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            ",".join(ALLOWED_TOOLS),
        ]
        if ctx.execution_mode != "interactive":
            argv += ["--disallowedTools", "AskUserQuestion"]
        if cli.model:
            argv += ["--model", str(cli.model)]
        schema = native_schema_for(ctx, TOOL)
        if schema is not None:
            argv += ["--json-schema", json.dumps(schema, ensure_ascii=False)]
        files: dict[str, str] = {}
        if ctx.config.get("settings"):
            rel = config_dir.relative_to(Path(ctx.run_dir)) / "settings.json"
            files[str(rel)] = json.dumps(ctx.config["settings"], indent=2)
        env = engine_env(home=home, binary_path=cli.path, config=ctx.config, extra=extra)
        return command_spec(ctx, argv, env, files=files)  # too long for argv: claude reads stdin

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Session id, final text, usage, tool calls and a typed error from the stream."""
        stream = read_stream(
            json_lines(read_output(result.stdout_path, result.stdout_from)), _tool_result
        )
        out = EngineOutput(
            exit_code=result.exit_code,
            final_text=stream.text,
            envelope=stream.result,
            session_id=stream.session_id,
            tool_calls=stream.tool_calls,
        )
        if stream.result is not None:
            out.usage = stream.usage
            cost = turn_cost(stream.result)
            if cost is not None:
                out.usage["cost_usd"] = cost
        elif result.cwd is not None:  # cut short: each answer's usage as the session log has it
            home = Path(result.cwd) / HOME_DIR
            out.usage = stream.message_usage(claude_message_usage(home, stream.session_id))
        out.tokens = token_counts(out.usage, USAGE)
        out.error = self._error(result, stream)
        if out.error is None:
            out.parsed_json = json_of_text(out.final_text)
        return out

    def _error(self, result: ProcessResult, stream: Stream) -> EngineError | None:
        envelope = stream.result
        if not stream.events and (result.exit_code == 127 or resolve_binary(self.binary) is None):
            return missing_cli_error(self.binary)
        details: dict[str, Any] = {"timed_out": result.timed_out}
        if envelope is not None:
            text = str(envelope.get("result") or "")
            status = envelope.get("api_error_status")
            if status is not None:
                details["status"] = status
            if envelope.get("is_error") or text.startswith("API Error"):
                no_key = stream.init.get("apiKeySource") == "none" and status is None
                if no_key or (status is None and any(p in text.lower() for p in _AUTH_PATTERNS)):
                    return EngineError(ErrorCode.AUTH_MISSING, text or "no API key", details)
                return api_error(text or "model call failed", **details)
            if envelope.get("permission_denials"):
                details["permission_denials"] = envelope["permission_denials"]
        retries = [e for e in stream.events if e.get("subtype") == "api_retry"]
        if envelope is None and retries:  # killed while retrying a failing model call
            last = retries[-1]
            details["status"] = last.get("error_status")
            return api_error(str(last.get("error") or "model call failed"), **details)
        stderr = read_output(result.stderr_path, result.stderr_from)
        if envelope is None and result.exit_code == 0:
            return EngineError(
                ErrorCode.ENGINE_FAILED,
                "claude exited without a result",
                {"stderr_tail": stderr[-2000:]},
            )
        return exit_error(result, self.binary, stderr)


def turn_cost(result: dict[str, Any]) -> float | None:
    """The invocation's cost: `total_cost_usd` is the session's, which a resumed turn carries
    over, so the costs of `model_usage_since_last_result` (one per model) when printed."""
    since = result.get("model_usage_since_last_result")
    if isinstance(since, dict) and since:
        costs = [m.get("costUSD") for m in since.values() if isinstance(m, dict)]
        numbers = [float(c) for c in costs if isinstance(c, (int, float))]
        if numbers and len(numbers) == len(costs):
            return sum(numbers)
    total = result.get("total_cost_usd")
    return float(total) if isinstance(total, (int, float)) else None


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    return {"output": block.get("content"), "is_error": bool(block.get("is_error"))}


ADAPTER = ClaudeAdapter()
