"""API tier: the Flask test client on a migrated SQLite file; the queue is a fake."""

from __future__ import annotations

import dataclasses

import pytest

from api import create_app
from tests.databases import create_postgres_db
from tests.helpers import TOKENS, migrated_settings, write_tokens_file


class FakeQueue:
    """Records what the API would send to the broker."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.revoked: list[str] = []
        self.task_ids: list[str | None] = []
        self.time_limits: list[tuple[int, int] | None] = []
        self.labels: list[dict[str, str] | None] = []
        self.broker_state = "ok"

    def enqueue(
        self,
        run_id: str,
        queue: str,
        task_id: str | None = None,
        time_limits: tuple[int, int] | None = None,
        label: dict[str, str] | None = None,
    ) -> str:
        self.sent.append((run_id, queue))
        self.labels.append(label)
        self.task_ids.append(task_id)
        self.time_limits.append(time_limits)
        return task_id or f"task-{len(self.sent)}"

    def revoke(self, task_id: str) -> None:
        self.revoked.append(task_id)

    def send_upgrade(self, upgrade_id: str, time_limits: tuple[int, int]) -> str:
        self.upgrades = [*getattr(self, "upgrades", []), upgrade_id]
        return f"upgrade-{upgrade_id}"

    def wake_composite(self, run_id: str) -> None:
        self.woken = [*getattr(self, "woken", []), run_id]

    def depths(self, queues: list[str]) -> dict[str, int]:
        return {name: sum(1 for _, q in self.sent if q == name) for name in queues}

    def ping(self) -> str:
        return self.broker_state


@pytest.fixture
def settings(request, tmp_path, skills_root):
    """SQLite unless a test asks for Postgres too (`tests.helpers.BOTH_DATABASES`)."""
    env, drop = {}, None
    if getattr(request, "param", "sqlite") == "postgres":
        env["DATABASE_URL"], drop = create_postgres_db()
    yield migrated_settings(tmp_path, **env)
    if drop:  # forces out the app's pooled connections
        drop()


@pytest.fixture
def queue():
    return FakeQueue()


@pytest.fixture
def app(settings, queue):
    return create_app({"SETTINGS": settings, "QUEUE": queue, "TESTING": True})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def tokens_file(tmp_path):
    """The tokens file of `scoped` (tests.helpers.TOKENS); a test may rewrite it."""
    return write_tokens_file(tmp_path / "tokens.jsonl", TOKENS)


@pytest.fixture
def scoped_app(settings, queue, tokens_file):
    """The app with the named, scoped tokens of tests.helpers.TOKENS."""
    configured = dataclasses.replace(settings, tokens_file=tokens_file)
    return create_app({"SETTINGS": configured, "QUEUE": queue, "TESTING": True})


@pytest.fixture
def scoped(scoped_app):
    return scoped_app.test_client()
