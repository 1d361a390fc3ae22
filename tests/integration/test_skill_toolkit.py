"""The skills `skill-runner new` writes run as written, through the real service (API, broker,
worker), and `skill-runner validate` passes them (the author's toolkit, docs/skills.md)."""

from __future__ import annotations

import pytest

from runner_core.skills.check import check_skill_dir
from runner_core.skills.scaffold import new_skill
from tests.integration.services import SQLITE_ONLY

TEXT = "Skills are folders. They run anywhere."


@pytest.fixture
def stack(module_stack):
    """The module's own API + worker; each test installs the skill it makes under a new name."""
    return module_stack


@SQLITE_ONLY
@pytest.mark.parametrize(("name", "kind"), [("made-script", "script"), ("made_code", "skill.json")])
def test_a_new_skill_validates_and_runs_as_written(stack, name, kind):
    root = new_skill(stack.settings.skills_dir, name, kind)
    check = check_skill_dir(root, stack.settings.skills_dir)
    assert check.valid and check.skill_id == name, check.as_dict()
    created = stack.client.post("/v1/jobs", json={"skill_id": name, "input": {"text": TEXT}})
    assert created.status_code == 200, created.json
    status = stack.wait(created.json["request_id"], timeout=60)
    assert status["status"] == "succeeded", status
    result = stack.client.get(f"/v1/jobs/{created.json['request_id']}/result").json["result"]
    assert result["data"] == {"summary": "Skills are folders", "words": 6}
