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
        return {**asdict(self), "models_count": self.models_count}


def cli_version(binary: str) -> tuple[str | None, str | None]:
    """(version, error) from `<binary> --version` of the CLI the runs would use, cached for a
    few minutes per file (choosing another file shows its version at once)."""
    path = resolve_binary(binary)
    key = f"{binary}:{path}"
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


def check_model(engine: str, model: str | None) -> str | None:
    """An error message when `model` is not offered by `engine` (None: fine)."""
    if not model:
        return None
    models = engine_info(engine, with_version=False).models
    if models and model not in models:
        return f"model '{model}' is not available for engine '{engine}'; choose one of {models}"
    return None
