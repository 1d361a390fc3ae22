"""A cancel's reason survives until the run ends (runner_core.store.cancels): a composite's
step canceled because its parent ended says so on its own run, a user's cancel of the step
itself stays CANCELED_BY_USER, and the first reason stays. On SQLite and Postgres."""

from __future__ import annotations

from sqlalchemy import update

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import RunStatus
from runner_core.store import cancels
from runner_core.store.models import Request, Run
from runner_core.store.recovery import reconcile_interrupted
from tests.helpers import BOTH_DATABASES

TIMEOUT = {"code": "TIMEOUT", "message": "the composite's timeout (3000 ms) passed"}


def _job(client, text):
    body = {"skill_id": "fenced-json", "input": {"text": text}}
    return client.post("/v1/jobs", json=body).json["request_id"]


def _family(client, app, name):
    """A running composite parent (no engine, no lease) and a queued step of it; their request
    ids and run ids."""
    parent_rid, child_rid = _job(client, f"{name}-parent"), _job(client, f"{name}-child")
    with app.extensions["db"]() as session:
        parent_id = session.get(Request, parent_rid).run_id
        child_id = session.get(Request, child_rid).run_id
        session.execute(
            update(Run)
            .where(Run.id == parent_id)
            .values(status=RunStatus.RUNNING, engine=None, heartbeat_at=None)
        )
        session.execute(
            update(Run).where(Run.id == child_id).values(parent_run_id=parent_id, step_name="a")
        )
        session.commit()
    return parent_rid, child_rid, parent_id, child_id


def _set_running(app, run_id):
    with app.extensions["db"]() as session:
        session.execute(update(Run).where(Run.id == run_id).values(status=RunStatus.RUNNING))
        session.commit()


@BOTH_DATABASES
def test_a_step_canceled_for_its_parents_timeout_ends_canceled_by_parent(client, app):
    parent_rid, child_rid, parent_id, child_id = _family(client, app, "timeout")
    with app.extensions["db"]() as session:
        parent = session.get(Run, parent_id)
        reason = cancels.parent_ended(parent, RunStatus.FAILED, TIMEOUT)
        assert cancels.request_cancel_descendants(session, parent_id, reason) == 1
        assert cancels.cancel_queued(session, child_id)  # as the claim's guard ends it
    status = client.get(f"/v1/jobs/{child_rid}").json
    assert status["status"] == "canceled"
    assert status["error"]["code"] == "CANCELED_BY_PARENT"
    assert parent_rid in status["error"]["message"] and "TIMEOUT" in status["error"]["message"]
    assert status["error"]["details"]["parent_request_id"] == parent_rid
    assert status["error"]["details"]["parent_error"] == TIMEOUT


@BOTH_DATABASES
def test_a_running_step_keeps_its_parents_reason_for_its_worker(client, app):
    _, _, parent_id, child_id = _family(client, app, "running")
    _set_running(app, child_id)
    with app.extensions["db"]() as session:
        reason = cancels.parent_ended(session.get(Run, parent_id), RunStatus.FAILED, TIMEOUT)
        cancels.request_cancel_descendants(session, parent_id, reason)
    with app.extensions["db"]() as session:  # what the worker reads once it killed the step
        assert cancels.cancel_error_of(session, child_id) == reason
        assert cancels.recorded_cancel_error(session.get(Run, child_id)) == reason


@BOTH_DATABASES
def test_a_users_cancel_of_the_step_itself_stays_canceled_by_user(client, app):
    _, child_rid, parent_id, child_id = _family(client, app, "user")
    _set_running(app, child_id)
    assert client.post(f"/v1/jobs/{child_rid}/cancel").json["accepted"] is True
    with app.extensions["db"]() as session:  # then its parent times out
        reason = cancels.parent_ended(session.get(Run, parent_id), RunStatus.FAILED, TIMEOUT)
        assert cancels.request_cancel_descendants(session, parent_id, reason) == 0
        assert cancels.cancel_error_of(session, child_id) == cancels.CANCELED


@BOTH_DATABASES
def test_a_users_cancel_of_a_queued_step_says_canceled_by_user(client, app):
    _, child_rid, _, _ = _family(client, app, "queued")
    assert client.post(f"/v1/jobs/{child_rid}/cancel").json["status"] == "canceled"
    error = client.get(f"/v1/jobs/{child_rid}").json["error"]
    assert (error["code"], error["message"]) == ("CANCELED_BY_USER", "canceled by user")


@BOTH_DATABASES
def test_canceling_a_composite_flags_its_steps_naming_it(client, app, queue):
    parent_rid, child_rid, parent_id, child_id = _family(client, app, "parent")
    _set_running(app, child_id)
    assert client.post(f"/v1/jobs/{parent_rid}/cancel").json["accepted"] is True
    assert queue.woken == [parent_id]
    with app.extensions["db"]() as session:
        error = cancels.cancel_error_of(session, child_id)
    assert error.code == ErrorCode.CANCELED_BY_USER
    assert error.message == (
        f"canceled with its parent composite (request {parent_rid}, skill fenced-json): "
        "canceled by user"
    )
    assert error.as_dict()["details"]["parent_request_id"] == parent_rid


@BOTH_DATABASES
def test_the_first_reason_stays_and_a_revoke_keeps_it(client, app):
    rid = _job(client, "revoked")
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
    _set_running(app, run_id)
    first = RunError(ErrorCode.CANCELED_BY_USER, "revoked by an operator")
    with app.extensions["db"]() as session:
        assert cancels.request_cancel(session, run_id, first)
        assert cancels.request_cancel(session, run_id, RunError(ErrorCode.TIMEOUT, "later"))
        assert cancels.request_cancel(session, run_id)  # a user's: no reason of its own
        assert cancels.cancel_error_of(session, run_id) == first


@BOTH_DATABASES
def test_a_flagged_step_whose_worker_died_ends_with_its_reason(client, app):
    parent_rid, child_rid, parent_id, child_id = _family(client, app, "lost")
    _set_running(app, child_id)
    with app.extensions["db"]() as session:
        reason = cancels.parent_ended(session.get(Run, parent_id), RunStatus.FAILED, TIMEOUT)
        cancels.request_cancel_descendants(session, parent_id, reason)
        assert reconcile_interrupted(session, child_id)  # the sweep, its lease expired
    status = client.get(f"/v1/jobs/{child_rid}").json
    assert status["status"] == "canceled"
    assert status["error"]["code"] == "CANCELED_BY_PARENT"
    assert status["error"]["message"].startswith(reason.message)
    assert "worker running it stopped" in status["error"]["message"]
    assert status["error"]["details"]["parent_request_id"] == parent_rid
