"""The API writes run messages straight to the Redis broker: they must be the messages Celery
itself would send (the worker consumes them in every other integration test)."""
from __future__ import annotations

import json

import pytest
import redis
from celery import Celery

from api.queue import EXECUTE_RUN, CeleryQueue, task_message
from tests.integration.services import require_redis

pytestmark = pytest.mark.integration

VOLATILE = {("properties", "delivery_tag"), ("properties", "reply_to"), ("headers", "origin")}


def pop_message(url: str, queue: str) -> dict:
    client = redis.Redis.from_url(url)
    raw = client.lpop(queue)
    assert raw is not None, f"no message on {queue}"
    return json.loads(raw)


def without_volatile(message: dict) -> dict:
    return {part: ({k: v for k, v in value.items() if (part, k) not in VOLATILE}
                   if isinstance(value, dict) else value) for part, value in message.items()}


def test_direct_message_equals_the_one_celery_sends():
    url = require_redis(12)
    celery = Celery("reference", broker=url)
    celery.conf.update(task_send_sent_event=False, broker_connection_retry_on_startup=True)
    celery.send_task(EXECUTE_RUN, args=["run-1"], queue="runs.codex", task_id="task-1")
    reference = pop_message(url, "runs.codex")
    ours = task_message(EXECUTE_RUN, ["run-1"], "runs.codex", "task-1", "origin", "reply")
    assert without_volatile(ours) == without_volatile(reference)
    assert json.loads(__import__("base64").b64decode(ours["body"])) == [["run-1"], {}, {
        "callbacks": None, "errbacks": None, "chain": None, "chord": None}]
    redis.Redis.from_url(url).flushdb()


def test_a_message_with_time_limits_equals_the_one_celery_sends():
    url = require_redis(12)
    celery = Celery("reference", broker=url)
    celery.conf.update(task_send_sent_event=False, broker_connection_retry_on_startup=True)
    celery.send_task(EXECUTE_RUN, args=["run-1"], queue="runs.script", task_id="task-1",
                     time_limit=720, soft_time_limit=660)
    reference = pop_message(url, "runs.script")
    assert reference["headers"]["timelimit"] == [720, 660]
    ours = task_message(EXECUTE_RUN, ["run-1"], "runs.script", "task-1", "origin", "reply",
                        (720, 660))
    assert without_volatile(ours) == without_volatile(reference)
    CeleryQueue(url).enqueue("run-2", "runs.script", task_id="task-2", time_limits=(150, 90))
    assert pop_message(url, "runs.script")["headers"]["timelimit"] == [150, 90]
    redis.Redis.from_url(url).flushdb()


def test_enqueue_writes_one_message_and_nothing_else():
    url = require_redis(12)
    queue = CeleryQueue(url)
    assert queue.direct is not None
    assert queue.enqueue("run-2", "runs.script", task_id="task-2") == "task-2"
    client = redis.Redis.from_url(url)
    assert client.keys("*") == [b"runs.script"] and client.llen("runs.script") == 1
    message = pop_message(url, "runs.script")
    assert message["headers"]["task"] == EXECUTE_RUN and message["headers"]["id"] == "task-2"
    assert message["properties"]["delivery_info"]["routing_key"] == "runs.script"
    client.flushdb()


def test_task_events_or_other_brokers_use_send_task():
    url = require_redis(12)
    assert CeleryQueue(url, sent_events=True).direct is None  # Flower's task-sent events
    assert CeleryQueue("amqp://guest@127.0.0.1:5672//").direct is None


def test_a_broker_that_is_down_is_reported_not_raised():
    queue = CeleryQueue("redis://127.0.0.1:1/0")  # nothing listens on port 1
    assert queue.enqueue("run-3", "runs.script", task_id="task-3") is None


def test_the_sweep_reads_which_task_messages_the_broker_still_holds(monkeypatch):
    from worker import broker_view
    from worker.broker_view import read_broker
    url = require_redis(12)
    queue = CeleryQueue(url)
    queue.enqueue("run-a", "runs.script", task_id="waiting-a")
    queue.enqueue("run-b", "runs.codex", task_id="waiting-b")
    client = redis.Redis.from_url(url)
    # what kombu keeps for a message a worker has reserved: [message, exchange, routing key]
    reserved = task_message(EXECUTE_RUN, ["run-c"], "runs.script", "reserved-c", "o", "r")
    client.hset("unacked", "tag-1", json.dumps([reserved, "", "runs.script"]))
    client.rpush("runs.script", b"not a kombu message")  # ignored, not an error
    view = read_broker(url, ["runs.script", "runs.codex"])
    assert view.holds("waiting-a") and view.holds("waiting-b") and view.holds("reserved-c")
    assert view.holds("lost-d") is False and view.holds(None) is False
    monkeypatch.setattr(broker_view, "READ_CAP", 2)  # a backlog too long to read: hold all
    assert read_broker(url, ["runs.script", "runs.codex"]).holds("lost-d") is True
    assert read_broker("amqp://guest@127.0.0.1:5672//", ["runs.script"]).holds("x") is None
    assert read_broker("redis://127.0.0.1:1/0", ["runs.script"]).holds("x") is None  # away
    client.flushdb()
