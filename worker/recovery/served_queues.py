"""Which queues the live workers consume, asked of the workers themselves through Celery's public
remote control (`inspect().active_queues()`). Each worker answers from its main process, so a
worker whose pool is busy with runs answers too (one started with `--pool solo` does not while
it runs a task). The broadcast waits its whole timeout for replies: the sweep asks only when a
run has been queued past SKILL_RUNNER_QUEUE_UNSERVED_SEC.
"""

from __future__ import annotations

import logging

from celery import Celery

log = logging.getLogger(__name__)
REPLY_TIMEOUT_SEC = 1.0


def served_queues(app: Celery, timeout: float = REPLY_TIMEOUT_SEC) -> set[str] | None:
    """The queues the workers that answered within `timeout` consume; None when none answered
    (nobody can tell which queues are served)."""
    try:
        replies = app.control.inspect(timeout=timeout).active_queues()
    except Exception as exc:  # the broker did not take the broadcast: ask at the next sweep
        log.warning("the workers' queues could not be asked: %s", exc)
        return None
    if not replies:
        return None
    return {
        str(queue["name"])
        for queues in replies.values()
        for queue in queues or []
        if isinstance(queue, dict) and queue.get("name")
    }
