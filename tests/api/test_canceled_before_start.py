"""A run canceled before any worker started it (queued, or waiting for its upload) still ends
with its terminal `conversation.state.changed`: in events/history, on a new stream, and on a
stream that was following the run when the cancel came."""

from __future__ import annotations

import json
from functools import partial

import pytest

from api.jobs import events
from tests.api.test_management import run_dir


def create(client, waits_for_upload: bool) -> str:
    body = (
        {"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}  # no upload sent
        if waits_for_upload
        else {"skill_id": "fenced-json", "input": {"text": "x"}}
    )
    return client.post("/v1/jobs", json=body).json["request_id"]


def frames(body: str) -> list[tuple[str, dict]]:
    """(event name, data) of each SSE frame."""
    found = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def assert_canceled_event(event: dict) -> None:
    assert event["seq"] == 1 and event["type"] == "conversation.state.changed"
    data = event["data"]
    assert (data["from"], data["to"], data["trigger"]) == ("queued", "canceled", "cancel")
    assert data["terminal"]["status"] == "canceled"
    assert data["terminal"]["error"]["code"] == "CANCELED_BY_USER"


@pytest.mark.parametrize("waits_for_upload", [True, False], ids=["waiting_upload", "queued"])
def test_cancel_before_start_records_the_terminal_event(client, app, waits_for_upload):
    rid = create(client, waits_for_upload)
    assert client.post(f"/v1/jobs/{rid}/cancel").json["status"] == "canceled"
    history = client.get(f"/v1/jobs/{rid}/events/history").json
    assert history["status"] == "canceled" and history["count"] == 1
    assert_canceled_event(history["events"][0])
    assert (run_dir(app, rid) / "logs").is_dir()  # the run directory's layout, made for it
    streamed = frames(client.get(f"/v1/jobs/{rid}/events").get_data(as_text=True))
    assert [name for name, _ in streamed] == ["snapshot", "chat_event"]
    assert_canceled_event(streamed[1][1])


def test_a_stream_following_a_queued_run_ends_with_its_cancel(client, monkeypatch):
    monkeypatch.setattr(events, "stream", partial(events.stream, heartbeat_sec=0.2))
    rid = create(client, waits_for_upload=False)
    resp = client.get(f"/v1/jobs/{rid}/events", buffered=False)
    chunks = iter(resp.response)
    first = next(chunks)  # the snapshot: the stream follows the run from here
    assert frames(first.decode() if isinstance(first, bytes) else first)[0][1]["status"] == "queued"
    assert client.post(f"/v1/jobs/{rid}/cancel").json["status"] == "canceled"
    rest = "".join(c.decode() if isinstance(c, bytes) else c for c in chunks)
    got = [(name, data) for name, data in frames(rest) if name != "heartbeat"]
    assert [name for name, _ in got] == ["chat_event"]
    assert_canceled_event(got[0][1])
