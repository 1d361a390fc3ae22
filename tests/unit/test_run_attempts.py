"""Guards that keep one run from being done twice: a run requeued after its lease expired and
claimed again belongs to its new attempt (the worker of the earlier attempt, cut off from the
database meanwhile, can neither record its end over the new claim nor keep the lease alive, and
its next beat tells it to stop); a lost message is sent again by one sweep only."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from runner_core.store import claim, recovery
from runner_core.store import runs as run_states
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Request, Run, utcnow
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


def test_two_sweeps_that_find_the_same_lost_message_send_it_once(tmp_path):
    """Found by the chaos test's Redis restart: overlapping sweeps each read the same stale
    queued runs and each sent them again (730 messages for 220 runs). The resend is now taken
    with a guarded UPDATE first: one sweep wins each run."""
    settings = migrated_settings(tmp_path)
    engine = make_engine(settings.database_url)
    session = make_sessionmaker(engine)()
    old = utcnow() - timedelta(seconds=60)
    session.add(Request(id="req", skill_id="s"))
    session.add(Run(id="run", request_id="req", skill_id="s", dispatched_at=old, updated_at=old))
    session.commit()
    grace = timedelta(seconds=30)
    first, second = run_states.stale_queued(session, grace), run_states.stale_queued(session, grace)
    assert [r.id for r in first] == [r.id for r in second] == ["run"]  # both sweeps see it
    assert run_states.take_resend(session, "run", grace) is True
    assert run_states.take_resend(session, "run", grace) is False
    assert run_states.stale_queued(session, grace) == []
    session.close()
    engine.dispose()
