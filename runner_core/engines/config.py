"""Layered engine configuration: which provider, key, model and CLI settings a run gets.

Layers, lowest first, deep-merged (dicts merge key by key; anything else is replaced):

1. engine default   ``<config dir>/<engine>/default.json``
2. skill recommended ``<skill>/assets/<engine>_config.toml|.json`` and
   ``<skill>/assets/<engine>_settings.json`` (the CLI's own settings, placed under ``settings``)
3. user options      request ``model``, ``runtime_options`` and ``<engine>_config`` (under ``settings``)
4. enforced          ``<config dir>/<engine>/enforced.json``

The config dir is ``deploy/engine-config`` in the repository unless the environment variable
``SKILL_RUNNER_ENGINE_CONFIG_DIR`` names another one with the same layout.

Keys of the merged dict: ``base_url`` (provider endpoint), ``api_key_env`` (name of the service
environment variable holding the key), ``api_key`` (the key itself; tests only), ``model``,
``env`` (extra variables for the CLI), ``settings`` (written into the CLI's own settings file),
``node_flags`` (V8 flags for a Node CLI, see invocation.program_argv), ``native_schema``
(false: do not hand the output schema to the engine's own structured-output flag, see
native_schema.py) and ``runtime_options`` (passed through from the request). How the CLI is found and started is in invocation.py.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner_core.bounded_cache import BoundedCache
from runner_core.secret_values import env_value

CONFIG_DIR_ENV = "SKILL_RUNNER_ENGINE_CONFIG_DIR"
REPO_CONFIG_DIR = Path(__file__).resolve().parents[2] / "deploy" / "engine-config"

_DICT_KEYS = ("env", "settings", "runtime_options")
_STR_KEYS = ("base_url", "api_key_env", "api_key", "model")


class EngineConfigError(ValueError):
    """A config layer is unreadable or has a key of the wrong type."""


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return `base` updated by `override`; nested dicts merge, other values are replaced.
    Neither argument is changed, and the result shares no dict or list with them."""
    merged = {key: _copied(value) for key, value in base.items()}
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = _copied(value)
    return merged


def _copied(value: Any) -> Any:
    """A copy of JSON/TOML data: new dicts and lists, the (immutable) scalars as they are;
    anything else through copy.deepcopy (which is far slower on plain data)."""
    if isinstance(value, Mapping):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return copy.deepcopy(value)


def config_dir_from_env() -> Path:
    """The operator's config dir: env override, else the repository's deploy/engine-config."""
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override) if override else REPO_CONFIG_DIR


_parsed: BoundedCache[str, tuple[tuple[int, int, int], dict[str, Any]]] = BoundedCache(1024)


def _read_file(path: Path) -> dict[str, Any]:
    """The layer in `path` ({} when there is none). Parsed once per version of the file (its
    inode, size and mtime): every job POST of an engine skill merges its layers for the cache
    key. The dict handed out is shared: callers merge it (deep_merge copies), never change it."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    if not stat.S_ISREG(st.st_mode):
        return {}
    version = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _parsed.get(str(path))
    if hit is not None and hit[0] == version:
        return hit[1]
    data = _parse_file(path)
    _parsed.put(str(path), (version, data))
    return data


def _parse_file(path: Path) -> dict[str, Any]:
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        else:
            data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineConfigError(f"cannot read engine config {path.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise EngineConfigError(f"engine config {path.name} must hold an object")
    return data


def skill_files(engine: str, skill_dir: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """(name, settings) of each config file in the skill's assets folder, lowest first."""
    if skill_dir is None:
        return []
    assets = Path(skill_dir) / "assets"
    names = (f"{engine}_config.toml", f"{engine}_config.json", f"{engine}_settings.json")
    return [(name, layer) for name in names if (layer := _read_file(assets / name))]


def skill_layer(engine: str, skill_dir: Path | None) -> dict[str, Any]:
    """The skill's recommended CLI settings from its assets folder, under ``settings``."""
    settings: dict[str, Any] = {}
    for _, layer in skill_files(engine, skill_dir):
        settings = deep_merge(settings, layer)
    return {"settings": settings} if settings else {}


def user_layer(engine: str, user: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request's options: ``model``, ``runtime_options`` and ``<engine>_config``."""
    if not user:
        return {}
    layer: dict[str, Any] = {}
    if user.get("model"):
        layer["model"] = user["model"]
    if user.get("runtime_options"):
        layer["runtime_options"] = dict(user["runtime_options"])
    if user.get(f"{engine}_config"):
        layer["settings"] = dict(user[f"{engine}_config"])
    return layer


def validate_config(config: Mapping[str, Any]) -> None:
    """Raise EngineConfigError when a known key has the wrong type."""
    for key in _DICT_KEYS:
        if key in config and not isinstance(config[key], Mapping):
            raise EngineConfigError(f"engine config key {key!r} must be an object")
    for key in _STR_KEYS:
        if config.get(key) is not None and not isinstance(config[key], str):
            raise EngineConfigError(f"engine config key {key!r} must be a string")
    for name, value in config.get("env", {}).items():
        if not isinstance(value, str):
            raise EngineConfigError(f"engine config env {name!r} must be a string")
    if not isinstance(config.get("native_schema", True), bool):
        raise EngineConfigError("engine config key 'native_schema' must be true or false")
    flags = config.get("node_flags")
    if flags is not None and not (
        isinstance(flags, list) and all(isinstance(f, str) for f in flags)
    ):
        raise EngineConfigError("engine config key 'node_flags' must be a list of strings")


def load_engine_config(
    engine: str,
    *,
    skill_dir: Path | None,
    user: Mapping[str, Any] | None,
    config_dir: Path | None = None,
) -> dict[str, Any]:
    """Merge default < skill recommended < user options < enforced for `engine`."""
    base = Path(config_dir) if config_dir is not None else config_dir_from_env()
    merged: dict[str, Any] = {}
    for layer in (
        _read_file(base / engine / "default.json"),
        skill_layer(engine, skill_dir),
        user_layer(engine, user),
        _read_file(base / engine / "enforced.json"),
    ):
        merged = deep_merge(merged, layer)
    validate_config(merged)
    return merged


def resolve_api_key(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> str | None:
    """The provider key: literal ``api_key``, else the variable named by ``api_key_env``."""
    if config.get("api_key"):
        return str(config["api_key"])
    env_name = config.get("api_key_env")
    if not env_name:
        return None
    return env_value(env_name) if environ is None else environ.get(env_name) or None


def configured_key_names(config_dir: Path | None = None) -> set[str]:
    """Variables named by `api_key_env` in the operator's engine config layers."""
    config_dir = config_dir if config_dir is not None else config_dir_from_env()
    names: set[str] = set()
    for path in list(config_dir.glob("*/default.json")) + list(config_dir.glob("*/enforced.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("api_key_env"), str):
            names.add(data["api_key_env"])
    return names
