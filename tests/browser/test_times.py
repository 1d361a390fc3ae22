"""Timestamps on the UI's pages in a real browser set to another time zone: shown in the
reader's zone, the zone named (the stored time is UTC)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from skill_runner_client import Client
from tests.browser.shots import shot

pytestmark = pytest.mark.browser


@pytest.fixture
def shanghai(browser):
    context = browser.new_context(
        timezone_id="Asia/Shanghai", viewport={"width": 1024, "height": 900}
    )
    yield context.new_page()
    context.close()


def shown(text: str) -> datetime:
    """A time as the page writes it in Shanghai ("2026-11-30 06:12:07 UTC+8"), in UTC."""
    found = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\+8\b", text)
    assert found, text
    return datetime.fromisoformat(found[1]).replace(tzinfo=UTC) - timedelta(hours=8)


def test_times_are_shown_in_the_readers_zone_with_the_zone_named(served, shanghai):
    with Client(served.base) as client:
        rid = client.jobs.create("demo-prime-number", files={"input_file": b"20\n"})["request_id"]
        created = client.jobs.wait(rid, timeout=60)["created_at"]
    stored = datetime.fromisoformat(created.replace("Z", "+00:00")).replace(microsecond=0)
    shanghai.goto(f"{served.base}/ui/runs/{rid}")
    assert shown(shanghai.locator("#created").inner_text()) == stored
    shanghai.goto(f"{served.base}/ui/runs")
    row = shanghai.locator("#runs tr", has=shanghai.locator(f"a[href$='{rid}']"))
    assert shown(row.locator("td").nth(4).inner_text()) == stored
    shanghai.locator("#filter-status").select_option("succeeded")  # the list swapped in anew
    shanghai.wait_for_url("**status=succeeded**")
    shanghai.locator("#runs time:not([data-local])").first.wait_for(state="detached")
    row = shanghai.locator("#runs tr", has=shanghai.locator(f"a[href$='{rid}']"))
    assert shown(row.locator("td").nth(5).inner_text()) >= stored
    shot(shanghai, "42-runs-times-in-the-readers-zone")
