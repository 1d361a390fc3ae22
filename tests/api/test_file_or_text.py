"""A skill whose input is a file or a text (`anyOf` of the two): which files come is known
only with the upload, so a job is refused at create only when no upload could make its inline
input valid."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

SKILL = "file-or-text"
INPUT = {
    "type": "object",
    "properties": {
        "doc": {"type": "string", "x-input-source": "file"},
        "text": {"type": "string", "x-input-source": "inline"},
        "lang": {"type": "string", "x-input-source": "inline"},
    },
    "anyOf": [{"required": ["doc"]}, {"required": ["text"]}],
    "required": ["lang"],
}


@pytest.fixture(autouse=True)
def skill(skills_root: Path) -> None:
    dest = skills_root / SKILL
    shutil.copytree(skills_root / "demo-prime-number", dest)
    runner = dest / "assets" / "runner.json"
    runner.write_text(json.dumps(json.loads(runner.read_text()) | {"id": SKILL}))
    (dest / "assets" / "input.schema.json").write_text(json.dumps(INPUT))
    skill_md = dest / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("name: demo-prime-number", f"name: {SKILL}"))


@pytest.mark.parametrize("inline", [{"lang": "en"}, {"lang": "en", "text": "hello"}])
def test_a_job_that_an_upload_or_its_text_makes_valid_is_accepted(client, inline):
    resp = client.post("/v1/jobs", json={"skill_id": SKILL, "input": inline})
    assert resp.status_code == 200, resp.json


def test_an_inline_error_no_upload_mends_is_still_refused(client):
    resp = client.post("/v1/jobs", json={"skill_id": SKILL, "input": {"text": 5}})
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED"
    assert sorted((e["path"], e["validator"]) for e in error["details"]["errors"]) == [
        ("", "required"),
        ("text", "type"),
    ]
