"""The web UI sessions ended by a logout (api.auth.session): a row per session id, kept until
the session's cookie would have expired anyway, so that every API process refuses the cookie
from then on, across restarts."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, bindparam, delete, insert, select
from sqlalchemy.exc import IntegrityError

from runner_core.store.models import EndedUiSession, utcnow

_TABLE = cast(Table, EndedUiSession.__table__)
# built once: every request made on a session cookie pays this one primary-key read
_FIND = select(_TABLE.c.sid).where(_TABLE.c.sid == bindparam("sid_"))
_PRUNE = delete(_TABLE).where(_TABLE.c.expires_at < bindparam("now_"))
_INSERT = insert(_TABLE)


def has_ended(conn: Connection, sid: str) -> bool:
    """Whether the session `sid` was ended by a logout."""
    return conn.execute(_FIND, {"sid_": sid}).first() is not None


def end(conn: Connection, sid: str, expires_at: datetime) -> None:
    """Record the session `sid` as ended until `expires_at` (when its cookie expires) and drop
    the rows whose cookies have expired; commits."""
    try:
        conn.execute(_PRUNE, {"now_": utcnow()})
        conn.execute(_INSERT, {"sid": sid, "expires_at": expires_at})
        conn.commit()
    except IntegrityError:  # ended already: the same cookie logged out twice
        conn.rollback()
