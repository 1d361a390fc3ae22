"""The precompiled dump of a schema writes what marshmallow's own dump of it writes."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest
from marshmallow import Schema, fields

from api.jobs.listing import JobPage
from api.jobs.rows import JobRow
from api.precompiled import PrecompiledSchema, compile_dump
from api.schemas import JobList, JobStatus

NAIVE = datetime(2026, 1, 2, 3, 4, 5, 678901)  # SQLite: naive, stored as UTC
AWARE = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)  # Postgres

QUEUED = JobRow(
    request_id="r1", request_kind="job", cache_hit=False, created_at=NAIVE, run_id="u1",
    run_created_at=NAIVE, status="queued", skill_id="s", skill_version=None, engine=None,
    model=None, updated_at=NAIVE, queued_at=None, started_at=None, finished_at=None, worker=None,
    attempt=0, needs_upload=True, pending_interaction_id=None, interaction_count=0,
    recovery_state="none", recovered_at=None, recovery_reason=None, auto_decision_count=0,
    last_auto_decision_at=None, warnings=None, error=None)
FAILED = dataclasses.replace(
    QUEUED, request_id="r2", cache_hit=True, created_at=AWARE, status="failed", engine="codex",
    model="m", queued_at=AWARE, started_at=AWARE, finished_at=AWARE, worker="w@h", attempt=2,
    needs_upload=False, pending_interaction_id=3, interaction_count=1,
    warnings=[{"code": "W"}, "x"], error={"code": "E", "message": "m", "details": {"a": [1]}})


@pytest.mark.parametrize("row", [QUEUED, FAILED], ids=["queued-naive", "failed-aware"])
def test_a_status_document_is_what_marshmallow_would_write(row):
    schema = JobStatus()
    assert schema.dump(row) == Schema.dump(schema, row)


def test_a_page_is_what_marshmallow_would_write():
    schema, page = JobList(), JobPage([QUEUED, FAILED], "cursor")
    dumped = schema.dump(page)
    assert dumped == Schema.dump(schema, page)
    assert dumped["items"][0]["created_at"] == "2026-01-02T03:04:05.678901Z"
    assert dumped["items"][0]["warnings"] == [] and dumped["items"][0]["waiting_for_upload"]
    assert JobList().dump(JobPage([], None)) == {"items": [], "next_cursor": None}


def test_a_field_without_a_known_output_is_refused_when_the_plan_is_built():
    class Odd(PrecompiledSchema):
        when = fields.Date()

    with pytest.raises(TypeError, match="Date field 'when'"):
        compile_dump(Odd())
