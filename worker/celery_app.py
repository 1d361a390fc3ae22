"""The `celery -A worker.celery_app` target: the app built for this process's settings, with
the worker step that turns operators' revokes into cancels (worker.hooks.revokes), and the pool
of threads the one-process `serve` runs its worker on (worker.thread_pool)."""

from __future__ import annotations

from worker import context
from worker.hooks.revokes import RevokeWatch
from worker.thread_pool import RunThreadPool

app = context.app()
app.steps["worker"].add(RevokeWatch)
__all__ = ["app", "RunThreadPool"]
