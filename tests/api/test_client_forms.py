"""The forms existing Skill-Runner clients send: file inputs named by path in `input`, one-off
runs whose package comes with the upload (`skill_source: temp_upload` on /v1/jobs, a JSON
POST /v1/temp-skill-runs), and runtime_options keys this service does not act on."""

from __future__ import annotations

import io

from sqlalchemy import select

from runner_core.store.models import Request, Run
from tests.helpers import upload_body, zip_bytes
from tests.packages import echo_skill, package_upload


def job(client, **body):
    body.setdefault("skill_id", "demo-prime-number")
    return client.post("/v1/jobs", json=body)


def error(resp, status, code):
    assert resp.status_code == status, resp.json
    assert resp.json["error"]["code"] == code, resp.json
    return resp.json["error"]


# --- file inputs named by path -----------------------------------------------------------


def test_path_named_input_under_inputs_is_taken_from_that_path(client, app, queue, settings):
    resp = job(client, input={"input_file": "inputs/input_file/numbers.txt"})
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    assert queue.sent == []  # still waits for the upload
    up = client.post(
        f"/v1/jobs/{rid}/upload", data=upload_body({"inputs/input_file/numbers.txt": "30"})
    )
    assert up.status_code == 200, up.json
    assert up.json["extracted_files"] == ["inputs/input_file/numbers.txt"]  # as Skill-Runner's
    assert len(queue.sent) == 1
    assert (settings.requests_dir / rid / "uploads/inputs/input_file/numbers.txt").read_text() == (
        "30"
    )
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run).where(Run.request_id == rid)).one()
        assert run.input == {"input_file": "inputs/input_file/numbers.txt"}


def test_path_named_input_without_the_inputs_folder_is_accepted(client, queue):
    rid = job(client, input={"input_file": "input_file/n.txt"}).json["request_id"]
    up = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file/n.txt": "7"}))
    assert up.status_code == 200, up.json
    assert len(queue.sent) == 1


def test_path_of_another_field_or_outside_a_field_is_still_file_as_inline(client, queue):
    for value in (
        "inputs/other/n.txt",  # the field segment is not the key
        "inputs/input_file",  # no file name
        "inputs/input_file/../x.txt",
        "/inputs/input_file/n.txt",
        "30",
        ["inputs/input_file/n.txt"],
    ):
        err = error(job(client, input={"input_file": value}), 400, "INPUT_FILE_AS_INLINE")
        assert err["details"]["fields"] == ["input_file"]
    assert queue.sent == []


def test_upload_without_the_named_file_is_400_and_may_be_sent_again(client, queue, settings):
    rid = job(client, input={"input_file": "inputs/input_file/n.txt"}).json["request_id"]
    wrong = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    err = error(wrong, 400, "INPUT_FILE_MISSING")
    assert err["details"]["fields"] == ["input_file"] and err["request_id"] == rid
    assert err["details"]["uploaded"] == ["input_file.txt"]  # what it held, to see the mismatch
    assert err["details"]["uploaded_count"] == 1 and "holds input_file.txt" in err["message"]
    assert queue.sent == [] and not any((settings.requests_dir / rid / "uploads").iterdir())
    assert client.get(f"/v1/jobs/{rid}").json["waiting_for_upload"] is True
    right = client.post(
        f"/v1/jobs/{rid}/upload", data=upload_body({"inputs/input_file/n.txt": "30"})
    )
    assert right.status_code == 200, right.json
    assert len(queue.sent) == 1


