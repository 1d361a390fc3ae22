"""Requests the Zotero plugin (zotero-agents 0.5.6) sends, replayed as it sends them; each test
names the plugin file the request comes from. The plugin takes a 400, 404, 410 or 422 from its
run dialog's calls as the end of the run (`isSkillRunnerRunTerminalClientError` in
src/providers/skillrunner/errors.ts): a form it sends must not get one."""

from __future__ import annotations

import io
import json

import pytest
from sqlalchemy import update

from runner_core.interaction import Pending
from runner_core.skills.loader import load_skill
from runner_core.store import interactions
from runner_core.store.models import Request, Run, utcnow
from tests.api.test_event_history import job_with_events
from tests.api.test_management import prime_job, run_dir
from tests.helpers import zip_bytes
from tests.packages import echo_skill


def plugin_job(client, runtime_options: dict) -> dict:
    """`POST /v1/jobs` as `toHttpStepsRequest` builds it for an installed skill."""
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": "pick-title",
            "engine": "codex",
            "effort": "default",
            "input": {"text": "hello"},
            "parameter": {},
            "runtime_options": runtime_options,
        },
    )


def test_an_auto_reply_timeout_of_0_is_accepted_and_decides_at_once(client, app, queue):
    """src/providers/skillrunner/client.ts (`toHttpStepsRequest`) and
    src/modules/skillRunnerInteractiveAutoReply.ts send `interactive_reply_timeout_sec` as any
    whole number >= 0 with `interactive_auto_reply: true`; Skill-Runner reads 0 as "decide at
    once". It was a 400 SCHEMA_VALIDATION_FAILED here (minimum 1), and a stored 0 read as the
    1200 s default."""
    from worker.interactive.waiting import auto_decide

    resp = plugin_job(
        client,
        {
            "execution_mode": "interactive",
            "interactive_auto_reply": True,
            "interactive_reply_timeout_sec": 0,
        },
    )
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
        session.execute(update(Run).where(Run.id == run_id).values(status="running"))
        session.commit()
        question = Pending("choose_one", "Which one?", [{"label": "A", "value": "a"}])
        iid = interactions.ask(session, run_id, 1, question, {"session_handle": "thread-1"})
        # asked just now: already due for the sweep, and the auto-reply is not early
        assert [row.id for row in interactions.overdue(session, utcnow(), cap_sec=86400)] == [
            run_id
        ]
        assert auto_decide(session, run_id, iid, 86400, "task-1") == interactions.ACCEPTED
    assert client.get(f"/v1/jobs/{rid}").json["auto_decision_count"] == 1


def test_a_negative_auto_reply_timeout_is_still_refused(client):
    resp = plugin_job(
        client, {"execution_mode": "interactive", "interactive_reply_timeout_sec": -1}
    )
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"


def test_cancel_answers_the_fields_the_plugins_cancel_response_declares(client, app):
    """src/providers/skillrunner/managementClient.ts (`cancelRun`): `POST
    /v1/jobs/{id}/cancel` with body `{}`, read as `{request_id, run_id, status, accepted,
    message}`; src/modules/skillRunnerRunDialog.ts shows `message` when the cancel is not
    accepted. The answer had no run_id nor message."""
    rid = plugin_job(client, {"execution_mode": "interactive"}).json["request_id"]
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id

    def cancel():
        return client.post(
            f"/v1/jobs/{rid}/cancel", data="{}", headers={"content-type": "application/json"}
        )

    first, second = cancel(), cancel()
    assert first.status_code == second.status_code == 200
    assert first.json["run_id"] == second.json["run_id"] == run_id
    assert (first.json["accepted"], first.json["status"]) == (True, "canceled")
    assert (second.json["accepted"], second.json["status"]) == (False, "canceled")
    assert first.json["message"] and "already ended" in second.json["message"]
    managed = client.post(f"/v1/management/runs/{rid}/cancel").json
    assert managed["run_id"] == run_id and managed["message"]


