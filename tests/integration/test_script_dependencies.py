"""A script skill's runtime.dependencies that uv cannot provide fail its run with
DEPENDENCIES_UNAVAILABLE and uv's words, whether or not the run's box cuts the network: the
script never ran, so SKILL_SCRIPT_FAILED would say the wrong thing."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_planted_links import write_skill

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # how a run fails does not depend on the database


def test_unresolvable_dependencies_of_a_script_are_dependencies_unavailable(bare_stack):
    stack = bare_stack
    stack.start_worker(extra_env={"SKILL_RUNNER_SANDBOX": "off", "UV_OFFLINE": "1"})
    write_skill(stack.settings.skills_dir, "needs-deps", "print('{\"ok\": true}')")
    runner = stack.settings.skills_dir / "needs-deps/assets/runner.json"
    manifest = json.loads(runner.read_text())
    manifest["runtime"] = {"dependencies": ["no-such-package-for-skill-runner==9.9.9"]}
    runner.write_text(json.dumps(manifest))
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "needs-deps", "input": {"outside": ""}}
    ).json["request_id"]
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "failed"
    error = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["error"]
    assert error["code"] == "DEPENDENCIES_UNAVAILABLE", error
    assert "no-such-package-for-skill-runner" in error["message"]
