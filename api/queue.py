"""Enqueue runs by task name with Celery's `send_task` (the API never imports the worker).

Each process keeps one Celery client app, whose producer pool reuses broker connections across
requests; a forked child (gunicorn's workers) builds its own, since a connection must not be
shared across a fork. A send that fails is logged and left to the sweeper.
"""

from __future__ import annotations

import logging
import uuid

from celery import Celery

from runner_core.per_process import PerProcess
from runner_core.queues import (
    ADVANCE_COMPOSITE,
    ADVANCE_QUEUE,
    EXECUTE_RUN,
    MAINTENANCE_QUEUE,
    UPGRADE_ENGINE,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SEC = 3
# a broken pooled connection (broker restart) is retried on a new one, twice, then given up
PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.2}


def client_app(broker_url: str, sent_events: bool) -> Celery:
    """A Celery app that only sends: no tasks, no results; `task-sent` events when asked."""
    app = Celery("skill_runner_api", broker=broker_url, set_as_current=False)
    app.conf.update(
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=CONNECT_TIMEOUT_SEC,
        # this app never blocks on a read: a broker that accepts and then hangs
        # must fail the send, not the request
        broker_transport_options={
            "socket_timeout": CONNECT_TIMEOUT_SEC,
            "socket_connect_timeout": CONNECT_TIMEOUT_SEC,
        },
        task_send_sent_event=sent_events,
        task_ignore_result=True,
        task_publish_retry=True,
        task_publish_retry_policy=PUBLISH_RETRY_POLICY,
    )
    return app


class CeleryQueue:
    """Sends execute_run messages; failures are logged and left to the sweeper."""

    def __init__(self, broker_url: str, sent_events: bool = False) -> None:
        self.broker_url, self.sent_events = broker_url, sent_events
        self._app = PerProcess(lambda: client_app(self.broker_url, self.sent_events))

    @property
    def celery(self) -> Celery:
        """This process's client app, built on first use after start or fork."""
        return self._app.get()

    def enqueue(
        self,
        run_id: str,
        queue: str,
        task_id: str | None = None,
        time_limits: tuple[int, int] | None = None,
        label: dict[str, str] | None = None,
    ) -> str | None:
        """Send execute_run(run_id) with Celery's (hard, soft) `time_limits` for it and the
        `label` Flower shows (runner_core.queues.task_label); returns the task id, or None when
        the broker is down."""
        hard, soft = time_limits or (None, None)
        app = self.celery
        try:
            with app.producer_or_acquire() as producer:
                return app.send_task(
                    EXECUTE_RUN,
                    args=[run_id],
                    queue=queue,
                    task_id=task_id or str(uuid.uuid4()),
                    time_limit=hard,
                    soft_time_limit=soft,
                    producer=producer,
                    **(label or {}),
                ).id
        except Exception as exc:  # the row is committed; the sweeper re-enqueues it
            log.warning(
                "enqueue of run %s failed (%s); the sweeper will retry",
                run_id,
                exc,
                extra={"run_id": run_id},
            )
            return None

    def send_upgrade(self, upgrade_id: str, time_limits: tuple[int, int]) -> str | None:
        """Send upgrade_engine(upgrade_id) to the maintenance queue with Celery's (hard, soft)
        `time_limits`; the task id, or None when the broker took no message."""
        hard, soft = time_limits
        try:
            return self.celery.send_task(
                UPGRADE_ENGINE,
                args=[upgrade_id],
                queue=MAINTENANCE_QUEUE,
                time_limit=hard,
                soft_time_limit=soft,
            ).id
        except Exception as exc:  # the caller fails the upgrade: nothing re-sends it
            log.warning("send of engine upgrade %s failed: %s", upgrade_id, exc)
            return None

    def ping(self) -> str:
        """ "ok" when the broker answers within a second, else "error: <what>"."""
        try:
            with self.celery.connection_for_write(
                connect_timeout=1, transport_options={"socket_timeout": 1}
            ) as conn:
                conn.ensure_connection(max_retries=1, interval_start=0, timeout=1)
            return "ok"
        except Exception as exc:
            return f"error: {type(exc).__name__}"

    def wake_composite(self, run_id: str) -> None:
        """Ask the workers to act on a composite parent's new state (its cancel)."""
        try:
            self.celery.send_task(ADVANCE_COMPOSITE, args=[run_id], queue=ADVANCE_QUEUE)
        except Exception as exc:
            log.warning("wake of composite %s failed: %s", run_id, exc)

    def revoke(self, task_id: str) -> None:
        try:
            self.celery.control.revoke(task_id)
        except Exception as exc:
            log.warning("revoke of %s failed: %s", task_id, exc)

    def depths(self, queues: list[str]) -> dict[str, int]:
        """Messages waiting in each of `queues`; empty when the broker does not answer within a
        second. Redis keeps a queue as a list that it drops when the last message is taken, so
        a queue it does not hold has none waiting: 0, not left out (a gauge that vanished
        whenever the workers kept up read as "no data" rather than an empty queue)."""
        from kombu.exceptions import ChannelError

        found: dict[str, int] = {}
        try:
            with self.celery.connection_for_write(
                connect_timeout=1, transport_options={"socket_timeout": 1}
            ) as conn:
                channel = conn.default_channel
                for name in queues:
                    try:
                        found[name] = channel.queue_declare(name, passive=True).message_count
                    except ChannelError:  # not held by the broker: no message waits there
                        found[name] = 0
        except Exception as exc:
            log.debug("queue depths not read: %s", exc)
        return found
