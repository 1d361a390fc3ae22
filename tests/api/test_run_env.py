"""runtime_options.env through the API: names that cannot be given are refused with the error
body, naming the variable and never quoting a value; values stay out of every answer."""

from __future__ import annotations

import dataclasses
import json

import pytest

from api import create_app
from runner_core.store.models import Request
from tests.api.test_cache import finish

TOKEN = "bridge-token-5b7d9e1f3a"


def job(client, env, **options):
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": "pick-title",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"env": env, **options},
        },
    )


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "NODE_OPTIONS", "SKILL_RUNNER_RUN_DIR"])
def test_a_variable_that_changes_how_the_run_starts_is_refused(client, settings, queue, name):
    resp = job(client, {name: TOKEN, "ZOTERO_BRIDGE_TOKEN": TOKEN})
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "INVALID_REQUEST" and error["details"]["variable"] == name
    assert name in error["message"] and TOKEN not in resp.get_data(as_text=True)
    assert queue.sent == [] and not any(settings.requests_dir.glob("*/run_env.json"))


def test_a_variable_the_operator_does_not_list_is_refused(client, queue):
    resp = job(client, {"MY_TOOL_TOKEN": TOKEN})
    assert resp.status_code == 400
    assert resp.json["error"]["details"] == {
        "field": "runtime_options.env",
        "variable": "MY_TOOL_TOKEN",
    }
    assert "SKILL_RUNNER_RUN_ENV_NAMES" in resp.json["error"]["message"]


def test_the_operators_list_lets_other_names_through(settings, queue):
    widened = dataclasses.replace(settings, run_env_names=("ZOTERO_BRIDGE_*", "MY_TOOL_*"))
    client = create_app({"SETTINGS": widened, "QUEUE": queue, "TESTING": True}).test_client()
    resp = job(client, {"MY_TOOL_TOKEN": TOKEN})
    assert resp.status_code == 200, resp.json
    kept = widened.requests_dir / resp.json["request_id"] / "run_env.json"
    assert json.loads(kept.read_text()) == {"MY_TOOL_TOKEN": TOKEN}
    # an operator's `*` never lets a refused name through
    wide = dataclasses.replace(settings, run_env_names=("*",))
    client = create_app({"SETTINGS": wide, "QUEUE": queue, "TESTING": True}).test_client()
    assert job(client, {"PYTHONPATH": "/tmp"}).status_code == 400


def test_the_value_is_in_no_answer_about_the_job(client, app):
    rid = job(client, {"ZOTERO_BRIDGE_TOKEN": TOKEN}, no_cache=True).json["request_id"]
    answers = [
        client.get(f"/v1/jobs/{rid}"),
        client.get(f"/v1/management/runs/{rid}"),
        client.get("/v1/jobs"),
    ]
    for answer in answers:
        assert TOKEN not in answer.get_data(as_text=True)
    with app.extensions["db"]() as session:
        assert TOKEN not in json.dumps(session.get(Request, rid).payload, default=str)


def test_a_run_answered_from_the_cache_keeps_no_values(client, settings, app):
    body = {"skill_id": "fenced-json", "input": {"text": "hi"}}
    body["runtime_options"] = {"env": {"ZOTERO_BRIDGE_TOKEN": TOKEN}}
    finish(app, client.post("/v1/jobs", json=body).json["request_id"])
    again = client.post("/v1/jobs", json=body)
    assert again.status_code == 200 and again.json["cache_hit"] is True
    assert not (settings.requests_dir / again.json["request_id"] / "run_env.json").exists()


def test_variables_sent_back_withheld_still_leave_their_file(client, settings, queue):
    resp = job(client, {"ZOTERO_BRIDGE_TOKEN": {"redacted": True}})
    assert resp.status_code == 200, resp.json
    kept = settings.requests_dir / resp.json["request_id"] / "run_env.json"
    # the worker takes a missing file for lost values (RUNTIME_ENV_SECRET_MISSING)
    assert json.loads(kept.read_text()) == {}
    quiet = client.post(
        "/v1/jobs",
        json={"skill_id": "pick-title", "engine": "codex", "input": {"text": "other"}},
    )
    assert not (settings.requests_dir / quiet.json["request_id"] / "run_env.json").exists()
