"""A request's `runtime_options.env`: variables every process of its run is started with (the
Zotero plugin's Host Bridge endpoint and token, which its skills' scripts call back into).

The values are secrets. The API checks the names, then keeps the values in one file beside the
request (`<data>/requests/<id>/run_env.json`, mode 0600), outside the run directory the API
serves and bundles; the database, input.json and events keep the names only
(runtime_options.withheld). The worker reads the file for each process it starts, on any host
that shares the data directory, and the file goes with the request's folder.

A name passes when the operator's glob list (SKILL_RUNNER_RUN_ENV_NAMES) matches it and it
is none of REFUSED: variables that change how a process starts or where it connects, the
service's own, and provider keys. Those are refused whatever the list says.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FILE = "run_env.json"
DEFAULT_NAMES = ("ZOTERO_BRIDGE_*",)
# the variable whose URL a run's box may reach when the operator allows it (SKILL_RUNNER_BRIDGE_ALLOW)
ENDPOINT_NAME = "ZOTERO_BRIDGE_ENDPOINT"
MAX_VARIABLES = 32
MAX_VALUE_BYTES = 16 * 1024
_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")  # as Skill-Runner takes them
# Refused whatever the operator allows (compared upper-cased): how a process starts, finds its
# programs, libraries and certificates, where it connects, and what the service sets itself.
REFUSED_NAMES = frozenset(
    {
        "PATH", "HOME", "TMPDIR", "TMP", "TEMP", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD",
        "LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "IFS", "ENV", "BASH_ENV", "CDPATH",
        "PS4", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "PROMPT_COMMAND", "DISPLAY",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "OPENSSL_CONF", "OPENSSL_MODULES", "GCONV_PATH", "VIRTUAL_ENV", "CONDA_PREFIX",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PERL5OPT", "PERL5LIB",
        "PERLLIB", "RUBYOPT", "RUBYLIB", "DATABASE_URL", "REDIS_URL",
    }
)  # fmt: skip
REFUSED_PREFIXES = (
    "LD_", "DYLD_", "PYTHON", "NODE_", "NPM_", "UV_", "PIP_", "LC_", "GIT_", "XDG_",
    "BASH_FUNC_", "SKILL_RUNNER_", "CELERY", "FLASK_", "GUNICORN", "PG", "SQLALCHEMY",
    # the engines' and providers' own variables (CODEX_HOME, OPENAI_BASE_URL, ...)
    "CODEX_", "CLAUDE_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "QWEN_", "DASHSCOPE_",
    "OPENCODE_", "KILO_", "OPENROUTER_", "AZURE_", "AWS_",
)  # fmt: skip
REFUSED_SUFFIXES = ("_API_KEY", "_APIKEY", "_BASE_URL", "_PROXY")


class RunEnvRefused(ValueError):
    """`env` cannot be given to the run: the message says which variable and why."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


def is_refused(name: str, service_names: Iterable[str] = ()) -> bool:
    """True for a name no request may set (REFUSED_*, or one of the service's `service_names`)."""
    upper = name.upper()
    return (
        upper in REFUSED_NAMES
        or upper.startswith(REFUSED_PREFIXES)
        or upper.endswith(REFUSED_SUFFIXES)
        or name in set(service_names)
    )


def checked(
    options: Any, allowed: Iterable[str] = DEFAULT_NAMES, service_names: Iterable[str] = ()
) -> dict[str, str]:
    """The variables `options["env"]` gives the run ({} without `env`); raises RunEnvRefused
    for a name or value that cannot be given. Never quotes a value. A value `{"redacted":
    true}` (the form the service answers, which a client may send back) gives no variable."""
    env = options.get("env") if isinstance(options, Mapping) else None
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise RunEnvRefused("runtime_options.env must be an object of variable names to strings")
    if len(env) > MAX_VARIABLES:
        raise RunEnvRefused(f"runtime_options.env may hold at most {MAX_VARIABLES} variables")
    patterns = tuple(allowed)
    for name, value in env.items():
        name = str(name)
        if not _NAME.fullmatch(name):
            raise RunEnvRefused(
                f"runtime_options.env: '{name[:64]}' is no variable name (A-Z, 0-9, _)", name
            )
        if is_refused(name, service_names):
            raise RunEnvRefused(
                f"runtime_options.env may not set {name}: the service sets it or it changes "
                "how the run's processes start or connect",
                name,
            )
        if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            raise RunEnvRefused(
                f"runtime_options.env may not set {name}: the service passes only "
                f"{', '.join(patterns) or 'no variables'} (SKILL_RUNNER_RUN_ENV_NAMES)",
                name,
            )
        if _withheld(value):
            continue
        if not isinstance(value, str):
            raise RunEnvRefused(f"runtime_options.env: {name} must be a string", name)
        if len(value.encode("utf-8")) > MAX_VALUE_BYTES or "\0" in value:
            raise RunEnvRefused(
                f"runtime_options.env: {name} must be at most {MAX_VALUE_BYTES} bytes, no NUL",
                name,
            )
    return {str(name): value for name, value in env.items() if isinstance(value, str)}


def _withheld(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("redacted") is True


class RunEnvMissing(Exception):
    """The request named variables but the file of their values is gone (a data directory
    restored without it, a cleanup, another host that does not share it)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            "the run's request named variables (runtime_options.env: "
            f"{', '.join(names)}) but their values are no longer kept; send the request again"
        )
        self.names = names


def declared(options: Any) -> list[str]:
    """The variable names `options["env"]` declares (the values may be withheld)."""
    env = options.get("env") if isinstance(options, Mapping) else None
    return sorted(str(name) for name in env) if isinstance(env, Mapping) else []


def write(request_dir: Path, env: Mapping[str, str], named: bool = False) -> Path | None:
    """Keep `env` for the run's worker: a file only the service's user may read, created with
    that mode (never readable, not even for a moment). None when there is nothing to keep;
    `named`: the request declared variables, so the file is kept even when it gives none of
    them a value (all sent back withheld), and its absence later means it was lost."""
    if not env and not named:
        return None
    request_dir.mkdir(parents=True, exist_ok=True)
    path = request_dir / FILE
    tmp = request_dir / f".{FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(dict(env), handle)
    os.replace(tmp, path)
    return path


def read(request_dir: Path) -> dict[str, str]:
    """The variables kept for the request ({} when none); a name refused meanwhile is left out."""
    try:
        data = json.loads((request_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): v
        for k, v in data.items()
        if isinstance(v, str) and _NAME.fullmatch(str(k)) and not is_refused(str(k))
    }


def read_declared(request_dir: Path, names: list[str]) -> dict[str, str]:
    """`read`, for a run whose request declared `names`: raises RunEnvMissing when they are
    declared but the file is gone (the run would go on without them and fail obscurely)."""
    if names and not (request_dir / FILE).is_file():
        raise RunEnvMissing(names)
    return read(request_dir)


def endpoint_url(env: Mapping[str, str]) -> str | None:
    """The Host Bridge's URL the run's variables name (http or https), else None."""
    url = (env.get(ENDPOINT_NAME) or "").strip()
    return url if url.lower().startswith(("http://", "https://")) else None
