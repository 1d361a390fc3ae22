"""The run page's reply box in a real browser, where the question is not the plain case: a reply
to a question that went away while the page had not heard, and a fill_fields question that
names no field."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path

import pytest

from tests.browser.shots import shot
from tests.engines.test_interactive_jobs import ASKS_THEN_FINISHES

pytestmark = pytest.mark.browser

ASKS_FIELDS = replace(
    ASKS_THEN_FINISHES,
    final_text="""I need a few details.
<ASK_USER_YAML>
kind: fill_fields
prompt: Which title and which style?
</ASK_USER_YAML>""",
)


def start(page, base: str) -> str:
    created = page.request.post(
        f"{base}/v1/jobs",
        data={
            "skill_id": "pick-title",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"execution_mode": "interactive", "no_cache": True},
        },
    )
    assert created.ok, created.text()
    return created.json()["request_id"]


def wait_for(page, base: str, rid: str, status: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = page.request.get(f"{base}/v1/jobs/{rid}").json()["status"]
        if seen == status:
            return
        time.sleep(0.2)
    raise AssertionError(f"{rid} is {seen}, not {status}")


def test_a_reply_to_a_question_gone_meanwhile_shows_the_run_as_it_is(served, page):
    """The run was canceled while the page had not heard (its stream quiet): the reply was
    refused with RUN_NOT_WAITING, and the page offered the same buttons again, the run still
    shown waiting."""
    rid = start(page, served.base)
    wait_for(page, served.base, rid, "waiting_user")
    pending = page.request.get(f"{served.base}/v1/management/runs/{rid}/pending").json()
    snapshot = {"request_id": rid, "status": "waiting_user", "pending": pending["pending"]}
    # a stream that says the question waits, then is quiet (no reconnect for ten minutes)
    quiet = f"retry: 600000\nevent: snapshot\ndata: {json.dumps(snapshot)}\n\n"
    page.route(
        "**/events?*",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=quiet),
    )
    page.goto(f"{served.base}/ui/runs/{rid}")
    choice = page.get_by_role("button", name="The bold one")
    choice.wait_for()
    time.sleep(1)  # the page has read the run's state after the stream ended: still waiting
    assert page.request.post(f"{served.base}/v1/jobs/{rid}/cancel").ok
    choice.click()
    page.locator("#reply-error", has_text="RUN_NOT_WAITING").wait_for()
    page.locator("#status.st-canceled").wait_for()
    assert page.locator("#reply-controls button").count() == 0
    assert page.locator("#question").inner_text() == "No question is waiting."
    page.locator("#result .result-json").wait_for()
    assert "CANCELED_BY_USER" in page.locator("#run-error").inner_text()
    shot(page, "24-run-reply-to-a-question-gone")


def test_a_fill_fields_question_naming_no_field_is_answered_with_a_json_object(served, page):
    """With no required_fields the box drew nothing (the page stopped at focusing the first of
    no inputs): the question could not be answered from the UI."""
    script = Path(served.env["SKILL_RUNNER_ENGINE_CONFIG_DIR"]).parent / "llm-script.json"
    before = script.read_text()
    script.write_text(json.dumps(asdict(ASKS_FIELDS)))
    try:
        rid = start(page, served.base)
        page.goto(f"{served.base}/ui/runs/{rid}")
        box = page.get_by_label("Your answer (a JSON object of field values)")
        box.wait_for(timeout=90_000)
        assert "Which title and which style?" in page.locator("#question").inner_text()
        # the agent's words are shown; its question block is the box, not a second copy
        said = page.locator("#conversation .msg.agent").all_inner_texts()
        assert "I need a few details." in said, said
        assert not [s for s in said if "ASK_USER_YAML" in s or "fill_fields" in s], said
        box.fill("the bold one")
        page.get_by_role("button", name="Send").click()
        assert "Write a JSON object" in page.locator("#reply-error").inner_text()
        box.fill('{"title": "Mine", "style": "bold"}')
        page.get_by_role("button", name="Send").click()
        page.locator("#status.st-succeeded").wait_for(timeout=90_000)
        answer = json.loads(page.locator("#conversation .msg.user").inner_text())
        assert answer == {"title": "Mine", "style": "bold"}
        shot(page, "25-run-fill-fields-answered")
    finally:
        script.write_text(before)


def test_a_run_canceled_while_waiting_says_how_long_its_turn_ran_not_the_wait(served, page):
    """The last turn ended when it asked: the seconds the run then waited for an answer are
    shown apart, in the page drawn live and in the one drawn by the server."""
    rid = start(page, served.base)
    wait_for(page, served.base, rid, "waiting_user")
    page.goto(f"{served.base}/ui/runs/{rid}")
    page.get_by_role("button", name="The bold one").wait_for()
    time.sleep(3)  # the wait, longer than the fake engine's turn
    assert page.request.post(f"{served.base}/v1/jobs/{rid}/cancel").ok
    page.locator("#status.st-canceled").wait_for()
    page.locator("#timing", has_text="for an answer").wait_for()
    state = page.request.get(f"{served.base}/v1/management/runs/{rid}").json()
    moments = [
        datetime.fromisoformat(state[k]) for k in ("started_at", "turn_ended_at", "finished_at")
    ]
    turn, wait = (
        (moments[1] - moments[0]).total_seconds(),
        (moments[2] - moments[1]).total_seconds(),
    )
    assert wait >= 3 > turn
    expected = f"Last turn ran {turn:.1f} s, then waited {wait:.1f} s for an answer"
    assert page.locator("#timing").inner_text() == expected
    shot(page, "29-run-canceled-while-waiting")
    page.reload()
    assert page.locator("#timing").inner_text() == expected
