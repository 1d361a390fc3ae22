"""Secrets never leave the service's own memory: provider keys, API tokens, the webhook secret
and the passwords of database and broker URLs.

At start each service process calls `hold()` once its settings are read: the secret variables
move out of `os.environ` into this module (`env_value` reads them), their values are remembered
for `redact`, and the process's initial environment block (what `/proc/<pid>/environ` shows to
any process of the same user, the skill scripts and agent CLIs it starts included) is
overwritten in place. The process is also made non-dumpable, so another process of the same
user (not root) cannot read its memory. `redact` masks remembered values in service logs, run
logs, events and error messages.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import re
from collections.abc import Iterable, MutableMapping
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

MASK = "[REDACTED]"
MIN_LENGTH = 8  # shorter values are not secrets worth masking (and would mask ordinary words)
# Names of variables that hold secrets; any variable whose value is a URL with a password too.
SECRET_NAME = re.compile(
    r"(API_KEY|_KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$"
    r"|^(DATABASE_URL|CELERY_BROKER_URL|CELERY_RESULT_BACKEND|REDIS_URL)$",
    re.IGNORECASE,
)
# Secrets a library reads from the process environment itself (libpq at each connection):
# wiped from /proc/<pid>/environ but kept in os.environ.
LIBRARY_READ = frozenset({"PGPASSWORD"})
_held: dict[str, str] = {}
_values: set[str] = set()
_patterns: tuple[re.Pattern[str] | None, re.Pattern[bytes] | None] = (None, None)


def url_password(value: str) -> str | None:
    """The password of a URL such as `postgresql://user:PASS@host/db`, else None."""
    if "://" not in value:
        return None
    try:
        return urlsplit(value.strip()).password or None
    except ValueError:
        return None


def is_secret(name: str, value: str) -> bool:
    return bool(SECRET_NAME.search(name)) or url_password(value) is not None


def secrets_in(
    environ: dict[str, str] | MutableMapping[str, str], names: Iterable[str] = ()
) -> dict[str, str]:
    """The secret variables of `environ`: by name (SECRET_NAME, or one of `names`) or by a
    password in their URL."""
    extra = set(names)
    return {
        name: value
        for name, value in environ.items()
        if value and (name in extra or is_secret(name, value))
    }


def remember(*values: str | None) -> None:
    """Mask these values from now on (of a URL only its password: the rest is no secret)."""
    global _patterns
    for value in values:
        if not value:
            continue
        if "://" in value:  # a URL is no secret, its password is
            value = url_password(value) or ""
        if len(value) >= MIN_LENGTH:
            _values.add(value)
            escaped = json.dumps(value, ensure_ascii=False)[1:-1]  # as it appears in JSON
            if escaped != value:
                _values.add(escaped)
    ordered = sorted(_values, key=len, reverse=True)
    _patterns = (
        (
            re.compile("|".join(map(re.escape, ordered))),
            re.compile(b"|".join(re.escape(v.encode()) for v in ordered)),
        )
        if ordered
        else (None, None)
    )


def known() -> frozenset[str]:
    return frozenset(_values)


def redact(text: str) -> str:
    """`text` with every remembered secret replaced by MASK."""
    pattern = _patterns[0]
    return pattern.sub(MASK, text) if pattern is not None and text else text


def mask_bytes(data: bytes) -> bytes:
    """`data` with every remembered secret overwritten by as many `*`: the same length, so
    offsets into a log file stay true."""
    pattern = _patterns[1]
    if pattern is None or not data:
        return data
    return pattern.sub(lambda m: b"*" * len(m.group()), data)


def longest() -> int:
    return max((len(v.encode()) for v in _values), default=0)


def env_value(name: str) -> str | None:
    """A variable of the service's environment, held secrets included."""
    return _held.get(name) or os.environ.get(name) or None


def held() -> dict[str, str]:
    return dict(_held)


def hold(names: Iterable[str] = (), also: Iterable[str | None] = ()) -> None:
    """Move the secret variables (and `names`) out of os.environ, remember them and `also`,
    wipe them from the initial environment block and make the process non-dumpable."""
    found = secrets_in(os.environ, names)
    for name, value in found.items():
        _held[name] = value
        del os.environ[name]
    remember(*found.values(), *also)
    wipe_initial_environ(found.values())
    for name in LIBRARY_READ & set(found):  # back, as a copy outside the wiped block
        os.environ[name] = found[name]
    _set_non_dumpable()


def wipe_initial_environ(values: Iterable[str]) -> int:
    """Overwrite `values` with `*` in this process's initial environment block (the memory
    /proc/<pid>/environ reads; os.environ and unsetenv never change it). Returns how many
    were overwritten; 0 where /proc is missing."""
    targets = [v.encode() for v in values if v]
    if not targets:
        return 0
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start, end = int(stat[47]), int(stat[48])  # env_start, env_end (fields 50, 51)
        count = 0
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            for target in targets:
                at = block.find(target)
                while at >= 0:
                    mem.seek(start + at)
                    mem.write(b"*" * len(target))
                    count += 1
                    at = block.find(target, at + len(target))
        return count
    except (OSError, IndexError, ValueError) as exc:
        log.warning("could not wipe secrets from the process environment: %s", exc)
        return 0


def _set_non_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no core dumps, /proc/<pid>/mem and ptrace closed to other
    processes of the same user (root still can)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def public_env() -> dict[str, str]:
    """os.environ without its secrets: for helper processes that need none (the embedded
    broker, the demo LLM)."""
    return {k: v for k, v in os.environ.items() if not is_secret(k, v)}


def _no_follow(path: str, flags: int) -> int:
    """A run's `logs/<name>`, opened through no link the run planted (at the file or at
    `logs/`): the run directory above it is the service's."""
    folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return os.open(os.path.basename(path), flags | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)


def mask_file(path: Path, start: int = 0) -> int:
    """Overwrite remembered secrets in `path` from byte `start` on, in place and with the same
    length (a process may still be appending). Returns how many were masked."""
    if _patterns[1] is None:
        return 0
    try:
        with open(path, "r+b", opener=_no_follow) as fh:
            fh.seek(start)
            data = fh.read()
            count = 0
            for match in _patterns[1].finditer(data):
                fh.seek(start + match.start())
                fh.write(b"*" * (match.end() - match.start()))
                count += 1
            return count
    except OSError:
        return 0
