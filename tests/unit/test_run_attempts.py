"""A run requeued after its lease expired and claimed again belongs to its new attempt: the
worker of the earlier attempt (cut off from the database meanwhile, not dead) can neither
record its end over the new claim nor keep the lease alive, and its next beat tells it to stop."""

from __future__ import annotations

from sqlalchemy import select

from runner_core.store import claim, recovery
from runner_core.store import runs as run_states
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Request, Run
from tests.helpers import migrated_settings


def test_a_stale_attempt_cannot_finish_or_beat_a_run_claimed_again(tmp_path):
    settings = migrated_settings(tmp_path)
    engine = make_engine(settings.database_url)
    session = make_sessionmaker(engine)()
    session.add(Request(id="req", skill_id="s"))
    session.add(Run(id="run", request_id="req", skill_id="s"))
    session.commit()

    outcome, first = claim.claim_run(session, "run", "host:1", "task-1")
    assert outcome == claim.CLAIMED and first.attempt == 1
    assert recovery.requeue_interrupted(session, "run")  # its lease expired: queued again
    outcome, second = claim.claim_run(session, "run", "host:2", "task-2")
    assert outcome == claim.CLAIMED and second.attempt == 2
    beaten = session.scalar(select(Run.heartbeat_at).where(Run.id == "run"))

    assert run_states.beat(session, "run", 4242, attempt=1) is True  # stop: not yours now
    assert not run_states.finish_run(session, "run", "succeeded", attempt=1)
    row = session.get(Run, "run", populate_existing=True)
    assert (row.status, row.attempt, row.pgid, row.heartbeat_at) == ("running", 2, None, beaten)

    assert run_states.beat(session, "run", 4343, attempt=2) is False
    assert run_states.finish_run(session, "run", "succeeded", attempt=2)
    assert session.get(Run, "run", populate_existing=True).status == "succeeded"
    session.close()
    engine.dispose()
