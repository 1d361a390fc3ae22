"""POST /v1/temp-skill-runs and its sub-routes: validated like an install, never installed."""

from __future__ import annotations

import io
import json
import os
import time
import zipfile

from sqlalchemy import select

import api.jobs.pending as pending
from runner_core.store.models import Request, Run
from tests.api.test_client_forms import package_and_inputs, plugin_package
from tests.helpers import upload_body, zip_bytes
from tests.packages import echo_skill, package_upload


def start(client, files=None, request=None, **form):
    data = package_upload(files if files is not None else echo_skill())
    if request is not None:
        data["request"] = request if isinstance(request, str) else json.dumps(request)
    data.update(form)
    return client.post("/v1/temp-skill-runs", data=data)


def finish(app, settings, rid, data):
    """Stand in for the worker: write the result a run would leave and mark it succeeded."""
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run).where(Run.request_id == rid)).one()
        run.status = "succeeded"
        session.commit()
        run_dir = settings.runs_dir / run.id
    (run_dir / "result").mkdir(parents=True)
    (run_dir / "result" / "result.json").write_text(
        json.dumps(
            {
                "status": "succeeded",
                "data": data,
                "artifacts": [],
                "validation_warnings": [],
                "error": None,
            }
        )
    )


def test_temp_run_is_created_from_the_package_without_installing_it(client, app, queue, settings):
    resp = start(client, request={"input": {"text": "hi"}})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body["skill_id"] == "pkg-echo" and body["status"] == "queued"
    assert len(queue.sent) == 1 and queue.sent[0][1] == "runs.script"
    rid = body["request_id"]
    skill_copy = settings.requests_dir / rid / "skill" / "pkg-echo"
    assert (skill_copy / "SKILL.md").is_file() and (skill_copy / "assets" / "message.txt").is_file()
    assert not (settings.requests_dir / rid / "package.zip").exists()
    assert client.get("/v1/skills/pkg-echo").status_code == 404
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run)).one()
        assert run.kind == "temp" and run.request_id == rid and run.input == {"text": "hi"}
        assert session.get(Request, rid).kind == "temp"


def test_invalid_package_is_400_with_every_error_and_leaves_nothing(client, app, settings):
    files = echo_skill(runner={"execution_modes": ["batch"]})
    files["assets/output.schema.json"] = json.dumps({"type": "array"})
    resp = start(client, files)
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SKILL_PACKAGE_INVALID"
    assert len(error["details"]["errors"]) == 2
    assert not settings.requests_dir.exists() or not any(settings.requests_dir.iterdir())
    with app.extensions["db"]() as session:
        assert session.scalars(select(Request)).all() == []


def test_skill_md_not_in_utf8_is_400_in_one_step_and_in_two(client, queue):
    files = {**echo_skill(), "SKILL.md": b"\xff\xfe"}
    one_step = start(client, files)
    assert one_step.status_code == 400, one_step.json
    assert one_step.json["error"]["code"] == "SKILL_PACKAGE_INVALID"
    assert "SKILL.md: not valid UTF-8" in one_step.json["error"]["message"]
    rid = client.post("/v1/jobs", json={"skill_source": "temp_upload"}).json["request_id"]
    package = (io.BytesIO(zip_bytes(files)), "p.zip")
    two_step = client.post(f"/v1/jobs/{rid}/upload", data={"skill_package": package})
    assert two_step.status_code == 400, two_step.json
    assert two_step.json["error"]["code"] == "SKILL_PACKAGE_INVALID"
    assert "SKILL.md: not valid UTF-8" in two_step.json["error"]["message"]
    assert queue.sent == []


