"""Pages of jobs write each JobStatus document by hand (api/schemas/status_document.py): it must
be what marshmallow's dump of the schema writes, for every field and every kind of value."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from flask import Flask

from api.jobs.rows import JobRow
from api.schemas import JobList, JobStatus
from api.schemas.management import ManagementRunList
from api.schemas.status_document import status_document

ZONES = (None, UTC, timezone(timedelta(hours=2)))
STATUSES = ("queued", "running", "waiting_user", "succeeded", "failed", "canceled")


def a_time(rng: random.Random, optional: bool = True) -> datetime | None:
    if optional and rng.random() < 0.3:
        return None
    when = datetime(2026, 1, 1) + timedelta(
        seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6)
    )
    return when.replace(tzinfo=rng.choice(ZONES))


def a_row(rng: random.Random, run_id: str) -> JobRow:
    maybe = lambda value: None if rng.random() < 0.3 else value  # noqa: E731
    return JobRow(
        request_id=f"req-{rng.randrange(10**6)}",
        request_kind=rng.choice(("job", "temp")),
        cache_hit=rng.random() < 0.5,
        created_at=a_time(rng, optional=False),
        run_id=run_id,
        run_created_at=a_time(rng, optional=False),
        status=rng.choice(STATUSES),
        skill_id=rng.choice(("demo-echo", "bench-noop", "ünïcode-skill")),
        skill_version=maybe("1.2.0"),
        engine=maybe(rng.choice(("codex", "claude", "kilo"))),
        model=maybe("gpt-5.2"),
        updated_at=a_time(rng, optional=False),
        queued_at=a_time(rng),
        started_at=a_time(rng),
        finished_at=a_time(rng),
        worker=maybe("celery@host"),
        attempt=rng.randrange(1, 4),
        needs_upload=rng.random() < 0.5,
        pending_interaction_id=maybe(rng.randrange(1, 50)),
        interaction_count=rng.randrange(0, 5),
        recovery_state=rng.choice(("none", "recovered", "failed_reconciled")),
        recovered_at=a_time(rng),
        recovery_reason=maybe("ORCHESTRATOR_RESTART_INTERRUPTED"),
        auto_decision_count=rng.randrange(0, 3),
        last_auto_decision_at=a_time(rng),
        warnings=rng.choice((None, [], [{"code": "NETWORK_NOT_ENFORCED", "details": {"n": 1}}])),
        error=maybe({"code": "TIMEOUT", "message": "ran out of time", "details": {}}),
        token_usage=maybe({"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.001}),
        owner=maybe("alice"),
        parent_request_id=maybe(f"req-{rng.randrange(10**6)}"),
        step_name=maybe(rng.choice(("search", "fetch[3]#2", "2:search", "summarize@1"))),
    )


@pytest.fixture
def app(tmp_path):
    flask_app = Flask(__name__)
    flask_app.config["SETTINGS"] = SimpleNamespace(data_dir=tmp_path)
    with flask_app.app_context():
        yield flask_app


def test_each_document_is_what_the_schema_dumps(app, tmp_path):
    rng = random.Random(20261129)
    # one run with a namespace copy of its result: resultJsonPath names that one
    copied = tmp_path / "runs" / "run-copied" / "result" / "demo-echo.2"
    copied.mkdir(parents=True)
    (copied / "result.json").write_text("{}")
    run_ids = ["run-copied", None, *(f"run-{i}" for i in range(300))]
    rows = [a_row(rng, run_id) for run_id in run_ids]
    rows[0] = dataclasses.replace(rows[0], skill_id="demo-echo")
    schema = JobStatus()
    for row in rows:
        assert status_document(row) == schema.dump(row)
    assert status_document(rows[0])["resultJsonPath"] == str(copied / "result.json")
    assert status_document(rows[1])["workspace_dir"] is None


def test_the_document_writes_every_field_of_the_schema(app):
    row = a_row(random.Random(1), "run-1")
    assert set(status_document(row)) == set(JobStatus().fields)


def test_pages_dump_through_it_as_json(app):
    rng = random.Random(7)
    rows = [a_row(rng, f"run-{i}") for i in range(50)]
    page = SimpleNamespace(items=rows, next_cursor="2026-01-01T00:00:00Z|run-49")
    dumped = JobList().dump(page)
    assert dumped["items"] == [JobStatus().dump(row) for row in rows]
    assert dumped["next_cursor"] == page.next_cursor
    json.dumps(dumped)  # nothing a JSON answer cannot carry
    numbered = SimpleNamespace(runs=rows[:3], items=rows[:3], page=1, page_size=3, total=50)
    managed = ManagementRunList().dump(numbered)
    assert managed["runs"] == managed["items"] == [JobStatus().dump(row) for row in rows[:3]]
