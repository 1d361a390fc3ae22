"""A composite (skill.json) run's page in a real browser: its steps, each a link to the child
run's own page."""

from __future__ import annotations

import pytest

from tests.browser.shots import shot

pytestmark = pytest.mark.browser

TEXT = "Workers take runs from the queue. The queue keeps runs. Nothing else matters here."


def test_a_composite_run_shows_its_steps_with_links_to_their_runs(served, page):
    page.goto(f"{served.base}/ui/skills/text_report")
    page.locator("#f-input-text").fill(TEXT)
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    page.locator("#result .result-json").wait_for(timeout=90_000)
    steps = page.locator("#conversation .step")
    assert steps.all_inner_texts()[0].startswith("step stats started: run ")
    ended = [t for t in steps.all_inner_texts() if " succeeded in " in t]
    assert [t.split()[1] for t in ended] == ["stats", "quotes"]
    shot(page, "40-composite-run-steps")
    first = steps.first.get_by_role("link")
    child = first.get_attribute("href")
    first.click()
    page.wait_for_url(f"**{child}")
    assert page.locator("h1").inner_text().startswith("word_stats")
    page.locator("#result .result-json").wait_for(timeout=30_000)
