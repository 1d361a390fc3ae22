"""Many runs: the scale of state. With 100,000 runs in the database (SQLite and Postgres), GET
/v1/jobs/{id}, the filtered, paginated list GET /v1/jobs?status=&skill_id=&limit=50&cursor=, and
POST /v1/jobs (a cache miss: the cache lookup, the queue count and the inserts all meet the
big tables; no worker runs, so the new runs stay queued).

Rows are bulk-inserted into `runs` and `requests` with SQLAlchemy Core executemany after
`skill-runner migrate`: 20 skills, statuses 90% succeeded, 6% failed, 2% canceled, 1.5% queued,
0.5% running, created over ~30 days. The baseline is the same requests on the same database
holding 1,000 runs (measured first, in the same run). Server times come from gunicorn's access
log (%(D)s).
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

from bench.context import Context
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "many-runs"
SKILLS = [f"bench-skill-{i:02d}" for i in range(20)]
STATUSES = [
    ("succeeded", 0.90),
    ("failed", 0.06),
    ("canceled", 0.02),
    ("queued", 0.015),
    ("running", 0.005),
]
LIST_STATUSES = ("succeeded", "failed", "queued")
CHUNK = 5000
POST_SKILL = "bench-noop"  # bench/skills: a script skill taking {"n": ...}


def insert_runs(url: str, start: int, count: int, rng: random.Random) -> list[str]:
    """Insert `count` runs + requests (indexes start.. of a 30-day timeline); request ids."""
    from sqlalchemy import create_engine, insert

    from runner_core.store.db import normalize_url
    from runner_core.store.models import Request, Run

    base = datetime(2026, 10, 1, tzinfo=UTC)
    names, weights = zip(*STATUSES)
    engine = create_engine(normalize_url(url))
    ids = []
    try:
        for offset in range(start, start + count, CHUNK):
            runs, reqs = [], []
            for i in range(offset, min(offset + CHUNK, start + count)):
                run_id, req_id = str(uuid.uuid4()), str(uuid.uuid4())
                status, skill = rng.choices(names, weights)[0], rng.choice(SKILLS)
                created = base + timedelta(seconds=i * 25, microseconds=rng.randrange(10**6))
                done = status in ("succeeded", "failed", "canceled")
                runs.append(
                    dict(
                        id=run_id,
                        request_id=req_id,
                        kind="job",
                        skill_id=skill,
                        skill_version="1.0.0",
                        engine=None,
                        model=None,
                        status=status,
                        parameter={},
                        input={"n": i},
                        runtime_options={},
                        needs_upload=False,
                        cache_key=uuid.uuid4().hex,
                        error_code="SKILL_SCRIPT_FAILED" if status == "failed" else None,
                        error={"code": "SKILL_SCRIPT_FAILED", "message": "exit 1"}
                        if status == "failed"
                        else None,
                        warnings=[],
                        attempt=1 if status != "queued" else 0,
                        worker="bench@host",
                        celery_task_id=str(uuid.uuid4()),
                        created_at=created,
                        queued_at=created,
                        dispatched_at=created,
                        started_at=created + timedelta(seconds=1) if status != "queued" else None,
                        finished_at=created + timedelta(seconds=3) if done else None,
                        heartbeat_at=created + timedelta(seconds=2) if status != "queued" else None,
                        updated_at=created + timedelta(seconds=3),
                        interaction_count=0,
                        auto_decision_count=0,
                        recovery_state="none",
                        timings={"prepare": 0.01, "process": 1.9} if done else {},
                    )
                )
                reqs.append(
                    dict(
                        id=req_id,
                        kind="job",
                        skill_id=skill,
                        engine=None,
                        run_id=run_id,
                        cache_hit=False,
                        payload={"skill_id": skill, "input": {"n": i}},
                        created_at=created,
                    )
                )
                ids.append(req_id)
            with engine.begin() as conn:
                conn.execute(insert(Run.__table__), runs)
                conn.execute(insert(Request.__table__), reqs)
    finally:
        engine.dispose()
    return ids


def measure(
    stack: Stack, ids: list[str], n_get: int, n_list: int, rng: random.Random, n_post: int
) -> dict:
    """Server times of random GET /v1/jobs/{id}, of list pages (walking cursors) and of
    POST /v1/jobs (last: it adds queued runs)."""
    client = stack.client()
    for _ in range(20):
        client.get(f"/v1/jobs/{rng.choice(ids)}")
        client.get(f"/v1/jobs?status=succeeded&skill_id={rng.choice(SKILLS)}&limit=50")
    out: dict[str, list[float]] = {}
    offset = stack.access_log_offset()
    for _ in range(n_get):
        if client.get(f"/v1/jobs/{rng.choice(ids)}").status != 200:
            raise RuntimeError("GET /v1/jobs/{id} failed")
    out["get"] = stack.server_times("GET", "/v1/jobs/", offset)
    done = 0
    while done < n_list:
        for status in LIST_STATUSES:
            offset = stack.access_log_offset()
            cursor, pages = None, 0
            skill = rng.choice(SKILLS)
            while pages < 5 and done < n_list:
                path = f"/v1/jobs?status={status}&skill_id={skill}&limit=50"
                if cursor:
                    path += f"&cursor={cursor.replace('|', '%7C').replace('+', '%2B')}"
                resp = client.get(path)
                if resp.status != 200:
                    raise RuntimeError(f"list failed: {resp.status} {resp.body}")
                pages, done = pages + 1, done + 1
                cursor = resp.body.get("next_cursor")
                if not cursor:
                    break
            out.setdefault(f"list {status}", []).extend(
                stack.server_times("GET", "/v1/jobs?", offset)
                or stack.server_times("GET", "/v1/jobs", offset)
            )
    offset = stack.access_log_offset()
    for _ in range(n_post):
        resp = client.post(
            "/v1/jobs", {"skill_id": POST_SKILL, "input": {"n": rng.randrange(10**9)}}
        )
        if resp.status != 200:
            raise RuntimeError(f"POST /v1/jobs failed: {resp.status} {resp.body}")
    out["post"] = stack.server_times("POST", "/v1/jobs", offset)
    return out


def run(ctx: Context) -> list[Row]:
    total, small = ctx.count(100_000, 20_000), 1000
    n_get, n_list, n_post = ctx.count(1000, 100), ctx.count(600, 60), ctx.count(500, 50)
    rows: list[Row] = []
    for db in ("sqlite", "postgres"):
        rng = random.Random(7)
        root = ctx.scratch(f"{FIGURE}-{db}")
        try:
            with Stack(
                root / "stack",
                StackOptions(
                    db=db,
                    worker=False,
                    access_log=True,
                    extra_env={"SKILL_RUNNER_QUEUE_MAX": "1000000"},
                ),
            ) as stack:  # 1.5% of the runs are queued
                ids = insert_runs(stack.database_url, 0, small, rng)
                if db == "postgres":
                    _analyze(stack.database_url)
                base = measure(stack, ids, n_get, n_list, rng, n_post)
                ids += insert_runs(stack.database_url, small, total - small, rng)
                if db == "postgres":
                    _analyze(stack.database_url)
                ctx.log(f"{FIGURE}: {db}: {total} runs inserted")
                big = measure(stack, ids, n_get, n_list, rng, n_post)
        finally:
            ctx.cleanup(root)
        for key in big:
            b, s = summarize(big[key]), summarize(base[key])
            label = {
                "get": "GET /v1/jobs/{id}",
                "post": "POST /v1/jobs (cache miss, enqueued)",
            }.get(
                key
            ) or f"GET /v1/jobs?status={key.split()[1]}&skill_id=..&limit=50 (+cursor pages)"
            rows.append(
                Row(
                    FIGURE,
                    f"{db}, {total:,} runs: {label}",
                    b.median,
                    "s",
                    s.median,
                    f"same at {small:,} runs",
                    ratio(b.p99, s.p99),
                    "p99 <= 15 ms",
                    b.p99 <= 0.015,
                    p99=b.p99,
                    baseline_p99=s.p99,
                    note=f"n={b.n}; ratio of p99s",
                )
            )
    return rows


def _analyze(url: str) -> None:
    """Postgres autovacuum would analyze soon after a bulk load; do it now."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
