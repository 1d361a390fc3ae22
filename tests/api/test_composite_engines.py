"""The engine, model and engine options of a composite's job (its llm steps' choice): what the
API accepts and refuses, what it keeps for the worker, and the engines the catalog shows."""

from __future__ import annotations

import shutil

import pytest

from runner_core.engines import RUNNABLE_ENGINES
from runner_core.store.models import Request, Run
from tests.integration.openevo_stack import OPENEVO_SKILLS

LLM_COMPOSITES = ("shout_then_review", "nested_review")  # an llm step, one composite down too


@pytest.fixture(autouse=True)
def openevo_skills(skills_root):
    shutil.copytree(OPENEVO_SKILLS, skills_root, dirs_exist_ok=True)


def post(client, skill_id: str, **fields):
    body = {"skill_id": skill_id, "input": {"code": "x = 1"}, **fields}
    return client.post("/v1/jobs", json=body)


def stored(app, request_id: str) -> tuple[Run, Request]:
    with app.extensions["db"]() as session:
        request = session.get(Request, request_id)
        run = session.get(Run, request.run_id)
        session.expunge_all()
        return run, request


@pytest.mark.parametrize("skill_id", LLM_COMPOSITES)
def test_a_composite_with_an_llm_step_takes_an_engine_and_model_for_its_steps(
    client, app, queue, skill_id
):
    resp = post(client, skill_id, engine="claude", model="claude-haiku-4-5")
    assert resp.status_code == 200, resp.json
    run, request = stored(app, resp.json["request_id"])
    # the composite runs on no engine itself (its queue, limits and cancel stay a composite's):
    # the choice is its request's, which its steps read
    assert run.engine is None and run.model == "claude-haiku-4-5"
    assert request.payload["engine"] == "claude"
    assert request.payload["model"] == "claude-haiku-4-5"
    assert queue.sent[-1] == (run.id, "runs.script")


def test_effort_shapes_the_steps_model_as_for_a_plain_llm_job(client, app):
    rid = post(client, "shout_then_review", engine="codex", model="gpt-5.2", effort="high").json[
        "request_id"
    ]
    run, request = stored(app, rid)
    assert run.model == request.payload["model"] == "gpt-5.2@high"


def test_without_an_engine_the_steps_get_the_default_a_plain_llm_job_gets(client, app):
    plain = client.post("/v1/jobs", json={"skill_id": "code_review", "input": {"code": "y"}})
    default = client.get(f"/v1/jobs/{plain.json['request_id']}").json["engine"]
    assert default == RUNNABLE_ENGINES[0]
    run, request = stored(app, post(client, "nested_review").json["request_id"])
    assert run.engine is None and request.payload["engine"] == default


def test_an_engine_no_llm_step_runs_on_is_refused_naming_the_step(client):
    resp = post(client, "nested_review", engine="no-such-engine")
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SKILL_ENGINE_UNSUPPORTED"
    assert "'code_review'" in error["message"] and "no-such-engine" in error["message"]
    assert error["details"]["steps"] == ["code_review"]


def test_a_retired_engine_is_refused_as_for_any_skill(client):
    resp = post(client, "nested_review", engine="iflow")
    assert (resp.status_code, resp.json["error"]["code"]) == (400, "ENGINE_RETIRED")


def test_a_model_the_steps_engine_does_not_have_is_refused(client):
    resp = post(client, "shout_then_review", engine="claude", model="gpt-5.2@high")
    assert (resp.status_code, resp.json["error"]["code"]) == (400, "MODEL_UNSUPPORTED")
    resp = post(client, "shout_then_review", model="no-such-model")  # the default engine's list
    assert (resp.status_code, resp.json["error"]["code"]) == (400, "MODEL_UNSUPPORTED")


def test_the_engine_options_are_checked_against_the_llm_steps(client):
    options = {"claude_config": {"permissions": None}}
    resp = post(client, "nested_review", engine="claude", runtime_options=options)
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "ENGINE_CONFIG_INVALID"
    assert error["details"] == {"engine": "claude", "skill_id": "code_review"}


def test_a_composite_without_llm_steps_refuses_an_engine_and_keeps_a_model(client, app):
    body = {"skill_id": "text_report", "input": {"text": "a b a"}}
    resp = client.post("/v1/jobs", json={**body, "engine": "claude"})
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SKILL_ENGINE_UNSUPPORTED"
    assert "runs on no engine" in error["message"] and error["details"]["steps"] == []
    # a model: kept as sent, as a script skill's; the run names it in MODEL_IGNORED
    resp = client.post("/v1/jobs", json={**body, "model": "x"})
    assert resp.status_code == 200, resp.json
    run, request = stored(app, resp.json["request_id"])
    assert (run.engine, run.model, request.payload["engine"]) == (None, "x", None)


def test_the_engine_keys_the_cache_apart(client, app):
    keys = set()
    for engine in ("claude", "codex"):
        run, _ = stored(app, post(client, "shout_then_review", engine=engine).json["request_id"])
        keys.add(run.cache_key)
    assert len(keys) == 2 and None not in keys


def test_the_catalog_shows_the_engines_every_llm_step_runs_on(client):
    for skill_id in LLM_COMPOSITES:
        detail = client.get(f"/v1/skills/{skill_id}").json
        assert detail["effective_engines"] == list(RUNNABLE_ENGINES), skill_id
    assert client.get("/v1/skills/text_report").json["effective_engines"] == []
    listed = {s["id"]: s for s in client.get("/v1/skills").json}
    assert listed["nested_review"]["effective_engines"] == list(RUNNABLE_ENGINES)
    assert listed["text_report"]["effective_engines"] == []


def test_the_ui_offers_the_steps_engines_for_an_index_file_composite_too(client):
    page = client.get("/ui/skills/review_in_code").get_data(as_text=True)
    assert '<select id="f-engine" name="engine">' in page and "A script skill" not in page
    assert '<option value="claude">claude</option>' in page
    page = client.get("/ui/skills/research_in_code").get_data(as_text=True)  # code calls only
    assert "A script skill" in page and 'id="f-engine"' not in page
