"""Claude Code adapter: `claude --print --output-format stream-json --verbose`.

Config keys read from `ctx.config` (see runner_core.engines.config):

- ``base_url``: Anthropic Messages endpoint root (``ANTHROPIC_BASE_URL``, no ``/v1``).
- ``api_key`` / ``api_key_env``: the key, or the name of the service variable holding it;
  it reaches the CLI as ``ANTHROPIC_API_KEY``.
- ``model``: used when ``ctx.model`` is not set (``--model``).
- ``env``: extra variables for the CLI (e.g. ``CLAUDE_CODE_MAX_RETRIES``).
- ``settings``: written to the per-run user settings file ``settings.json``.

Each run gets ``HOME=<run_dir>/.claude-home`` and ``CLAUDE_CONFIG_DIR`` below it; sessions live
there, so a resume (``--resume``) must use the same run dir. Tools the skill needs are
pre-approved with ``--allowedTools``; in ``auto`` mode the ask-the-user tool is disallowed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner_core.engines.base import CommandSpec, EngineContext, EngineError, EngineOutput, ProcessResult
from runner_core.engines.config import (
    api_error, engine_env, exit_error, json_lines, json_of_text, missing_cli_error, prompt_fits_argv,
    read_output, resolve_api_key, resolve_binary,
)

HOME_DIR = ".claude-home"
ALLOWED_TOOLS = ("Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "Skill", "TodoWrite")
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
_AUTH_PATTERNS = ("not logged in", "invalid api key", "/login")


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
        binary_path = resolve_binary(self.binary)
        extra = {**QUIET_ENV, "CLAUDE_CONFIG_DIR": str(config_dir)}
        if ctx.config.get("base_url"):
            extra["ANTHROPIC_BASE_URL"] = str(ctx.config["base_url"])
        key = resolve_api_key(ctx.config)
        if key:
            extra["ANTHROPIC_API_KEY"] = key
        argv = [str(binary_path or self.binary), "--print", "--output-format", "stream-json",
                "--verbose", "--allowedTools", ",".join(ALLOWED_TOOLS)]
        if ctx.execution_mode != "interactive":
            argv += ["--disallowedTools", "AskUserQuestion"]
        model = ctx.model or ctx.config.get("model")
        if model:
            argv += ["--model", str(model)]
        if ctx.session_id:
            argv += ["--resume", ctx.session_id]
        # A prompt may start with "-"; one too long for argv is read from stdin.
        fits = prompt_fits_argv(ctx.prompt)
        if fits:
            argv += ["--", ctx.prompt]
        files: dict[str, str] = {}
        if ctx.config.get("settings"):
            rel = config_dir.relative_to(Path(ctx.run_dir)) / "settings.json"
            files[str(rel)] = json.dumps(ctx.config["settings"], indent=2)
        env = engine_env(home=home, binary_path=binary_path, config=ctx.config, extra=extra)
        return CommandSpec(argv=argv, cwd=Path(ctx.run_dir), env=env,
                           stdin=None if fits else ctx.prompt, files=files)

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Session id, final text, usage, tool calls and a typed error from the stream."""
        events = last_invocation(json_lines(read_output(result.stdout_path)))
        out = EngineOutput(exit_code=result.exit_code)
        init: dict[str, Any] = {}
        envelope: dict[str, Any] | None = None
        calls: dict[str, dict[str, Any]] = {}
        last_text: str | None = None
        for event in events:
            kind = event.get("type")
            out.session_id = event.get("session_id") or out.session_id
            if kind == "system" and event.get("subtype") == "init":
                init = event
            elif kind == "assistant":
                last_text = _collect_assistant(event, calls) or last_text
            elif kind == "user":
                _collect_results(event, calls)
            elif kind == "result":
                envelope = event
        out.tool_calls = list(calls.values())
        out.envelope = envelope
        if envelope is not None:
            out.usage = dict(envelope.get("usage") or {})
            if "total_cost_usd" in envelope:
                out.usage["cost_usd"] = envelope["total_cost_usd"]
            out.final_text = envelope.get("result") if isinstance(envelope.get("result"), str) else last_text
        else:
            out.final_text = last_text
        out.error = self._error(result, events, init, envelope)
        if out.error is None:
            out.parsed_json = json_of_text(out.final_text)
        return out

    def _error(self, result: ProcessResult, events: list[dict[str, Any]],
               init: dict[str, Any], envelope: dict[str, Any] | None) -> EngineError | None:
        if not events and (result.exit_code == 127 or resolve_binary(self.binary) is None):
            return missing_cli_error(self.binary)
        details: dict[str, Any] = {"timed_out": result.timed_out}
        if envelope is not None:
            text = str(envelope.get("result") or "")
            status = envelope.get("api_error_status")
            if status is not None:
                details["status"] = status
            if envelope.get("is_error") or text.startswith("API Error"):
                no_key = init.get("apiKeySource") == "none" and status is None
                if no_key or (status is None and any(p in text.lower() for p in _AUTH_PATTERNS)):
                    return EngineError("AUTH_MISSING", text or "no API key", details)
                return api_error(text or "model call failed", **details)
            if envelope.get("permission_denials"):
                details["permission_denials"] = envelope["permission_denials"]
        retries = [e for e in events if e.get("subtype") == "api_retry"]
        if envelope is None and retries:  # killed while retrying a failing model call
            last = retries[-1]
            details["status"] = last.get("error_status")
            return api_error(str(last.get("error") or "model call failed"), **details)
        stderr = read_output(result.stderr_path)
        if envelope is None and result.exit_code == 0:
            return EngineError("ENGINE_FAILED", "claude exited without a result", {"stderr_tail": stderr[-2000:]})
        return exit_error(result, self.binary, stderr)


def last_invocation(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the last claude process: resumed turns append to the same stdout log."""
    starts = [i for i, e in enumerate(events) if e.get("type") == "system" and e.get("subtype") == "init"]
    return events[starts[-1]:] if starts else events


def _collect_assistant(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> str | None:
    """Record tool_use blocks; return the message's text, if any."""
    texts: list[str] = []
    for block in (event.get("message") or {}).get("content") or []:
        if block.get("type") == "tool_use":
            calls[block.get("id", str(len(calls)))] = {
                "id": block.get("id"), "name": block.get("name"), "input": block.get("input")}
        elif block.get("type") == "text":
            texts.append(block.get("text", ""))
    return "".join(texts) or None


def _collect_results(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> None:
    content = (event.get("message") or {}).get("content")
    for block in content if isinstance(content, list) else []:
        call = calls.get(block.get("tool_use_id", ""))
        if block.get("type") == "tool_result" and call is not None:
            call["output"] = block.get("content")
            call["is_error"] = bool(block.get("is_error"))


ADAPTER = ClaudeAdapter()
