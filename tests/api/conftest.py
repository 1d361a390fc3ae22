"""API tier: the Flask test client on a migrated SQLite file; the queue is a fake."""
from __future__ import annotations

import pytest

from api import create_app
from runner_core.store.migrate import upgrade
from tests.conftest import make_settings


class FakeQueue:
    """Records what the API would send to the broker."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.revoked: list[str] = []
        self.task_ids: list[str | None] = []

    def enqueue(self, run_id: str, queue: str, task_id: str | None = None) -> str:
        self.sent.append((run_id, queue))
        self.task_ids.append(task_id)
        return task_id or f"task-{len(self.sent)}"

    def revoke(self, task_id: str) -> None:
        self.revoked.append(task_id)


@pytest.fixture
def settings(tmp_path, skills_root):
    settings = make_settings(tmp_path)
    settings.data_dir.mkdir(parents=True)
    upgrade(settings.database_url)
    return settings


@pytest.fixture
def queue():
    return FakeQueue()


@pytest.fixture
def app(settings, queue):
    return create_app({"SETTINGS": settings, "QUEUE": queue, "TESTING": True})


@pytest.fixture
def client(app):
    return app.test_client()
