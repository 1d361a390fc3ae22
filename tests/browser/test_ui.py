"""The web UI in a real browser: run a skill from its generated form with a file upload, answer
an interactive run's question from the reply box, preview the files, see a validation error
next to its field. Each page is photographed into .test-artifacts/ui/."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.browser.shots import shot

pytestmark = pytest.mark.browser


def test_skills_list_shows_health_and_engines(served, page):
    page.goto(f"{served.base}/ui/skills")
    row = page.locator("tr", has_text="demo-prime-number")
    assert row.locator(".badge").inner_text() == "ok"
    assert "codex" in page.locator("tr", has_text="pick-title").inner_text()
    assert "by Skill Runner" in page.locator("tr", has_text="demo-echo").inner_text()
    shot(page, "01-skills")
    page.get_by_label("Category").select_option("text")
    page.wait_for_url("**category=text**")
    rows = page.locator("#skills tbody tr")
    assert rows.count() >= 3 and all("text" in t for t in rows.all_inner_texts())
    assert page.locator("#skills tr", has_text="demo-echo").count() == 0
    shot(page, "01-skills-by-category")


def test_a_script_skill_runs_from_its_form_with_a_file_upload(served, page, tmp_path):
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("30\n")
    page.goto(f"{served.base}/ui/skills")
    page.get_by_role("link", name="demo-prime-number").first.click()
    assert page.get_by_label("divisor").input_value() == "1"  # the schema's default
    page.get_by_label("divisor").fill("3")
    page.locator("#f-input-input_file").set_input_files(str(numbers))
    assert page.locator("#f-input-input_file").get_attribute("accept") == ".txt"
    page.get_by_label("Run again even if a cached result exists").check()
    shot(page, "02-skill-form")
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    page.locator("#status.st-succeeded").wait_for(timeout=60_000)
    page.locator("#result .result-json").wait_for()
    result = page.locator("#result .result-json").inner_text()
    assert '"status": "succeeded"' in result
    link = page.locator("#result .artifacts a", has_text="primes.md")
    assert link.get_attribute("href").endswith("/artifacts/artifacts/primes.md")
    page.locator('#tree a[data-path="artifacts/primes.md"]').click()
    page.locator("#preview pre.file-text").wait_for()
    assert "3" in page.locator("#preview pre.file-text").inner_text()
    page.locator('#tree a[data-path="result/result.json"]').click()
    page.locator("#preview .preview-head", has_text="result/result.json").wait_for()
    shot(page, "03-run-script-finished")


def tokens_in(line: str) -> int:
    """41227 from the run page's 'Tokens 41,227 in (10,306 cached) · 53 out ...'."""
    assert line.startswith("Tokens "), line
    return int(line.split(" ")[1].replace(",", ""))


def test_an_interactive_run_asks_and_the_reply_box_answers(served, page):
    page.goto(f"{served.base}/ui/skills/pick-title")
    page.get_by_label("Engine").select_option("codex")
    page.get_by_label("Execution mode").select_option("interactive")
    page.get_by_label("text").first.fill("hello")
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    choice = page.get_by_role("button", name="The bold one")
    choice.wait_for(timeout=90_000)  # the question arrives live from the event stream
    assert "Which title" in page.locator("#question").inner_text()
    assert page.locator("#conversation .msg.question").count() == 1
    assert page.locator("#status").inner_text() == "waiting_user"
    # the first turn's tokens, from its state event (codex reports cached input and reasoning)
    usage = page.locator("#usage")
    usage.wait_for()
    first = tokens_in(usage.inner_text())
    assert first > 0 and "cached" in usage.inner_text() and "reasoning" in usage.inner_text()
    shot(page, "04-run-waiting-for-a-reply")
    choice.click()
    page.locator("#status.st-succeeded").wait_for(timeout=90_000)
    # both turns, once the run ended
    page.wait_for_function(
        "n => Number(document.getElementById('usage').textContent.split(' ')[1].replace(/,/g, '')) > n",
        arg=first,
    )
    # the answer as it was chosen: the option's label (its value TITLE-B-7 went to the agent)
    assert page.locator("#conversation .msg.user").inner_text() == "The bold one"
    assert page.locator("#reply-controls button").count() == 0  # nothing pending any more
    page.locator("#result .result-json").wait_for()
    assert "TITLE-B-7" in page.locator("#result .result-json").inner_text()
    assert page.locator("#conversation details.tool").count() >= 1  # tool calls folded
    page.locator('#tree a[data-path="events.jsonl"]').click()
    page.locator("#preview pre.file-text").wait_for()
    assert "user.input.required" in page.locator("#preview pre.file-text").inner_text()
    assert page.locator("#tree a", has_text="auth.json").count() == 0
    shot(page, "05-run-interactive-finished")


