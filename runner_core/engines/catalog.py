"""What the service knows about each engine: installed CLI, its version, auth, models.

Models come from the engine config's `models` list (operators set it in the default or
enforced layer); codex models are written `name@reasoning_effort`.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner_core.engines import RETIRED, SUPPORTED_ENGINES, get_adapter
from runner_core.engines.config import load_engine_config, resolve_api_key
from runner_core.engines.invocation import resolve_binary
from runner_core.settings import REPO_ROOT

VERSION_TTL_SEC = 300.0
_versions: dict[str, tuple[float, str | None, str | None]] = {}
# engine -> the CLI versions whose engine tests all passed (python -m tests.engines.matrix)
TESTED_VERSIONS = REPO_ROOT / "deploy" / "engines" / "tested-versions.json"


@dataclass
class EngineInfo:
    engine: str
    installed: bool
    binary_path: str | None
    cli_version: str | None
    auth_ready: bool
    models: list[str] = field(default_factory=list)
    default_model: str | None = None
    last_error: str | None = None
    tested: bool = False
    tested_versions: list[str] = field(default_factory=list)
    retired: bool = False
    retired_reason: str | None = None

    @property
    def models_count(self) -> int:
        return len(self.models)

    def summary(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "cli_version": self.cli_version,
            "binary_path": self.binary_path,
            "tested": self.tested,
            "tested_versions": self.tested_versions,
            "installed": self.installed,
            "auth_ready": self.auth_ready,
            "models_count": self.models_count,
            "retired": self.retired,
            "retired_reason": self.retired_reason,
        }

    def detail(self) -> dict[str, Any]:
        """Everything, the models as objects (`model_objects`) and their ids in `model_ids`."""
        return {
            **asdict(self),
            "models": model_objects(self.engine, self.models),
            "model_ids": list(self.models),
            "models_count": self.models_count,
        }


def file_identity(path: Path | None) -> str:
    """What changes when the file behind `path` (its links followed) is replaced, as npm
    replaces a package's files on an upgrade: its inode, size and modification time."""
    if path is None:
        return "-"
    try:
        stat = path.stat()
    except OSError:
        return "?"
    return f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def cli_version(binary: str) -> tuple[str | None, str | None]:
    """(version, error) from `<binary> --version` of the CLI the runs would use, cached for a
    few minutes per file: choosing another file, or an upgrade replacing it (in any process:
    the key is the file's identity), shows its version at once."""
    path = resolve_binary(binary)
    key = f"{binary}:{path}:{file_identity(path)}"
    cached = _versions.get(key)
    if cached and time.monotonic() - cached[0] < VERSION_TTL_SEC:
        return cached[1], cached[2]
    version = error = None
    if path is None:
        error = f"{binary} is not installed"
    else:
        try:
            proc = subprocess.run(
                [str(path), "--version"],
                capture_output=True,
                text=True,
                timeout=20,
                stdin=subprocess.DEVNULL,
            )
            text = (proc.stdout or proc.stderr).strip().splitlines()
            version = text[-1].strip() if text and proc.returncode == 0 else None
            error = None if version else f"{binary} --version exited {proc.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            error = f"{binary} --version failed: {exc}"
    _versions[key] = (time.monotonic(), version, error)
    return version, error


def tested_versions(engine: str) -> list[str]:
    """The versions of `engine`'s CLI the engine tests passed on (empty when never run)."""
    try:
        return list(json.loads(TESTED_VERSIONS.read_text()).get(engine, []))
    except (OSError, ValueError):
        return []


def version_number(text: str | None) -> str | None:
    """`codex-cli 0.169.0` -> `0.169.0`; `2.1.197 (Claude Code)` -> `2.1.197`."""
    match = re.search(r"\d+\.\d+\.\d+(?:-[\w.]+)?", text or "")
    return match.group(0) if match else None


def engine_info(engine: str, *, with_version: bool = True) -> EngineInfo:
    """Everything about one engine (KeyError when unknown)."""
    adapter = get_adapter(engine)
    config = load_engine_config(engine, skill_dir=None, user=None)
    path = resolve_binary(adapter.binary)
    version, error = cli_version(adapter.binary) if with_version else (None, None)
    tested = tested_versions(engine)
    return EngineInfo(
        engine=engine,
        installed=path is not None,
        binary_path=str(path) if path else None,
        cli_version=version,
        auth_ready=bool(resolve_api_key(config)),
        models=list(config.get("models") or []),
        default_model=config.get("model"),
        last_error=error,
        tested=version_number(version) in tested if version else False,
        tested_versions=tested,
        retired=engine in RETIRED,
        retired_reason=RETIRED.get(engine),
    )


def all_engines(with_version: bool = True) -> list[EngineInfo]:
    return [engine_info(name, with_version=with_version) for name in SUPPORTED_ENGINES]


