"""Operator revokes on the public API only (SKILL_RUNNER_REVOKE_WATCH=0: Celery's task_revoked
signal alone): a revoked queued run ends canceled when a worker reaches its message, never
run, and a running run revoked without terminate is left to finish. With the watch (the
default) both end at once: tests/integration/test_flower.py."""

from __future__ import annotations

import time

import pytest

from tests.integration.lifecycle_helpers import create_job, job, run_row

pytestmark = pytest.mark.integration

WATCH_OFF = {
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
    "SKILL_RUNNER_REVOKE_WATCH": "0",
}


def revoke(stack, request_id: str) -> None:
    """`celery control revoke <task id>` of the job's run (no terminate)."""
    task_id = run_row(stack, job(stack, request_id)["run_id"]).celery_task_id
    stack.app.extensions["queue"].revoke(task_id)


def test_without_the_watch_a_revoked_queued_run_ends_when_its_message_is_reached(bare_stack):
    worker = bare_stack.start_worker(concurrency=1, extra_env=WATCH_OFF)
    running = create_job(bare_stack, "slow-counter", sleep=3)
    bare_stack.wait(running, until=("running",))
    queued = create_job(bare_stack, "slow-counter", sleep=0)  # behind it: concurrency 1
    revoke(bare_stack, queued)
    revoke(bare_stack, running)
    time.sleep(1)  # the watch would have ended the queued run by now
    assert job(bare_stack, queued)["status"] == "queued"
    ended = bare_stack.wait(queued, timeout=20)
    assert ended["status"] == "canceled" and ended["error"]["code"] == "CANCELED_BY_USER", ended
    assert ended["started_at"] is None and ended["attempt"] == 0
    assert "Discarding revoked task" in worker.log_path.read_text()
    assert bare_stack.wait(running, timeout=20)["status"] == "succeeded"  # left alone
