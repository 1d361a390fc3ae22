"""NaN, Infinity and a number out of a double's range (1e400) are no JSON numbers: Python's
decoder takes them, and a job holding one was accepted, then failed its upload with a 500 (its
cache key cannot be written as JSON) and stayed queued. They are 400 INVALID_REQUEST before
anything is kept; a large integer is a number as before."""

from __future__ import annotations

import pytest

BODY = '{"skill_id":"demo-prime-number","parameter":{"divisor":%s}}'


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-2.5e999"])
def test_a_number_json_cannot_hold_is_400(client, queue, settings, number):
    resp = client.post("/v1/jobs", data=BODY % number, content_type="application/json")
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    error = resp.json["error"]
    assert error["code"] == "INVALID_REQUEST" and number.lstrip("-") in error["message"]
    assert queue.sent == [] and client.get("/v1/jobs").json["items"] == []


def test_an_integer_too_long_to_convert_is_400(client):
    resp = client.post("/v1/jobs", data=BODY % ("9" * 5000), content_type="application/json")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "INVALID_REQUEST"
    assert "5000 digits" in resp.json["error"]["message"]


def test_a_large_integer_and_a_small_float_are_numbers(client):
    big = "123456789012345678901234567890"
    resp = client.post("/v1/jobs", data=BODY % big, content_type="application/json")
    assert resp.status_code == 200, resp.json
    resp = client.post("/v1/jobs", data=BODY % "1e-400", content_type="application/json")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
