"""Engine adapters: one module per CLI, looked up by name.

Modules are imported on first use so importing this package has no side effects and a
broken adapter cannot break the others.
"""

from __future__ import annotations

import importlib
from typing import Any

from runner_core.engines.base import EngineAdapter

ENGINES: dict[str, str] = {
    "codex": "runner_core.engines.codex",
    "gemini": "runner_core.engines.gemini",
    "iflow": "runner_core.engines.iflow",
    "opencode": "runner_core.engines.opencode",
    "kilo": "runner_core.engines.kilo",
    "claude": "runner_core.engines.claude",
    "qwen": "runner_core.engines.qwen",
}

SUPPORTED_ENGINES: tuple[str, ...] = tuple(ENGINES)
# Engines nobody can run any more: listed, their old runs readable, new runs refused
# (ENGINE_RETIRED); the adapter and its recorded-transcript tests stay.
RETIRED: dict[str, str] = {
    "iflow": "iFlow's service shut down on 2026-04-17 and its CLI is no longer published",
}
# what a skill that names no engines runs on
RUNNABLE_ENGINES: tuple[str, ...] = tuple(e for e in SUPPORTED_ENGINES if e not in RETIRED)


def get_adapter(name: str) -> EngineAdapter:
    """Return the adapter object of engine `name` (KeyError if unknown)."""
    module = importlib.import_module(ENGINES[name])
    return module.ADAPTER


def settings_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the well-known settings of engine `name`'s CLI (its module's
    ``SETTINGS_SCHEMA``, see setting_types); {} for an engine that declares none."""
    module = importlib.import_module(ENGINES[name])
    return getattr(module, "SETTINGS_SCHEMA", {})


def engine_skill_dirs(engine: str | None) -> tuple[str, ...]:
    """The folders `engine`'s CLI discovers skills in; () for script runs or unknown engines
    (the engine entrypoint reports those)."""
    if not engine:
        return ()
    try:
        return tuple(get_adapter(engine).skill_dirs)
    except (KeyError, ImportError, AttributeError):
        return ()
