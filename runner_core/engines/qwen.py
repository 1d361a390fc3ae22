"""Qwen Code adapter: `qwen --auth-type openai --yolo --output-format stream-json -p PROMPT`.

Each run gets its own HOME (`<run>/.home`, never the run dir itself: qwen skips project skills
when the working dir is HOME) holding `.qwen/settings.json`. The provider is OpenAI-compatible:
``base_url``, the key and the model become OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.

stream-json follows Claude Code's layout: ``system{subtype:init, session_id}``,
``assistant{message.content[text|tool_use]}``, ``user{message.content[tool_result]}`` and a final
``result{subtype, is_error, result, session_id, usage}``. Trap: a model API failure still ends
with exit 0, ``subtype:"success"`` and ``result:"[API Error: ...]"``; it is reported as
MODEL_API_ERROR here.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from runner_core.engines.base import CommandSpec, EngineContext, EngineError, EngineOutput, ProcessResult
from runner_core.engines.config import (
    RUN_HOME, RUN_HOME_FILES, api_error, exit_error, json_lines, json_of_text,
    missing_cli_error, program_argv, prompt_fits_argv, read_output, resolve_api_key, resolve_binary,
    run_env,
)

_API_ERROR = re.compile(r"^\s*\[API Error:\s*(.*?)\]?\s*$", re.DOTALL)
_STATUS = re.compile(r"\b([45]\d\d)\b")
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
        binary_path = resolve_binary(self.binary)
        model = ctx.model or config.get("model")
        extra: dict[str, str] = {}
        key = resolve_api_key(config)
        if key:
            extra["OPENAI_API_KEY"] = key
        if config.get("base_url"):
            extra["OPENAI_BASE_URL"] = str(config["base_url"])
        if model:
            extra["OPENAI_MODEL"] = model
        env = run_env(ctx.run_dir, binary_path, config, extra)
        argv = program_argv(self.binary, binary_path, config, env)
        argv += ["--auth-type", "openai", "--yolo", "--output-format", "stream-json"]
        if model:
            argv += ["-m", model]
        if ctx.session_id:
            argv += ["--resume", ctx.session_id]
        stdin = None
        if prompt_fits_argv(ctx.prompt):
            argv.append(f"--prompt={ctx.prompt}")  # `=` form: a prompt may start with "-"
        else:
            stdin = ctx.prompt  # piped stdin alone makes the run headless
        return CommandSpec(
            argv=argv,
            cwd=ctx.run_dir,
            stdin=stdin,
            env=env,
            files={**RUN_HOME_FILES,
                   f"{RUN_HOME}/.qwen/settings.json": json.dumps(config.get("settings", {}), indent=2)},
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Read the stream-json events, then type any failure."""
        stderr = read_output(result.stderr_path)
        events = json_lines(read_output(result.stdout_path))
        output = parse_stream_events(events, result.exit_code)
        if output.error is None and result.exit_code != 0:
            if not events and any(hint in stderr for hint in _AUTH_HINTS):
                output.error = EngineError("AUTH_MISSING", stderr.strip()[-2000:],
                                           {"exit_code": result.exit_code})
            else:
                output.error = exit_error(result, self.binary, stderr)
        if output.error is None and not events and resolve_binary(self.binary) is None:
            output.error = missing_cli_error(self.binary)
        return output


def parse_stream_events(events: list[dict[str, Any]], exit_code: int | None) -> EngineOutput:
    """Turn qwen (Claude-style) stream-json events into an EngineOutput."""
    output = EngineOutput(exit_code=exit_code)
    calls: dict[str, dict[str, Any]] = {}
    text = ""
    for event in events:
        kind = event.get("type")
        output.session_id = event.get("session_id") or output.session_id
        content = (event.get("message") or {}).get("content") or []
        if kind == "system" and event.get("subtype") == "init":
            text, output.error = "", None  # a new invocation: resumed turns append to the log
        elif kind == "assistant":
            for block in content:
                if block.get("type") == "text":
                    text += str(block.get("text") or "")
                elif block.get("type") == "tool_use":
                    text = ""
                    call = {"id": block.get("id"), "name": block.get("name"), "input": block.get("input") or {}}
                    calls[str(call["id"])] = call
                    output.tool_calls.append(call)
        elif kind == "user":
            for block in content:
                if block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                    calls[str(block.get("tool_use_id"))].update(
                        status="error" if block.get("is_error") else "success", output=block.get("content"))
        elif kind == "result":
            output.envelope = event
            output.usage = dict(event.get("usage") or {})
            text = str(event.get("result")) if event.get("result") is not None else text
            output.error = result_error(event)
    output.final_text = text or None
    if output.error is None:
        output.parsed_json = json_of_text(output.final_text)
    return output


def result_error(event: dict[str, Any]) -> EngineError | None:
    """The error of a ``result`` event: ``is_error``, an error subtype, or an ``[API Error:`` text."""
    text = str(event.get("result") or "")
    match = _API_ERROR.match(text)
    if match:
        status = _STATUS.search(match.group(1))
        return api_error(text, int(status.group(1)) if status else None, subtype=event.get("subtype"))
    if event.get("is_error") or str(event.get("subtype", "success")) != "success":
        error = event.get("error") if isinstance(event.get("error"), dict) else {}
        message = str(error.get("message") or text or event.get("subtype"))
        code = "AUTH_MISSING" if any(hint in message for hint in _AUTH_HINTS) else "ENGINE_FAILED"
        return EngineError(code, message, {"subtype": event.get("subtype")})
    return None


ADAPTER = QwenAdapter()
