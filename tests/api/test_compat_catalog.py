"""What Skill-Runner's clients (the Zotero plugin, the e2e web client, the REST e2e runner)
read from the service: the handshake and ping, the runtime options, the management lists in
their envelopes with numbered pages, models as objects, and Basic credentials."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from api import create_app
from runner_core.store.models import Request, Run
from tests.api.test_auth import TOKEN
from tests.helpers import BOTH_DATABASES, upload_body

M = "/v1/management"
HANDSHAKE = {  # as zotero-agents 0.5.6 builds it (buildSkillRunnerHandshakeRequest)
    "schema": "zotero-agents.skillrunner-handshake.request.v1",
    "client": {"name": "zotero-agents", "version": "0.5.6"},
    "requested_protocols": ["skillrunner.job.v1", "skillrunner.sequence.v1"],
}
JOB = {"skill_id": "fenced-json", "input": {"text": "hi"}}


def basic(user: str, password: str) -> dict[str, str]:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


@pytest.fixture
def guarded(settings, queue):
    with_tokens = dataclasses.replace(settings, api_tokens=(TOKEN,))
    return create_app({"SETTINGS": with_tokens, "QUEUE": queue, "TESTING": True}).test_client()


@pytest.fixture
def engine_config(tmp_path, monkeypatch):
    root = tmp_path / "engine-config"
    (root / "codex").mkdir(parents=True)
    (root / "codex" / "default.json").write_text(
        json.dumps(
            {
                "model": "gpt-5.2-codex@high",
                "models": ["gpt-5.2-codex@low", "gpt-5.2-codex@high", "gpt-5-mini"],
            }
        )
    )
    monkeypatch.setenv("SKILL_RUNNER_ENGINE_CONFIG_DIR", str(root))
    return root


def plugin_capabilities(body: dict) -> dict[str, bool]:
    """normalizeSkillRunnerHandshakeResponse + isSkillRunnerProtocolSupported of the plugin."""
    assert body["schema"] == "zotero-agents.skillrunner-handshake.response.v1"
    return {
        name: isinstance(value, dict) and value.get("supported") is True
        for name, value in body["protocols"].items()
    }


def test_the_plugins_handshake_then_ping_sequence(client):
    resp = client.post("/v1/system/handshake", json=HANDSHAKE)
    assert resp.status_code == 200
    body = resp.json
    assert body["backend"]["name"] == "skill-runner" and body["backend"]["version"]
    assert plugin_capabilities(body) == {
        "skillrunner.job.v1": True,
        "skillrunner.sequence.v1": False,
    }
    head = client.head("/v1/system/ping")
    assert head.status_code == 204 and head.data == b""
    assert client.get("/v1/system/ping").status_code == 204


def test_handshake_answers_only_what_was_asked_and_unknown_protocols_are_unsupported(client):
    asked = {**HANDSHAKE, "requested_protocols": ["skillrunner.job.v1", "x.future.v9", " "]}
    body = client.post("/v1/system/handshake", json=asked).json
    assert body["protocols"] == {
        "skillrunner.job.v1": {"supported": True},
        "x.future.v9": {"supported": False},
    }
    everything = client.post("/v1/system/handshake", json={}).json["protocols"]
    assert everything["skillrunner.job.v1"] == {"supported": True}
    assert everything["skillrunner.sequence.v1"] == {"supported": False}


@pytest.mark.parametrize(
    "body",
    [
        {**HANDSHAKE, "schema": "zotero-agents.skillrunner-handshake.request.v0"},
        {**HANDSHAKE, "requested_protocols": "skillrunner.job.v1"},
    ],
)
def test_a_malformed_handshake_is_a_4xx_with_the_error_body(client, body):
    resp = client.post("/v1/system/handshake", json=body)
    assert resp.status_code == 422
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"


def test_runtime_options_give_the_service_defaults_the_e2e_form_reads(client, app):
    body = client.get(f"{M}/runtime-options").json
    settings = app.config["SETTINGS"]
    assert body["service_defaults"]["hard_timeout_seconds"] == settings.default_timeout_sec
    assert body["service_defaults"]["max_hard_timeout_seconds"] == settings.max_timeout_sec
    keys = {o["key"] for o in body["options"]}
    assert {"hard_timeout_seconds", "interactive_reply_timeout_sec", "execution_mode"} <= keys


def test_management_lists_come_in_envelopes(client):
    skills = client.get(f"{M}/skills").json
    assert list(skills) == ["skills"] and skills["skills"] == client.get("/v1/skills").json
    engines = client.get(f"{M}/engines").json
    assert list(engines) == ["engines"]
    assert [e["engine"] for e in engines["engines"]] == [
        e["engine"] for e in client.get("/v1/engines").json
    ]


def prime_job(client) -> str:
    rid = client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "100\n"}))
    return rid


@BOTH_DATABASES
def test_runs_page_by_number_with_totals_and_still_by_cursor(client):
    rids = [prime_job(client) for _ in range(5)][::-1]  # newest first
    first = client.get(f"{M}/runs?page=1&page_size=2").json
    assert {k: first[k] for k in ("page", "page_size", "total", "total_pages")} == {
        "page": 1,
        "page_size": 2,
        "total": 5,
        "total_pages": 3,
    }
    assert [r["request_id"] for r in first["runs"]] == rids[:2]
    last = client.get(f"{M}/runs?page=3&page_size=2").json
    assert [r["request_id"] for r in last["runs"]] == rids[4:]
    beyond = client.get(f"{M}/runs?page=9&page_size=2").json
    assert beyond["runs"] == [] and beyond["total"] == 5
    # what the e2e client's runs page reads of each row
    row = first["runs"][0]
    assert {"request_id", "run_id", "status", "skill_id", "engine", "model", "updated_at"} <= set(
        row
    )
    filtered = client.get(f"{M}/runs?page=1&page_size=2&skill_id=pick-title").json
    assert filtered["runs"] == [] and filtered["total"] == 0 and filtered["total_pages"] == 0
    # the plugin: `limit` (up to 1000), reads `runs`; our own clients keep the cursor
    plugin = client.get(f"{M}/runs?limit=1000").json
    assert [r["request_id"] for r in plugin["runs"]] == rids and plugin["next_cursor"] is None
    cursor = client.get(f"{M}/runs?limit=2").json
    assert cursor["items"] == cursor["runs"] and cursor["next_cursor"]
    assert client.get(f"{M}/runs?page=0").status_code == 422
    assert client.get(f"{M}/runs?page_size=501").status_code == 422


def pick_model_like_the_rest_runner(body: dict, engine: str) -> str:
    """_pick_model of Skill-Runner's tests/e2e/run_container_e2e_tests.py."""
    entry = body.get("models", [])[0]
    if engine == "codex" and entry.get("supported_effort"):
        return f"{entry['id']}@{entry['supported_effort'][0]}"
    return entry["id"]


