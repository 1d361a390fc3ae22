"""The Idempotency-Key header of POST /v1/jobs and POST /v1/temp-skill-runs.

The key is written in the same transaction as the request it creates, so of concurrent
duplicates exactly one commits: the others fail on the key's primary key, roll back everything
they wrote and answer the winner's stored response. The same key with another body is
409 IDEMPOTENCY_KEY_REUSED. Keys are per owner (the API token's name): two clients sending
the same key do not see each other's runs. Only accepted creates are remembered: a refused
one (4xx, 429) keeps nothing, so it can be sent again with the same key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

from flask import request
from sqlalchemy import Connection, Table, bindparam, delete, insert, select
from sqlalchemy.exc import IntegrityError

from api import auth, context
from api.errors import ApiError
from runner_core.error_codes import ErrorCode
from runner_core.store.models import IdempotencyKey, utcnow

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
_KEY = re.compile(r"[\x21-\x7e]{1,255}")  # printable ASCII, no spaces
_TABLE = cast(Table, IdempotencyKey.__table__)
# built once (a create pays no statement construction or cache-key work for its key)
_KEY_IS = (
    _TABLE.c.scope == bindparam("scope_"),
    _TABLE.c.owner == bindparam("owner_"),
    _TABLE.c.key == bindparam("key_"),
)
_FIND = select(_TABLE.c.body_sha256, _TABLE.c.response, _TABLE.c.created_at).where(*_KEY_IS)
_FORGET = delete(_TABLE).where(*_KEY_IS)
_INSERT = insert(_TABLE)


class KeyTaken(Exception):
    """Another request with the same key committed first (raised after the rollback)."""


@dataclass(frozen=True)
class Claim:
    """A create's key, the hash of what it asks, and the answer's fields beyond Accepted."""

    scope: str  # job | temp
    key: str
    body_sha256: str
    owner: str = ""  # the token's name ("" without tokens)
    extra: dict[str, Any] = field(default_factory=dict)


def header_claim(scope: str, *parts: Any) -> Claim | None:
    """The claim of this request's Idempotency-Key over `parts` (the parsed body, the
    package's hash...), or None without the header; a malformed key is 400."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise ApiError(
            400,
            ErrorCode.INVALID_REQUEST,
            f"the {HEADER} header must be 1-255 printable ASCII characters without spaces",
            {"header": HEADER},
        )
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Claim(scope, key, digest, owner=auth.owner() or "")


def stored_response(conn: Connection, claim: Claim) -> dict[str, Any] | None:
    """The answer the key got, or None when it is new (an expired key is forgotten here)."""
    row = conn.execute(_FIND, _same_key(claim)).first()
    if row is None:
        return None
    created = (
        row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=utcnow().tzinfo)
    )
    if created < utcnow() - timedelta(seconds=context.settings().idempotency_ttl_sec):
        conn.execute(_FORGET, _same_key(claim))
        conn.commit()
        return None
    if row.body_sha256 != claim.body_sha256:
        raise ApiError(
            409,
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            f"this {HEADER} was sent before with a different request",
            {"header": HEADER, "request_id": row.response.get("request_id")},
        )
    return dict(row.response)


def _same_key(claim: Claim) -> dict[str, str]:
    return {"scope_": claim.scope, "owner_": claim.owner, "key_": claim.key}


def remember(conn: Connection, claim: Claim, response: dict[str, Any]) -> None:
    """Write the key in the caller's open transaction (committed with the create); KeyTaken
    when a concurrent request with the same key committed first."""
    try:
        conn.execute(
            _INSERT,
            {
                "scope": claim.scope,
                "owner": claim.owner,
                "key": claim.key,
                "body_sha256": claim.body_sha256,
                "request_id": response["request_id"],
                "status_code": 200,
                "response": {**response, **claim.extra},
                "created_at": utcnow(),
            },
        )
    except IntegrityError:
        conn.rollback()
        raise KeyTaken() from None


def forget_expired() -> int:
    """Delete the keys past their lifetime; how many went."""
    cutoff = utcnow() - timedelta(seconds=context.settings().idempotency_ttl_sec)
    with context.connect() as conn:
        deleted = conn.execute(delete(_TABLE).where(_TABLE.c.created_at < cutoff)).rowcount
        conn.commit()
    return deleted


def once(claim: Claim | None, create: Callable[[], Any], look_first: bool = True) -> Any:
    """`create()`, or the stored answer of the claim's key (marked Idempotent-Replayed).

    With `look_first` False the key is not looked up before `create()` (a new key, the usual
    case, then costs only its insert): `create()` must be safe to call again and to fail at
    the key (nothing outside its transaction). A create refused meanwhile (429, a skill gone)
    still answers a key that was answered before."""
    if claim is None:
        return create()
    if look_first:
        with context.connect() as conn:
            stored = stored_response(conn, claim)
        if stored is not None:
            return stored, {REPLAYED_HEADER: "true"}
    try:
        return create()
    except KeyTaken:
        pass
    except ApiError:
        if look_first:
            raise
        with context.connect() as conn:
            stored = stored_response(conn, claim)
        if stored is None:
            raise
        return stored, {REPLAYED_HEADER: "true"}
    with context.connect() as conn:
        stored = stored_response(conn, claim)  # 409 when the body differs
    if stored is None:  # an expired key, forgotten just now (looked up first: not expired)
        return create()
    return stored, {REPLAYED_HEADER: "true"}
