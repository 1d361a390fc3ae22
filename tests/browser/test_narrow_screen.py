"""The UI's pages on a phone-wide screen in a real browser: nothing makes the page itself
scroll sideways (a wide table scrolls inside its own box)."""

from __future__ import annotations

import pytest

from skill_runner_client import Client
from tests.browser.shots import shot

pytestmark = pytest.mark.browser

WIDTH = 375  # a phone's


def test_no_page_is_wider_than_a_phone_screen(served, browser):
    with Client(served.base) as client:
        rid = client.jobs.create("demo-prime-number", files={"input_file": b"20\n"})["request_id"]
        client.jobs.wait(rid, timeout=60)
    context = browser.new_context(viewport={"width": WIDTH, "height": 800})
    page = context.new_page()
    wider = {}
    pages = ("skills", "skills/demo-prime-number", "runs", f"runs/{rid}", "engines", "packages")
    for name in pages:
        page.goto(f"{served.base}/ui/{name}")
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > WIDTH:
            wider[name] = width
        shot(page, f"43-narrow-{name[:30].replace('/', '-')}")
    context.close()
    assert wider == {}