@pytest.mark.parametrize(
    "route",
    [
        "/v1/jobs/{rid}/events/history",
        "/v1/jobs/{rid}/chat/history",
        "/v1/management/runs/{rid}/events/history",
    ],
)
def test_history_from_seq_0_is_from_the_start_and_to_seq_0_is_nothing(client, app, route):
    """src/providers/skillrunner/managementClient.ts (`listRunChatHistory`,
    `listRunEventHistory`) sends `from_seq` and `to_seq` clamped to `Math.max(0, ...)`, as
    Skill-Runner takes them (`ge=0`); 0 was a 422 here, which the plugin takes as the end of the
    run."""
    rid = job_with_events(client, app)
    url = route.format(rid=rid)
    whole = client.get(url).json
    start = client.get(url + "?from_seq=0")
    assert start.status_code == 200, start.json
    assert start.json["events"] == whole["events"]
    none = client.get(url + "?from_seq=0&to_seq=0")
    assert none.status_code == 200, none.json
    assert none.json["events"] == [] and none.json["count"] == 0
    assert none.json["cursor_ceiling"] == whole["cursor_ceiling"] == 3


def plugins_own_skill(drop_parameter_schema: bool) -> dict[str, str]:
    """A skill written as the plugin's builtin ones are (skills_builtin/tag-bootstrapper,
    literature-search-ingest, zotero-bridge-cli): runner.json with no `schemas` block, the
    schemas that exist at assets/<kind>.schema.json, a missing parameter schema."""
    files = echo_skill(prefix="pkg-echo/")
    runner = json.loads(files["pkg-echo/assets/runner.json"])
    del runner["schemas"]
    files["pkg-echo/assets/runner.json"] = json.dumps(runner)
    if drop_parameter_schema:
        del files["pkg-echo/assets/parameter.schema.json"]
    return files


@pytest.mark.parametrize("drop_parameter_schema", [False, True])
def test_the_plugins_own_skill_without_a_schemas_block_runs_as_a_temp_upload(
    client, app, queue, drop_parameter_schema
):
    """src/providers/skillrunner/client.ts (`toHttpStepsRequest`): a skill of the plugin's own
    goes as `POST /v1/jobs` `{skill_source: "temp_upload", ...}` then `POST
    /v1/jobs/{id}/upload` with `skill_package` (src/providers/skillrunner/skillPackageBundler.ts:
    the skill's files under `<skill-id>/`). Skill-Runner finds an undeclared schema at
    assets/<kind>.schema.json and makes input and parameter schemas optional; here such a
    package was 400 SKILL_PACKAGE_INVALID ('schemas.input is not declared in runner.json')."""
    created = client.post(
        "/v1/jobs",
        json={
            "skill_source": "temp_upload",
            "engine": "codex",
            "effort": "default",
            "input": {"text": "hi"},
            "parameter": {},
            "runtime_options": {"execution_mode": "auto"},
        },
    )
    rid = created.json["request_id"]
    package = io.BytesIO(zip_bytes(plugins_own_skill(drop_parameter_schema)))
    up = client.post(
        f"/v1/jobs/{rid}/upload", data={"skill_package": (package, "skill_package.zip")}
    )
    assert up.status_code == 200, up.json
    assert len(queue.sent) == 1
    assert client.get(f"/v1/jobs/{rid}").json["skill_id"] == "pkg-echo"


def test_an_undeclared_schema_is_read_from_its_usual_place_and_output_stays_required(tmp_path):
    files = plugins_own_skill(drop_parameter_schema=True)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    pkg = load_skill(tmp_path / "pkg-echo", strict=True)
    assert pkg.health == "ok", pkg.errors
    assert pkg.loaded_manifest.schemas == {
        "input": "assets/input.schema.json",
        "output": "assets/output.schema.json",
    }
    assert "text" in pkg.input_schema["properties"] and pkg.parameter_schema == {"type": "object"}
    (tmp_path / "pkg-echo/assets/output.schema.json").unlink()
    broken = load_skill(tmp_path / "pkg-echo", strict=True)
    assert broken.health == "invalid"
    assert any("schemas.output is not declared" in e for e in broken.errors), broken.errors


