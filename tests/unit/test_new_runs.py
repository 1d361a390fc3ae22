"""The rows a new run and its request are written as, by the API and by a composite alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from runner_core.statuses import RunStatus
from runner_core.store import callbacks
from runner_core.store.new_runs import Dispatch, NewRun, insert_runs

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def new_run(**changes: Any) -> NewRun:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "request_id": "req-1",
        "skill_id": "demo",
        "skill_version": "1.0.0",
        "engine": "codex",
        "parameter": {"p": 1},
        "input": {"text": "hi"},
        "runtime_options": {"debug": True},
        "payload": {"skill_id": "demo"},
        "created_at": NOW,
        "dispatch": Dispatch("task-1", NOW, NOW + timedelta(seconds=1)),
    }
    return NewRun(**{**fields, **changes})


class FakeConnection:
    """Records each execute: the statement's table and its parameters."""

    def __init__(self) -> None:
        self.executed: list[tuple[str, Any]] = []

    def execute(self, statement: Any, parameters: Any) -> None:
        self.executed.append((statement.table.name, parameters))


def test_a_new_run_is_queued_and_stamped_for_sending():
    row = new_run().run_row()
    assert row["status"] == RunStatus.QUEUED
    assert (row["celery_task_id"], row["queued_at"]) == ("task-1", NOW)
    assert row["dispatched_at"] == NOW + timedelta(seconds=1)
    assert row["created_at"] == row["updated_at"] == NOW


def test_a_run_waiting_for_its_upload_is_not_stamped():
    row = new_run(dispatch=None, needs_upload=True).run_row()
    assert row["needs_upload"] is True
    assert (row["celery_task_id"], row["queued_at"], row["dispatched_at"]) == (None, None, None)


def test_a_request_is_bound_to_its_own_run():
    row = new_run().request_row()
    assert (row["id"], row["run_id"], row["cache_hit"]) == ("req-1", "run-1", False)
    assert row["payload"] == {"skill_id": "demo"} and row["created_at"] == NOW


def test_a_callback_url_makes_the_callback_pending():
    assert new_run().request_row()["callback_state"] is None
    row = new_run(callback_url="https://example.org/hook").request_row()
    assert row["callback_state"] == callbacks.PENDING


def test_a_composite_step_names_its_parent_and_step():
    row = new_run(parent_run_id="parent-1", step_name="research#1").run_row()
    assert (row["parent_run_id"], row["step_name"]) == ("parent-1", "research#1")
    assert new_run().run_row()["parent_run_id"] is None


def test_a_cache_hit_writes_only_the_request_bound_to_the_cached_run():
    conn = FakeConnection()
    insert_runs(conn, [new_run(served_by="cached-run", dispatch=None)])  # type: ignore[arg-type]
    [(table, row)] = conn.executed
    assert table == "requests" and (row["run_id"], row["cache_hit"]) == ("cached-run", True)


def test_runs_are_written_before_the_requests_that_refer_to_them():
    conn = FakeConnection()
    insert_runs(conn, [new_run()])  # type: ignore[arg-type]
    assert [table for table, _ in conn.executed] == ["runs", "requests"]
    assert conn.executed[0][1]["id"] == "run-1"  # one run: a plain execute


def test_a_fan_out_is_one_statement_per_table():
    conn = FakeConnection()
    runs = [new_run(run_id=f"run-{i}", request_id=f"req-{i}") for i in range(3)]
    insert_runs(conn, runs)  # type: ignore[arg-type]
    assert [(table, [row["id"] for row in rows]) for table, rows in conn.executed] == [
        ("runs", ["run-0", "run-1", "run-2"]),
        ("requests", ["req-0", "req-1", "req-2"]),
    ]


def test_nothing_to_create_writes_nothing():
    conn = FakeConnection()
    insert_runs(conn, [])  # type: ignore[arg-type]
    assert conn.executed == []


def test_a_stamp_keeps_the_first_queued_time():
    stamp = Dispatch.stamp(NOW)
    assert stamp.queued_at == NOW and stamp.dispatched_at > NOW
    assert Dispatch.stamp().task_id != stamp.task_id
