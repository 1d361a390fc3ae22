"""skill.json code skills (Python, TypeScript, JavaScript) through the API, Redis and a real
worker: listing, defaults, the harness contract, output validation, timeout and cancel. The
timeout and the cancel end a run and run on SQLite and Postgres; the rest is the skill format's
and runs on SQLite."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.openevo_stack import install_node_runners, openevo_stack
from tests.integration.services import SQLITE_ONLY

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def node_runners():
    install_node_runners()


@pytest.fixture(scope="module")
def stack(backend, tmp_path_factory):
    """One worker for the module (per database): no test stops or reconfigures it, and no two
    send the same body (the result cache would answer the second)."""
    with openevo_stack(tmp_path_factory.mktemp(backend), backend) as stack:
        yield stack


def run(stack, skill_id, inline, timeout=30.0):
    resp = stack.client.post("/v1/jobs", json={"skill_id": skill_id, "input": inline})
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    return rid, stack.wait(rid, timeout)


@SQLITE_ONLY
def test_code_skills_listed_and_run_in_python_typescript_and_javascript(stack):
    listed = {s["id"]: s for s in stack.client.get("/v1/skills").json}
    assert listed["memory_search"]["format"] == "skill.json"
    assert listed["memory_search"]["health"] == "ok", listed["memory_search"]
    assert listed["demo-prime-number"]["format"] == "SKILL.md"
    detail = stack.client.get("/v1/skills/summarize").json
    assert detail["schemas"]["input"]["properties"]["text"]["x-input-source"] == "inline"

    rid, status = run(stack, "memory_search", {"query": "queue runs"})
    assert status["status"] == "succeeded", status
    data = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]
    # limit's default (5) applied; two notes hold both words, one holds "runs"
    assert data["count"] == 3 and [r["score"] for r in data["results"]] == [2, 2, 1]
    run_dir = stack.settings.runs_dir / status["run_id"]
    resolved = json.loads((run_dir / "resolved_input.json").read_text())
    assert resolved["input"] == {"query": "queue runs", "limit": 5}
    logs = stack.client.get(f"/v1/jobs/{rid}/logs").json
    assert "goes to the log" in logs["stderr"] and "[skill] searching for" in logs["stderr"]

    rid, status = run(stack, "summarize", {"text": "alpha\n\nbeta\ngamma"})
    assert status["status"] == "succeeded", status
    data = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]
    assert data == {"summary": "3 notes; first: alpha", "lines": 3}

    rid, status = run(stack, "shout", {"text": "hi"})
    assert status["status"] == "succeeded", status
    assert stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == {"text": "HI"}


@SQLITE_ONLY
def test_input_is_checked_before_any_run(stack):
    resp = stack.client.post("/v1/jobs", json={"skill_id": "memory_search", "input": {}})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "shout", "engine": "codex", "input": {"text": "x"}}
    )
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SKILL_ENGINE_UNSUPPORTED"
    # the seed's composite loads (calls resolved) and checks its input like any skill
    assert stack.client.get("/v1/skills/research_and_summarize").json["health"] == "ok"
    resp = stack.client.post("/v1/jobs", json={"skill_id": "research_and_summarize", "input": {}})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"


@SQLITE_ONLY
def test_output_violating_the_schema_fails_and_a_call_outside_a_composite_is_a_clear_error(stack):
    rid, status = run(stack, "wrong_output", {})
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"
    rid, status = run(stack, "wrong_output", {"nan": True})  # valid to the schema, not JSON
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED", status["error"]
    assert "nan is not a JSON number" in str(status["error"]), status["error"]
    rid, status = run(stack, "shout", {"text": "call"})
    assert status["status"] == "failed" and status["error"]["code"] == "SKILL_SCRIPT_FAILED"
    stderr = stack.client.get(f"/v1/jobs/{rid}/logs").json["stderr"]
    assert "ctx.call('summarize') failed: ctx.call('summarize'): only a composite" in stderr


@SQLITE_ONLY
def test_patterns_that_backtrack_for_ever_are_errors_in_the_api_and_in_the_worker(stack):
    crafted = {"skill_id": "slow_pattern", "input": {"text": "a" * 40 + "!"}}
    resp = stack.client.post("/v1/jobs", json=crafted)
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    assert "took longer than 0.1 s to match" in str(resp.json["error"]["details"])
    rid, status = run(stack, "slow_pattern", {"text": "aa"})
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED", status["error"]
    assert "took longer than 0.1 s to match" in str(status["error"]), status["error"]


@SQLITE_ONLY
def test_an_exception_of_execute_is_the_runs_error_message_and_a_steps_error(stack):
    for skill_id, raised in (("raises", "ValueError"), ("raises_js", "TypeError")):
        rid, status = run(stack, skill_id, {"text": "alpha"})
        assert status["status"] == "failed" and status["error"]["code"] == "SKILL_SCRIPT_FAILED"
        assert status["error"]["message"] == f"execute raised {raised}: no good: alpha", status
        assert "no good: alpha" in stack.client.get(f"/v1/jobs/{rid}/logs").json["stderr"]
    rid, status = run(stack, "tolerated_raises", {"text": "beta"})
    assert status["status"] == "succeeded", status
    assert stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == {
        "py": "execute raised ValueError: no good: beta",
        "js": "execute raised TypeError: no good: beta",
    }


def test_timeout_from_skill_json_and_cancel(stack):
    # sleep_ms declares 30 s; the request's own limit is shorter and wins
    resp = stack.client.post(
        "/v1/jobs",
        json={
            "skill_id": "sleep_ms",
            "input": {"ms": 20000},
            "runtime_options": {"timeout_sec": 1},
        },
    )
    started = time.monotonic()
    status = stack.wait(resp.json["request_id"])
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    assert time.monotonic() - started < 10
    rid = stack.client.post("/v1/jobs", json={"skill_id": "sleep_ms", "input": {"ms": 20000}}).json[
        "request_id"
    ]
    stack.wait(rid, until=("running",))
    assert stack.client.post(f"/v1/jobs/{rid}/cancel").status_code in (200, 202)
    assert stack.wait(rid, 15)["status"] == "canceled"