def test_empty_zip_to_a_job_that_takes_no_files_answers_its_state(client, queue):
    # the REST e2e runner uploads an (empty) zip to every installed skill with an input schema
    installed = client.post("/v1/skill-packages", data=package_upload(echo_skill()))
    assert installed.status_code == 200, installed.json
    rid = job(client, skill_id="pkg-echo", input={"text": "x"}).json["request_id"]
    assert len(queue.sent) == 1  # started at once: it takes no files
    for body in (upload_body({}), upload_body({"folder/": ""})):  # no file, or folders only
        up = client.post(f"/v1/jobs/{rid}/upload", data=body)
        assert up.status_code == 200, up.json
        assert up.json == {
            "request_id": rid,
            "cache_hit": False,
            "status": "queued",
            "extracted_files": [],
        }
    raw = client.post(f"/v1/jobs/{rid}/upload", data=zip_bytes({}), content_type="application/zip")
    assert raw.status_code == 200, raw.json
    assert len(queue.sent) == 1  # nothing sent again
    with_files = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"a.txt": "a"}))
    error(with_files, 409, "UPLOAD_NOT_ALLOWED")
    not_zip = client.post(f"/v1/jobs/{rid}/upload", data={"file": (io.BytesIO(b"no"), "z")})
    error(not_zip, 409, "UPLOAD_NOT_ALLOWED")


def test_second_empty_zip_to_a_job_that_takes_files_is_still_409(client, queue):
    rid = job(client, input={}).json["request_id"]
    assert client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "3"})).json
    error(client.post(f"/v1/jobs/{rid}/upload", data=upload_body({})), 409, "UPLOAD_NOT_ALLOWED")


# --- skill_source: temp_upload on /v1/jobs ------------------------------------------------


def plugin_package(**kw) -> bytes:
    """The plugin's skill_package zip: the skill's files under a `<skill-id>/` folder."""
    return zip_bytes(echo_skill(prefix="pkg-echo/", **kw))


def package_and_inputs(package: bytes | None, inputs: dict | None = None) -> dict:
    data = {}
    if package is not None:
        data["skill_package"] = (io.BytesIO(package), "skill_package.zip")
    if inputs is not None:
        data["file"] = (io.BytesIO(zip_bytes(inputs)), "inputs.zip")
    return data


def test_temp_upload_job_takes_its_package_and_inputs_with_the_upload(client, app, queue, settings):
    created = client.post(
        "/v1/jobs",
        json={
            "skill_source": "temp_upload",
            "input": {"text": "hi", "notes": "inputs/notes/a.txt"},
            "parameter": {},
            "effort": "default",
            "runtime_options": {"execution_mode": "auto"},
        },
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    assert created.json["status"] == "queued" and queue.sent == []
    up = client.post(
        f"/v1/jobs/{rid}/upload",
        data=package_and_inputs(plugin_package(file_input=True), {"inputs/notes/a.txt": "n"}),
    )
    assert up.status_code == 200, up.json
    assert up.json["request_id"] == rid and up.json["status"] == "queued"
    assert len(queue.sent) == 1 and queue.sent[0][1] == "runs.script"
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run).where(Run.request_id == rid)).one()
        assert run.kind == "temp" and run.skill_id == "pkg-echo" and not run.needs_upload
        assert session.get(Request, rid).kind == "job"
    assert (settings.requests_dir / rid / "skill/pkg-echo/SKILL.md").is_file()
    assert not (settings.requests_dir / rid / "pending_package.json").exists()
    status = client.get(f"/v1/jobs/{rid}")
    assert status.status_code == 200 and status.json["skill_id"] == "pkg-echo"
    assert client.get(f"/v1/temp-skill-runs/{rid}").status_code == 404  # a job, not a temp run
    for listing in ("/v1/jobs", "/v1/jobs?status=queued"):  # listed as the job it is
        assert rid in {j["request_id"] for j in client.get(listing).json["items"]}, listing
    again = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"inputs/notes/a.txt": "n"}))
    error(again, 409, "UPLOAD_NOT_ALLOWED")


def test_temp_upload_of_a_skill_without_files_starts_on_the_package(client, queue):
    rid = client.post(
        "/v1/jobs", json={"skill_source": "temp_upload", "input": {"text": "x"}}
    ).json["request_id"]
    up = client.post(f"/v1/jobs/{rid}/upload", data=package_and_inputs(plugin_package()))
    assert up.status_code == 200, up.json
    assert len(queue.sent) == 1


