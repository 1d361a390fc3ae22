"""The audit log: one row per security-relevant action (installs, cancels, cleanups, replies),
newest first in keyset pages on its id."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Table, insert, select

from runner_core.store.models import AuditEntry, utcnow

_TABLE = cast(Table, AuditEntry.__table__)
FIELDS = ("id", "at", "token_name", "action", "target", "status_code", "http_request_id", "details")


def record(
    conn: Connection,
    *,
    token_name: str | None,
    action: str,
    target: str | None,
    status_code: int,
    http_request_id: str | None,
    details: dict[str, Any] | None = None,
) -> None:
    """Add one entry in the caller's transaction."""
    conn.execute(
        insert(_TABLE),
        {
            "at": utcnow(),
            "token_name": token_name,
            "action": action,
            "target": target[:255] if target else None,
            "status_code": status_code,
            "http_request_id": http_request_id,
            "details": details or {},
        },
    )


def page(
    conn: Connection, limit: int, before_id: int | None = None, action: str | None = None
) -> list[dict[str, Any]]:
    """Up to `limit` entries older than `before_id` (all when None), newest first."""
    query = select(*(_TABLE.c[name] for name in FIELDS)).order_by(_TABLE.c.id.desc()).limit(limit)
    if before_id is not None:
        query = query.where(_TABLE.c.id < before_id)
    if action:
        query = query.where(_TABLE.c.action == action)
    return [dict(row._mapping) for row in conn.execute(query)]
