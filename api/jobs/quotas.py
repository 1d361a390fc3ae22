"""Per-token quotas: what the runs an API token started may spend over a sliding window (its
tokens-file entry's `quota`); a job beyond it is 429 QUOTA_EXCEEDED with the numbers."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Connection, select

from api import auth
from api.errors import ApiError
from runner_core.budget import spent_of
from runner_core.error_codes import ErrorCode
from runner_core.store.models import Run, utcnow
from runner_core.tokens import add_tokens


def check_quota(conn: Connection) -> None:
    """429 QUOTA_EXCEEDED when the caller's token has a quota its runs of the window reached."""
    principal = auth.caller()
    if principal is None or principal.quota is None:
        return
    quota = principal.quota
    now = utcnow()
    since = now - timedelta(seconds=quota.window_sec)
    rows = conn.execute(
        select(Run.created_at, Run.token_usage)
        .where(Run.owner == principal.name, Run.created_at >= since)
        .order_by(Run.created_at)
    ).all()
    total = None
    for _, usage in rows:
        total = add_tokens(total, usage)
    found = quota.limit.exceeded(total)
    if found is None:
        return
    # the window frees what its oldest run spent first
    oldest = next((created for created, usage in rows if usage), now)
    if oldest.tzinfo is None:  # SQLite hands back naive UTC
        oldest = oldest.replace(tzinfo=now.tzinfo)
    wait = max(1, int((oldest + timedelta(seconds=quota.window_sec) - now).total_seconds()) + 1)
    spent = spent_of(total)
    raise ApiError(
        429,
        ErrorCode.QUOTA_EXCEEDED,
        f"token '{principal.name}' spent {spent['tokens']:,} tokens (${spent['usd']:.4f}) in "
        f"the last {quota.window_sec} s, its quota being {quota.limit.as_dict()}; retry later",
        {"quota": quota.as_dict(), "spent": spent, "token_name": principal.name},
        retry_after=wait,
    )
