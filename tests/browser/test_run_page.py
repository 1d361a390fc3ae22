"""The run page of a long run in a real browser: the last page of its events is drawn, earlier
pages come on demand and in order, and a finished run's page opens no event stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_runner_client import Client
from tests.browser.shots import shot

pytestmark = pytest.mark.browser

MESSAGES = 250
PAGE = 100  # events per history page (api/ui/static/run.js)


def long_finished_run(served) -> tuple[str, int]:
    """A demo-prime-number run whose history then gets MESSAGES agent messages before its
    terminal event (as a long agent run would have); (request id, event count)."""
    with Client(served.base) as client:
        rid = client.jobs.create(
            "demo-prime-number",
            parameter={"divisor": 7},
            runtime_options={"no_cache": True},
            files={"input_file": b"20\n"},
        )["request_id"]
        run_id = client.jobs.wait(rid, timeout=60)["run_id"]
    events_file = Path(served.env["SKILL_RUNNER_DATA_DIR"]) / "runs" / run_id / "events.jsonl"
    real = [json.loads(line) for line in events_file.read_text().splitlines()]
    terminal = real[-1]
    assert terminal["data"]["terminal"]["status"] == "succeeded"
    made = [
        {**terminal, "type": "assistant.message", "data": {"text": f"message {i}"}}
        for i in range(MESSAGES)
    ]
    events = real[:-1] + made + [terminal]
    for seq, event in enumerate(events, 1):
        event["seq"] = seq
    events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    return rid, len(events)


def test_a_long_run_shows_its_last_page_and_earlier_ones_on_demand(served, page):
    rid, total = long_finished_run(served)
    streams = []
    page.on("request", lambda r: streams.append(r.url) if "/events?" in r.url else None)
    page.goto(f"{served.base}/ui/runs/{rid}")
    page.locator("#result .result-json").wait_for()
    messages = page.locator("#conversation .msg.agent")
    assert messages.count() == PAGE - 1  # the last page: 99 messages and the terminal event
    assert messages.last.inner_text() == f"message {MESSAGES - 1}"
    assert "→ succeeded" in page.locator("#conversation > :last-child").inner_text()
    earlier = page.locator("#earlier")
    assert earlier.inner_text() == f"Show earlier events ({total - PAGE} more)"
    shot(page, "11-run-long-last-page")
    earlier.click()
    page.wait_for_function(
        f"document.querySelectorAll('#conversation .msg.agent').length > {PAGE - 1}"
    )
    assert earlier.inner_text() == f"Show earlier events ({total - 2 * PAGE} more)"
    earlier.click()
    earlier.wait_for(state="hidden")
    texts = messages.all_inner_texts()  # the script's own lines first, then the messages
    assert texts[-MESSAGES:] == [f"message {i}" for i in range(MESSAGES)]  # once, in order
    assert not any(t.startswith("message ") for t in texts[:-MESSAGES])
    first = page.locator("#conversation .state").first.inner_text()
    assert first.startswith("queued → running") or first.startswith("— → ")
    assert streams == []  # the terminal event was in the first page: no stream opened
    shot(page, "12-run-long-all-pages")
