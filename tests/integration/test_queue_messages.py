"""The API's queue client (api.queue) against real Redis and a real worker: what it sends is run
under its task id and time limits, task-sent events go out when asked for, a broker that is
down is reported, and a forked process sends on connections of its own."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
import redis
from celery import Celery

from api.queue import EXECUTE_RUN, CeleryQueue
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import create_job, run_row
from tests.integration.services import broker_settings, message_count

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backend():
    """One SQL backend is enough here: the messages are what is tested."""
    return "sqlite"


@pytest.fixture
def stack_settings(tmp_path):
    with broker_settings(tmp_path) as settings:
        yield settings


def test_a_run_sent_by_the_api_runs_on_a_worker_under_its_celery_task_id(bare_stack):
    rid = create_job(bare_stack, "slow-counter", sleep=0)
    run_id = bare_stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
    task_id = run_row(bare_stack, run_id).celery_task_id
    assert task_id and message_count(bare_stack.settings.broker_url, "runs.script") == 1
    worker = bare_stack.start_worker()
    assert bare_stack.wait(rid)["status"] == "succeeded"
    done = f"Task {EXECUTE_RUN}[{task_id}] succeeded"  # logged once the task has returned
    wait_for(lambda: done in worker.log_path.read_text(), 15, 0.1, "the worker's success line")
    assert f"Task {EXECUTE_RUN}[{task_id}] received" in worker.log_path.read_text()


def test_the_time_limits_sent_with_a_run_are_applied_by_the_worker(bare_stack):
    rid = create_job(bare_stack, "slow-counter", sleep=30)  # its own limit is 30 s
    run_id = bare_stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
    task_id = run_row(bare_stack, run_id).celery_task_id
    redis.Redis.from_url(bare_stack.settings.broker_url).flushdb()  # drop the API's message
    queue = bare_stack.app.extensions["queue"]
    assert queue.enqueue(run_id, "runs.script", task_id=task_id, time_limits=(10, 1)) == task_id
    worker = bare_stack.start_worker()
    status = bare_stack.wait(rid, timeout=15)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    assert "soft time limit" in status["error"]["message"]
    log = worker.log_path.read_text()
    assert f"Soft time limit (1s) exceeded for {EXECUTE_RUN}[{task_id}]" in log


class SentEvents:
    """Captures task-sent events with Celery's event receiver, in a thread."""

    def __init__(self, url: str) -> None:
        self.app = Celery("events", broker=url, set_as_current=False)
        self.task_ids: list[str] = []
        self.events: list[dict] = []
        self.conn = self.app.connection_for_read()
        self.receiver = self.app.events.Receiver(self.conn, handlers={"task-sent": self.record})
        self.thread = threading.Thread(
            target=self.receiver.capture, kwargs={"wakeup": False}, daemon=True
        )
        self.thread.start()

    def record(self, event: dict) -> None:
        self.events.append(event)
        self.task_ids.append(event["uuid"])

    def wait_for(self, send, timeout: float = 10.0) -> str:
        """Send (again, while the receiver may still be subscribing) until one is heard."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            task_id = send()
            heard = time.monotonic() + 0.5
            while time.monotonic() < heard:
                if task_id in self.task_ids:
                    return task_id
                time.sleep(0.02)
        raise AssertionError("no task-sent event heard")

    def stop(self) -> None:
        self.receiver.should_stop = True
        self.thread.join(5)
        self.conn.release()


def test_task_sent_events_are_emitted_only_when_events_are_on(redis_url):
    url = redis_url
    with_events, without = CeleryQueue(url, sent_events=True), CeleryQueue(url)
    events = SentEvents(url)
    try:

        def send(queue: CeleryQueue) -> str:
            return queue.enqueue(f"run-{uuid.uuid4()}", "runs.script", time_limits=(150, 90))

        first = events.wait_for(lambda: send(with_events))
        silent = send(without)
        last = events.wait_for(lambda: send(with_events))  # heard after `silent` was sent
        assert first and last and silent not in events.task_ids
        sent = next(e for e in events.events if e["uuid"] == first)
        assert sent["name"] == EXECUTE_RUN and sent["queue"] == "runs.script"
    finally:
        events.stop()
        redis.Redis.from_url(url).flushdb()


def test_a_broker_that_is_down_is_reported_not_raised():
    queue = CeleryQueue("redis://127.0.0.1:1/0")  # nothing listens on port 1
    started = time.monotonic()
    assert queue.enqueue("run-3", "runs.script", task_id="task-3") is None
    assert queue.ping().startswith("error: ")
    assert time.monotonic() - started < 5


def test_a_forked_process_sends_on_a_client_of_its_own(redis_url):
    url = redis_url
    queue = CeleryQueue(url)
    assert queue.enqueue("run-parent", "runs.script")
    parent_app = queue.celery
    pid = os.fork()
    if pid == 0:  # the child: as a gunicorn worker forked from its master
        ok = queue.celery is not parent_app and queue.enqueue("run-child", "runs.script")
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert queue.celery is parent_app and queue.enqueue("run-parent-2", "runs.script")
    assert message_count(url, "runs.script") == 3
    redis.Redis.from_url(url).flushdb()
