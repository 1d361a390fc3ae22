"""The run page in a real browser when the API restarts while a run is followed: it says it is
reconnecting, then follows the run again to its end."""

from __future__ import annotations

import signal

import pytest

from skill_runner_client import Client
from tests.browser.shots import shot

pytestmark = pytest.mark.browser


def test_a_lost_connection_is_said_and_the_run_followed_again(served, browser):
    with Client(served.base) as client:
        rid = client.jobs.create(
            "slow-counter", parameter={"sleep": 12}, runtime_options={"no_cache": True}
        )["request_id"]
        client.jobs.wait(rid, timeout=30, until=("running",))
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{served.base}/ui/runs/{rid}")
    page.locator("#status.st-running").wait_for()
    notice = page.locator("#reconnecting")
    assert notice.is_hidden()
    served.proc.send_signal(signal.SIGINT)  # gunicorn's quick shutdown: streams cut
    served.proc.wait(30)  # the worker goes on with the run
    notice.wait_for(state="visible", timeout=15_000)
    shot(page, "44-run-reconnecting")
    assert page.locator("#live-stopped").is_hidden()  # not given up: the browser tries again
    served.start()
    page.locator("#result .result-json").wait_for(timeout=60_000)
    assert notice.is_hidden()
    assert page.locator("#status").inner_text() == "succeeded"
    assert (
        page.locator("#conversation .state")
        .all_inner_texts()
        .count("running → succeeded (turn_finished)")
        == 1
    )
    context.close()
