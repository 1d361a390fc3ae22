"""OpenCode adapter: `opencode run --format json -m PROVIDER/MODEL PROMPT`.

Writes `<run>/opencode.json` (the merged ``settings`` plus, when ``base_url`` is set, an
OpenAI-compatible provider named ``runner``) and gives the CLI a HOME under the run dir, so
nothing lands in a shared user config. The key travels in the environment and the config
refers to it with ``{env:...}``, so it is never written to disk. ``permission.question`` follows
the execution mode: ``deny`` in auto (nobody can answer), ``allow`` in interactive.

Output is NDJSON; every event carries ``sessionID``: ``step_start``, ``tool_use{part.tool,
part.state}``, ``text{part.text}``, ``step_finish{part.reason, part.tokens}`` and on failure
``error{error{name, data{message, statusCode}}}`` with exit 1.

A new session gets ``--title "skill <id>"``: without a title, opencode spends a request to the
(small) model on one before it starts, i.e. every run would cost two model calls instead of one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runner_core.engines.base import (
    CommandSpec,
    EngineContext,
    EngineError,
    EngineOutput,
    ProcessResult,
)
from runner_core.engines.config import deep_merge
from runner_core.engines.failures import api_error, process_error
from runner_core.engines.invocation import RUN_HOME_FILES, command_spec, find_cli, run_env
from runner_core.engines.setting_types import BOOLEAN, OBJECT, STRING, STRINGS, map_of, table
from runner_core.engines.streams import (
    UsageKeys,
    json_lines,
    json_of_text,
    read_output,
    token_counts,
)
from runner_core.error_codes import ErrorCode
from runner_core.workspace import GIT_MARKER  # opencode stops its upward scan at a git root

# opencode.json keys as opencode types them ("Configuration is invalid" otherwise; kilo too)
SETTINGS_SCHEMA = table(
    model=STRING,
    small_model=STRING,
    autoupdate={"type": ["boolean", "string"]},  # or "notify"
    share=STRING,
    snapshot=BOOLEAN,
    enabled_providers=STRINGS,
    disabled_providers=STRINGS,
    provider=map_of(OBJECT),
    permission={"type": ["string", "object"]},  # one action for all tools, or one per tool
    mcp=OBJECT,
)
PROVIDER_ID = "runner"
KEY_ENV = "SKILL_RUNNER_OPENCODE_API_KEY"

# the step_finish counts added up: input leaves out cache reads and writes, output reasoning
USAGE = UsageKeys(
    input=("input", "cache_read", "cache_write"),
    output=("output", "reasoning"),
    cached="cache_read",
    reasoning="reasoning",
    cost="cost",
)


@dataclass(frozen=True)
class OpencodeAdapter:
    """Runs `opencode run` headless; see the module docstring."""

    name: str = "opencode"
    binary: str = "opencode"
    skill_dirs: tuple[str, ...] = (".agents/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """opencode.json in the run dir, per-run HOME, provider key in the environment."""
        config = ctx.config
        cli = find_cli(self.binary, ctx)
        settings, extra = provider_settings(config, cli.model, cli.key)
        question = "allow" if ctx.execution_mode == "interactive" else "deny"
        settings = deep_merge(settings, {"permission": {"question": question}})
        argv = [cli.program, "run", "--format", "json"]
        if settings.get("model"):
            argv += ["-m", settings["model"]]
        # a new session is named here, or opencode asks the model for a title: a second request
        if not ctx.session_id:
            argv += ["--title", f"skill {ctx.skill_id}"]
        files = {**RUN_HOME_FILES, "opencode.json": json.dumps(settings, indent=2)}
        if not (ctx.run_dir / ".git").exists():
            files.update(GIT_MARKER)
        # a prompt too long for argv goes to stdin: opencode run reads it as the message
        return command_spec(
            ctx, argv, run_env(ctx.run_dir, cli.path, config, extra), resume="-s", files=files
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Read the NDJSON events, then type any failure."""
        stderr = read_output(result.stderr_path, result.stderr_from)
        events = json_lines(read_output(result.stdout_path, result.stdout_from))
        output = parse_events(events, result.exit_code)
        if output.error is None:
            output.error = process_error(result, self.binary, stderr, printed=bool(events))
        return output


