"""The store's half of failing a run that waits on a queue no worker consumes: which queued runs
have waited past the bound (since first sent: a resend keeps that time), and the guarded
queued -> failed transition, which a claim made meanwhile wins."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from runner_core.store import claim
from runner_core.store import runs as run_states
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Request, Run, utcnow
from tests.helpers import migrated_settings

BOUND = timedelta(seconds=300)
ERROR = {"code": "QUEUE_NOT_SERVED", "message": "no live worker consumes it"}


@pytest.fixture
def session(tmp_path) -> Iterator[Session]:
    engine = make_engine(migrated_settings(tmp_path).database_url)
    with make_sessionmaker(engine)() as session:
        session.add(Request(id="req", skill_id="s"))
        yield session
    engine.dispose()


def add_run(session: Session, run_id: str, queued_ago: float, **fields) -> None:
    queued_at = utcnow() - timedelta(seconds=queued_ago)
    fields = {"queued_at": queued_at, "dispatched_at": utcnow(), **fields}
    session.add(Run(id=run_id, request_id="req", skill_id="s", **fields))
    session.commit()


def test_only_runs_first_sent_before_the_bound_have_waited_too_long(session):
    add_run(session, "old", 400)  # re-sent just now (dispatched_at): still first sent 400 s ago
    add_run(session, "recent", 100)
    add_run(session, "upload", 400, needs_upload=True)  # waits for its upload, in no queue
    add_run(session, "never-sent", 0, queued_at=None, created_at=utcnow() - 2 * BOUND)
    add_run(session, "running", 400, status="running")
    found = {run.id for run in run_states.long_queued(session, BOUND)}
    assert found == {"old", "never-sent"}


def test_a_run_failed_for_its_queue_ends_with_the_error_once(session):
    add_run(session, "run", 400)
    assert run_states.fail_queued(session, "run", ERROR, BOUND) is True
    assert run_states.fail_queued(session, "run", ERROR, BOUND) is False
    row = session.get(Run, "run", populate_existing=True)
    assert (row.status, row.error_code, row.error) == ("failed", "QUEUE_NOT_SERVED", ERROR)
    assert row.finished_at is not None and row.started_at is None


def test_a_run_claimed_meanwhile_is_not_failed(session):
    add_run(session, "run", 400)
    assert claim.claim_run(session, "run", "host:1", "task")[0] == claim.CLAIMED
    assert run_states.fail_queued(session, "run", ERROR, BOUND) is False
    assert session.get(Run, "run", populate_existing=True).status == "running"


def test_the_runs_taken_within_the_bound_name_the_queues_in_use(session):
    add_run(session, "claimed-lately", 400, status="succeeded", started_at=utcnow())
    add_run(session, "running", 400, status="running", started_at=utcnow() - 2 * BOUND)
    add_run(session, "claimed-long-ago", 900, status="failed", started_at=utcnow() - 2 * BOUND)
    add_run(session, "queued", 400)
    found = {run.id for run in run_states.taken_since(session, BOUND)}
    assert found == {"claimed-lately", "running"}
