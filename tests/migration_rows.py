"""Rows as an install holds them, written into a database at any revision: each table as it
stands filled with a few rows (each column a value of its type, NULLs where allowed; runs,
requests and questions as the code of the time wrote them), and the checks that they survive a
migration (tests/api/test_migrations_with_data.py, tests/integration/test_upgrade_recovery.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    select,
)

from runner_core.store.migrate import alembic_config
from runner_core.store.models import Base

REVISIONS = [
    script.revision
    for script in reversed(list(ScriptDirectory.from_config(alembic_config("")).walk_revisions()))
]
STATUSES = ["queued", "running", "waiting_user", "succeeded", "failed", "canceled"]
TERMINAL = {"succeeded", "failed", "canceled"}
# what the code of each time wrote for a run that ended with an error
ERRORS = {
    "failed": {"code": "SKILL_FAILED", "message": "the skill's script exited with code 1"},
    "canceled": {"code": "CANCELED_BY_USER", "message": "canceled by user"},
}
T0 = datetime(2026, 11, 1, tzinfo=UTC)
# key columns a later revision added, and the value it gave the rows already there
ADDED_KEYS = {("idempotency_keys", "owner"): ""}  # 0012: keys sent before owners are nobody's


class Filler:
    """Inserts rows into every table of a database as it stands, and remembers them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.counter = 0
        self.inserted: dict[str, list[dict[str, Any]]] = {}  # table -> rows (with their keys)
        self.jobs: list[tuple[str, str, str]] = []  # (revision, request id, run status)
        self.questions: dict[str, int] = {}  # request id -> its pending interaction

    def fill(self, revision: str) -> None:
        meta = MetaData()
        meta.reflect(self.engine)
        with self.engine.begin() as conn:
            # runs and requests first, as the API made them: one job per status
            runs, requests = meta.tables["runs"], meta.tables["requests"]
            run_ids = []
            for status in STATUSES:
                run_id, request_id = str(uuid.uuid4()), str(uuid.uuid4())
                self._insert(conn, runs, self._run(revision, run_id, request_id, status))
                self._insert(conn, requests, self._request(run_id, request_id))
                self.jobs.append((revision, request_id, status))
                run_ids.append(run_id)
            if "interactions" in meta.tables:  # 0008: the waiting run's question
                self._ask(conn, meta, run_ids[STATUSES.index("waiting_user")])
            # a cache hit: a second request served by the succeeded run
            hit = {**self._request(run_ids[3], str(uuid.uuid4())), "cache_hit": True}
            hit["created_at"] += timedelta(seconds=30)
            self._insert(conn, requests, hit)
            self.jobs.append((revision, hit["id"], "succeeded"))
            for table in meta.sorted_tables:
                if table.name in ("runs", "requests", "alembic_version"):
                    continue
                for i in range(3):
                    self._insert(conn, table, self._generic(table, i))

    def _ask(self, conn, meta: MetaData, run_id: str) -> None:
        """The pending question of a waiting run, as runner_core.store.interactions.ask
        wrote it from 0008 on."""
        asked = meta.tables["interactions"]
        self._insert(
            conn,
            asked,
            {
                "run_id": run_id,
                "turn": 1,
                "state": "pending",
                "kind": "choose_one",
                "prompt": "Which summary should be kept?",
                "options": [{"label": "1: short", "value": "1"}, {"label": "2", "value": "2"}],
                "ui_hints": {},
                "required_fields": [],
                "default_decision_policy": "engine_judgement",
                "context": {},
                "created_at": T0,
            },
        )
        interaction_id = self.inserted["interactions"][-1]["id"]
        runs = meta.tables["runs"]
        conn.execute(
            runs.update().where(runs.c.id == run_id).values(pending_interaction_id=interaction_id)
        )
        (run,) = (r for r in self.inserted["runs"] if r["id"] == run_id)
        run["pending_interaction_id"] = interaction_id
        self.questions[run["request_id"]] = interaction_id

    def _insert(self, conn, table: Table, values: dict[str, Any]) -> None:
        values = {k: v for k, v in values.items() if k in table.c}
        result = conn.execute(table.insert().values(**values))
        for col, key in zip(table.primary_key.columns, result.inserted_primary_key, strict=True):
            values[col.name] = key
        self.inserted.setdefault(table.name, []).append(values)

    def _run(self, revision: str, run_id: str, request_id: str, status: str) -> dict[str, Any]:
        """A run as runner_core.store wrote it at the time (0001's columns, then what later
        revisions added: their NULLs are what the old code left there)."""
        created = T0 + timedelta(minutes=int(revision))
        ended = status in TERMINAL
        error = ERRORS.get(status)
        return {
            "id": run_id,
            "request_id": request_id,
            "kind": "job",
            "skill_id": "demo-prime-number",
            "skill_version": "1.0.0",
            "engine": None,
            "model": None,
            "status": status,
            "parameter": {"divisor": 1},
            "input": {},
            "runtime_options": {
                "no_cache": False,
                "execution_mode": "interactive" if status == "waiting_user" else "auto",
            },
            "needs_upload": False,
            "cache_key": f"{int(revision):064d}" if status == "succeeded" else None,
            "error_code": error["code"] if error else None,
            "error": error,
            "warnings": [],
            "attempt": 0 if status == "queued" else 1,
            "worker": None if status == "queued" else "worker.1@old-host",
            "celery_task_id": str(uuid.uuid4()),
            "pgid": 4242 if status == "running" else None,
            "heartbeat_at": None if status == "queued" else created + timedelta(seconds=5),
            "created_at": created,
            "queued_at": created,
            "started_at": None if status == "queued" else created + timedelta(seconds=1),
            "finished_at": created + timedelta(seconds=9) if ended else None,
            "updated_at": created + timedelta(seconds=9),
            "interaction_count": 1 if status == "waiting_user" else 0,
            "auto_decision_count": 0,
            "recovery_state": "none",
            "session_handle": "session-1" if status == "waiting_user" else None,
            "timings": {"total_ms": 9000} if ended else {},
            "dispatched_at": created,  # 0003
            "token_usage": {"input_tokens": 10, "output_tokens": 20} if ended else None,  # 0007
        }

    def _request(self, run_id: str, request_id: str) -> dict[str, Any]:
        (run,) = (r for r in self.inserted["runs"] if r["id"] == run_id)
        return {
            "id": request_id,
            "kind": "job",
            "skill_id": run["skill_id"],
            "engine": None,
            "run_id": run_id,
            "cache_hit": False,
            "payload": {"skill_id": run["skill_id"], "parameter": {"divisor": 1}},
            "created_at": run["created_at"],
        }

    def _generic(self, table: Table, i: int) -> dict[str, Any]:
        """Each column a value of its type; NULL in the second row where allowed."""
        values: dict[str, Any] = {}
        for col in table.columns:
            if _autoincrement(table, col):
                continue
            if col.foreign_keys:
                (fk,) = col.foreign_keys
                targets = self.inserted[fk.column.table.name]
                values[col.name] = targets[-1 - i][fk.column.name]
            elif col.nullable and i == 1:
                values[col.name] = None
            else:
                values[col.name] = self._value(col)
        return values

    def _value(self, col: Column) -> Any:
        self.counter += 1
        n = self.counter
        if isinstance(col.type, Boolean):
            return n % 2 == 0
        if isinstance(col.type, Integer):
            return n
        if isinstance(col.type, DateTime):
            return T0 + timedelta(seconds=n)
        if isinstance(col.type, JSON) or col.type.__class__.__name__ == "JSONB":
            return {"n": n}
        if isinstance(col.type, String | Text):
            length = getattr(col.type, "length", None) or 64
            return f"{col.name[:4]}-{n}"[:length]
        raise AssertionError(f"no value for {col.table.name}.{col.name} of type {col.type!r}")


