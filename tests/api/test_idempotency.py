"""The Idempotency-Key header of POST /v1/jobs and POST /v1/temp-skill-runs (SQLite and
Postgres): one job per key and body, 409 for another body, nothing kept of a refused create."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from api import create_app
from runner_core.store.models import IdempotencyKey, Request, Run, utcnow
from tests.helpers import BOTH_DATABASES
from tests.packages import echo_skill, package_upload

PRIME = {"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
FENCED = {"skill_id": "fenced-json", "input": {"text": "x"}}  # queued at once (no upload)


def post_job(client, body, key="k-1"):
    return client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key} if key else {})


def requests_count(app) -> int:
    with app.extensions["db"]() as session:
        return session.scalar(select(func.count()).select_from(Request))


@BOTH_DATABASES
def test_the_same_key_and_body_answer_the_first_job(client, app, queue):
    first = post_job(client, PRIME)
    again = post_job(client, PRIME)
    assert first.status_code == again.status_code == 200
    assert again.json == first.json
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert requests_count(app) == 1


@BOTH_DATABASES
def test_the_same_key_with_another_body_is_409(client, app):
    first = post_job(client, PRIME)
    other = post_job(client, {**PRIME, "parameter": {"divisor": 3}})
    assert other.status_code == 409
    assert other.json["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert other.json["error"]["details"]["request_id"] == first.json["request_id"]
    assert requests_count(app) == 1


def test_keys_are_per_key_and_optional(client, app):
    a, b = post_job(client, PRIME, "a"), post_job(client, PRIME, "b")
    plain = [post_job(client, PRIME, None) for _ in range(2)]
    ids = {r.json["request_id"] for r in (a, b, *plain)}
    assert len(ids) == 4


def test_a_refused_create_keeps_no_key(client, app):
    missing = post_job(client, {"skill_id": "no-such-skill"})
    assert missing.status_code == 404
    ok = post_job(client, {"skill_id": "no-such-skill"} | PRIME)
    assert ok.status_code == 200  # the key was not spent on the refusal


@BOTH_DATABASES
def test_a_key_answered_before_is_answered_while_new_jobs_are_refused(settings, queue):
    app = create_app({"SETTINGS": dataclasses.replace(settings, queue_max=1), "QUEUE": queue})
    client = app.test_client()
    first = post_job(client, FENCED)
    assert first.status_code == 200  # the queue is now full
    again = post_job(client, FENCED)
    assert (again.status_code, again.json) == (200, first.json)
    assert again.headers["Idempotent-Replayed"] == "true"
    refused = post_job(client, FENCED, "k-2")
    assert refused.status_code == 429 and refused.json["error"]["code"] == "QUEUE_FULL"
    assert post_job(client, {**FENCED, "input": {"text": "y"}}).status_code == 409
    assert requests_count(app) == 1


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "caf\u00e9"])
def test_a_malformed_key_is_400(client, key):
    answer = client.post("/v1/jobs", json=PRIME, headers={"Idempotency-Key": key})
    assert answer.status_code == 400
    assert answer.json["error"]["details"] == {"header": "Idempotency-Key"}


def test_an_expired_key_creates_a_new_job(client, app, settings):
    first = post_job(client, PRIME)
    with app.extensions["db"]() as session:
        session.execute(
            update(IdempotencyKey).values(
                created_at=utcnow() - timedelta(seconds=settings.idempotency_ttl_sec + 1)
            )
        )
        session.commit()
    again = post_job(client, PRIME)
    assert again.json["request_id"] != first.json["request_id"]
    assert post_job(client, PRIME).json["request_id"] == again.json["request_id"]


def test_cleanup_forgets_expired_keys_only(client, app, settings):
    post_job(client, PRIME, "old")
    post_job(client, PRIME, "new")
    with app.extensions["db"]() as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == "old")
            .values(created_at=utcnow() - timedelta(seconds=settings.idempotency_ttl_sec + 1))
        )
        session.commit()
    assert client.post("/v1/jobs/cleanup", json={}).status_code == 200
    with app.extensions["db"]() as session:
        assert session.scalars(select(IdempotencyKey.key)).all() == ["new"]


@BOTH_DATABASES
def test_a_key_whose_job_was_cleaned_up_creates_the_job_anew(client, app):
    first = post_job(client, FENCED)
    with app.extensions["db"]() as session:
        session.execute(update(Run).values(status="succeeded", finished_at=utcnow()))
        session.commit()
    assert client.post("/v1/jobs/cleanup", json={}).json["requests_deleted"] == 1
    again = post_job(client, FENCED)  # a batch resumed after the cleanup: not the deleted id
    assert again.json["request_id"] != first.json["request_id"]
    assert client.get(f"/v1/jobs/{again.json['request_id']}").status_code == 200
    assert post_job(client, FENCED).json["request_id"] == again.json["request_id"]


def start_temp(client, request, key, files=None):
    data = package_upload(files or echo_skill())
    data["request"] = json.dumps(request)
    return client.post("/v1/temp-skill-runs", data=data, headers={"Idempotency-Key": key})


def test_temp_runs_take_the_key_over_package_and_request(client, app, settings):
    first = start_temp(client, {}, "t-1")
    again = start_temp(client, {}, "t-1")
    assert first.status_code == again.status_code == 200
    assert again.json == first.json
    assert first.json["skill_id"] and "warnings" in again.json
    # the replayed request kept nothing: only the first run's directory exists
    assert sorted(p.name for p in settings.requests_dir.iterdir()) == [first.json["request_id"]]
    other = start_temp(client, {"parameter": {"x": 1}}, "t-1")
    assert other.status_code == 409
    assert other.json["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    # a key of a temp run and of a job are separate
    assert post_job(client, PRIME, "t-1").status_code == 200
