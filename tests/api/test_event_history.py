"""events/history's time range: ISO 8601 times compared as times (offsets and dates alone
included), and a time that does not parse refused as a bad from_seq is."""

from __future__ import annotations

import json

import pytest

from tests.api.test_management import prime_job, run_dir

STAMPS = ["2026-01-01T00:00:00.000Z", "2026-01-01T01:00:00.000Z", "2026-01-01T02:00:00.000Z"]


def job_with_events(client, app) -> str:
    """A job whose events.jsonl holds three events an hour apart (seq 1-3)."""
    rid = prime_job(client)
    lines = [
        {"protocol_version": "fcmp/1.0", "run_id": "r", "request_id": rid, "seq": n, "ts": ts}
        | {"type": "diagnostic.warning", "data": {"n": n}}
        for n, ts in enumerate(STAMPS, start=1)
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    run_dir(app, rid).mkdir(parents=True, exist_ok=True)
    (run_dir(app, rid) / "events.jsonl").write_text(text)
    return rid


def seqs(client, rid: str, query: str) -> list[int]:
    resp = client.get(f"/v1/jobs/{rid}/events/history?{query}")
    assert resp.status_code == 200, resp.json
    return [event["seq"] for event in resp.json["events"]]


def test_times_are_compared_as_times_whatever_their_offset(client, app):
    rid = job_with_events(client, app)
    assert seqs(client, rid, "from_ts=2026-01-01T02:30:00%2B02:00") == [2, 3]  # 00:30Z
    assert seqs(client, rid, "to_ts=2026-01-01T01:00:00Z") == [1, 2]  # inclusive
    assert seqs(client, rid, "from_ts=2026-01-01T01:00:00.000001Z") == [3]
    assert seqs(client, rid, "from_ts=2026-01-01&to_ts=2026-01-01T00:59") == [1]  # UTC


@pytest.mark.parametrize(
    "route",
    [
        "/v1/jobs/{rid}/events/history",
        "/v1/jobs/{rid}/chat/history",
        "/v1/management/runs/{rid}/events/history",
    ],
)
@pytest.mark.parametrize("query", ["from_ts=abc", "to_ts=zzz", "from_ts=2026-13-01"])
def test_a_time_that_does_not_parse_is_a_422_as_a_bad_seq_is(client, app, route, query):
    rid = job_with_events(client, app)
    resp = client.get(route.format(rid=rid) + "?" + query)
    bad_seq = client.get(route.format(rid=rid) + "?from_seq=abc")
    assert resp.status_code == bad_seq.status_code == 422, resp.json
    error = resp.json["error"]
    assert error["code"] == bad_seq.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    name = query.split("=")[0]
    assert error["details"]["fields"] == {"query": {name: ["Not a valid ISO 8601 time."]}}
    assert error["message"] == f"query.{name}: Not a valid ISO 8601 time."
    assert error["request_id"]
