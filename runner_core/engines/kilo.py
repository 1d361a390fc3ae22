"""Kilo Code adapter: `kilo run --format json --auto -m PROVIDER/MODEL PROMPT`.

Kilo's CLI is a fork of opencode: the same settings (``provider``, ``model``, ``permission``)
and the same NDJSON events (``step_start``, ``tool_use``, ``text``, ``step_finish{tokens,
cost}``, ``error``; every event carries ``sessionID``), so both are read with the opencode
adapter's functions. What differs:

- the settings go to the run's HOME, ``.home/.config/kilo/kilo.json``: kilo refuses a project
  config (``kilo.json`` in the run dir) that holds an ``{env:...}`` reference ("environment
  references are not allowed in project config") and skips the whole file, and the key must
  stay out of files;
- ``--auto`` approves the tools' permission prompts (kilo asks before a shell command, and
  nobody can answer in a headless run);
- ``enabled_providers`` is just ``runner`` when ``base_url`` is set: otherwise each run asks
  the Kilo gateway for its model list;
- kilo ships a sandbox of its own (``sandbox.enabled``, off by default, bubblewrap inside):
  inside the run's box (``ctx.boxed``) it could not nest its namespaces, so it is turned off
  there whatever the settings say.

With no key configured kilo still sends its requests, without one (an OpenAI-compatible
endpoint may need none): a provider that wants one answers 401, a MODEL_API_ERROR; a built-in
provider without its key is left out and kilo says "Model not found". Only kilo's own
``ProviderAuthError`` becomes AUTH_MISSING.

Like opencode, a new session gets ``--title`` so kilo does not ask the model for a title, and
the step events carry the tokens, so a turn cut short is counted from stdout (kilo's session
store is a SQLite database in its HOME, not a log to read).
"""

from __future__ import annotations

from dataclasses import dataclass

from runner_core.engines.base import CommandSpec, EngineContext, EngineOutput, ProcessResult
from runner_core.engines.config import deep_merge
from runner_core.engines.failures import process_error
from runner_core.engines.invocation import command_spec, find_cli, run_env, run_home_files
from runner_core.engines.opencode import PROVIDER_ID, parse_events, provider_settings
from runner_core.engines.opencode import SETTINGS_SCHEMA as OPENCODE_SETTINGS
from runner_core.engines.setting_types import BOOLEAN, table
from runner_core.engines.streams import json_lines, read_output
from runner_core.workspace import GIT_MARKER  # kilo stops its upward scan at a git root

KEY_ENV = "SKILL_RUNNER_KILO_API_KEY"
# opencode's settings, and kilo's own sandbox
SETTINGS_SCHEMA = table(**OPENCODE_SETTINGS["properties"], sandbox=table(enabled=BOOLEAN))
SETTINGS_PATH = ".config/kilo/kilo.json"  # under the run's HOME: kilo's global config


@dataclass(frozen=True)
class KiloAdapter:
    """Runs `kilo run` headless; see the module docstring."""

    name: str = "kilo"
    binary: str = "kilo"
    skill_dirs: tuple[str, ...] = (".agents/skills",)

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        """kilo.json in the per-run HOME, provider key in the environment, JSON events."""
        config = ctx.config
        cli = find_cli(self.binary, ctx)
        settings, extra = provider_settings(config, cli.model, cli.key, key_env=KEY_ENV)
        if config.get("base_url") and cli.model:
            settings = deep_merge({"enabled_providers": [PROVIDER_ID]}, settings)
        question = "allow" if ctx.execution_mode == "interactive" else "deny"
        settings = deep_merge(settings, {"permission": {"question": question}})
        if ctx.boxed:
            settings = deep_merge(settings, {"sandbox": {"enabled": False}})
        argv = [cli.program, "run", "--format", "json", "--auto"]
        if settings.get("model"):
            argv += ["-m", settings["model"]]
        if not ctx.session_id:  # named here, or kilo asks the model for a title first
            argv += ["--title", f"skill {ctx.skill_id}"]
        files = run_home_files(SETTINGS_PATH, settings)
        if not (ctx.run_dir / ".git").exists():
            files.update(GIT_MARKER)
        env = run_env(ctx.run_dir, cli.path, config, extra)
        return command_spec(ctx, argv, env, resume="-s", files=files)

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        """Read the NDJSON events (opencode's layout), then type any failure."""
        stderr = read_output(result.stderr_path, result.stderr_from)
        events = json_lines(read_output(result.stdout_path, result.stdout_from))
        output = parse_events(events, result.exit_code)
        if output.error is None:
            output.error = process_error(result, self.binary, stderr, printed=bool(events))
        return output


ADAPTER = KiloAdapter()