def _autoincrement(table: Table, col: Column) -> bool:
    """An integer key the database numbers (given one, a Postgres sequence would lag it)."""
    return (
        col.primary_key
        and len(table.primary_key.columns) == 1
        and isinstance(col.type, Integer)
        and col.autoincrement in (True, "auto")
    )


def missing_rows(
    engine: Engine, filler: Filler, only: dict[str, set[str]] | set[str] | None = None
) -> list[str]:
    """Every row inserted along the way that is not in the database as inserted (the columns
    that still exist); `only` these tables (and of each, only these columns)."""
    meta = MetaData()
    meta.reflect(engine)
    problems = []
    with engine.connect() as conn:
        for name, rows in filler.inserted.items():
            if only is not None and name not in only:
                continue
            table = meta.tables.get(name)
            if table is None:
                problems.append(f"table {name} is gone")
                continue
            found = {
                tuple(r._mapping[c.name] for c in table.primary_key.columns): r._mapping
                for r in conn.execute(select(table))
            }
            for row in rows:
                key = tuple(
                    row.get(c.name, ADDED_KEYS.get((name, c.name)))
                    for c in table.primary_key.columns
                )
                now = found.get(key)
                if now is None:
                    problems.append(f"{name} {key}: gone")
                    continue
                for column, value in row.items():
                    if isinstance(only, dict) and column not in only[name]:
                        continue
                    if column in now and _same(now[column]) != _same(value):
                        problems.append(f"{name} {key}: {column} {value!r} -> {now[column]!r}")
    return problems


def schema_diff(engine: Engine) -> list[Any]:
    """What the database lacks or has more than the models (indexes, foreign keys ...)."""
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), Base.metadata)


def _same(value: Any) -> Any:
    """Datetimes compared in UTC (SQLite gives them back naive)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value
