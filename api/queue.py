"""Enqueue runs by task name: the API never imports the worker package.

On a Redis broker a run's message is written with one LPUSH of a Celery protocol-2 message
built here (`task_message`): `send_task` spent ~0.6-1.3 ms of each POST (two Redis clients
built per call, the producer pool, header assembly), the direct write ~0.1 ms. The worker
consumes it like any Celery message (tests/integration/test_queue_messages.py compares the two
message by message). With task events on (Flower's `task-sent`), or another broker, the
message goes through `send_task`.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import socket
import uuid

from celery import Celery

from runner_core.finish_events import redis_url

log = logging.getLogger(__name__)

EXECUTE_RUN = "worker.tasks.execute_run"
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def task_message(name: str, args: list, queue: str, task_id: str, origin: str,
                 reply_to: str, time_limits: tuple[int, int] | None = None) -> dict:
    """The message `Celery.send_task(name, args, queue=queue, task_id=task_id,
    time_limit=hard, soft_time_limit=soft)` puts on a Redis list (protocol 2 inside kombu's
    virtual-transport envelope); `time_limits` is (hard, soft), None for the worker's own."""
    body = json.dumps([args, {}, EMBED])
    return {
        "body": base64.b64encode(body.encode("utf-8")).decode("ascii"),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": name, "id": task_id, "shadow": None, "eta": None,
            "expires": None, "group": None, "group_index": None, "retries": 0,
            "timelimit": list(time_limits or (None, None)), "root_id": task_id, "parent_id": None,
            "argsrepr": repr(args), "kwargsrepr": "{}", "origin": origin, "ignore_result": None,
            "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {},
        },
        "properties": {
            "correlation_id": task_id, "reply_to": reply_to, "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0,
            "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
        },
    }


class RedisTaskSender:
    """LPUSHes task messages on a Redis broker; one client per process (not across a fork)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.reply_to = str(uuid.uuid4())
        self._client = None
        self._pid: int | None = None
        self._origin = ""

    def send(self, name: str, args: list, queue: str, task_id: str,
             time_limits: tuple[int, int] | None = None) -> None:
        if self._pid != os.getpid():
            import redis
            from redis.backoff import ExponentialBackoff
            from redis.retry import Retry
            # a broken pooled connection (broker restart) is retried on a new one, twice
            self._client = redis.Redis.from_url(
                self.url, socket_timeout=3, socket_connect_timeout=3,
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.1), 2),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError])
            self._pid = os.getpid()
            self._origin = f"gen{self._pid}@{socket.gethostname()}"  # as Celery names it
        message = task_message(name, args, queue, task_id, self._origin, self.reply_to,
                               time_limits)
        self._client.lpush(queue, json.dumps(message))


class CeleryQueue:
    """Sends execute_run messages; failures are logged and left to the sweeper."""

    def __init__(self, broker_url: str, sent_events: bool = False) -> None:
        self.celery = Celery("skill_runner_api", broker=broker_url)
        self.celery.conf.update(broker_connection_retry_on_startup=True,
                                task_send_sent_event=sent_events,
                                broker_connection_timeout=3, task_publish_retry=True,
                                task_publish_retry_policy={"max_retries": 2, "interval_start": 0.1,
                                                           "interval_step": 0.2})
        url = None if sent_events else redis_url(broker_url)
        self.direct = RedisTaskSender(url) if url else None

    def enqueue(self, run_id: str, queue: str, task_id: str | None = None,
                time_limits: tuple[int, int] | None = None) -> str | None:
        """Send execute_run(run_id) with Celery's (hard, soft) `time_limits` for it; returns
        the task id, or None when the broker is down."""
        task_id = task_id or str(uuid.uuid4())
        try:
            if self.direct is not None:
                self.direct.send(EXECUTE_RUN, [run_id], queue, task_id, time_limits)
                return task_id
            hard, soft = time_limits or (None, None)
            return self.celery.send_task(EXECUTE_RUN, args=[run_id], queue=queue,
                                         task_id=task_id, time_limit=hard,
                                         soft_time_limit=soft).id
        except Exception as exc:  # the row is committed; the sweeper re-enqueues it
            log.warning("enqueue of run %s failed (%s); the sweeper will retry", run_id, exc)
            return None

    def ping(self) -> str:
        """"ok" when the broker answers within a second, else "error: <what>"."""
        try:
            if self.direct is not None:
                import redis
                client = redis.Redis.from_url(self.direct.url, socket_timeout=1,
                                              socket_connect_timeout=1)
                try:
                    client.ping()
                finally:
                    client.close()
            else:
                with self.celery.connection_for_write() as conn:
                    conn.ensure_connection(max_retries=1, timeout=1)
            return "ok"
        except Exception as exc:
            return f"error: {type(exc).__name__}"

    def revoke(self, task_id: str) -> None:
        try:
            self.celery.control.revoke(task_id)
        except Exception as exc:
            log.warning("revoke of %s failed: %s", task_id, exc)
