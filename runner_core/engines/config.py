"""Layered engine configuration (seed 003 §6) and where engine binaries live.

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
``env`` (extra variables for the CLI), ``settings`` (written into the CLI's own settings file)
and ``runtime_options`` (passed through from the request).
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner_core.engines.base import EngineError, ProcessResult

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR_ENV = "SKILL_RUNNER_ENGINE_CONFIG_DIR"
BIN_DIR_ENV = "SKILL_RUNNER_ENGINE_BIN_DIR"
REPO_CONFIG_DIR = REPO_ROOT / "deploy" / "engine-config"
REPO_BIN_DIR = REPO_ROOT / ".engines" / "node_modules" / ".bin"
RUN_HOME = ".home"  # per-run HOME of the CLI, relative to the run dir
RUN_TMP = f"{RUN_HOME}/tmp"  # per-run TMPDIR
# Written with every command so the per-run temp dir exists before the CLI starts.
RUN_HOME_FILES = {f"{RUN_TMP}/.keep": ""}

# Variables the CLI may inherit from the service; everything else (database URLs, other
# secrets) stays out of the child's environment.
_INHERITED_ENV = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
)

# Longer prompts go through stdin: one argv string may not exceed 128 KiB on Linux.
MAX_ARGV_PROMPT_BYTES = 100_000

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
    anything else through copy.deepcopy. A tenth of deepcopy's cost on config-sized data."""
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


_parsed: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


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
    if len(_parsed) > 1024:
        _parsed.clear()
    _parsed[str(path)] = (version, data)
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


def skill_layer(engine: str, skill_dir: Path | None) -> dict[str, Any]:
    """The skill's recommended CLI settings from its assets folder, under ``settings``."""
    if skill_dir is None:
        return {}
    assets = Path(skill_dir) / "assets"
    settings: dict[str, Any] = {}
    for name in (f"{engine}_config.toml", f"{engine}_config.json", f"{engine}_settings.json"):
        settings = deep_merge(settings, _read_file(assets / name))
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
    flags = config.get("node_flags")
    if flags is not None and not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
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


def resolve_api_key(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """The provider key: literal ``api_key``, else the variable named by ``api_key_env``."""
    if config.get("api_key"):
        return str(config["api_key"])
    env_name = config.get("api_key_env")
    source = os.environ if environ is None else environ
    return source.get(env_name) or None if env_name else None


def resolve_binary(binary: str) -> Path | None:
    """Find `binary`: the repo's .engines bin dir, else $SKILL_RUNNER_ENGINE_BIN_DIR, else PATH."""
    candidates = [REPO_BIN_DIR]
    if os.environ.get(BIN_DIR_ENV):
        candidates.append(Path(os.environ[BIN_DIR_ENV]))
    for folder in candidates:
        path = folder / binary
        if path.is_file() and os.access(path, os.X_OK):
            return path
    found = shutil.which(binary)
    return Path(found) if found else None


def engine_env(
    *,
    home: Path,
    binary_path: Path | None,
    config: Mapping[str, Any],
    extra: Mapping[str, str],
    tmp_dir: Path | None = None,
) -> dict[str, str]:
    """The child's full environment: a few inherited variables, the per-run HOME (and TMPDIR
    when given: CLIs drop logs and crash reports there), the engine's bin dir first on PATH
    (it also holds `rg`), then `extra`, then the config's ``env``."""
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    path = env.get("PATH", os.defpath)
    if binary_path is not None:
        path = f"{binary_path.parent}{os.pathsep}{path}"
    env.update(PATH=path, HOME=str(home), NO_COLOR="1")
    if tmp_dir is not None:
        env["TMPDIR"] = str(tmp_dir)
    env.update(extra)
    env.update({key: str(value) for key, value in config.get("env", {}).items()})
    return env


def run_env(
    run_dir: Path, binary_path: Path | None, config: Mapping[str, Any], extra: Mapping[str, str]
) -> dict[str, str]:
    """`engine_env` with HOME and TMPDIR under `run_dir` (see RUN_HOME, RUN_HOME_FILES)."""
    return engine_env(home=run_dir / RUN_HOME, tmp_dir=run_dir / RUN_TMP,
                      binary_path=binary_path, config=config, extra=extra)


def program_argv(binary: str, binary_path: Path | None, config: Mapping[str, Any],
                 env: Mapping[str, str]) -> list[str]:
    """The start of an engine's argv: the CLI itself, or `node FLAGS SCRIPT` when the config
    has ``node_flags`` and the CLI is a Node script (V8 flags such as --liftoff-only are not
    allowed in NODE_OPTIONS). `node` is looked up on the child's PATH, as the script's own
    `#!/usr/bin/env node` line would."""
    program = [str(binary_path or binary)]
    flags = config.get("node_flags") or []
    if not flags or binary_path is None:
        return program
    script = Path(binary_path).resolve()
    node = shutil.which("node", path=env.get("PATH"))
    if node is None or not is_node_script(script):
        return program
    return [node, *flags, str(script)]


def is_node_script(path: Path) -> bool:
    """True when `path` starts with a `#!` line naming node."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def prompt_fits_argv(prompt: str) -> bool:
    """True when `prompt` can be passed as a command-line argument (else send it on stdin)."""
    return len(prompt.encode("utf-8")) <= MAX_ARGV_PROMPT_BYTES


# --- output helpers shared by the adapters ---------------------------------------------------

def read_output(path: Path) -> str:
    """A captured stream as text ('' when the file is missing)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among `text`'s lines; other lines (warnings, banners) are skipped."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def json_of_text(text: str | None) -> Any:
    """`text` parsed as JSON when it is JSON as a whole (a ```json fence is allowed), else None."""
    if not text:
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        return json.loads(body)
    except ValueError:
        return None


def missing_cli_error(binary: str) -> EngineError:
    """The typed error for a CLI that is not installed."""
    return EngineError(
        "CLI_NOT_INSTALLED",
        f"{binary} not found in {REPO_BIN_DIR.relative_to(REPO_ROOT)}, ${BIN_DIR_ENV} or PATH "
        "(run deploy/install-engines.sh)",
        {"binary": binary},
    )


def api_error(message: str, status: int | None = None, **details: Any) -> EngineError:
    """A failed model call: MODEL_API_ERROR with the HTTP status when known. A key that the
    provider refuses (401/403) is an API error too; AUTH_MISSING means no key was configured."""
    extra = {"status": status} if status is not None else {}
    return EngineError("MODEL_API_ERROR", message, {**extra, **details})


def exit_error(result: ProcessResult, binary: str, stderr: str) -> EngineError | None:
    """The error of a run whose output held no typed error: missing CLI, kill or non-zero exit."""
    if result.exit_code == 0:
        return None
    if resolve_binary(binary) is None or result.exit_code == 127:
        return missing_cli_error(binary)
    tail = stderr.strip()[-2000:]
    reason = "timed out" if result.timed_out else "canceled" if result.canceled else None
    message = f"{binary} {reason}" if reason else f"{binary} exited with {result.exit_code}"
    return EngineError(
        "ENGINE_FAILED",
        f"{message}: {tail}" if tail else message,
        {"exit_code": result.exit_code, "timed_out": result.timed_out, "canceled": result.canceled},
    )
