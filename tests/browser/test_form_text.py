"""A form's text fields in a real browser: what is typed or pasted is sent as it is."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_a_text_of_several_lines_is_sent_with_its_line_breaks(served, page):
    """demo-echo's `text` (a string of no bounds) was a one-line box: a pasted paragraph lost
    its line breaks ("one\\ntwo" sent as "onetwo")."""
    sent = []
    page.on(
        "request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/v1/jobs") else None
    )
    page.goto(f"{served.base}/ui/skills/demo-echo")
    page.locator("#f-input-text").fill("line one\nline two")
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    assert sent[0]["input"]["text"] == "line one\nline two"