def test_a_refused_value_shows_next_to_its_field(served, page):
    page.goto(f"{served.base}/ui/skills/demo-prime-number")
    page.get_by_label("divisor").fill("0")  # the schema's minimum is 1
    page.locator("#f-input-input_file").set_input_files(
        files=[{"name": "n.txt", "mimeType": "text/plain", "buffer": b"10\n"}]
    )
    page.get_by_role("button", name="Run").click()
    error = page.locator("#f-parameter-divisor-error")
    error.wait_for(state="visible")
    page.wait_for_function("document.getElementById('f-parameter-divisor-error').textContent")
    assert "minimum" in error.inner_text()
    assert page.get_by_label("divisor").get_attribute("aria-invalid") == "true"
    assert "/ui/skills/" in page.url  # nothing was created
    shot(page, "06-validation-error")


def test_runs_list_filters_and_engines_page(served, page):
    page.goto(f"{served.base}/ui/runs")
    assert page.locator("#runs tbody tr").count() >= 2
    page.get_by_label("Skill").select_option("pick-title")
    page.wait_for_url("**skill_id=pick-title**")
    rows = page.locator("#runs tbody tr")
    assert rows.count() >= 1 and all("pick-title" in t for t in rows.all_inner_texts())
    shot(page, "07-runs-filtered")
    # the page runs each installed CLI's `--version` (cached for a few minutes; kilo's start
    # alone is ~12 s): on a slow, loaded machine that exceeds Playwright's default 30 s
    page.goto(f"{served.base}/ui/engines", timeout=120_000)
    codex = page.locator("tr", has_text="codex")
    assert "workspace-write" in codex.inner_text()
    retired = page.locator("tr", has_text="iflow").locator(".badge", has_text="retired")
    assert "shut down" in retired.get_attribute("title")
    shot(page, "08-engines")


