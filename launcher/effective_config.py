"""`skill-runner config`: the settings a service started here would use, secrets masked."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from runner_core.config_file import CONFIG_ENV
from runner_core.secret_values import MASK, url_password
from runner_core.settings import Settings

SECRET_FIELDS = frozenset({"api_tokens", "webhook_secret"})


def effective_lines(settings: Settings, environ: Mapping[str, str]) -> Iterator[str]:
    """`# config file: ...` (when one is used), then `name = value` per setting."""
    if environ.get(CONFIG_ENV):
        yield f"# config file: {environ[CONFIG_ENV]} (the environment wins over it)"
    for f in dataclasses.fields(settings):
        yield f"{f.name} = {shown(f.name, getattr(settings, f.name))}"


def shown(name: str, value: object) -> str:
    """A setting as printed: secrets masked, a URL's password masked, tuples comma-joined."""
    if name in SECRET_FIELDS:
        count = len(value) if isinstance(value, tuple) else int(bool(value))
        return f"{MASK} x{count}" if count else "(unset)"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, str) and url_password(value):
        parts = urlsplit(value)
        netloc = parts.netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    return "(unset)" if value is None or value == "" else str(value)
