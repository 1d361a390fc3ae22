"""Long polls: `wait_sec` on the job status and result, woken by the worker's finish notice
(through Redis). On SQLite: what the long poll reads is one row by its key."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest

from runner_core.finish_events import FinishPublisher, FinishWatcher
from tests.integration.lifecycle_helpers import create_job
from tests.integration.services import SQLITE_ONLY


@pytest.fixture
def stack(module_stack):
    """One worker for the module: no test stops or reconfigures it, and each sends a body of
    its own (the result cache would answer a repeated one)."""
    return module_stack


def test_a_published_finish_wakes_the_waiter_at_once(redis_url):
    url = redis_url
    watcher, publisher = FinishWatcher(url), FinishPublisher(url)
    with watcher.waiting("run-a") as ended_a, watcher.waiting("run-b") as ended_b:
        assert watcher.subscribed.is_set()
        threading.Timer(0.1, publisher.publish, ["run-a"]).start()
        started = time.monotonic()
        assert ended_a.wait(2.0)
        assert time.monotonic() - started < 0.5
        assert not ended_b.is_set()  # only the run that ended


@SQLITE_ONLY
def test_status_wait_returns_as_the_run_ends(stack):
    rid = create_job(stack, "slow-counter", sleep=1.5)
    started = time.monotonic()
    status = stack.client.get(f"/v1/jobs/{rid}?wait_sec=30").json
    answered = datetime.now().astimezone()
    assert status["status"] == "succeeded", status
    assert 1.0 < time.monotonic() - started < 15
    finished = datetime.fromisoformat(status["finished_at"].replace("Z", "+00:00"))
    assert (answered - finished).total_seconds() < 0.5  # the notice, not the 1 s re-read


@SQLITE_ONLY
def test_result_wait_gives_up_after_wait_sec_with_409(stack):
    rid = create_job(stack, "slow-counter", sleep=20)
    started = time.monotonic()
    resp = stack.client.get(f"/v1/jobs/{rid}/result?wait_sec=0.6")
    assert resp.status_code == 409 and resp.json["error"]["code"] == "RUN_NOT_FINISHED"
    assert 0.55 < time.monotonic() - started < 5
    stack.client.post(f"/v1/jobs/{rid}/cancel")


@SQLITE_ONLY
def test_result_wait_answers_with_the_result(stack):
    rid = create_job(stack, "slow-counter", sleep=0.5)
    resp = stack.client.get(f"/v1/jobs/{rid}/result?wait_sec=30")
    assert resp.status_code == 200 and resp.json["result"]["status"] == "succeeded"


@SQLITE_ONLY
def test_a_job_waiting_for_its_upload_is_answered_at_once(stack):
    rid = stack.client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    started = time.monotonic()
    status = stack.client.get(f"/v1/jobs/{rid}?wait_sec=30").json
    assert status["status"] == "queued" and status["waiting_for_upload"] is True
    assert time.monotonic() - started < 2
