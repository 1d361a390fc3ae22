"""One callback delivery task against a migrated SQLite database, the HTTP call replaced: what
it sends and when it sends nothing (worker.webhook_tasks); and one HTTP call to receivers on
loopback that answer badly (runner_core.webhooks.deliver)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from celery.exceptions import Retry
from sqlalchemy.orm import Session, sessionmaker

from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Interaction, Request, Run, WebhookAttempt, utcnow
from runner_core.webhooks import Attempt, deliver
from tests.helpers import migrated_settings
from worker import webhook_tasks

URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def made(tmp_path, monkeypatch) -> Iterator[sessionmaker]:
    engine = make_engine(migrated_settings(tmp_path).database_url)
    made = make_sessionmaker(engine)
    settings = SimpleNamespace(
        webhook_hosts=("127.0.0.1",),
        webhook_secret="s",
        webhook_retry_sec=3600.0,
        webhook_backoff_sec=2.0,
    )
    monkeypatch.setattr(webhook_tasks, "sessions", lambda: made)
    monkeypatch.setattr(webhook_tasks.context, "settings", lambda: settings)
    monkeypatch.setattr(webhook_tasks, "check_url", lambda url, hosts: None)
    yield made
    engine.dispose()


def add_job(session: Session, status: str, pending: int | None) -> None:
    session.add(
        Request(
            id="req",
            skill_id="s",
            callback_url=URL,
            callback_state="pending",
            payload={"callback_on_waiting": True},
        )
    )
    session.add(
        Run(id="run", request_id="req", skill_id="s", status=status, pending_interaction_id=pending)
    )
    session.commit()
    session.get(Request, "req").run_id = "run"
    session.commit()


def receiver(monkeypatch, code: int) -> list[dict]:
    sent: list[dict] = []

    def deliver(url, document, secret, event, allowed=None):
        sent.append(document)
        return Attempt(code, None if code < 300 else f"HTTP {code}")

    monkeypatch.setattr(webhook_tasks, "deliver", deliver)
    return sent


def test_a_waiting_callback_is_sent_while_its_question_is_pending(made, monkeypatch):
    sent = receiver(monkeypatch, 200)
    with made() as session:
        add_job(session, "waiting_user", 7)
    assert webhook_tasks.deliver_webhook("req", "waiting_user", 7) == "delivered"
    assert [(d["event"], d["status"], d["pending_interaction_id"]) for d in sent] == [
        ("waiting_user", "waiting_user", 7)
    ]


@pytest.mark.parametrize(
    ("status", "pending"),
    [("succeeded", None), ("queued", None), ("running", None), ("waiting_user", 8)],
)
def test_a_waiting_callback_whose_question_is_gone_is_not_sent(made, monkeypatch, status, pending):
    """A retry of the call for question 7 after the reply (or the run's end, or a later
    question) told the receiver `waiting_user` about a run that no longer waits on it."""
    sent = receiver(monkeypatch, 500)
    with made() as session:
        add_job(session, status, pending)
    assert webhook_tasks.deliver_webhook("req", "waiting_user", 7) == "stale"
    assert sent == []


def test_a_failing_waiting_callback_is_retried_while_the_question_waits(made, monkeypatch):
    receiver(monkeypatch, 500)
    with made() as session:
        add_job(session, "waiting_user", 7)
    with pytest.raises(Retry):
        webhook_tasks.deliver_webhook("req", "waiting_user", 7)


def test_a_later_question_has_its_own_retry_window(made, monkeypatch):
    """The window was counted from the run's first waiting call ever: a question asked more
    than SKILL_RUNNER_WEBHOOK_RETRY_SEC after the first one got one attempt and no retry."""
    receiver(monkeypatch, 500)
    long_ago = utcnow() - timedelta(hours=2)
    with made() as session:
        add_job(session, "waiting_user", None)
        for number in (1, 2, 3):  # question 1's calls, two hours ago
            session.add(
                WebhookAttempt(
                    request_id="req",
                    event="waiting_user",
                    run_status="waiting_user",
                    attempt=number,
                    status_code=500,
                    created_at=long_ago,
                )
            )
        session.add(Interaction(id=1, run_id="run", turn=1, kind="open_text", prompt="?"))
        session.add(Interaction(id=2, run_id="run", turn=2, kind="open_text", prompt="?"))
        session.commit()
        session.get(Interaction, 1).created_at = long_ago
        session.get(Run, "run").pending_interaction_id = 2
        session.commit()
    delays = []

    def retry(countdown):
        delays.append(countdown)
        return Retry()

    monkeypatch.setattr(webhook_tasks.deliver_webhook, "retry", retry)
    with pytest.raises(Retry):
        webhook_tasks.deliver_webhook("req", "waiting_user", 2)
    assert delays == [2.0]  # its first retry: the first backoff, not the fourth


def test_the_document_times_are_utc_with_a_z_as_the_api_writes_them():
    naive = datetime(2026, 1, 2, 3, 4, 5, 678000)  # as SQLite hands a stored UTC time back
    req = SimpleNamespace(id="r", skill_id="s", created_at=naive)
    run = SimpleNamespace(
        id="u",
        engine="codex",
        status="succeeded",
        error=None,
        warnings=None,
        pending_interaction_id=None,
        interaction_count=0,
        finished_at=naive,
    )
    document = webhook_tasks.status_document(req, run, "terminal")
    assert document["created_at"] == "2026-01-02T03:04:05.678000Z"
    assert document["finished_at"] == "2026-01-02T03:04:05.678000Z"


def test_a_waiting_callback_of_an_older_message_is_not_sent_after_the_run_ended(made, monkeypatch):
    sent = receiver(monkeypatch, 500)
    with made() as session:
        add_job(session, "succeeded", None)
    assert webhook_tasks.deliver_webhook("req", "waiting_user") == "stale"
    assert sent == []


def raw_receiver(answer: Callable[[socket.socket], None]) -> str:
    """A loopback server that reads a request's head and lets `answer` write to the socket."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                try:
                    answer(conn)
                except OSError:
                    pass  # the client gave up

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/hook"