def test_an_output_validation_failure_shows_what_to_fix(served, page):
    """OUTPUT_VALIDATION_FAILED on the run page: the first problem in the message, then the
    likeliest cause and each problem (seed 003 §7)."""
    body = json.dumps({"skill_id": "needs-normalizer", "parameter": {"mode": "broken"}}).encode()
    request = urllib.request.Request(
        f"{served.base}/v1/jobs", body, {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request) as answer:
        rid = json.load(answer)["request_id"]
    page.goto(f"{served.base}/ui/runs/{rid}")
    page.locator("#status.st-failed").wait_for(timeout=60_000)
    error = page.locator("#run-error")
    error.locator("ul.hints li").first.wait_for()
    assert "OUTPUT_VALIDATION_FAILED" in error.inner_text()
    assert error.locator("ul.hints li").all_inner_texts() == [
        '$.count: should be integer, got a string "three"'
    ]
    assert "raw/skill_result.json" in error.locator("p.cause").inner_text()
    # the empty state under its heading, not a heading over nothing
    assert page.locator("#result .no-artifacts").inner_text() == "No artifacts."
    shot(page, "13-run-output-invalid")


def test_a_one_off_run_is_listed_and_watched_like_a_job(served, page):
    """A one-off run (POST /v1/temp-skill-runs, its package never installed) appears in the
    runs list marked one-off; its page follows it to the end and shows its result, artifacts and
    bundle from its own routes."""
    from tests.helpers import zip_bytes
    from tests.packages import echo_skill

    answer = page.request.post(
        f"{served.base}/v1/temp-skill-runs",
        multipart={
            "package": {
                "name": "skill.zip",
                "mimeType": "application/zip",
                "buffer": zip_bytes(echo_skill(message="from a one-off run")),
            },
            "request": json.dumps({"input": {"text": "hi"}}),
        },
    )
    assert answer.ok, answer.text()
    rid = answer.json()["request_id"]
    page.goto(f"{served.base}/ui/runs")
    row = page.locator("tr", has_text=rid[:8])
    assert "one-off" in row.inner_text()
    row.get_by_role("link").click()
    page.locator("#status.st-succeeded").wait_for(timeout=60_000)
    page.locator("#result .result-json").wait_for()
    assert "from a one-off run" in page.locator("#result .result-json").inner_text()
    bundle = page.get_by_role("link", name="Download the bundle")
    assert bundle.get_attribute("href") == f"/v1/temp-skill-runs/{rid}/bundle"
    assert page.locator("h1 .badge.one-off").count() == 1
    shot(page, "14-one-off-run")


def test_a_finished_runs_warnings_are_shown_once(served, page):
    """The page draws the run's warnings, and draws them again once it sees the run end: the
    second drawing replaces the first, never adds to it."""
    answer = page.request.post(
        f"{served.base}/v1/jobs",
        data={
            "skill_id": "needs-normalizer",
            "parameter": {"mode": "ok"},
            "runtime_options": {"no_cache": True},
        },
    )
    assert answer.ok, answer.text()
    rid = answer.json()["request_id"]
    ended = page.request.get(f"{served.base}/v1/jobs/{rid}?wait_sec=60").json()
    logs = page.request.get(f"{served.base}/v1/jobs/{rid}/logs")
    assert ended["status"] == "succeeded", logs.text()
    codes = [w["code"] for w in ended["warnings"]]
    assert "OUTPUT_NORMALIZED_N1" in codes
    page.goto(f"{served.base}/ui/runs/{rid}")
    page.locator("#result .result-json").wait_for(timeout=60_000)  # drawn once the end is seen
    shown = page.locator("#warnings .warning").all_inner_texts()
    assert [t.split(" ")[0] for t in shown] == codes
    shot(page, "15-run-warnings-once")


def test_a_long_unbroken_word_wraps_instead_of_widening_the_page(served, page):
    """An id, a path or a description token longer than the screen wraps inside its place:
    the pages never scroll sideways (the header and its links staying at the left)."""
    from tests.helpers import zip_bytes
    from tests.packages import echo_skill

    files = echo_skill("ui-long-words")
    files["SKILL.md"] = files["SKILL.md"].replace("Echo a message", "Echo " + "a" * 400, 1)
    answer = page.request.post(
        f"{served.base}/v1/skill-packages",
        multipart={
            "package": {"name": "p.zip", "mimeType": "application/zip", "buffer": zip_bytes(files)}
        },
    )
    assert answer.ok, answer.text()
    wide = "document.documentElement.scrollWidth - window.innerWidth"
    page.goto(f"{served.base}/ui/skills")
    assert "a" * 400 in page.locator("tr", has_text="ui-long-words").inner_text()
    assert page.evaluate(wide) <= 0
    page.goto(f"{served.base}/ui/skills/ui-long-words")
    assert page.evaluate(wide) <= 0
    page.goto(f"{served.base}/ui/runs/{'x' * 500}")  # the error page names the unknown id
    assert "REQUEST_NOT_FOUND" in page.locator(".error").inner_text()
    assert page.evaluate(wide) <= 0
    shot(page, "16-long-words-wrap")


def test_a_form_whose_optional_file_is_left_empty_still_starts_the_run(served, page):
    """A skill with file inputs waits for its upload, even when they are all optional: the
    form sends the zip, empty when no file was chosen, so the run starts instead of staying
    queued until the upload wait runs out."""
    from tests.helpers import zip_bytes
    from tests.packages import echo_skill

    files = echo_skill("ui-optional-file", message="no file needed", file_input=True)
    schema = json.loads(files["assets/input.schema.json"])
    files["assets/input.schema.json"] = json.dumps({**schema, "required": []})
    answer = page.request.post(
        f"{served.base}/v1/skill-packages",
        multipart={
            "package": {"name": "p.zip", "mimeType": "application/zip", "buffer": zip_bytes(files)}
        },
    )
    assert answer.ok, answer.text()
    page.goto(f"{served.base}/ui/skills/ui-optional-file")
    assert page.locator("#f-input-notes").get_attribute("type") == "file"
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/runs/*")
    page.locator("#status.st-succeeded").wait_for(timeout=60_000)
    page.locator("#result .result-json").wait_for()
    assert "no file needed" in page.locator("#result .result-json").inner_text()
    shot(page, "17-run-optional-file-left-empty")


def test_a_refused_upload_cancels_the_job_the_form_made(served, page, tmp_path):
    """The form makes the job, then uploads: when the upload is refused (here a proxy in front
    answering 413 with no JSON), the job would wait a day for files nobody sends. The form
    cancels it and shows the refusal."""
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("30\n")
    page.route(
        "**/v1/jobs/*/upload",
        lambda route: route.fulfill(status=413, body="<html>Request Entity Too Large</html>"),
    )
    created = []
    page.on(
        "response",
        lambda r: (
            created.append(r.json()["request_id"])
            if r.url.endswith("/v1/jobs") and r.request.method == "POST" and r.ok
            else None
        ),
    )
    page.goto(f"{served.base}/ui/skills/demo-prime-number")
    page.locator("#f-input-input_file").set_input_files(str(numbers))
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()
    page.locator(".form-error", has_text="HTTP 413").wait_for()
    assert page.url.endswith("/ui/skills/demo-prime-number")  # stays on the form
    assert len(created) == 1
    with urllib.request.urlopen(f"{served.base}/v1/jobs/{created[0]}") as resp:
        status = json.load(resp)
    assert status["status"] == "canceled", status
    shot(page, "18-refused-upload")
