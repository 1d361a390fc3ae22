"""A JSON string holding a lone surrogate (`"\\ud800"` without its pair) is no Unicode text:
refused as 400 INVALID_REQUEST wherever JSON comes in (a JSON body, the JSON of a form field),
before anything is kept; a pair (an escaped emoji) is text as before."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from runner_core.store.models import Run
from tests.packages import echo_skill, package_upload

ECHO = '{"skill_id":"demo-echo","engine":"codex","input":{"text":"%s"}}'


def refused(resp):
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    error = resp.json["error"]
    assert error["code"] == "INVALID_REQUEST" and error["request_id"]
    assert "lone surrogate" in error["message"]
    return error


def nothing_kept(settings):
    return not settings.requests_dir.exists() or not any(settings.requests_dir.iterdir())


@pytest.mark.parametrize(
    "body",
    [
        ECHO % "\\ud800",
        ECHO % "ok \\udc00",
        ECHO % "\\ude00\\ud83d",  # the halves of a pair in the wrong order
        '{"skill_id":"demo-echo","engine":"codex","input":{"\\ud800":"x"}}',  # in a key
        '{"skill_id":"demo-echo","engine":"codex","parameter":{"a":["x","\\udfff"]}}',
    ],
)
def test_a_job_body_with_a_lone_surrogate_is_400(client, queue, settings, body):
    refused(client.post("/v1/jobs", data=body, content_type="application/json"))
    assert queue.sent == [] and nothing_kept(settings)
    assert client.get("/v1/jobs").json["items"] == []


def test_a_lone_surrogate_sent_as_utf8_bytes_is_400_too(client, settings):
    body = b'{"engine":"codex","input":{"text":"\xed\xa0\x80"}}'
    refused(client.post("/v1/temp-skill-runs", data=body, content_type="application/json"))
    assert nothing_kept(settings)


def test_an_escaped_pair_and_an_escaped_backslash_are_text(client, app):
    for text, stored in (("\\ud83d\\ude00", "\U0001f600"), ("\\\\ud800", "\\ud800")):
        resp = client.post("/v1/jobs", data=ECHO % text, content_type="application/json")
        assert resp.status_code == 200, resp.json
        with app.extensions["db"]() as session:
            run = session.scalars(select(Run).where(Run.request_id == resp.json["request_id"]))
            assert run.one().input == {"text": stored}


def test_a_one_off_runs_request_field_with_a_lone_surrogate_is_400(client, queue, settings):
    data = package_upload(echo_skill())
    data["request"] = '{"input":{"text":"\\udc00"}}'
    error = refused(client.post("/v1/temp-skill-runs", data=data))
    assert error["details"] == {"field": "request"}
    assert queue.sent == [] and nothing_kept(settings)


def test_a_one_off_runs_json_body_with_a_lone_surrogate_is_400(client, queue, settings):
    body = '{"engine":"codex","input":{"text":"\\udc00"}}'
    refused(client.post("/v1/temp-skill-runs", data=body, content_type="application/json"))
    assert queue.sent == [] and nothing_kept(settings)


def test_a_temp_upload_job_body_with_a_lone_surrogate_is_400(client, settings):
    body = '{"skill_source":"temp_upload","input":{"text":"\\ud800"}}'
    refused(client.post("/v1/jobs", data=body, content_type="application/json"))
    assert nothing_kept(settings)