def test_a_temp_upload_job_is_queued_not_404_while_its_package_is_on_the_way(client, queue):
    """src/modules/workflowExecution/runSeam.ts focuses the run dialog on `request-created`,
    which is reported between `POST /v1/jobs` and the upload of the package; the dialog
    (src/modules/skillRunnerRunDialog.ts) then reads `GET /v1/jobs/{id}` and `GET
    /v1/jobs/{id}/chat/history?from_seq=1`, and the session sync
    (src/modules/skillRunnerSessionSyncManager.ts) `GET /v1/jobs/{id}/events/history`. Each
    was a 404 until the package came, which the plugin takes as the run's end (it marked the
    run failed); Skill-Runner answers such a request `queued`."""
    body = {
        "skill_source": "temp_upload",
        "engine": "codex",
        "model": "gpt-5.2-codex",
        "effort": "default",
        "input": {"text": "hi"},
        "parameter": {},
        "runtime_options": {"execution_mode": "interactive"},
    }
    rid = client.post("/v1/jobs", json=body).json["request_id"]
    status = client.get(f"/v1/jobs/{rid}")
    assert status.status_code == 200, status.json
    assert status.json["request_id"] == rid and status.json["status"] == "queued"
    assert status.json["waiting_for_upload"] is True and status.json["error"] is None
    assert (status.json["engine"], status.json["model"]) == ("codex", "gpt-5.2-codex")
    assert status.json["workspaceDir"] is None and status.json["resultJsonPath"] is None
    for history in ("chat/history?from_seq=1", "events/history?from_seq=1"):
        resp = client.get(f"/v1/jobs/{rid}/{history}")
        assert resp.status_code == 200, resp.json
        assert resp.json["events"] == [] and resp.json["status"] == "queued"
        assert (resp.json["cursor_floor"], resp.json["cursor_ceiling"]) == (0, 0)
    # the package comes: the run's own status from then on
    modes = {"execution_modes": ["auto", "interactive"]}
    package = io.BytesIO(zip_bytes(echo_skill(prefix="pkg-echo/", runner=modes)))
    up = client.post(f"/v1/jobs/{rid}/upload", data={"skill_package": (package, "p.zip")})
    assert up.status_code == 200, up.json
    after = client.get(f"/v1/jobs/{rid}").json
    assert after["run_id"] and after["skill_id"] == "pkg-echo"
    # still a 404 for another kind's route and for an unknown id
    assert client.get(f"/v1/temp-skill-runs/{rid}").status_code == 404
    assert client.get("/v1/jobs/no-such-request/chat/history").status_code == 404


SECRET = "host-bridge-token-0123456789"


def test_the_values_of_runtime_options_env_are_kept_apart_for_the_run_only(client, app, settings):
    """src/modules/workflowExecution/preparationSeam.ts puts the Zotero Host Bridge's URL and
    token into `runtime_options.env` (Skill-Runner starts the agent with those variables and
    stores them apart, redacted). The token was kept as sent (in the database, the run's
    input.json, a held temp_upload body), then dropped: the run could not reach Zotero. The
    database and the held body now keep `{"redacted": true}`, the values a 0600 file beside the
    request that only the worker reads (runner_core.run_env)."""
    env = {
        "ZOTERO_BRIDGE_ENDPOINT": "http://127.0.0.1:23119/bridge/v1",
        "ZOTERO_BRIDGE_TOKEN": SECRET,
    }
    options = {"execution_mode": "auto", "no_cache": True, "env": env}
    rid = plugin_job(client, options).json["request_id"]
    redacted = {name: {"redacted": True} for name in env}
    with app.extensions["db"]() as session:
        req = session.get(Request, rid)
        run = session.get(Run, req.run_id)
        assert run.runtime_options["env"] == redacted and run.runtime_options["no_cache"] is True
        assert SECRET not in json.dumps(req.payload, default=str)
    kept = settings.requests_dir / rid / "run_env.json"
    assert json.loads(kept.read_text()) == env and oct(kept.stat().st_mode & 0o777) == "0o600"
    held = client.post(
        "/v1/jobs", json={"skill_source": "temp_upload", "runtime_options": options}
    ).json["request_id"]
    assert SECRET not in (settings.requests_dir / held / "pending_package.json").read_text()
    package = io.BytesIO(zip_bytes(echo_skill(prefix="pkg-echo/")))
    up = client.post(f"/v1/jobs/{held}/upload", data={"skill_package": (package, "p.zip")})
    assert up.status_code == 200, up.json
    with app.extensions["db"]() as session:
        run = session.get(Run, session.get(Request, held).run_id)
        assert run.runtime_options["env"] == redacted
    assert json.loads((settings.requests_dir / held / "run_env.json").read_text()) == env