def job_model(client, app, body: dict) -> tuple[int, dict]:
    resp = client.post("/v1/jobs", json={**JOB, "engine": "codex", **body})
    if resp.status_code != 200:
        return resp.status_code, resp.json
    with app.extensions["db"]() as session:
        run_id = session.get(Request, resp.json["request_id"]).run_id
        return 200, {"model": session.get(Run, run_id).model}


def test_the_rest_runners_model_choice_is_accepted(client, app, engine_config):
    body = client.get("/v1/engines/codex/models").json
    picked = pick_model_like_the_rest_runner(body, "codex")
    assert picked == "gpt-5.2-codex@low@low"
    assert job_model(client, app, {"model": picked}) == (200, {"model": "gpt-5.2-codex@low"})


def test_effort_and_provider_id_are_honoured(client, app, engine_config):
    # the plugin sends the model's name, its effort and its provider apart
    sent = {"model": "gpt-5.2-codex", "effort": "high", "provider_id": "openai"}
    assert job_model(client, app, sent) == (200, {"model": "gpt-5.2-codex@high"})
    # an effort replaces the id's own; `default` keeps it
    assert job_model(client, app, {"model": "gpt-5.2-codex@high", "effort": "low"})[1] == {
        "model": "gpt-5.2-codex@low"
    }
    assert job_model(client, app, {"model": "gpt-5.2-codex@high", "effort": "default"})[1] == {
        "model": "gpt-5.2-codex@high"
    }
    assert job_model(client, app, {"model": "gpt-5-mini", "effort": "default"})[1] == {
        "model": "gpt-5-mini"
    }


def test_a_model_name_with_effort_default_runs_a_configured_effort_of_it(
    client, app, engine_config
):
    """src/providers/skillrunner/provider.ts and modelCatalog.ts: the plugin sends codex's
    model by name (`model` of /v1/engines/codex/models) and `effort: "default"` unless the user
    picked one, its default choice. With only `name@<effort>` ids configured (the spec's codex
    form) that was 400 MODEL_UNSUPPORTED; it runs the engine's default model when that is one of
    them, else the first configured."""
    sent = {"model": "gpt-5.2-codex", "effort": "default", "provider_id": "openai"}
    assert job_model(client, app, sent) == (200, {"model": "gpt-5.2-codex@high"})
    config = engine_config / "codex" / "default.json"
    config.write_text(
        json.dumps(
            {
                "model": "gpt-5-mini",
                "models": ["gpt-5.2-codex@low", "gpt-5.2-codex@high", "gpt-5-mini"],
            }
        )
    )
    assert job_model(client, app, sent) == (200, {"model": "gpt-5.2-codex@low"})
    status, error = job_model(client, app, {"model": "gpt-9", "effort": "default"})
    assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED"
    status, error = job_model(client, app, {"model": "gpt-5.2-codex", "effort": "xhigh"})
    assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED"
    status, error = job_model(client, app, {**sent, "provider_id": "anthropic"})
    assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED"
    assert "provider 'openai'" in error["error"]["message"]