def test_temp_upload_refusals(client, queue, settings):
    error(client.post("/v1/jobs", json={"input": {}}), 422, "REQUEST_VALIDATION_FAILED")
    installed = {"skill_source": "installed"}
    error(client.post("/v1/jobs", json=installed), 422, "REQUEST_VALIDATION_FAILED")
    assert job(client, **installed).status_code == 200  # named as installed: as without it
    error(client.post("/v1/jobs", json={"skill_source": "zip"}), 422, "REQUEST_VALIDATION_FAILED")
    rid = client.post(
        "/v1/jobs", json={"skill_source": "temp_upload", "engine": "no-such-engine"}
    ).json["request_id"]
    only_inputs = client.post(f"/v1/jobs/{rid}/upload", data=package_and_inputs(None, {"a": "b"}))
    assert error(only_inputs, 400, "PACKAGE_MISSING")["details"] == {"field": "skill_package"}
    bad = client.post(f"/v1/jobs/{rid}/upload", data=package_and_inputs(zip_bytes({"x": "y"})))
    error(bad, 400, "SKILL_PACKAGE_INVALID")
    engine = client.post(f"/v1/jobs/{rid}/upload", data=package_and_inputs(plugin_package()))
    error(engine, 400, "SKILL_ENGINE_UNSUPPORTED")
    assert queue.sent == [] and not (settings.requests_dir / rid / "skill").exists()
    assert (settings.requests_dir / rid / "pending_package.json").is_file()  # may send again
    held = client.get(f"/v1/jobs/{rid}").json  # no run before the package: queued for it
    assert (held["status"], held["run_id"], held["waiting_for_upload"]) == ("queued", "", True)
    missing = client.post("/v1/jobs/nope/upload", data=package_and_inputs(plugin_package()))
    error(missing, 404, "REQUEST_NOT_FOUND")


def test_temp_upload_job_is_not_uploaded_through_temp_skill_runs(client):
    rid = client.post("/v1/jobs", json={"skill_source": "temp_upload"}).json["request_id"]
    wrong = client.post(
        f"/v1/temp-skill-runs/{rid}/upload", data=package_and_inputs(plugin_package())
    )
    error(wrong, 404, "REQUEST_NOT_FOUND")


# --- the runner's two-step temp-skill-run -------------------------------------------------


