"""Composite skill.json skills as workflows of child runs, through the API, Redis and a real
worker: the seed's research_and_summarize, parallel steps, condition, continueOnError, cancel
of the parent and an output violating `output`. The chain of child runs, steps claimed at once
and the parent's cancel run on SQLite and Postgres; which steps run and what the output holds is
decided in Python from the steps' ends, on SQLite."""

from __future__ import annotations

import time

import pytest

from tests.integration.openevo_stack import install_node_runners, openevo_stack, start
from tests.integration.services import SQLITE_ONLY

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def node_runners():
    install_node_runners()


@pytest.fixture(scope="module")
def stack(backend, tmp_path_factory):
    """One worker for the module (per database): no test stops or reconfigures it, and no two
    send the same body (the result cache would answer the second)."""
    with openevo_stack(tmp_path_factory.mktemp(backend), backend, concurrency=3) as stack:
        yield stack


def result_of(stack, rid):
    return stack.client.get(f"/v1/jobs/{rid}/result").json["result"]


def test_research_and_summarize_chains_map_join_typed_values_and_output_mapping(stack):
    rid = start(stack, "research_and_summarize", {"topic": "queue runs"})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    result = result_of(stack, rid)
    sources = result["data"]["sources"]
    assert isinstance(sources, list) and len(sources) == 3  # whole-string template: an array
    # summarize got the snippets joined by a blank line: its first line is the first snippet
    first = sources[0]["snippet"].splitlines()[0]
    assert result["data"]["summary"].endswith(f"first: {first}")
    steps = result["steps"]
    assert [s["step"] for s in steps] == ["search", "summarize"]
    assert all(s["status"] == "succeeded" and s["duration_ms"] >= 0 for s in steps)
    child = stack.client.get(f"/v1/jobs/{steps[0]['request_id']}").json
    assert child["status"] == "succeeded"  # each step is a run of its own
    # a child names its parent and step wherever a run is shown; the parent names none
    assert (child["parent_request_id"], child["step_name"]) == (rid, "search")
    parent = stack.client.get(f"/v1/jobs/{rid}").json
    assert (parent["parent_request_id"], parent["step_name"]) == (None, None)
    managed = stack.client.get(f"/v1/management/runs/{steps[1]['request_id']}").json
    assert (managed["parent_request_id"], managed["step_name"]) == (rid, "summarize")
    listed = {
        r["request_id"]: r
        for r in stack.client.get("/v1/management/runs?limit=1000").json["runs"]
        + stack.client.get("/v1/jobs?limit=100").json["items"]
    }
    assert listed[steps[1]["request_id"]]["parent_request_id"] == rid
    assert listed[rid]["parent_request_id"] is None
    page = stack.client.get(f"/ui/runs/{steps[0]['request_id']}").get_data(as_text=True)
    assert f'Step <strong>search</strong> of <a href="/ui/runs/{rid}">' in page
    page = stack.client.get("/ui/runs?skill_id=memory_search").get_data(as_text=True)
    assert f'step search of <a href="/ui/runs/{rid}">' in page
    events = (stack.settings.runs_dir / stack.wait(rid, 1)["run_id"] / "events.jsonl").read_text()
    assert events.count('"step.started"') == 2


def test_independent_steps_overlap_in_time(stack):
    rid = start(stack, "parallel_pair", {"ms": 1500})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    data = result_of(stack, rid)["data"]
    a, b = data["a"], data["b"]
    assert a["started"] < b["ended"] and b["started"] < a["ended"], data
    assert data["tags"] == "A+B"


@SQLITE_ONLY
def test_condition_false_skips_and_continue_on_error_goes_on(stack):
    rid = start(stack, "guarded_steps", {})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    result = result_of(stack, rid)
    assert result["data"] == {"extra": "skipped", "failed": True, "tag": "true"}
    status = {s["step"]: s["status"] for s in result["steps"]}
    assert status == {"extra": "skipped", "broken": "failed", "after": "succeeded"}


def test_cancel_of_the_parent_cancels_its_running_steps(stack):
    rid = start(stack, "parallel_pair", {"ms": 20000})
    deadline = time.time() + 20
    while time.time() < deadline:
        events = (
            stack.settings.runs_dir
            / stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
            / "events.jsonl"
        )
        if events.is_file() and events.read_text().count('"step.started"') == 2:
            break
        time.sleep(0.1)
    time.sleep(1.0)  # both steps running
    assert stack.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    began = time.time()
    assert stack.wait(rid, 20)["status"] == "canceled"
    steps = result_of(stack, rid)["steps"]
    for step in steps[:2]:
        assert stack.wait(step["request_id"], 20)["status"] == "canceled"
    assert time.time() - began < 15


@SQLITE_ONLY
def test_output_violating_the_output_schema_fails(stack):
    rid = start(stack, "bad_output", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"


TEXT = "Workers take runs from the queue. The queue keeps runs. Nothing else matters here."


@SQLITE_ONLY
def test_the_example_skills_word_stats_and_text_report_run_as_written(stack):
    stats = start(stack, "word_stats", {"text": TEXT})
    assert stack.wait(stats, 60)["status"] == "succeeded"
    data = result_of(stack, stats)["data"]
    assert data["words"] == 14 and data["sentences"] == 3
    assert data["top_words"][:2] == [{"word": "runs", "count": 2}, {"word": "queue", "count": 2}]
    report = start(stack, "text_report", {"text": TEXT})
    assert stack.wait(report, 90)["status"] == "succeeded"
    result = result_of(stack, report)
    assert result["data"] == {
        "words": 14,
        "keywords": ["runs", "queue"],  # a typed array through map
        "quotes": "Workers take runs from the queue.\nThe queue keeps runs.",  # join: '\n'
    }


@SQLITE_ONLY
def test_a_missing_optional_input_leaves_the_key_out_so_defaults_apply(stack):
    rid = start(stack, "optional_through", {})
    status = stack.wait(rid, 60)
    assert status["status"] == "succeeded", status
    result = result_of(stack, rid)
    assert result["data"] == {"tag": ""}  # sleep_ms's default tag; no note at all
    (step,) = result["steps"]
    child = stack.client.get(f"/v1/jobs/{step['request_id']}/result").json["result"]
    assert child["status"] == "succeeded"
    rid = start(stack, "optional_through", {"tag": "given", "note": "n", "ms": 5})
    assert stack.wait(rid, 60)["status"] == "succeeded"
    assert result_of(stack, rid)["data"] == {"tag": "given", "note": "n"}


@SQLITE_ONLY
def test_a_model_nothing_runs_is_named_in_a_warning_not_dropped_silently(stack):
    # a composite without llm steps (code steps only) and a code skill run no engine: the model
    # a client sent is kept as sent and the run says it was not used
    for skill_id, inline in (("text_report", {"text": TEXT}), ("shout", {"text": "quiet"})):
        body = {"skill_id": skill_id, "input": inline, "model": "some-model"}
        resp = stack.client.post("/v1/jobs", json=body)
        assert resp.status_code == 200, resp.json
        status = stack.wait(resp.json["request_id"], 90)
        assert status["status"] == "succeeded", status
        (warning,) = [w for w in status["warnings"] if w["code"] == "MODEL_IGNORED"]
        assert warning["details"] == {"model": "some-model"}, warning
    plain = stack.wait(start(stack, "shout", {"text": "no model"}), 60)
    assert [w for w in plain["warnings"] if w["code"] == "MODEL_IGNORED"] == []
