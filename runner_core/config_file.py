"""Configuration from a YAML file as well as the environment (seed 003 §10).

`SKILL_RUNNER_CONFIG` names a YAML file that maps the same variable names as the environment
(`SKILL_RUNNER_DATA_DIR: /srv/skill-runner`, `PORT: 8000`) to values. Its values fill in what the
environment leaves unset, so the environment always wins, and every process started from this one
(the worker, beat, the agent CLIs' parents) sees the same values.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from pathlib import Path

import yaml

CONFIG_ENV = "SKILL_RUNNER_CONFIG"
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class ConfigFileError(ValueError):
    """The configuration file cannot be used; the message names the file and the key."""


def read_config_file(path: Path) -> dict[str, str]:
    """The file's variables as the environment would hold them: lists joined by commas,
    booleans as true/false; an empty value (`~`) is left out."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigFileError(f"{CONFIG_ENV}: cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"{CONFIG_ENV}: {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"{CONFIG_ENV}: {path} must map variable names to values")
    values = {}
    for key, value in data.items():
        if not isinstance(key, str) or not _NAME.fullmatch(key):
            raise ConfigFileError(
                f"{path}: {key!r} is not a variable name (upper case, as in the environment: "
                "SKILL_RUNNER_DATA_DIR)"
            )
        if value is not None:
            values[key] = _as_text(path, key, value)
    return values


def _as_text(path: Path, key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ",".join(str(v) for v in value)
    raise ConfigFileError(f"{path}: {key}: a value is a string, number, boolean or list of them")


def apply_config_file(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Fill `environ` from the file `SKILL_RUNNER_CONFIG` names (the environment wins); the
    values it set. Nothing when the variable is unset."""
    name = environ.get(CONFIG_ENV, "").strip()
    if not name:
        return {}
    applied = {}
    for key, value in read_config_file(Path(name).expanduser()).items():
        if key not in environ:
            environ[key] = applied[key] = value
    return applied
