"""The runs list's filters in a real browser, going back and forward through them; the pages
load without a failed request."""

from __future__ import annotations

import pytest

from tests.browser.shots import shot

pytestmark = pytest.mark.browser


def test_back_and_forward_show_the_filters_of_the_list_shown(served, page):
    """htmx restored the list of the address but not which option each filter showed: back
    from 'queued, demo-prime-number' showed the queued runs under 'any' and 'any'."""
    created = page.request.post(
        f"{served.base}/v1/jobs", data={"skill_id": "demo-prime-number", "parameter": {}}
    )
    assert created.ok, created.text()  # it waits for its upload: queued
    page.goto(f"{served.base}/ui/runs")
    status, skill = page.get_by_label("Status"), page.get_by_label("Skill")
    status.select_option("queued")
    page.wait_for_function("location.search.includes('status=queued')")
    skill.select_option("demo-prime-number")
    page.wait_for_function("location.search.includes('skill_id=demo-prime-number')")
    page.go_back()
    page.wait_for_function("!location.search.includes('demo-prime-number')")
    assert (status.input_value(), skill.input_value()) == ("queued", "")
    page.go_back()
    page.wait_for_function("!location.search.includes('status=queued')")
    assert (status.input_value(), skill.input_value()) == ("", "")
    page.go_forward()
    page.wait_for_function("location.search.includes('status=queued')")
    assert (status.input_value(), skill.input_value()) == ("queued", "")
    rows = page.locator("#runs tbody tr")
    assert rows.count() >= 1 and all("queued" in r for r in rows.all_inner_texts())
    shot(page, "27-runs-filters-after-back-and-forward")


def test_the_pages_load_without_a_failed_request(served, page):
    """Every page asked for /favicon.ico, which the service does not serve: a 404 in the
    console of each page, among which a real failure was easy to miss."""
    failed = []  # the console's errors, the browser's own requests (the icon) among them
    page.on("console", lambda m: failed.append(m.text) if m.type == "error" else None)
    for path in ("/ui/skills", "/ui/runs", "/ui/engines", "/ui/packages"):
        page.goto(f"{served.base}{path}")
        page.wait_for_load_state("networkidle")
    assert failed == []
