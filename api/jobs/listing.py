"""GET /v1/jobs: jobs newest first, filtered, keyset-paginated on (created_at, id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import BindParameter, Connection, Select, bindparam, func, select

from api.errors import ApiError
from api.jobs.rows import JOB_COLUMNS, JobRow, requests_table, runs_table
from api.schemas.output_fields import iso
from runner_core.error_codes import ErrorCode
from runner_core.statuses import RunStatus

# Statuses a cache hit never binds to: each of their runs has exactly one request, so those
# lists can be walked from the runs index instead of sorting the skill's whole request history.
RUN_DRIVEN_STATUSES = tuple(s for s in RunStatus if s is not RunStatus.SUCCEEDED)


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of the list; `next_cursor` names its last item, None on the last page."""

    items: list[JobRow]
    next_cursor: str | None


# what a list holds: jobs (GET /v1/jobs), or every run (the management API and the UI)
JOBS, EVERY_KIND = ("job",), ("job", "temp")


def list_jobs(
    conn: Connection,
    args: dict[str, Any],
    owner: str | None = None,
    kinds: tuple[str, ...] = JOBS,
) -> JobPage:
    """Newest first, filtered by status/skill_id/engine (and to `owner`'s when given), from
    `args["cursor"]` on; requests of `kinds` (one-off runs are of kind temp)."""
    by_run = args.get("status") in RUN_DRIVEN_STATUSES
    args = {**args, "owner": owner}
    filters = tuple(name for name in ("status", "skill_id", "engine", "owner") if args.get(name))
    params = {f"{name}_": args[name] for name in filters}
    if args.get("cursor"):
        params["when_"], params["last_id_"] = parse_cursor(conn, args["cursor"])
    limit = args.get("limit", 50)
    statement = _list_statement(by_run, filters, bool(args.get("cursor")), kinds).limit(limit + 1)
    rows = [JobRow.from_row(row) for row in conn.execute(statement, params)]
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        when, last_id = (
            (last.run_created_at, last.run_id) if by_run else (last.created_at, last.request_id)
        )
        next_cursor = f"{iso(when)}|{last_id}"
    return JobPage(rows[:limit], next_cursor)


@dataclass(frozen=True, slots=True)
class NumberedPage:
    """Page `page` (from 1) of `page_size` items of a list of `total` (Skill-Runner's paging)."""

    items: list[JobRow]
    page: int
    page_size: int
    total: int

    @property
    def total_pages(self) -> int:
        return -(-self.total // self.page_size)


def numbered_page(
    conn: Connection,
    args: dict[str, Any],
    page: int,
    page_size: int,
    owner: str | None = None,
    kinds: tuple[str, ...] = JOBS,
) -> NumberedPage:
    """The list of `list_jobs` (same order and filters) cut into numbered pages."""
    by_run = args.get("status") in RUN_DRIVEN_STATUSES
    args = {**args, "owner": owner}
    filters = tuple(name for name in ("status", "skill_id", "engine", "owner") if args.get(name))
    params = {f"{name}_": args[name] for name in filters}
    statement = _list_statement(by_run, filters, False, kinds)
    total = conn.execute(
        select(func.count()).select_from(statement.order_by(None).subquery()), params
    ).scalar_one()
    rows = conn.execute(statement.limit(page_size).offset((page - 1) * page_size), params)
    return NumberedPage([JobRow.from_row(row) for row in rows], page, page_size, total)


@cache
def _list_statement(
    by_run: bool, filters: tuple[str, ...], cursor: bool, kinds: tuple[str, ...] = JOBS
) -> Select:
    """The list's SELECT for one combination of filters, built once (values are bound)."""
    if by_run:  # index runs(status, skill_id, created_at, id)
        key = runs_table
        query = (
            select(*JOB_COLUMNS)
            .join_from(runs_table, requests_table, requests_table.c.id == runs_table.c.request_id)
            .where(kind_is(kinds))  # a temp_upload job's run is of kind temp: the request's
        )
    else:  # index requests(skill_id, created_at, id)
        key = requests_table
        query = (
            select(*JOB_COLUMNS)
            .join_from(requests_table, runs_table, runs_table.c.id == requests_table.c.run_id)
            .where(kind_is(kinds))
        )
    for name in filters:
        table = runs_table if name == "status" else key
        query = query.where(table.c[name] == bindparam(f"{name}_"))
    if cursor:
        last_id: BindParameter[Any]
        when, last_id = bindparam("when_", type_=key.c.created_at.type), bindparam("last_id_")
        # `created_at <= when` on its own is an index range (the OR alone is not, and Postgres
        # then walks every newer row before the page); the OR settles ties on the id.
        query = query.where(
            key.c.created_at <= when, (key.c.created_at < when) | (key.c.id < last_id)
        )
    return query.order_by(key.c.created_at.desc(), key.c.id.desc())


def kind_is(kinds: tuple[str, ...]) -> Any:
    """The WHERE on the request's kind (one value: an equality the indexes serve as before)."""
    if len(kinds) == 1:
        return requests_table.c.kind == kinds[0]
    return requests_table.c.kind.in_(kinds)


def parse_cursor(conn: Connection, cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a `next_cursor` names; 400 INVALID_CURSOR when it is not one."""
    created, _, last_id = cursor.partition("|")
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ApiError(
            400, ErrorCode.INVALID_CURSOR, "cursor is not one this API returned"
        ) from exc
    if conn.dialect.name == "sqlite":
        when = when.replace(tzinfo=None)  # stored naive (UTC) by SQLite
    return when, last_id
