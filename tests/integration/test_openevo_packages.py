"""skill.json skills through POST /v1/skill-packages (installed, then run by a real worker,
updated with a higher version) and POST /v1/temp-skill-runs (run once, never installed). On
SQLite: what differs from a SKILL.md package is the format, and an install is files and a row."""

from __future__ import annotations

import json

import pytest

from runner_core.skills.registry import SkillRegistry
from tests.helpers import wait_for
from tests.integration.openevo_stack import install_node_runners, openevo_stack
from tests.integration.services import SQLITE_ONLY
from tests.packages import package_upload

pytestmark = [pytest.mark.integration, SQLITE_ONLY]

DOUBLE = {
    "name": "double_it",
    "description": "Doubles a number",
    "category": "math",
    "input": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
    "output": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
    "mode": "code",
    "version": "1.0.0",
}
DOUBLE_PY = "def execute(input, ctx):\n    return {'n': input['n'] * 2}\n"
QUAD = {
    "name": "quad_it",
    "description": "Doubles twice through double_it",
    "category": "math",
    "input": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
    "output": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
    "mode": "composite",
    "calls": ["double_it"],
    "pipeline": [
        {"step": "once", "skill": "double_it", "input": {"n": "{{input.n}}"}},
        {"step": "twice", "skill": "double_it", "input": {"n": "{{steps.once.n}}"}},
    ],
    "outputMapping": {"n": "{{steps.twice.n}}"},
}


@pytest.fixture(scope="module", autouse=True)
def node_runners():
    install_node_runners()


@pytest.fixture
def stack(backend, tmp_path):
    """A stack per test: the tests install skills of the same names."""
    with openevo_stack(tmp_path, backend, concurrency=2) as stack:
        yield stack


def wait_temp(stack, rid):
    def ended():
        status = stack.client.get(f"/v1/temp-skill-runs/{rid}").json["status"]
        return status if status in ("succeeded", "failed", "canceled") else None

    return wait_for(ended, 60, 0.05)


def install(stack, files):
    return stack.client.post("/v1/skill-packages", data=package_upload(files))


def run(stack, skill_id, inline):
    resp = stack.client.post("/v1/jobs", json={"skill_id": skill_id, "input": inline})
    assert resp.status_code == 200, resp.json
    assert stack.wait(resp.json["request_id"], 60)["status"] == "succeeded"
    return stack.client.get(f"/v1/jobs/{resp.json['request_id']}/result").json["result"]["data"]


def test_skill_json_packages_install_run_and_update(stack):
    resp = install(stack, {"skill.json": json.dumps(DOUBLE), "index.py": DOUBLE_PY})
    assert resp.status_code == 200, resp.json  # files at the zip's root
    assert resp.json["skill_id"] == "double_it" and resp.json["version"] == "1.0.0"
    resp = install(stack, {"quad/skill.json": json.dumps(QUAD)})  # in a folder
    assert resp.status_code == 200, resp.json
    skill = stack.client.get("/v1/skills/quad_it").json
    assert skill["health"] == "ok" and skill["format"] == "skill.json"
    assert run(stack, "quad_it", {"n": 3}) == {"n": 12}
    triple = "def execute(input, ctx):\n    return {'n': input['n'] * 3}\n"
    same = install(stack, {"skill.json": json.dumps(DOUBLE), "index.py": triple})
    assert same.status_code == 400 and same.json["error"]["code"] == "SKILL_VERSION_NOT_INCREASED"
    newer = {**DOUBLE, "version": "1.1.0"}
    assert install(stack, {"skill.json": json.dumps(newer), "index.py": triple}).status_code == 200
    assert run(stack, "quad_it", {"n": 3}) == {"n": 27}  # not the cached 12: callees count


def test_a_package_calling_an_unknown_skill_or_clashing_with_a_name_is_refused(stack):
    lonely = {**QUAD, "name": "lonely", "calls": ["nowhere"]}
    lonely["pipeline"] = [{"step": "a", "skill": "nowhere", "input": {}}]
    lonely["outputMapping"] = {"n": "{{steps.a.n}}"}
    resp = install(stack, {"skill.json": json.dumps(lonely)})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SKILL_PACKAGE_INVALID"
    assert any("nowhere" in e for e in resp.json["error"]["details"]["errors"])
    assert stack.client.get("/v1/skills/lonely").status_code == 404
    # word_stats is installed in a category folder: an update replaces it there
    stats = SkillRegistry(stack.settings.skills_dir).root_of("word_stats")
    assert stats is not None and stats.parent.name == "text"
    raw = json.loads((stats / "skill.json").read_text())
    raw["version"] = "9.0.0"
    files = {"skill.json": json.dumps(raw), "index.py": (stats / "index.py").read_text()}
    assert install(stack, files).status_code == 200
    assert stack.client.get("/v1/skills/word_stats").json["health"] == "ok"
    assert json.loads((stats / "skill.json").read_text())["version"] == "9.0.0"


def test_temp_skill_runs_of_skill_json_code_and_composite(stack):
    data = package_upload({"skill.json": json.dumps(DOUBLE), "index.py": DOUBLE_PY})
    data["request"] = json.dumps({"input": {"n": 21}})
    resp = stack.client.post("/v1/temp-skill-runs", data=data)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    assert wait_temp(stack, rid) == "succeeded"
    body = stack.client.get(f"/v1/temp-skill-runs/{rid}/result").json
    assert body["result"]["data"] == {"n": 42}
    assert stack.client.get("/v1/skills/double_it").status_code == 404  # never installed
    # a temp composite calls installed skills
    assert (
        install(stack, {"skill.json": json.dumps(DOUBLE), "index.py": DOUBLE_PY}).status_code == 200
    )
    data = package_upload({"skill.json": json.dumps(QUAD)})
    data["request"] = json.dumps({"input": {"n": 5}})
    resp = stack.client.post("/v1/temp-skill-runs", data=data)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    assert wait_temp(stack, rid) == "succeeded"
    body = stack.client.get(f"/v1/temp-skill-runs/{rid}/result").json
    assert body["result"]["data"] == {"n": 20}
