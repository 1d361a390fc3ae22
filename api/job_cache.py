"""The result cache: a request whose key matches a succeeded run is bound to it
without touching a worker. Failed runs are never cached; `runtime_options.no_cache` opts out."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from api import context
from runner_core import run_key
from runner_core.runtime_options import RuntimeOptions
from runner_core.skills import SkillPackage
from runner_core.statuses import RunStatus
from runner_core.store.models import Run


def cache_usable(options: RuntimeOptions) -> bool:
    """Interactive runs and requests that opt out are never served from the cache."""
    return not options.no_cache and options.execution_mode == "auto"


def key_for(
    pkg: SkillPackage,
    engine: str | None,
    model: str | None,
    parameter: dict[str, Any],
    inline: dict[str, Any],
    upload_hashes: dict[str, str],
    options: RuntimeOptions,
    workspace: str | None = None,
) -> str:
    """Hash of the skill's files, engine (+ its merged config), model, values and uploads;
    `workspace`: the token of the earlier run whose workspace (and output) the run reuses.
    The worker computes it again from the skill it runs (runner_core.run_key)."""
    return run_key.key_for(
        pkg,
        engine,
        model,
        parameter,
        inline,
        upload_hashes,
        options,
        workspace,
        context.settings().skills_dir,
    )


_runs = Run.__table__
# built once: a cache miss (most requests) costs one small indexed query, a hit the same
# query returning the row, no ORM load
_NEWEST_SUCCEEDED = (
    select(_runs)
    .where(
        _runs.c.cache_key == bindparam("key_"),
        _runs.c.status == RunStatus.SUCCEEDED,
        _runs.c.owner.is_not_distinct_from(bindparam("owner_", type_=_runs.c.owner.type)),
    )
    .order_by(_runs.c.finished_at.desc())
    .limit(1)
)


def find_cached(conn: Connection, key: str, owner: str | None = None) -> Row | None:
    """The newest succeeded run with this key of the same owner (token name), if any (its
    row): a cache hit never hands one client's run, logs and files to another."""
    return conn.execute(_NEWEST_SUCCEEDED, {"key_": key, "owner_": owner}).first()
