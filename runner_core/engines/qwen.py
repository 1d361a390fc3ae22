"""Qwen Code adapter: `qwen --auth-type openai --yolo --output-format stream-json -p PROMPT`.

Each run gets its own HOME (`<run>/.home`, never the run dir itself: qwen skips project skills
when the working dir is HOME) holding `.qwen/settings.json`. The provider is OpenAI-compatible:
``base_url``, the key and the model become OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.

stream-json follows Claude Code's layout (read by runner_core.engines.claude_stream). Trap: a
model API failure still ends with exit 0, ``subtype:"success"`` and
``result:"[API Error: ...]"``; it is reported as MODEL_API_ERROR here.
"""

from __future__ import annotations

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
from runner_core.engines.streams import json_lines, json_of_text, read_output, token_counts
from runner_core.error_codes import ErrorCode

_API_ERROR = re.compile(r"^\s*\[API Error:\s*(.*?)\]?\s*$", re.DOTALL)
_AUTH_HINTS = ("Missing API key", "OPENAI_API_KEY environment variable")


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
            # cut short before the result event: each answer's usage, as the stream printed it
            usage=stream.usage if stream.result is not None else stream.message_usage(),
            tool_calls=stream.tool_calls,
        )
        output.tokens = token_counts(output.usage)
        output.error = result_error(stream.result) if stream.result is not None else None
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
        if output.error is None:
            output.error = process_error(result, self.binary, stderr, printed=bool(events))
        return output


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "error" if block.get("is_error") else "success",
        "output": block.get("content"),
    }


def result_error(event: dict[str, Any]) -> EngineError | None:
    """The error of a ``result`` event: ``is_error``, an error subtype, or an ``[API Error:`` text
    (in ``result`` up to qwen 0.15, in ``error.message`` from 0.24 on)."""
    text = str(event.get("result") or "")
    raw_error = event.get("error")
    error = raw_error if isinstance(raw_error, dict) else {}
    for candidate in (text, str(error.get("message") or "")):
        match = _API_ERROR.match(candidate)
        if match:
            return api_error(candidate, http_status(match.group(1)), subtype=event.get("subtype"))
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