def test_two_step_temp_skill_run(client, app, queue):
    created = client.post(
        "/v1/temp-skill-runs",
        json={"engine": None, "parameter": {}, "model": None, "runtime_options": {}},
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    up = client.post(
        f"/v1/temp-skill-runs/{rid}/upload",
        data=package_and_inputs(plugin_package(file_input=True), {"notes.txt": "n"}),
    )
    assert up.status_code == 200, up.json
    assert up.json["extracted_files"] == ["notes.txt"]
    assert len(queue.sent) == 1
    with app.extensions["db"]() as session:
        assert session.get(Request, rid).kind == "temp"
    status = client.get(f"/v1/temp-skill-runs/{rid}")
    assert status.status_code == 200 and status.json["status"] == "queued"
    assert client.get(f"/v1/jobs/{rid}").status_code == 404
    error(client.get(f"/v1/temp-skill-runs/{rid}/artifacts"), 409, "RUN_NOT_FINISHED")


def test_two_step_temp_skill_run_of_a_skill_without_files_takes_the_runners_empty_zip(
    client, queue
):
    rid = client.post("/v1/temp-skill-runs", json={"runtime_options": {"no_cache": True}}).json[
        "request_id"
    ]
    up = client.post(
        f"/v1/temp-skill-runs/{rid}/upload", data=package_and_inputs(plugin_package(), {})
    )
    assert up.status_code == 200, up.json
    assert up.json["status"] == "queued" and up.json["extracted_files"] == []
    assert len(queue.sent) == 1
    again = client.post(f"/v1/temp-skill-runs/{rid}/upload", data=upload_body({}))
    assert again.status_code == 200 and len(queue.sent) == 1  # the package is not taken twice


def test_two_step_temp_skill_run_refusals(client, queue):
    error(client.post("/v1/temp-skill-runs", json=[1]), 400, "INVALID_REQUEST")
    error(
        client.post("/v1/temp-skill-runs", json={"parameter": "x"}),
        422,
        "REQUEST_VALIDATION_FAILED",
    )
    rid = client.post("/v1/temp-skill-runs", json={"engine": "gemini"}).json["request_id"]
    pkg = plugin_package(runner={"engines": ["codex"]})
    error(
        client.post(f"/v1/temp-skill-runs/{rid}/upload", data=package_and_inputs(pkg)),
        400,
        "SKILL_ENGINE_UNSUPPORTED",
    )
    assert queue.sent == []


# --- runtime_options keys of other clients ------------------------------------------------


def test_unknown_runtime_options_are_kept_not_refused(client, app):
    options = {
        "env": {"ZOTERO_BRIDGE_SCOPE": "1"},
        "collect_skill_run_feedback": True,
        "workflow_mcp": {"enabled": False},
        "preamble_prompt": "be brief",
    }
    resp = job(client, runtime_options=options)
    assert resp.status_code == 200, resp.json
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run)).one()
        # stored as sent, but for env's values (secrets: test_plugin_requests.py)
        redacted = {"ZOTERO_BRIDGE_SCOPE": {"redacted": True}}
        assert run.runtime_options == {**options, "env": redacted}


def test_cleanup_forgets_bodies_whose_package_never_came(client, settings):
    import os
    import time

    old = client.post("/v1/jobs", json={"skill_source": "temp_upload"}).json["request_id"]
    new = client.post("/v1/temp-skill-runs", json={}).json["request_id"]
    held = settings.requests_dir / old / "pending_package.json"
    aged = time.time() - settings.upload_wait_sec - 10
    os.utime(held, (aged, aged))
    assert client.post("/v1/jobs/cleanup", json={}).status_code == 200
    assert not (settings.requests_dir / old).exists()
    assert (settings.requests_dir / new / "pending_package.json").is_file()
    gone = client.post(f"/v1/jobs/{old}/upload", data=package_and_inputs(plugin_package()))
    error(gone, 404, "REQUEST_NOT_FOUND")


def test_another_tokens_held_body_is_404_and_stays_theirs(scoped, app, settings):
    from tests.helpers import bearer

    rid = scoped.post(
        "/v1/jobs", json={"skill_source": "temp_upload"}, headers=bearer("alice")
    ).json["request_id"]
    theirs = scoped.post(
        f"/v1/jobs/{rid}/upload", data=package_and_inputs(plugin_package()), headers=bearer("bob")
    )
    error(theirs, 404, "REQUEST_NOT_FOUND")
    for read in ("", "/events/history", "/chat/history"):  # nor is its status
        error(scoped.get(f"/v1/jobs/{rid}{read}", headers=bearer("bob")), 404, "REQUEST_NOT_FOUND")
    error(scoped.post(f"/v1/jobs/{rid}/cancel", headers=bearer("bob")), 404, "REQUEST_NOT_FOUND")
    assert scoped.get(f"/v1/jobs/{rid}", headers=bearer("alice")).json["status"] == "queued"
    assert (settings.requests_dir / rid / "pending_package.json").is_file()
    mine = scoped.post(
        f"/v1/jobs/{rid}/upload",
        data=package_and_inputs(plugin_package()),
        headers=bearer("alice"),
    )
    assert mine.status_code == 200, mine.json
    assert scoped.get(f"/v1/jobs/{rid}", headers=bearer("alice")).json["skill_id"] == "pkg-echo"
    error(scoped.get(f"/v1/jobs/{rid}", headers=bearer("bob")), 404, "REQUEST_NOT_FOUND")
