"""The UI's package page in a real browser: a good package installs (and its skill is listed),
a bad one is refused with every reason shown, and each install is read back by its id."""

from __future__ import annotations

import json

import pytest

from tests.browser.shots import shot
from tests.helpers import zip_bytes
from tests.packages import echo_skill

pytestmark = pytest.mark.browser


def choose(page, files: dict[str, str], name: str) -> None:
    page.locator("#package").set_input_files(
        files=[{"name": name, "mimeType": "application/zip", "buffer": zip_bytes(files)}]
    )


def test_a_good_package_installs_and_its_skill_is_listed(served, page):
    page.goto(f"{served.base}/ui/skills")
    page.get_by_role("link", name="Install").click()
    page.wait_for_url("**/ui/packages")
    choose(page, echo_skill("ui-pkg-echo", "1.2.0"), "ui-pkg-echo.zip")
    page.get_by_role("button", name="Install").click()
    page.locator("#install-status.st-succeeded").wait_for()
    record = page.locator("#install-record").inner_text()
    assert "ui-pkg-echo" in record and "1.2.0" in record and "installed" in record
    assert page.locator("#install-error").is_hidden()
    shot(page, "09-package-installed")
    page.locator("#install-record a", has_text="ui-pkg-echo").click()
    page.wait_for_url("**/ui/skills/ui-pkg-echo")
    page.goto(f"{served.base}/ui/skills")
    assert page.locator("tr", has_text="ui-pkg-echo").locator(".badge").inner_text() == "ok"


def test_a_higher_version_updates_and_the_same_one_is_refused(served, page):
    page.goto(f"{served.base}/ui/packages")
    choose(page, echo_skill("ui-pkg-up", "1.0.0"), "up.zip")
    page.get_by_role("button", name="Install").click()
    page.locator("#install-status.st-succeeded").wait_for()
    choose(page, echo_skill("ui-pkg-up", "1.1.0"), "up.zip")
    page.get_by_role("button", name="Install").click()
    page.wait_for_function(
        "document.getElementById('install-record').textContent.includes('1.1.0')"
    )
    record = page.locator("#install-record").inner_text()
    assert "updated" in record and "Previous version\n1.0.0" in record, record
    choose(page, echo_skill("ui-pkg-up", "1.1.0"), "up.zip")
    page.get_by_role("button", name="Install").click()
    page.locator("#install-status.st-failed").wait_for()
    assert page.locator("#install-error").inner_text().startswith("SKILL_VERSION_NOT_INCREASED")


def test_a_bad_package_is_refused_with_its_reasons(served, page):
    files = echo_skill("ui-pkg-bad", "1.0.0")
    del files["assets/output.schema.json"]
    manifest = json.loads(files["assets/runner.json"])
    manifest["execution_modes"] = ["sometimes"]
    files["assets/runner.json"] = json.dumps(manifest)
    page.goto(f"{served.base}/ui/packages")
    choose(page, files, "ui-pkg-bad.zip")
    page.get_by_role("button", name="Install").click()
    page.locator("#install-status.st-failed").wait_for()
    error = page.locator("#install-error")
    assert error.is_visible() and error.inner_text().startswith("SKILL_PACKAGE_INVALID: ")
    reasons = page.locator("#install-reasons li").all_inner_texts()
    assert len(reasons) >= 2, reasons  # every problem at once
    assert any("output" in r for r in reasons) and any("sometimes" in r for r in reasons), reasons
    record = page.locator("#install-record").inner_text()
    assert "Install id" in record  # the refused install is recorded and read back
    shot(page, "10-package-refused")
    page.goto(f"{served.base}/ui/skills")
    assert page.locator("tr", has_text="ui-pkg-bad").count() == 0
