"""A request body's media type: each route takes the types its OpenAPI requestBody lists (JSON
with its `+json` types and a charset; multipart; a raw zip as application/zip or an octet
stream), and a body of another type is 415 UNSUPPORTED_MEDIA_TYPE with the error body. A request
without a body, and a route that takes none, are not checked."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.test_management import prime_job
from tests.helpers import bearer, upload_body, zip_bytes

JOB = {"skill_id": "fenced-json", "input": {"text": "hi"}}


def unsupported(resp, sent: str | None, accepted: list[str]) -> None:
    assert resp.status_code == 415, resp.data[:300]
    error = resp.json["error"]
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE" and error["request_id"]
    assert error["details"] == {"content_type": sent, "accepted": accepted}


def routes_taking(client, media_type: str) -> list[tuple[str, str, list[str]]]:
    """(path with its parameters filled, method, the types it takes) of every route whose
    documented body has `media_type`."""
    spec = client.get("/openapi.json").json
    return [
        (re.sub(r"{[^}]+}", "x", path), method, list(op["requestBody"]["content"]))
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method != "parameters" and media_type in op.get("requestBody", {}).get("content", {})
    ]


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"],
)
def test_every_json_route_refuses_a_json_text_of_another_type(client, content_type):
    routes = routes_taking(client, "application/json")
    assert len(routes) >= 7, routes  # jobs, reply (x3), cleanup, handshake, upgrade, temp runs
    for path, method, accepted in routes:
        resp = client.open(path, method=method, data=json.dumps(JOB), content_type=content_type)
        unsupported(resp, content_type.split(";")[0], accepted)


def test_every_multipart_route_refuses_a_body_of_another_type(client):
    routes = routes_taking(client, "multipart/form-data")
    assert len(routes) >= 6, routes  # uploads, reply files (x2 each), packages, temp runs
    for path, method, accepted in routes:
        for content_type in ("text/plain", "application/json", "image/png"):
            if content_type in accepted:
                continue
            resp = client.open(path, method=method, data=b"PK\x05\x06", content_type=content_type)
            unsupported(resp, content_type, accepted)


def test_a_zip_sent_as_text_is_a_415_not_a_missing_upload(client, app):
    rid = client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    body = zip_bytes({"input_file.txt": "100\n"})
    resp = client.post(f"/v1/jobs/{rid}/upload", data=body, content_type="text/plain")
    unsupported(resp, "text/plain", ["multipart/form-data", "application/zip"])
    # the same zip as an octet stream (a raw zip, as before) is taken
    taken = client.post(
        f"/v1/jobs/{rid}/upload", data=body, content_type="application/octet-stream"
    )
    assert taken.status_code == 200, taken.json


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "Application/JSON", "x+json"],
)
def test_json_bodies_are_taken_with_a_charset_and_as_json_types(client, queue, content_type):
    content_type = content_type.replace("x+json", "application/problem+json")
    resp = client.post("/v1/jobs", data=json.dumps(JOB), content_type=content_type)
    assert resp.status_code == 200, resp.json
    assert len(queue.sent) == 1


def test_what_the_clients_send_is_taken(client, queue):
    # the SDK and CLI: JSON bodies and multipart uploads; the UI: the same, and no body at all
    rid = prime_job(client)  # multipart upload
    assert client.get(f"/v1/jobs/{rid}").json["status"] == "queued"
    raw = client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    zipped = zip_bytes({"input_file.txt": "100\n"})
    raw_up = client.post(f"/v1/jobs/{raw}/upload", data=zipped, content_type="application/zip")
    assert raw_up.status_code == 200, raw_up.json
    temp = client.post("/v1/temp-skill-runs", json={"parameter": {}})
    assert temp.status_code == 200, temp.json
    up = client.post(f"/v1/temp-skill-runs/{temp.json['request_id']}/upload", data=upload_body({}))
    assert up.status_code == 400 and up.json["error"]["code"] == "PACKAGE_MISSING"


def test_a_request_without_a_body_is_not_checked(client):
    rid = prime_job(client)
    # no body, whatever the header says; and a route that takes no body
    assert client.post("/v1/jobs/cleanup", content_type="text/plain").status_code == 200
    assert client.post("/v1/jobs/cleanup").status_code == 200
    canceled = client.post(f"/v1/jobs/{rid}/cancel", data="x", content_type="text/plain")
    assert canceled.status_code == 200 and canceled.json["accepted"] is True


def test_a_missing_token_is_answered_before_the_media_type(scoped):
    resp = scoped.post("/v1/jobs", data=json.dumps(JOB), content_type="text/plain")
    assert resp.status_code == 401
    with_token = scoped.post(
        "/v1/jobs", data=json.dumps(JOB), content_type="text/plain", headers=bearer("root")
    )
    assert with_token.status_code == 415
