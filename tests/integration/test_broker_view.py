"""Contract of worker.recovery.broker_view with the pinned celery and kombu: messages sent by the API's
queue client are seen while they wait (at any priority), and no longer once a real worker took
them (kombu's ack emulation is off: the worker holds a taken message alone, worker/app.py). A
Celery or kombu upgrade that changes kombu's Redis layout fails here."""

from __future__ import annotations

import pytest
import redis

from api.queue import EXECUTE_RUN, CeleryQueue
from runner_core.queues import RUN_QUEUES
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import create_job, run_row
from tests.integration.services import broker_settings, message_count
from worker.recovery import broker_view
from worker.recovery.broker_view import read_broker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backend():
    return "sqlite"


@pytest.fixture
def stack_settings(tmp_path):
    with broker_settings(tmp_path) as settings:
        yield settings


def test_waiting_messages_are_held_at_every_priority(monkeypatch, redis_url):
    url = redis_url
    queue = CeleryQueue(url)
    assert queue.enqueue("run-a", "runs.script", task_id="waiting-a")
    assert queue.enqueue("run-b", "runs.codex", task_id="waiting-b")
    for priority in (1, 5, 9):  # each lands in another of kombu's priority lists
        queue.celery.send_task(
            EXECUTE_RUN,
            args=["run-p"],
            queue="runs.script",
            task_id=f"priority-{priority}",
            priority=priority,
        )
    redis.Redis.from_url(url).rpush("runs.script", b"not a kombu message")  # ignored
    view = read_broker(url, RUN_QUEUES)
    for task_id in ("waiting-a", "waiting-b", "priority-1", "priority-5", "priority-9"):
        assert view.holds(task_id) is True, task_id
    assert view.holds("lost-d") is False and view.holds(None) is False
    # switched off (SKILL_RUNNER_BROKER_VIEW=0): nothing is read, nothing can be told
    assert read_broker(url, RUN_QUEUES, enabled=False).holds("waiting-a") is None
    monkeypatch.setattr(broker_view, "READ_CAP", 2)  # a backlog too long to read: hold all
    assert read_broker(url, RUN_QUEUES).holds("lost-d") is True
    redis.Redis.from_url(url).flushdb()


def test_brokers_that_cannot_be_read_tell_nothing():
    assert read_broker("amqp://guest@127.0.0.1:5672//", ["runs.script"]).holds("x") is None
    assert read_broker("redis://127.0.0.1:1/0", ["runs.script"]).holds("x") is None  # away


def test_a_message_a_worker_took_leaves_the_broker(bare_stack):
    """A running task's message is the worker's alone (no copy in kombu's unacked hash): the
    broker no longer holds it, and the sweep does not look for it (its run is running). With
    acks_late, one process and prefetch 1, the next one waits in the queue meanwhile."""
    url = bare_stack.settings.broker_url
    first = create_job(bare_stack, "slow-counter", sleep=3)
    second = create_job(bare_stack, "slow-counter", sleep=0)
    task_ids = [
        run_row(bare_stack, bare_stack.client.get(f"/v1/jobs/{rid}").json["run_id"]).celery_task_id
        for rid in (first, second)
    ]
    bare_stack.start_worker(concurrency=1)
    bare_stack.wait(first, timeout=15, until=("running",))
    wait_for(lambda: message_count(url, "runs.script") == 1, 5)  # only the second waits
    view = read_broker(url, RUN_QUEUES)
    assert view.holds(task_ids[0]) is False  # taken by the worker, out of the queue
    assert view.holds(task_ids[1]) is True  # waiting
    assert redis.Redis.from_url(url).hlen(broker_view.UNACKED) == 0  # no copy of it kept
    assert bare_stack.wait(first, timeout=15)["status"] == "succeeded"
    assert bare_stack.wait(second, timeout=15)["status"] == "succeeded"
    wait_for(lambda: read_broker(url, RUN_QUEUES).task_ids == set(), 5)  # both acknowledged
