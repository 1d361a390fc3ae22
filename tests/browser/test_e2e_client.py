"""The example client (e2e_client) in a real browser, served as operators start it
(`python -m e2e_client.app`, port from SKILL_RUNNER_E2E_CLIENT_PORT) in front of the real
service: an interactive run picked, answered and finished from its pages, then its recording
stepped through on the replay page. Photographed into .test-artifacts/ui/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT
from skill_runner_client import Client
from tests.browser.shots import shot
from tests.helpers import wait_for
from tests.integration.served import free_port

pytestmark = pytest.mark.browser


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def e2e_client(served, tmp_path_factory):
    recordings = tmp_path_factory.mktemp("recordings")
    port = free_port()
    env = {
        **os.environ,
        "SKILL_RUNNER_E2E_CLIENT_PORT": str(port),
        "SKILL_RUNNER_E2E_CLIENT_BACKEND_BASE_URL": served.base,
        "SKILL_RUNNER_E2E_CLIENT_RECORDINGS_DIR": str(recordings),
    }
    log = (recordings.parent / "e2e-client.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "e2e_client.app"],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(base + "/recordings"), 30, 0.1, "the example client answering")
        yield base, recordings
    finally:
        stop_process_group(proc, 10)
        log.close()


def test_a_run_from_the_example_client_and_its_replay(e2e_client, page):
    base, recordings = e2e_client
    page.goto(base + "/")
    page.get_by_role("link", name="pick-title").click()
    assert page.get_by_label("Engine").input_value() == "codex"
    assert page.locator("#model option").count() > 1  # the engine's models
    page.get_by_label("Engine").select_option("claude")  # the list follows the engine
    page.locator("#model option[value='claude-haiku-4-5']").wait_for(state="attached")
    page.get_by_label("Engine").select_option("codex")
    page.locator("#model option[value='claude-haiku-4-5']").wait_for(state="detached")
    page.get_by_label("Execution mode").select_option("interactive")
    page.get_by_label("text").fill("hello")
    page.get_by_label("Run again even if a cached result exists").check()
    shot(page, "e2e-01-form")
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/runs/*")
    choice = page.get_by_role("button", name="The bold one")
    choice.wait_for(timeout=90_000)  # the page reloads itself until the question is there
    assert "Which title" in page.locator("#question").inner_text()
    shot(page, "e2e-02-question")
    choice.click()
    page.locator("#status.st-succeeded").wait_for(timeout=90_000)
    assert "TITLE-B-7" in page.locator("#result").inner_text()
    shot(page, "e2e-03-finished")

    page.locator("#recording-link").click()
    assert page.locator("#step-title").inner_text() == "Step 1 of 3: create"
    assert '"execution_mode": "interactive"' in page.locator("#step-request").inner_text()
    page.locator("#next").click()
    assert page.locator("#step-title").inner_text() == "Step 2 of 3: reply"
    assert '"response": "TITLE-B-7"' in page.locator("#step-request").inner_text()
    page.locator("#next").click()
    assert page.locator("#step-title").inner_text() == "Step 3 of 3: result_read"
    assert "TITLE-B-7" in page.locator("#step-response").inner_text()
    assert page.locator("#next").count() == 0
    shot(page, "e2e-04-replay")
    page.locator("#prev").click()
    assert page.locator("#step-title").inner_text() == "Step 2 of 3: reply"
    (recording,) = recordings.glob("*.json")
    assert [s["action"] for s in json.loads(recording.read_text())["steps"]] == [
        "create",
        "reply",
        "result_read",
    ]


def test_a_result_in_chinese_and_with_markup_reads_as_written(served, e2e_client, page):
    """The result was shown as tojson writes it for a script tag: 结果 as \\u7ed3\\u679c and
    <b> as \\u003cb\\u003e."""
    base, _ = e2e_client
    text = "结果 <b>粗</b> 'quoted' & more"
    with Client(served.base) as client:
        rid = client.jobs.create("fenced-json", input={"text": text})["request_id"]
        client.jobs.wait(rid, timeout=60)
    page.goto(f"{base}/runs/{rid}")
    result = page.locator("#result").inner_text()
    assert json.dumps(text, ensure_ascii=False) in result, result
    assert json.loads(result)["data"]["text"] == text
    assert page.locator("#result b").count() == 0  # text, not markup
    shot(page, "e2e-04-result-as-written")


def test_a_text_of_several_lines_is_sent_with_its_line_breaks(e2e_client, page):
    """fenced-json's `text` (a string of no bounds) was a one-line box, where the browser turns
    a pasted paragraph's line breaks into spaces."""
    base, _ = e2e_client
    page.goto(base + "/skills/fenced-json")
    page.get_by_label("text").fill("line one\nline two")
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/runs/*")
    page.locator("#result").wait_for(timeout=60_000)  # the page reloads itself until the end
    assert json.loads(page.locator("#result").inner_text())["data"]["text"] == "line one\nline two"