def test_an_answer_that_is_not_http_is_a_failed_attempt_not_an_exception():
    """http.client's BadStatusLine is no OSError: it escaped the task, which recorded nothing
    and never retried, the callback left `scheduled` for good."""
    url = raw_receiver(lambda conn: conn.sendall(b"NOT-HTTP garbage\r\n\r\n"))
    outcome = deliver(url, {"event": "terminal"}, "s", "terminal")
    assert outcome.status_code is None and not outcome.delivered
    assert "BadStatusLine" in (outcome.error or "")


def test_a_receiver_trickling_its_answer_is_cut_at_the_deadline():
    """A byte every 0.2 s never reaches the 10 s read timeout: the call held its worker for as
    long as the receiver kept trickling."""

    def trickle(conn: socket.socket) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
            conn.sendall(bytes([byte]))
            time.sleep(0.2)

    url = raw_receiver(trickle)
    started = time.monotonic()
    outcome = deliver(url, {"event": "terminal"}, "s", "terminal", deadline=1.0)
    assert time.monotonic() - started < 5
    assert not outcome.delivered and "within 1 s" in (outcome.error or "")


def test_a_receiver_answering_at_once_is_delivered():
    url = raw_receiver(lambda conn: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    assert deliver(url, {"event": "terminal"}, "s", "terminal", deadline=5.0) == Attempt(204, None)


def test_a_name_that_resolves_elsewhere_when_called_reaches_nothing():
    """check_url resolves the name, and the call resolves it again: a name that answered a
    public address the first time and the loopback the second (DNS rebinding) was called."""
    server = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                got.append(conn.recv(65536))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    outcome = deliver(url, {"event": "terminal"}, "s", "terminal", 5.0, ("hooks.example.org",))
    assert not outcome.delivered and "127.0.0.1, a non-public address" in (outcome.error or "")
    thread.join(5)
    assert got == [b""]  # connected, then closed without a byte of the request
    listed = raw_receiver(lambda conn: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    assert deliver(listed, {}, "s", "terminal", 5.0, ("127.0.0.1",)) == Attempt(204, None)
