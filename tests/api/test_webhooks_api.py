"""Where a callback may go: refusals at creation (no request-forgery into the service's own
network), the URL and state kept on the request, and the attempts route."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import create_engine, text

from api import create_app
from runner_core.store import callbacks
from tests.helpers import BOTH_DATABASES, copy_skills, migrated_settings


def client_with(tmp_path, queue, hosts: str):
    copy_skills(tmp_path / "skills")
    settings = migrated_settings(tmp_path, SKILL_RUNNER_WEBHOOK_HOSTS=hosts)
    return create_app({"SETTINGS": settings, "QUEUE": queue}).test_client()


def create(client, url):
    body = {"skill_id": "fenced-json", "input": {"text": "x"}, "callback_url": url}
    return client.post("/v1/jobs", json=body)


@pytest.mark.parametrize(
    ("hosts", "url", "why"),
    [
        ("", "http://127.0.0.1:9/hook", "webhooks are off"),
        ("hooks.example.org", "http://127.0.0.1:9/hook", "not in SKILL_RUNNER_WEBHOOK_HOSTS"),
        ("localhost", "http://localhost:9/hook", "non-public address"),  # listed by name only
        ("10.0.0.1,127.0.0.1", "http://10.0.0.2/hook", "not in SKILL_RUNNER_WEBHOOK_HOSTS"),
        ("127.0.0.1", "ftp://127.0.0.1/hook", "http:// or https://"),
        ("169.254.169.254", "http://[::1]/hook", "not in SKILL_RUNNER_WEBHOOK_HOSTS"),
        ("127.0.0.1", "http://127.0.0.1:99999/hook", "does not parse"),
        ("127.0.0.1", "http://127.0.0.1:abc/hook", "does not parse"),
        ("127.0.0.1", "http://127.0.0.1:0/hook", "does not parse"),
        ("127.0.0.1", "http://[::1/hook", "does not parse"),
        ("127.0.0.1", "http://127.0.0.1:9/hook\u0000", "control character"),
        ("127.0.0.1", "http://user:pw@127.0.0.1:9/hook", "credentials"),
    ],
)
def test_a_callback_the_service_will_not_call_is_refused(tmp_path, queue, hosts, url, why):
    client = client_with(tmp_path, queue, hosts)
    refused = create(client, url)
    assert refused.status_code == 400, refused.json
    assert refused.json["error"]["code"] == "CALLBACK_URL_REFUSED"
    assert why in refused.json["error"]["message"]
    assert queue.sent == []  # nothing was created


def test_a_listed_address_is_accepted_and_its_state_is_readable(tmp_path, queue):
    client = client_with(tmp_path, queue, "127.0.0.1")
    created = create(client, "http://127.0.0.1:9/hook")
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    log = client.get(f"/v1/jobs/{rid}/webhooks").json
    assert log == {
        "request_id": rid,
        "callback_url": "http://127.0.0.1:9/hook",
        "state": "pending",
        "attempts": [],
    }
    plain = client.post("/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "y"}})
    log = client.get(f"/v1/jobs/{plain.json['request_id']}/webhooks").json
    assert log["callback_url"] is None and log["state"] is None


@BOTH_DATABASES
def test_a_run_that_ends_schedules_its_own_pending_callbacks_once(settings, queue):
    """The worker's step at a run's end (worker.webhook_tasks.callbacks_for_end): only that
    run's pending callbacks, only once it has ended, each once."""
    hooked = dataclasses.replace(settings, webhook_hosts=("127.0.0.1",))
    client = create_app({"SETTINGS": hooked, "QUEUE": queue}).test_client()
    ids = []
    for text_ in ("a", "b"):
        body = {"skill_id": "fenced-json", "input": {"text": text_}}
        created = client.post("/v1/jobs", json={**body, "callback_url": "http://127.0.0.1:9/h"})
        assert created.status_code == 200, created.json
        ids.append((created.json["request_id"], queue.sent[-1][0]))
    (request_a, run_a), (request_b, _run_b) = ids
    engine = create_engine(settings.database_url)
    try:
        with engine.connect() as conn:
            assert callbacks.schedule_run(conn, run_a) == []  # still queued
            conn.execute(text("UPDATE runs SET status = 'succeeded' WHERE id = :id"), {"id": run_a})
            conn.commit()
            assert callbacks.schedule_run(conn, run_a) == [request_a]
            assert callbacks.schedule_run(conn, run_a) == []  # the sweep will not send it again
    finally:
        engine.dispose()
    states = {rid: client.get(f"/v1/jobs/{rid}/webhooks").json["state"] for rid, _ in ids}
    assert states == {request_a: "scheduled", request_b: "pending"}