def test_chat_messages_leave_out_the_question_block(client, app):
    """src/modules/skillRunnerRunDialog.ts shows each chat_event's text as it comes (Skill-
    Runner sends a message's display text, its `<ASK_USER_YAML>` block left out); here the raw
    block was shown, twice (the turn's message and its final message), beside the question."""
    rid = prime_job(client)
    block = '<ASK_USER_YAML>{"kind": "open_text", "prompt": "Which?"}</ASK_USER_YAML>'
    lines = [
        ("assistant.message", {"text": f"I found two.\n{block}"}),
        ("assistant.message.final", {"text": block}),
        ("user.input.required", {"prompt": "Which?"}),
    ]
    events = [
        {"protocol_version": "fcmp/1.0", "run_id": "r", "request_id": rid, "seq": n}
        | {"ts": "2026-01-01T00:00:00.000Z", "type": kind, "data": data}
        for n, (kind, data) in enumerate(lines, start=1)
    ]
    run_dir(app, rid).mkdir(parents=True, exist_ok=True)
    (run_dir(app, rid) / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    chat = client.get(f"/v1/jobs/{rid}/chat/history").json["events"]
    assert [(m["seq"], m["kind"], m["text"]) for m in chat] == [
        (1, "assistant_message", "I found two."),
        (3, "assistant_message", "Which?"),
    ]
    assert client.get(f"/v1/jobs/{rid}/events/history").json["count"] == 3  # the events stay


def test_a_message_saying_data_colon_does_not_break_the_chat_stream(client, app):
    """src/modules/skillRunnerRunDialog.ts follows /chat: a message holding "data: " (an agent
    writing "Here is the data: ...") was split there instead of at the frame's own field, so
    the stream broke at that event, and again at each reconnect from the cursor before it."""
    rid = prime_job(client)
    lines = [
        ("assistant.message", {"text": "Here is the data: 42\ndata: {}"}),
        (
            "conversation.state.changed",
            {"from": "running", "to": "succeeded", "terminal": {"status": "succeeded"}},
        ),
    ]
    events = [
        {"protocol_version": "fcmp/1.0", "run_id": "r", "request_id": rid, "seq": n}
        | {"ts": "2026-01-01T00:00:00.000Z", "type": kind, "data": data}
        for n, (kind, data) in enumerate(lines, start=1)
    ]
    run_dir(app, rid).mkdir(parents=True, exist_ok=True)
    (run_dir(app, rid) / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    stream = client.get(f"/v1/jobs/{rid}/chat").get_data(as_text=True)
    frames = [block for block in stream.split("\n\n") if block.startswith("event: chat_event")]
    sent = [json.loads(block.split("\ndata: ", 1)[1]) for block in frames]
    assert [(m["seq"], m["text"]) for m in sent] == [
        (1, "Here is the data: 42\ndata: {}"),
        (2, "running -> succeeded"),
    ]


def test_a_temp_upload_job_canceled_before_its_package_came_stays_canceled(client, queue):
    """src/modules/skillRunnerRunDialog.ts (`cancel-run`): `POST /v1/jobs/{id}/cancel` with
    `{}`, offered as soon as the job shows in the dialog, so possibly before its package has
    come. That was a 404 (settled as failed by the plugin) and the upload then started the
    run anyway."""
    rid = client.post(
        "/v1/jobs", json={"skill_source": "temp_upload", "input": {"text": "hi"}}
    ).json["request_id"]

    def cancel():
        return client.post(
            f"/v1/jobs/{rid}/cancel", data="{}", headers={"content-type": "application/json"}
        )

    first = cancel()
    assert first.status_code == 200, first.json
    assert (first.json["accepted"], first.json["status"]) == (True, "canceled")
    assert first.json["message"]
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["status"] == "canceled" and status["waiting_for_upload"] is False
    assert status["error"]["code"] == "CANCELED_BY_USER" and status["finished_at"]
    again = cancel().json
    assert (again["accepted"], again["status"]) == (False, "canceled")
    package = io.BytesIO(zip_bytes(echo_skill(prefix="pkg-echo/")))
    late = client.post(f"/v1/jobs/{rid}/upload", data={"skill_package": (package, "p.zip")})
    assert late.status_code == 409 and late.json["error"]["code"] == "UPLOAD_NOT_ALLOWED"
    assert queue.sent == []
    assert client.post("/v1/temp-skill-runs/" + rid + "/cancel").status_code == 404
