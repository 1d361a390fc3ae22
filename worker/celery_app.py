"""The `celery -A worker.celery_app` target: the app built for this process's settings, with
the worker step that turns operators' revokes into cancels (worker.hooks.revokes)."""

from __future__ import annotations

from worker import context
from worker.hooks.revokes import RevokeWatch

app = context.app()
app.steps["worker"].add(RevokeWatch)
