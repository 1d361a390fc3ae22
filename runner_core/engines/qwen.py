"""Qwen Code adapter: `qwen --auth-type openai --yolo --output-format stream-json -p PROMPT`.

Each run gets its own HOME (`<run>/.home`, never the run dir itself: qwen skips project skills
when the working dir is HOME) holding `.qwen/settings.json`. The provider is OpenAI-compatible:
``base_url``, the key and the model become OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.

stream-json follows Claude Code's layout (read by runner_core.engines.claude_stream). Trap: a
model API failure still ends with exit 0, ``subtype:"success"`` and
``result:"[API Error: ...]"``; it is reported as MODEL_API_ERROR here.

An auto run's output schema goes to ``--json-schema`` (runner_core.engines.native_schema;
``native_schema: false`` in the config turns it off), on every turn: qwen offers the model a
``structured_output`` tool with that schema, ends the turn on its first valid call and prints
the answer as the result's ``structured_result``, which is then the final text. A model that
answers plain text instead fails qwen's turn; that text is then the final text, for the output
chain, as without the flag. Trap: under the flag a failed model call is reported that way too,
its ``[API Error: ...]`` line as the "plain text": it stays MODEL_API_ERROR.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from runner_core.engines.base import (
    CommandSpec,
    EngineContext,
    EngineError,
    EngineOutput,
    ProcessResult,
)
from runner_core.engines.claude_stream import read_stream
from runner_core.engines.failures import api_error, http_status, process_error
from runner_core.engines.invocation import (
    command_spec,
    find_cli,
    program_argv,
    run_env,
    run_home_files,
)
from runner_core.engines.native_schema import TOOL, native_schema_for
from runner_core.engines.setting_types import BOOLEAN, OBJECT, STRING, map_of, table
from runner_core.engines.streams import (
    UsageKeys,
    json_lines,
    json_of_text,
    read_output,
    token_counts,
)
from runner_core.error_codes import ErrorCode

_API_ERROR = re.compile(r"^\s*\[API Error:\s*(.*?)\]?\s*$", re.DOTALL)
# qwen's failure when the model answers text under --json-schema (the text is in the stream)
_PLAIN_TEXT = "Model produced plain text instead of calling the structured_output tool"
_AUTH_HINTS = ("Missing API key", "OPENAI_API_KEY environment variable")

# settings.json keys as qwen's settings schema types them
SETTINGS_SCHEMA = table(
    model=table(name=STRING),
    general=table(enableAutoUpdate=BOOLEAN),
    privacy=table(usageStatisticsEnabled=BOOLEAN),
    memory=table(enableManagedAutoMemory=BOOLEAN),
    security=table(folderTrust=table(enabled=BOOLEAN)),
    mcpServers=map_of(OBJECT),
)
# the result's usage: input counts the cache reads it also lists
USAGE = UsageKeys(cached="cache_read_input_tokens")


@dataclass(frozen=True)
class QwenAdapter:
    """Runs Qwen Code headless; see the module docstring."""

    name: str = "qwen"
    binary: str = "qwen"
    skill_dirs: tuple[str, ...] = (".qwen/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """Per-run HOME with settings.json, OpenAI-compatible provider env, stream-json."""
        config = ctx.config
        cli = find_cli(self.binary, ctx)
        extra: dict[str, str] = {}
        if cli.key:
            extra["OPENAI_API_KEY"] = cli.key
        if config.get("base_url"):
            extra["OPENAI_BASE_URL"] = str(config["base_url"])
        if cli.model:
            extra["OPENAI_MODEL"] = cli.model
        env = run_env(ctx.run_dir, cli.path, config, extra)
        argv = program_argv(self.binary, cli.path, config, env)
        argv += ["--auth-type", "openai", "--yolo", "--output-format", "stream-json"]
        if cli.model:
            argv += ["-m", cli.model]
        schema = native_schema_for(ctx, TOOL)
        if schema is not None:  # on every turn: a resumed session does not keep it
            argv += ["--json-schema", json.dumps(schema, ensure_ascii=False)]
        return command_spec(
            ctx,
            argv,
            env,
            prompt_flag="--prompt",  # piped stdin alone is headless too
            files=run_home_files(".qwen/settings.json", config.get("settings", {})),
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Read the stream-json events, then type any failure."""
        stderr = read_output(result.stderr_path, result.stderr_from)
        events = json_lines(read_output(result.stdout_path, result.stdout_from))
        stream = read_stream(events, _tool_result)
        output = EngineOutput(
            exit_code=result.exit_code,
            final_text=stream.text or None,
            envelope=stream.result,
            session_id=stream.session_id,
            # each answer's usage, as the stream printed it: the result event's is the
            # session's running total, which on a resumed turn holds the earlier turns too
            usage=stream.message_usage() or stream.usage,
            tool_calls=stream.tool_calls,
        )
        output.tokens = token_counts(output.usage, USAGE)
        output.error = result_error(stream.result) if stream.result is not None else None
        text_answer = output.error is not None and output.error.message.startswith(_PLAIN_TEXT)
        if text_answer:  # the model wrote text, not the schema tool: the chain reads it,
            # unless it is qwen's own "[API Error: ...]" line (a failed model call)
            output.error = text_api_error(output.final_text or "", "error_during_execution")
        if output.error is None:
            output.parsed_json = json_of_text(output.final_text)
        if (
            output.error is None
            and result.exit_code != 0
            and not events
            and any(hint in stderr for hint in _AUTH_HINTS)
        ):
            output.error = EngineError(
                ErrorCode.AUTH_MISSING, stderr.strip()[-2000:], {"exit_code": result.exit_code}
            )
        if output.error is None and not text_answer:
            output.error = process_error(result, self.binary, stderr, printed=bool(events))
        return output


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "error" if block.get("is_error") else "success",
        "output": block.get("content"),
    }


def text_api_error(text: str, subtype: Any) -> EngineError | None:
    """MODEL_API_ERROR when `text` is qwen's ``[API Error: ...]`` line, else None."""
    match = _API_ERROR.match(text)
    return api_error(text, http_status(match.group(1)), subtype=subtype) if match else None


def result_error(event: dict[str, Any]) -> EngineError | None:
    """The error of a ``result`` event: ``is_error``, an error subtype, or an ``[API Error:`` text
    (in ``result`` up to qwen 0.15, in ``error.message`` from 0.24 on)."""
    text = str(event.get("result") or "")
    raw_error = event.get("error")
    error = raw_error if isinstance(raw_error, dict) else {}
    for candidate in (text, str(error.get("message") or "")):
        found = text_api_error(candidate, event.get("subtype"))
        if found is not None:
            return found
    if event.get("is_error") or str(event.get("subtype", "success")) != "success":
        message = str(error.get("message") or text or event.get("subtype"))
        code = (
            ErrorCode.AUTH_MISSING
            if any(hint in message for hint in _AUTH_HINTS)
            else ErrorCode.ENGINE_FAILED
        )
        return EngineError(code, message, {"subtype": event.get("subtype")})
    return None


ADAPTER = QwenAdapter()