def test_without_a_model_effort_and_provider_id_hold_for_the_default_model(
    client, app, engine_config
):
    # the run would use the engine's default model (gpt-5.2-codex@high): bad values are
    # refused as they are with a model, not ignored
    for sent in ({"effort": "zzz"}, {"provider_id": "zzz"}, {"effort": "low", "provider_id": "x"}):
        status, error = job_model(client, app, sent)
        assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED", sent
    assert (
        "provider 'openai', not 'zzz'"
        in job_model(client, app, {"provider_id": "zzz"})[1]["error"]["message"]
    )
    assert job_model(client, app, {"effort": "low"}) == (200, {"model": "gpt-5.2-codex@low"})
    assert job_model(client, app, {"provider_id": "openai"}) == (
        200,
        {"model": "gpt-5.2-codex@high"},
    )
    assert job_model(client, app, {"effort": "default"}) == (200, {"model": None})
    # an engine with no default model has none to check them against
    claude = {"engine": "claude", "effort": "high"}
    status, error = job_model(client, app, claude)
    assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED"
    assert "no default model" in error["error"]["message"]
    assert job_model(client, app, {"engine": "claude", "effort": "default"})[0] == 200


def test_hard_timeout_seconds_is_checked_and_kept(client):
    bad = client.post("/v1/jobs", json={**JOB, "runtime_options": {"hard_timeout_seconds": "x"}})
    assert bad.status_code == 400 and bad.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    ok = client.post("/v1/jobs", json={**JOB, "runtime_options": {"hard_timeout_seconds": 0}})
    assert ok.status_code == 200


def test_basic_credentials_with_the_token_as_password(guarded):
    # the plugin's management client: handshake, ping, run list, cancel, all with Basic
    for user in ("admin", "anything", ""):
        headers = basic(user, TOKEN)
        assert (
            guarded.post("/v1/system/handshake", json=HANDSHAKE, headers=headers).status_code == 200
        )
        assert guarded.head("/v1/system/ping", headers=headers).status_code == 204
        assert guarded.get(f"{M}/runs?limit=200", headers=headers).status_code == 200
    rid = guarded.post("/v1/jobs", json=JOB, headers=basic("u", TOKEN)).json["request_id"]
    cancel = guarded.post(f"{M}/runs/{rid}/cancel", headers=basic("u", TOKEN))
    assert cancel.status_code == 200 and cancel.json["accepted"] is True
    # a password that is no token, and no credentials at all (the plugin's job client)
    refused = guarded.head("/v1/system/ping", headers=basic("admin", "wrong"))
    assert refused.status_code == 401
    assert guarded.post("/v1/system/handshake", json=HANDSHAKE).status_code == 401
    assert guarded.post("/v1/jobs", json=JOB).status_code == 401


def test_without_tokens_basic_credentials_are_not_needed_nor_refused(client):
    assert client.head("/v1/system/ping", headers=basic("admin", "whatever")).status_code == 204
    assert client.head("/v1/system/ping").status_code == 204


def test_a_page_number_beyond_any_offset_is_a_422_not_a_crash(client):
    resp = client.get("/v1/management/runs?page=797943019490336768&page_size=10")
    assert resp.status_code == 422, resp.json
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"


def test_a_provider_scoped_model_sent_as_provider_id_and_name_runs_its_id(
    client, app, engine_config
):
    """src/providers/skillrunner/provider.ts: for an engine whose models name their provider
    (opencode, kilo) the plugin sends `provider_id` and the `model` field of
    /v1/engines/{engine}/models apart (`anthropic` + `claude-sonnet-4`); the configured id is
    `anthropic/claude-sonnet-4`, so it was 400 MODEL_UNSUPPORTED."""
    (engine_config / "opencode").mkdir()
    (engine_config / "opencode" / "default.json").write_text(
        json.dumps({"models": ["anthropic/claude-sonnet-4", "openai/gpt-5"]})
    )
    listed = client.get("/v1/engines/opencode/models").json["models"][0]
    assert (listed["provider_id"], listed["model"]) == ("anthropic", "claude-sonnet-4")
    sent = {"engine": "opencode", "effort": "default"}
    pair = {"provider_id": "anthropic", "model": "claude-sonnet-4"}
    assert job_model(client, app, {**sent, **pair}) == (200, {"model": "anthropic/claude-sonnet-4"})
    whole = {"provider_id": "anthropic", "model": "anthropic/claude-sonnet-4"}
    assert job_model(client, app, {**sent, **whole}) == (
        200,
        {"model": "anthropic/claude-sonnet-4"},
    )
    status, error = job_model(
        client, app, {**sent, "provider_id": "openai", "model": "claude-sonnet-4"}
    )
    assert status == 400 and error["error"]["code"] == "MODEL_UNSUPPORTED"
    # an id without a provider prefix is listed with the engine's name as its provider
    (engine_config / "opencode" / "default.json").write_text(json.dumps({"models": ["local-m"]}))
    listed = client.get("/v1/engines/opencode/models").json["models"][0]
    bare = {"provider_id": listed["provider_id"], "model": listed["model"]}
    assert job_model(client, app, {**sent, **bare}) == (200, {"model": "local-m"})
