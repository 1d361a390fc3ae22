"""iFlow CLI adapter: `iflow --yolo --thinking -p PROMPT` (resume: `--resume SID`).

iFlow is a Gemini CLI fork with no JSON output mode: it prints the answer as plain text and
ends with an ``<Execution Info>`` block whose JSON holds ``"session-id"`` and token usage. The
CLI is not installable from the registry this project uses, so this adapter is tested only
against transcripts written from its documented behaviour, not recorded from the real CLI.

Each run gets its own HOME (`<run>/.home`) holding `.iflow/settings.json` (an OpenAI-compatible
provider: ``baseUrl``, ``modelName``); the key travels in the environment as IFLOW_apiKey.
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
from runner_core.engines.config import deep_merge
from runner_core.engines.failures import api_error, http_status, process_error
from runner_core.engines.invocation import command_spec, find_cli, run_env, run_home_files
from runner_core.engines.streams import UsageKeys, json_of_text, read_output, token_counts
from runner_core.error_codes import ErrorCode

_INFO = re.compile(r"<Execution Info>\s*(.*?)\s*</Execution Info>", re.DOTALL)
_API_ERROR = re.compile(r"\[API Error:\s*(.*?)\]\s*$", re.DOTALL | re.MULTILINE)
_AUTH_HINTS = ("apiKey", "API key", "api key", "auth method", "Auth method")


@dataclass(frozen=True)
class IflowAdapter:
    """Runs the iFlow CLI headless; see the module docstring."""

    name: str = "iflow"
    binary: str = "iflow"
    skill_dirs: tuple[str, ...] = (".iflow/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """Per-run HOME with `.iflow/settings.json`; the key in IFLOW_apiKey."""
        config = ctx.config
        cli = find_cli(self.binary, ctx)
        provider: dict[str, Any] = {}
        if config.get("base_url"):
            provider["baseUrl"] = str(config["base_url"])
        if cli.model:
            provider["modelName"] = cli.model
        settings = deep_merge(config.get("settings", {}), provider)
        extra = {"IFLOW_apiKey": cli.key} if cli.key else {}
        return command_spec(
            ctx,
            [cli.program, "--yolo", "--thinking"],
            run_env(ctx.run_dir, cli.path, config, extra),
            prompt_flag="--prompt",  # piped stdin alone is headless too
            files=run_home_files(".iflow/settings.json", settings),
        )

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Split the answer from the ``<Execution Info>`` block (stdout, else stderr)."""
        stdout = read_output(result.stdout_path, result.stdout_from)
        stderr = read_output(result.stderr_path, result.stderr_from)
        output = parse_text(stdout, stderr, result.exit_code)
        if output.error is None and result.exit_code != 0:
            output.error = text_error(stderr or stdout)
        if output.error is None:
            output.error = process_error(result, self.binary, stderr, printed=bool(stdout.strip()))
        return output


def parse_text(stdout: str, stderr: str, exit_code: int | None) -> EngineOutput:
    """Parse iFlow's plain-text output and its ``<Execution Info>`` JSON."""
    output = EngineOutput(exit_code=exit_code)
    # Resumed turns append to the same log: the last block and the text before it win.
    blocks = list(_INFO.finditer(stdout))
    info_match = blocks[-1] if blocks else [None, *_INFO.finditer(stderr)][-1]
    info = json_of_text(info_match.group(1)) if info_match else None
    if isinstance(info, dict):
        output.envelope = info
        output.session_id = info.get("session-id") or info.get("session_id")
        usage = info.get("tokenUsage") or info.get("usage") or {}
        output.usage = dict(usage) if isinstance(usage, dict) else {}
        output.tokens = token_counts(output.usage, UsageKeys(("input",), ("output",)))
    start = blocks[-2].end() if len(blocks) > 1 else 0
    text = _INFO.sub("", stdout[start:]).strip()
    output.final_text = text or None
    api = _API_ERROR.search(text)
    if api:
        output.error = text_error(text)
    else:
        output.parsed_json = json_of_text(output.final_text)
    return output


def text_error(text: str) -> EngineError | None:
    """Type an error printed as text: ``[API Error: ...]`` or a missing key / auth method."""
    api = _API_ERROR.search(text)
    if api:
        return api_error(api.group(0).strip(), http_status(api.group(1)))
    if any(hint in text for hint in _AUTH_HINTS):
        return EngineError(ErrorCode.AUTH_MISSING, text.strip()[-2000:])
    return None


ADAPTER = IflowAdapter()
