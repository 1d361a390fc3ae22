"""Enqueue runs by task name: the API never imports the worker package."""
from __future__ import annotations

import logging

from celery import Celery

log = logging.getLogger(__name__)

EXECUTE_RUN = "worker.tasks.execute_run"


class CeleryQueue:
    """Sends execute_run messages; failures are logged and left to the sweeper."""

    def __init__(self, broker_url: str, sent_events: bool = False) -> None:
        self.celery = Celery("skill_runner_api", broker=broker_url)
        self.celery.conf.update(broker_connection_retry_on_startup=True,
                                task_send_sent_event=sent_events,
                                broker_connection_timeout=3, task_publish_retry=True,
                                task_publish_retry_policy={"max_retries": 2, "interval_start": 0.1,
                                                           "interval_step": 0.2})

    def enqueue(self, run_id: str, queue: str, task_id: str | None = None) -> str | None:
        """Send execute_run(run_id); returns the task id, or None when the broker is down."""
        try:
            result = self.celery.send_task(EXECUTE_RUN, args=[run_id], queue=queue, task_id=task_id)
            return result.id
        except Exception as exc:  # the row is committed; the sweeper re-enqueues it
            log.warning("enqueue of run %s failed (%s); the sweeper will retry", run_id, exc)
            return None

    def revoke(self, task_id: str) -> None:
        try:
            self.celery.control.revoke(task_id)
        except Exception as exc:
            log.warning("revoke of %s failed: %s", task_id, exc)
