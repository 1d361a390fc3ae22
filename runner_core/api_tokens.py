"""The API tokens the service accepts: named, scoped, stored as SHA-256 hashes.

Two sources, both optional: SKILL_RUNNER_API_TOKEN (plaintext, comma-separated; each an admin
token named `env-token`) and SKILL_RUNNER_TOKENS_FILE, one JSON object per line
`{"name": "ci", "sha256": "<hex of the token>", "scopes": ["read", "submit"]}`. The file is
re-read when its modification time or size changes, so adding or removing a line rotates
tokens without a restart. A file that does not parse keeps the last good set (and says so in
the log); a missing file accepts no file token.

Here, not in `api`, because two sides use the file's format: the API reads it and the
`skill-runner token` commands write it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runner_core.budget import Quota

log = logging.getLogger(__name__)

READ, SUBMIT, ADMIN = "read", "submit", "admin"
SCOPES = (READ, SUBMIT, ADMIN)
# a scope also grants the ones below it: submit can read its runs, admin can do everything
_IMPLIED = {READ: {READ}, SUBMIT: {READ, SUBMIT}, ADMIN: {READ, SUBMIT, ADMIN}}
ENV_TOKEN_NAME = "env-token"


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: the token's name and what it may do."""

    name: str
    scopes: frozenset[str]
    quota: Quota | None = None  # what its runs may spend over a window (runner_core.budget)

    def allows(self, scope: str) -> bool:
        return any(scope in _IMPLIED[held] for held in self.scopes)

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.scopes


class TokenFileError(ValueError):
    """A line of the tokens file that is not a token entry."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_entries(text: str) -> dict[str, Principal]:
    """hash -> Principal of each line (blank lines and lines starting with # are skipped)."""
    found: dict[str, Principal] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            entry = json.loads(line)
            name, digest, scopes = entry["name"], entry["sha256"].lower(), entry["scopes"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TokenFileError(f"line {number}: not a token entry ({exc})") from None
        if not (isinstance(name, str) and 0 < len(name) <= 64):
            raise TokenFileError(f"line {number}: name must be 1-64 characters")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise TokenFileError(f"line {number}: sha256 must be 64 hex digits")
        if not scopes or not set(scopes) <= set(SCOPES):
            raise TokenFileError(f"line {number}: scopes must be some of {', '.join(SCOPES)}")
        try:
            quota = Quota.of(entry["quota"]) if entry.get("quota") is not None else None
        except ValueError as exc:
            raise TokenFileError(f"line {number}: {exc}") from None
        found[digest] = Principal(name, frozenset(scopes), quota)
    return found


class TokenRegistry:
    """Finds the Principal of a presented token among the env tokens and the tokens file."""

    def __init__(self, env_tokens: Iterable[str] = (), tokens_file: Path | None = None) -> None:
        admin = Principal(ENV_TOKEN_NAME, frozenset({ADMIN}))
        self._env = {token_hash(t): admin for t in env_tokens}
        self._file = tokens_file
        self._from_file: dict[str, Principal] = {}
        self._seen: tuple[int, int] | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether tokens are asked for at all (a configured file counts even while empty)."""
        return bool(self._env) or self._file is not None

    def find(self, token: str) -> Principal | None:
        """The principal of `token`, or None when no configured token matches."""
        digest = token_hash(token)
        return self._env.get(digest) or self.find_hash(digest)

    def find_hash(self, digest: str) -> Principal | None:
        """As find, by the token's hash (a UI session holds the hash, not the token)."""
        if digest in self._env:
            return self._env[digest]
        self._reload_if_changed()
        return self._from_file.get(digest)

    def _reload_if_changed(self) -> None:
        if self._file is None:
            return
        try:
            st = os.stat(self._file)
            seen: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            seen = None
        if seen == self._seen:
            return
        with self._lock:
            if seen == self._seen:
                return
            try:
                text = self._file.read_text(encoding="utf-8") if seen else ""
                self._from_file = parse_entries(text)
                log.info("tokens file read: %d token(s)", len(self._from_file))
            except (OSError, TokenFileError) as exc:
                log.error("tokens file not read, the previous tokens stay: %s", exc)
            self._seen = seen


def list_tokens(path: Path) -> list[tuple[str, list[str], str]]:
    """(name, scopes, the hash's first 12 digits) of each entry, in file order."""
    found = parse_entries(path.read_text(encoding="utf-8")) if path.exists() else {}
    return [(p.name, sorted(p.scopes), digest[:12]) for digest, p in found.items()]


def add_token(path: Path, name: str, scopes: Iterable[str]) -> str:
    """Make a new token, append its entry (hash only) to the tokens file and return the token:
    it is shown once and stored nowhere. Another entry with the same name is a rotation: both
    tokens work, and own the same runs, until the old line is removed."""
    scopes = sorted(set(scopes))
    token = "srt_" + secrets.token_urlsafe(32)
    line = json.dumps({"name": name, "sha256": token_hash(token), "scopes": scopes})
    try:
        parse_entries(line)  # the same checks as reading it back
    except TokenFileError as exc:  # about the name or scopes asked for, not a line of a file
        raise TokenFileError(str(exc).removeprefix("line 1: ")) from None
    if not path.parent.exists():  # (a file there: os.open says "Not a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(line + "\n")
    return token
