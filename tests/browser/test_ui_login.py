"""The web UI with tokens configured, in a real browser: a page sends you to the login, a
pasted token signs you in (a session cookie), and a skill runs from its form with its upload,
the event stream and the result all on the cookie; logout signs you out."""

from __future__ import annotations

import pytest

from tests.browser.shots import shot
from tests.helpers import TOKENS

pytestmark = pytest.mark.browser


def test_log_in_run_a_skill_and_log_out(served_with_tokens, page, tmp_path):
    base = served_with_tokens.base
    page.goto(f"{base}/ui/skills/demo-prime-number")
    page.wait_for_url("**/ui/login?next=**")
    page.get_by_label("API token").fill("wrong-token-0123456789")
    page.get_by_role("button", name="Log in").click()
    assert "not valid" in page.locator(".error").inner_text()
    page.get_by_label("API token").fill(TOKENS["alice"][0])
    shot(page, "10-login")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/ui/skills/demo-prime-number")
    assert page.locator("header form.session").inner_text().startswith("alice")
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["skill_runner_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # not readable by the page's scripts
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("30\n")
    page.get_by_label("divisor").fill("5")
    page.locator("#f-input-input_file").set_input_files(str(numbers))
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    page.locator("#status.st-succeeded").wait_for(timeout=60_000)
    page.locator("#result .result-json").wait_for()
    assert '"status": "succeeded"' in page.locator("#result .result-json").inner_text()
    assert page.locator("#conversation .state").count() >= 1  # the event stream came through
    shot(page, "11-run-signed-in")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/ui/login")
    page.goto(f"{base}/ui/runs")
    page.wait_for_url("**/ui/login?next=**")
