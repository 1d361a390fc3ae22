"""A form's file field and its `extensions` in a real browser: a file the run would refuse is
refused under its field, and one of a two-dot extension is uploaded under it."""

from __future__ import annotations

import json

import pytest

from tests.browser.shots import shot
from tests.helpers import zip_bytes

pytestmark = pytest.mark.browser

SKILL = "ui-file-probe"
RUN_PY = """\
import json, os
from pathlib import Path

ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
data = Path(ctx["input"]["data"])
result = {"name": data.name, "text": data.read_text()}
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result))
"""


def file_probe() -> dict[str, str]:
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
        "automation": {"timeout_sec": 60},
    }
    data = {"type": "string", "x-input-source": "file", "extensions": [".csv", ".tar.gz"]}
    inputs = {"type": "object", "properties": {"data": data}, "required": ["data"]}
    return {
        "SKILL.md": f'---\nname: {SKILL}\ndescription: "Probe file fields."\n---\n',
        "assets/runner.json": json.dumps(manifest),
        "assets/input.schema.json": json.dumps(inputs),
        "assets/parameter.schema.json": json.dumps({"type": "object", "properties": {}}),
        "assets/output.schema.json": json.dumps({"type": "object"}),
        "scripts/run.py": RUN_PY,
    }


@pytest.fixture(scope="module")
def probe(served, browser):
    context = browser.new_context()
    package = {"name": "p.zip", "mimeType": "application/zip", "buffer": zip_bytes(file_probe())}
    answer = context.request.post(
        f"{served.base}/v1/skill-packages", multipart={"package": package}
    )
    assert answer.ok, answer.text()
    context.close()
    return served


def choose(page, base: str, name: str, text: str) -> None:
    page.goto(f"{base}/ui/skills/{SKILL}")
    page.locator("#f-input-data").set_input_files(
        {"name": name, "mimeType": "application/octet-stream", "buffer": text.encode()}
    )
    page.get_by_label("Run again even if a cached result exists").check()
    page.get_by_role("button", name="Run").click()


def test_a_file_of_another_extension_is_refused_under_its_field(probe, page):
    jobs = []
    page.on("request", lambda r: jobs.append(r) if r.url.endswith("/v1/jobs") else None)
    choose(page, probe.base, "report.pdf", "%PDF")
    error = page.locator("#f-input-data-error")
    error.wait_for(state="visible")
    assert error.inner_text() == "Choose a .csv or .tar.gz file."
    shot(page, "45-form-file-extension-refused")
    assert jobs == []  # no run made only to fail INPUT_FILE_EXTENSION_NOT_ALLOWED


def test_a_file_of_a_two_dot_extension_is_uploaded_under_it(probe, page):
    choose(page, probe.base, "backup.tar.gz", "packed")
    page.wait_for_url("**/ui/runs/*")
    page.locator("#result .result-json").wait_for(timeout=60_000)
    assert page.locator("#status").inner_text() == "succeeded", page.locator(
        "#run-error"
    ).inner_text()
    result = json.loads(page.locator("#result .result-json").inner_text())
    assert result["data"] == {"name": "data.tar.gz", "text": "packed"}
