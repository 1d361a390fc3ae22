"""What the run form sends and what the run page shows of a script's run, in a real browser,
with a probe skill installed as a package."""

from __future__ import annotations

import json

import pytest

from tests.browser.shots import shot
from tests.helpers import zip_bytes

pytestmark = pytest.mark.browser

SKILL = "ui-probe"
LINES = 3000  # stderr lines printed at once: far more than an event's 2,000 characters
RUN_PY = """\
import json, os, sys
from pathlib import Path

ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
warnings = "".join(f"warning {i}\\n" for i in range(ctx["parameter"]["lines"]))
sys.stderr.write(warnings + "Traceback: the last line\\n")  # at once: one chunk
sys.stderr.flush()
(Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "r#1 ?.txt").write_text("hash file")
print("W" * 3000, flush=True)  # one word wider than any screen
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"parameter": ctx["parameter"]}))
"""


def probe_skill() -> dict[str, str]:
    manifest = {
        "id": SKILL,
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
        "automation": {"timeout_sec": 120},
    }
    parameter = {
        "type": "object",
        "properties": {
            "level": {"type": "integer", "enum": [1, 2, 3], "default": 2},
            "flavour": {"type": "string", "enum": ["a", "b"]},
            "lines": {"type": "integer", "minimum": 0, "default": 0},
            "opts": {
                "type": "object",
                "properties": {
                    "depth": {"type": "integer", "minimum": 1},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "required": ["level"],
        "additionalProperties": False,
    }
    return {
        "SKILL.md": f'---\nname: {SKILL}\ndescription: "Probe the run form and page."\n---\n',
        "assets/runner.json": json.dumps(manifest),
        "assets/input.schema.json": json.dumps({"type": "object", "properties": {}}),
        "assets/parameter.schema.json": json.dumps(parameter),
        "assets/output.schema.json": json.dumps(
            {"type": "object", "properties": {"parameter": {"type": "object"}}}
        ),
        "scripts/run.py": RUN_PY,
    }


@pytest.fixture(scope="module")
def probe(served, browser):
    context = browser.new_context()
    answer = context.request.post(
        f"{served.base}/v1/skill-packages",
        multipart={
            "package": {
                "name": "p.zip",
                "mimeType": "application/zip",
                "buffer": zip_bytes(probe_skill()),
            }
        },
    )
    assert answer.ok, answer.text()
    context.close()
    return served


def run_from_form(page, base: str, lines: int = 0, level: str | None = None) -> None:
    page.goto(f"{base}/ui/skills/{SKILL}")
    page.locator("#f-parameter-lines").fill(str(lines))
    if level is not None:
        page.locator("#f-parameter-level").select_option(label=level)
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    page.locator("#result .result-json").wait_for(timeout=60_000)


def test_a_script_skill_is_listed_as_script_not_with_engines(probe, page):
    """The list named every engine for a script skill whose runner.json names none (all
    allowed), though it runs its own script: its own page said so, the list did not."""
    page.goto(f"{probe.base}/ui/skills")
    cells = page.locator("#skills tr", has_text=SKILL).locator("td")
    assert cells.nth(3).inner_text() == "script"
    prime = page.locator("#skills tr", has_text="demo-prime-number").locator("td")
    assert prime.nth(3).inner_text() == "script"


def test_an_enum_of_integers_is_sent_as_integers(probe, page):
    """The list offered 1, 2, 3 and sent "2": the API refused the form as drawn, its default
    untouched ('2' is not one of [1, 2, 3])."""
    page.goto(f"{probe.base}/ui/skills/{SKILL}")
    assert page.locator("#f-parameter-level").locator("option:checked").inner_text() == "2"
    assert page.locator("#f-parameter-flavour").locator("option:checked").inner_text() == "—"
    run_from_form(page, probe.base)  # the default as drawn
    result = json.loads(page.locator("#result .result-json").inner_text())
    assert result["status"] == "succeeded", result
    assert result["data"]["parameter"] == {"level": 2, "lines": 0}  # flavour left out: not sent
    run_from_form(page, probe.base, level="3")
    result = json.loads(page.locator("#result .result-json").inner_text())
    assert result["data"]["parameter"] == {"level": 3, "lines": 0}
    shot(page, "20-form-integer-enum")


def test_each_problem_inside_an_object_field_is_shown_under_it_with_where_it_is(probe, page):
    """The problems of `opts/depth` and `opts/tags/0` were shown under opts as the last one's
    bare message: which key of the JSON was meant, and the other problem, were lost."""
    page.goto(f"{probe.base}/ui/skills/{SKILL}")
    page.locator("#f-parameter-opts").fill('{"depth": 0, "tags": [1]}')
    page.get_by_role("button", name="Run").click()
    error = page.locator("#f-parameter-opts-error")
    page.wait_for_function("document.getElementById('f-parameter-opts-error').textContent")
    shown = error.inner_text()
    assert "depth: 0 is less than the minimum of 1" in shown
    assert "tags/0: 1 is not of type 'string'" in shown
    assert page.locator("#f-parameter-opts").get_attribute("aria-invalid") == "true"
    assert page.url.endswith(f"/ui/skills/{SKILL}")  # nothing was created
    shot(page, "23-form-nested-errors")


def test_a_form_sent_after_the_session_ended_offers_the_login(probe, page):
    """The form showed the API's advice about Authorization headers."""
    page.route(
        "**/v1/jobs",
        lambda route: route.fulfill(
            status=401,
            content_type="application/json",
            body='{"error": {"code": "UNAUTHORIZED", "message": "send a Bearer token"}}',
        ),
    )
    page.goto(f"{probe.base}/ui/skills/{SKILL}")
    page.get_by_role("button", name="Run").click()
    top = page.locator("#form-error")
    top.filter(has_text="session").wait_for()
    assert top.inner_text().startswith("Your session has ended. Log in again")
    login = top.get_by_role("link", name="Log in again").get_attribute("href")
    assert login == f"/ui/login?next=%2Fui%2Fskills%2F{SKILL}"


def test_an_output_chunk_longer_than_its_event_is_shown_whole_on_demand(probe, page):
    """A raw event carries a chunk's first 2,000 characters: the stderr pane ended there, at
    'warning 2', with no sign that the rest (here the traceback) was missing."""
    run_from_form(page, probe.base, lines=LINES)
    pane = page.locator("#stderr")
    more = pane.locator("button.more")  # one per chunk cut (the tail reads it in one or more)
    assert more.count() >= 1
    assert "more bytes of this output" in more.first.inner_text()
    assert "Traceback" not in pane.inner_text()
    for _ in range(more.count()):
        count = more.count()
        more.first.click()
        page.wait_for_function(f"document.querySelectorAll('#stderr button.more').length < {count}")
    printed = [f"warning {i}" for i in range(LINES)] + ["Traceback: the last line"]
    assert pane.inner_text().splitlines() == printed  # all of it, once, in order
    shot(page, "21-run-output-chunk-shown-whole")


def test_an_artifact_whose_name_needs_escaping_downloads(probe, page):
    """The link was the bare path: a '#' or '?' in a file name cut the URL (404)."""
    run_from_form(page, probe.base)
    link = page.locator("#result .artifacts a", has_text="r#1 ?.txt")
    href = link.get_attribute("href")
    assert "%23" in href and "%3F" in href
    answer = page.request.get(f"{probe.base}{href}")
    assert answer.status == 200 and answer.text() == "hash file"


def test_a_word_wider_than_the_conversation_breaks_inside_it(probe, page):
    """A printed line of 3,000 letters without a space slid out of its message sideways: the
    conversation pane scrolled sideways to read it. A script's printed output was folded
    under a bare 'stdout' line per chunk: a run looked idle while it printed."""
    run_from_form(page, probe.base)
    page.locator("#conversation .msg.agent", has_text="WWWW").wait_for()
    # a script's output is shown as it is printed, not folded away (an engine's raw stream is)
    raw = page.locator("#conversation details.raw", has_text="WWWW")
    assert raw.get_attribute("open") is not None and raw.locator("pre").is_visible()
    wide = "(p) => p.scrollWidth - p.clientWidth"
    assert page.locator("#conversation").evaluate(wide) <= 0
    shot(page, "28-run-wide-word-wraps")


def test_a_stream_the_browser_gave_up_on_is_said_so(probe, page):
    """An event stream answered with an error (an ended session, a proxy's page) is closed
    for good by the browser: the page stayed as it was, looking live."""
    created = page.request.post(  # it waits for its upload: queued, its page follows it
        f"{probe.base}/v1/jobs", data={"skill_id": "demo-prime-number", "parameter": {}}
    )
    assert created.ok, created.text()
    rid = created.json()["request_id"]
    page.route(
        "**/events?*",
        lambda route: route.fulfill(
            status=401,
            content_type="application/json",
            body='{"error": {"code": "UNAUTHORIZED", "message": "log in"}}',
        ),
    )
    page.route(
        f"**/v1/management/runs/{rid}",
        lambda route: route.fulfill(
            status=401,
            content_type="application/json",
            body='{"error": {"code": "UNAUTHORIZED", "message": "log in"}}',
        ),
    )
    page.goto(f"{probe.base}/ui/runs/{rid}")
    note = page.locator("#live-stopped")
    note.wait_for(timeout=10_000)
    # a session that ended says so, with the way back in (not the API's advice on headers)
    assert "Live updates stopped (Your session has ended. Log in again)" in note.inner_text()
    login = note.get_by_role("link", name="Log in again").get_attribute("href")
    assert login == f"/ui/login?next=%2Fui%2Fruns%2F{rid}"
    assert note.get_by_role("link", name="Reload the page").get_attribute("href") == page.url
    shot(page, "22-run-live-updates-stopped")
    assert page.request.post(f"{probe.base}/v1/jobs/{rid}/cancel").ok


def test_a_refused_cancel_says_why_and_can_be_tried_again(probe, page):
    """Cancel run ignored the answer: refused (a read-only token, a session that ended), the
    button stayed disabled, the run went on and the page said nothing."""
    created = page.request.post(
        f"{probe.base}/v1/jobs", data={"skill_id": "demo-prime-number", "parameter": {}}
    )
    rid = created.json()["request_id"]  # it waits for its upload
    page.route(
        "**/cancel",
        lambda route: route.fulfill(
            status=403,
            content_type="application/json",
            body='{"error": {"code": "FORBIDDEN", "message": "the token lacks the scope"}}',
        ),
    )
    page.goto(f"{probe.base}/ui/runs/{rid}")
    page.get_by_role("button", name="Cancel run").click()
    error = page.locator("#cancel-error")
    error.filter(has_text="FORBIDDEN").wait_for()
    assert error.inner_text() == "FORBIDDEN: the token lacks the scope"
    assert page.get_by_role("button", name="Cancel run").is_enabled()
    assert page.locator("#status").inner_text() == "queued"
    shot(page, "26-run-cancel-refused")
    page.unroute("**/cancel")
    page.get_by_role("button", name="Cancel run").click()
    page.locator("#status.st-canceled").wait_for()
    assert error.inner_text() == ""


def test_a_number_the_browser_cannot_read_is_refused_not_left_out(probe, page):
    page.goto(f"{probe.base}/ui/skills/{SKILL}")
    jobs = []
    page.on("request", lambda r: jobs.append(r) if r.url.endswith("/v1/jobs") else None)
    for field in ("#f-parameter-lines", "#f-opt-timeout_sec"):
        page.locator(field).fill("")
        page.locator(field).press_sequentially("1e")  # typed; its value is "" to the page
        page.get_by_role("button", name="Run").click()
        assert page.locator(f"{field}-error").inner_text() == "Not a number."
        assert page.locator(field).get_attribute("aria-invalid") == "true"
        page.locator(field).fill("1")
    shot(page, "41-form-number-not-read")
    assert jobs == []  # no run started with the default in place of what was typed
