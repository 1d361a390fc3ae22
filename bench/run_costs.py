"""What a noop run costs the runner beyond its command: the median time of each phase, from
the run rows, and the database rows it writes, from Postgres' row counters."""

from __future__ import annotations

import statistics
import time

from bench.context import Context
from bench.jobs import as_epoch
from bench.noop_jobs import SKILL_ID, runner_once
from bench.stack import Stack, StackOptions


def time_split(stack: Stack, skip: int) -> dict[str, float]:
    """Median seconds of each phase of the succeeded noop runs, from their rows."""
    from sqlalchemy import create_engine, select

    from runner_core.store.models import Request, Run

    engine = create_engine(stack.database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(Run, Request.created_at.label("req_created"))
                .join(Request, Request.run_id == Run.id)
                .where(Run.skill_id == SKILL_ID, Run.status == "succeeded")
                .order_by(Run.created_at)
            ).all()[skip:]
    finally:
        engine.dispose()
    split: dict[str, list[float]] = {}

    def add(name: str, value: float | None) -> None:
        if value is not None:
            split.setdefault(name, []).append(value)

    for row in rows:
        created, queued = as_epoch(row.created_at), as_epoch(row.queued_at)
        started, finished = as_epoch(row.started_at), as_epoch(row.finished_at)
        add("api: row -> enqueued (queued_at - created_at)", queued - created)
        add("queue wait (started_at - queued_at)", started - queued)
        for phase in ("prepare", "process", "output", "artifacts", "bundle"):
            add(f"worker: {phase}", row.timings.get(phase))
        add(
            "worker: claim/finish/rest (finished - started - phases)",
            finished
            - started
            - sum(
                row.timings.get(p, 0)
                for p in ("prepare", "process", "output", "artifacts", "bundle")
            ),
        )
        add("total row time (finished_at - created_at)", finished - created)
    return {name: statistics.median(values) for name, values in split.items()}


def db_writes(ctx: Context, k: int, figure: str) -> dict[str, float]:
    """Row inserts/updates/deletes per run on Postgres (pg_stat_user_tables), k sequential runs."""
    import psycopg

    root = ctx.scratch(f"{figure}-pg")
    try:
        with Stack(root / "stack", StackOptions(db="postgres")) as stack:
            client = stack.client()
            for _ in range(k):
                runner_once(client)
            stack.stop_processes()  # backends flush their counters when they exit
            time.sleep(1.0)
            with psycopg.connect(stack.pg.url, autocommit=True) as conn:
                conn.execute("SELECT pg_stat_clear_snapshot()")
                rows = conn.execute(
                    "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM "
                    "pg_stat_user_tables WHERE relname IN ('runs', 'requests')"
                ).fetchall()
    finally:
        ctx.cleanup(root)
    out = {}
    for name, ins, upd, dele in rows:
        out[f"{name} inserts"] = ins / k
        out[f"{name} updates"] = upd / k
        if dele:
            out[f"{name} deletes"] = dele / k
    return out