# the provider an engine's models come from when the model id does not name one
# (opencode and kilo ids are `provider/model`)
ENGINE_PROVIDERS = {
    "codex": "openai",
    "gemini": "google",
    "iflow": "iflow",
    "claude": "anthropic",
    "qwen": "qwen",
}
DEFAULT_EFFORT = "default"  # what a client sends for "the model's own effort"


def model_parts(engine: str, model_id: str) -> tuple[str, str, str | None]:
    """(provider_id, model name, reasoning effort or None) of one configured model id:
    `gpt-5.2-codex@high` -> (openai, gpt-5.2-codex, high); `anthropic/x` -> (anthropic, x, None)."""
    name, _, effort = model_id.partition("@")
    provider, slash, rest = name.partition("/")
    if slash and engine not in ENGINE_PROVIDERS:
        return provider, rest, effort or None
    return ENGINE_PROVIDERS.get(engine, engine), name, effort or None


def model_objects(engine: str, models: list[str]) -> list[dict[str, Any]]:
    """The configured models as objects: `id` as configured (codex: `name@reasoning_effort`),
    `provider_id`, `model` (the name without the effort) and `supported_effort` (every effort
    configured for that name, so `<model>@<effort>` of any of them is a valid id)."""
    efforts: dict[str, list[str]] = {}
    for model_id in models:
        _, name, effort = model_parts(engine, model_id)
        if effort:
            efforts.setdefault(name, []).append(effort)
    objects = []
    for model_id in models:
        provider, name, effort = model_parts(engine, model_id)
        objects.append(
            {
                "id": model_id,
                "display_name": f"{name} ({effort})" if effort else name,
                "provider_id": provider,
                "provider": provider,
                "model": name,
                "reasoning_effort": effort,
                "supported_effort": efforts.get(name, []),
                "deprecated": False,
            }
        )
    return objects


def requested_model(
    engine: str, model: str | None, effort: str | None, provider_id: str | None
) -> tuple[str | None, str | None]:
    """(model id to run, error message) for a request's `model`, `effort` and `provider_id`.

    The id's last `@` part is its effort and a request's `effort` (other than `default`)
    replaces it: `gpt-5@high` + effort `low` -> `gpt-5@low`; `gpt-5@high@low` (a configured id
    with one of its `supported_effort` appended, as Skill-Runner's clients build it) ->
    `gpt-5@low`. A `provider_id` must be the model's provider. Without a model, an effort or
    provider_id is checked (and the effort applied) against the engine's default model, the
    one the run would use; with no default model to check them against they are refused."""
    effort = effort if effort != DEFAULT_EFFORT else None
    if not model:
        if not effort and not provider_id:
            return model, None
        model = engine_info(engine, with_version=False).default_model
        if not model:
            named = f"effort '{effort}'" if effort else f"provider_id '{provider_id}'"
            return None, f"engine '{engine}' has no default model for {named}: name the model"
    model = _with_provider(engine, model, provider_id)
    name, _, rest = model.partition("@")
    model_effort = rest.rpartition("@")[2] or None
    wanted = effort or model_effort
    chosen = f"{name}@{wanted}" if wanted else _own_effort(engine, name)
    error = check_model(engine, chosen)
    if error is None and provider_id:
        provider = model_parts(engine, chosen)[0]
        if provider_id != provider:
            error = (
                f"model '{chosen}' of engine '{engine}' comes from provider '{provider}', "
                f"not '{provider_id}'"
            )
    return chosen, error


def _with_provider(engine: str, model: str, provider_id: str | None) -> str:
    """`provider_id/model` for an engine whose ids name their provider (opencode, kilo) when
    the request sends the two apart, as the Zotero plugin does (`provider_id` and the `model`
    field of /v1/engines/{engine}/models) and that id is configured; `model` as sent otherwise
    (an id without a provider prefix, listed with the engine's name as its provider)."""
    if engine in ENGINE_PROVIDERS or not provider_id or "/" in model.partition("@")[0]:
        return model
    joined = f"{provider_id}/{model}"
    names = {m.partition("@")[0] for m in engine_info(engine, with_version=False).models}
    return joined if joined.partition("@")[0] in names else model


def _own_effort(engine: str, name: str) -> str:
    """A model name sent without an effort (the Zotero plugin's `effort: default`, "the
    model's own"): the name as it is when it is configured so; when only `name@<effort>` ids
    are, the engine's default model if it is one of them, else the first of them."""
    info = engine_info(engine, with_version=False)
    if not info.models or name in info.models:
        return name
    variants = [m for m in info.models if m.partition("@")[0] == name and "@" in m]
    if info.default_model in variants:
        return info.default_model
    return variants[0] if variants else name


def check_model(engine: str, model: str | None) -> str | None:
    """An error message when `model` is not offered by `engine` (None: fine)."""
    if not model:
        return None
    models = engine_info(engine, with_version=False).models
    if models and model not in models:
        return f"model '{model}' is not available for engine '{engine}'; choose one of {models}"
    return None