def provider_settings(
    config: dict[str, Any], model: str | None, key: str | None, key_env: str = KEY_ENV
) -> tuple[dict[str, Any], dict[str, str]]:
    """The opencode.json content and the env carrying the key (in `key_env`; kilo, an opencode
    fork, takes the same settings).

    With ``base_url`` the model is served by an OpenAI-compatible provider ``runner``; without
    it ``model`` must already be ``provider/model`` and the key is passed under ``api_key_env``.
    """
    settings = deep_merge({}, config.get("settings", {}))
    extra: dict[str, str] = {}
    if config.get("base_url") and model:
        bare = model.split("/", 1)[1] if model.startswith(f"{PROVIDER_ID}/") else model
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Skill Runner provider",
            "options": {"baseURL": str(config["base_url"]), "apiKey": f"{{env:{key_env}}}"},
            "models": {bare: {}},
        }
        settings = deep_merge(settings, {"provider": {PROVIDER_ID: provider}})
        settings["model"] = f"{PROVIDER_ID}/{bare}"
        if key:
            extra[key_env] = key
    elif model:
        settings["model"] = model
        if key and config.get("api_key_env"):
            extra[str(config["api_key_env"])] = key
    return settings, extra


def parse_events(events: list[dict[str, Any]], exit_code: int | None) -> EngineOutput:
    """Turn opencode NDJSON events into an EngineOutput."""
    output = EngineOutput(exit_code=exit_code)
    usage: dict[str, Any] = {}
    text = ""
    new_step = False
    for event in events:
        kind = event.get("type")
        part = event.get("part") or {}
        output.session_id = output.session_id or event.get("sessionID") or part.get("sessionID")
        if kind == "step_start":
            new_step = True  # the answer is the last step's text, also when logs are appended
        elif kind == "text":
            text = "" if new_step else text
            new_step = False
            text += str(part.get("text") or "")
        elif kind == "tool_use":
            text = ""
            state = part.get("state") or {}
            output.tool_calls.append(
                {
                    "id": part.get("callID") or part.get("id"),
                    "name": part.get("tool"),
                    "input": state.get("input") or {},
                    "status": state.get("status"),
                    "output": state.get("output"),
                }
            )
        elif kind == "step_finish":
            add_tokens(usage, part.get("tokens") or {}, part.get("cost"))
            output.envelope = event
        elif kind == "error":
            output.error = event_error(event.get("error") or {})
    output.usage = usage
    output.tokens = token_counts(usage, USAGE)
    output.final_text = text or None
    output.parsed_json = json_of_text(output.final_text)
    return output


def add_tokens(usage: dict[str, Any], tokens: dict[str, Any], cost: Any) -> None:
    """Sum a step's token counts (input, output, reasoning, cache.read/write) into `usage`."""
    flat = {k: v for k, v in tokens.items() if isinstance(v, (int, float))}
    for name, value in (tokens.get("cache") or {}).items():
        flat[f"cache_{name}"] = value
    for name, value in flat.items():
        usage[name] = usage.get(name, 0) + value
    if isinstance(cost, (int, float)):
        usage["cost"] = usage.get("cost", 0) + cost


def event_error(error: dict[str, Any]) -> EngineError:
    """Map an ``error`` event (``{name, data{message, statusCode}}``) to a typed error."""
    data = error.get("data") or {}
    message = str(data.get("message") or error.get("name") or "opencode reported an error")
    status = data.get("statusCode")
    if error.get("name") == "ProviderAuthError":
        return EngineError(ErrorCode.AUTH_MISSING, message, {"name": error.get("name")})
    return api_error(message, status if isinstance(status, int) else None, name=error.get("name"))


ADAPTER = OpencodeAdapter()