def test_a_schema_nested_3000_deep_is_400_not_a_recursion(client, queue):
    deep = '{"items": ' * 3000 + "{}" + "}" * 3000  # text: json.dumps recurses as well
    for kind in ("input", "parameter", "output"):
        files = echo_skill()
        files[f"assets/{kind}.schema.json"] = (
            '{"type": "object", "properties": {"x": ' + deep + "}}"
        )
        resp = start(client, files)
        assert resp.status_code == 400, resp.json
        error = resp.json["error"]
        assert error["code"] == "SKILL_PACKAGE_INVALID"
        assert error["details"]["errors"] == [
            f"assets/{kind}.schema.json: nested deeper than 64 levels"
        ]
    files = {**echo_skill(), "assets/runner.json": '{"id": "pkg-echo", "x": ' + deep + "}"}
    resp = start(client, files)
    assert resp.status_code == 400, resp.json
    assert "assets/runner.json: nested deeper than 64 levels" in resp.json["error"]["message"]
    assert queue.sent == []


def test_a_value_too_deep_for_a_recursive_schema_is_400(client, queue):
    files = echo_skill()
    lists = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}
    schema = {**lists, "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}}
    files["assets/parameter.schema.json"] = json.dumps(schema)
    deep = "[" * 300 + "]" * 300
    resp = start(
        client, files, request='{"input": {"text": "hi"}, "parameter": {"x": ' + deep + "}}"
    )
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED"
    assert error["details"]["errors"][0]["validator"] == "depth"
    assert queue.sent == []


def test_a_pattern_that_backtracks_for_ever_answers_400_within_the_request(client, queue):
    files = echo_skill()
    text = {"type": "string", "pattern": "(a|a)*$", "x-input-source": "inline"}
    schema = {"type": "object", "properties": {"text": text}, "patternProperties": {"(x|x)*$": {}}}
    files["assets/input.schema.json"] = json.dumps(schema)
    # matched with re, this input would hold the API worker for days (2**40 ways to fail)
    resp = start(client, files, request={"input": {"text": "a" * 40 + "!", "x" * 40 + "!": 1}})
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED" and error["request_id"]
    found = {(e["path"], e["validator"]): e["message"] for e in error["details"]["errors"]}
    assert set(found) == {("", "patternProperties"), ("text", "pattern")}
    assert all("took longer than 0.1 s to match" in m for m in found.values())
    assert queue.sent == []


def test_a_pattern_regex_cannot_compile_is_refused_at_upload(client, queue):
    files = echo_skill()
    text = {"type": "string", "pattern": "(?:(?:a{1000}){1000}){1000}", "x-input-source": "inline"}
    schema = {"type": "object", "properties": {"text": text}, "patternProperties": {"(x": {}}}
    files["assets/input.schema.json"] = json.dumps(schema)
    resp = start(client, files, request={"input": {"text": "a"}})
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SKILL_PACKAGE_INVALID"
    assert sorted(e.split(":")[1].strip() for e in error["details"]["errors"]) == [
        "patternProperties",
        "properties.text.pattern",
    ]
    assert queue.sent == []


def test_a_script_command_that_is_no_string_is_refused_at_upload(client, queue):
    entrypoint = {"type": "script", "script": {"command": 5}}
    resp = start(client, echo_skill(runner={"entrypoint": entrypoint}))
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SKILL_PACKAGE_INVALID"
    assert error["details"]["errors"] == [
        "runner.json: entrypoint.script.command must be a command line string "
        '(e.g. "python scripts/run.py", quotes closed)'
    ]
    assert queue.sent == []


def test_request_is_validated_like_a_job(client, settings):
    bad_json = start(client, request="{not json")
    assert bad_json.status_code == 400 and bad_json.json["error"]["code"] == "INVALID_REQUEST"
    too_deep = start(client, request="[" * 100_000 + "]" * 100_000)
    assert too_deep.status_code == 400 and too_deep.json["error"]["code"] == "INVALID_REQUEST"
    assert "nested too deeply" in too_deep.json["error"]["message"]
    wrong_type = start(client, request={"parameter": 3})
    assert wrong_type.status_code == 422
    assert "parameter" in wrong_type.json["error"]["details"]["fields"]["request"]
    bad_param = start(client, request={"parameter": {"wait_for_go": "yes"}})
    assert bad_param.status_code == 400
    assert bad_param.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    assert not any(settings.requests_dir.iterdir())


def test_package_is_required(client):
    form = {"request": "{}"}
    resp = client.post("/v1/temp-skill-runs", data=form, content_type="multipart/form-data")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "PACKAGE_MISSING"


def test_a_package_over_the_limit_is_413_and_leaves_nothing(client, settings, monkeypatch):
    from api.jobs import temp
    from runner_core.uploads import UploadLimits

    monkeypatch.setattr(temp, "PACKAGE_LIMITS", UploadLimits(max_total_bytes=1000, max_entries=1))
    files = echo_skill()
    files["assets/padding.bin"] = os.urandom(2 * 1024 * 1024)  # incompressible
    resp = start(client, files, request={"input": {"text": "hi"}})
    assert resp.status_code == 413 and resp.json["error"]["code"] == "UPLOAD_TOO_LARGE"
    assert not settings.requests_dir.exists() or not any(settings.requests_dir.iterdir())


def test_file_inputs_wait_for_the_upload(client, queue, settings):
    rid = start(client, echo_skill(file_input=True)).json["request_id"]
    assert queue.sent == []
    assert client.get(f"/v1/temp-skill-runs/{rid}").json["waiting_for_upload"] is True
    resp = client.post(f"/v1/temp-skill-runs/{rid}/upload", data=upload_body({"notes.txt": "n"}))
    assert resp.status_code == 200, resp.json
    assert len(queue.sent) == 1
    assert (settings.requests_dir / rid / "uploads" / "notes.txt").read_text() == "n"
    assert (settings.requests_dir / rid / "input_manifest.json").is_file()
    again = client.post(f"/v1/temp-skill-runs/{rid}/upload", data=upload_body({"notes.txt": "n"}))
    assert again.status_code == 409 and again.json["error"]["code"] == "UPLOAD_NOT_ALLOWED"


def test_result_logs_and_bundle_after_the_run(client, app, settings):
    rid = start(client, request={"input": {"text": "hi"}}).json["request_id"]
    assert client.get(f"/v1/temp-skill-runs/{rid}/result").status_code == 409
    assert client.get(f"/v1/temp-skill-runs/{rid}/bundle").status_code == 409
    started = time.monotonic()  # no worker here: the long poll runs out, then 409
    assert client.get(f"/v1/temp-skill-runs/{rid}/result?wait_sec=0.3").status_code == 409
    assert time.monotonic() - started >= 0.3
    finish(app, settings, rid, {"message": "hello", "text": "hi"})
    started = time.monotonic()  # ended: answered at once
    assert client.get(f"/v1/temp-skill-runs/{rid}?wait_sec=20").json["status"] == "succeeded"
    assert time.monotonic() - started < 2
    status = client.get(f"/v1/temp-skill-runs/{rid}").json
    assert status["status"] == "succeeded" and status["skill_id"] == "pkg-echo"
    result = client.get(f"/v1/temp-skill-runs/{rid}/result").json
    assert result["result"]["data"] == {"message": "hello", "text": "hi"}
    logs = client.get(f"/v1/temp-skill-runs/{rid}/logs").json
    assert logs["request_id"] == rid and logs["stdout"] is None
    bundle = client.get(f"/v1/temp-skill-runs/{rid}/bundle")
    assert bundle.status_code == 200 and bundle.mimetype == "application/zip"
    assert "result/result.json" in zipfile.ZipFile(io.BytesIO(bundle.data)).namelist()


def test_cancel_a_queued_temp_run(client):
    rid = start(client, echo_skill(file_input=True)).json["request_id"]
    resp = client.post(f"/v1/temp-skill-runs/{rid}/cancel").json
    assert resp["accepted"] is True and resp["status"] == "canceled"
    again = client.post(f"/v1/temp-skill-runs/{rid}/cancel").json
    assert again["accepted"] is False
    result = client.get(f"/v1/temp-skill-runs/{rid}/result").json["result"]
    assert result["error"]["code"] == "CANCELED_BY_USER"


def test_job_request_ids_are_not_temp_runs(client):
    rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    resp = client.get(f"/v1/temp-skill-runs/{rid}")
    assert resp.status_code == 404 and resp.json["error"]["code"] == "REQUEST_NOT_FOUND"


def test_one_off_runs_are_listed_and_read_by_the_management_api(client, app, settings):
    """/v1/management/runs lists jobs and one-off runs alike (request_kind tells them apart);
    GET /v1/jobs stays jobs only; the run's state and files read the same way; the UI lists
    and shows it."""
    temp = start(client, request={"input": {"text": "hi"}}).json["request_id"]
    job = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    listed = {r["request_id"]: r for r in client.get("/v1/management/runs").json["items"]}
    assert listed[temp]["request_kind"] == "temp" and listed[job]["request_kind"] == "job"
    numbered = client.get("/v1/management/runs?page=1&page_size=10").json
    assert {r["request_id"] for r in numbered["items"]} == {temp, job} and numbered["total"] == 2
    assert [r["request_id"] for r in client.get("/v1/jobs").json["items"]] == [job]
    state = client.get(f"/v1/management/runs/{temp}").json
    assert state["request_kind"] == "temp" and state["skill_id"] == "pkg-echo"
    assert client.get(f"/v1/management/runs/{temp}/files").status_code == 200
    assert client.get(f"/v1/management/runs/{temp}/events/history").status_code == 200
    finish(app, settings, temp, {"text": "hi"})
    page = client.get(f"/ui/runs/{temp}").get_data(as_text=True)
    assert "one-off" in page and '"kind": "temp"' in page
    assert "one-off" in client.get("/ui/runs").get_data(as_text=True)


def test_a_file_path_with_a_nul_byte_is_refused_not_a_500(client, app, settings):
    rid = start(client, request={"input": {"text": "hi"}}).json["request_id"]
    finish(app, settings, rid, {"message": "hello", "text": "hi"})
    resp = client.get(f"/v1/temp-skill-runs/{rid}/file?path=result/result.json%00x")
    assert resp.status_code == 403 and resp.json["error"]["code"] == "RUN_FILE_REFUSED"
    resp = client.get(f"/v1/temp-skill-runs/{rid}/artifacts/a%00b")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "INVALID_ARTIFACT_PATH"


def test_a_package_upload_that_failed_part_way_can_be_sent_again(
    client, queue, settings, monkeypatch
):
    """The run's creation failing after the package was unpacked (a 500) leaves the held body;
    the upload sent again replaces what the first left and starts the run."""
    rid = client.post(
        "/v1/temp-skill-runs", json={"engine": "codex", "input": {"text": "hi"}}
    ).json["request_id"]

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    real = pending.create_job
    monkeypatch.setattr(pending, "create_job", broken)
    upload = f"/v1/temp-skill-runs/{rid}/upload"
    failed = client.post(upload, data=package_and_inputs(plugin_package()))
    assert failed.status_code == 500
    assert not (settings.requests_dir / rid / "extracted").exists()
    monkeypatch.setattr(pending, "create_job", real)
    again = client.post(upload, data=package_and_inputs(plugin_package()))
    assert again.status_code == 200, again.json
    assert len(queue.sent) == 1
    assert sorted(p.name for p in (settings.requests_dir / rid / "skill").iterdir()) == ["pkg-echo"]
    assert not (settings.requests_dir / rid / "extracted").exists()


def test_a_package_whose_schema_refs_a_host_file_is_refused_unread(client, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string", "const": "TOPSECRET"}')
    files = echo_skill()
    files["assets/parameter.schema.json"] = json.dumps(
        {"type": "object", "properties": {"p": {"$ref": f"file://{secret}"}}}
    )
    resp = start(client, files=files, request={"input": {"text": "hi"}, "parameter": {"p": 1}})
    assert resp.status_code == 400, resp.json
    assert "TOPSECRET" not in resp.get_data(as_text=True)
    assert any("points outside the schema" in e for e in resp.json["error"]["details"]["errors"])
