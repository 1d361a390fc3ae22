"""Chained runs in one workspace: `runtime_options.workspace = {mode: "reuse", request_id,
file_bindings}` (the Zotero plugin's multi-step workflows) checked when the job is created."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlalchemy import update

from runner_core.store.models import Request, Run, utcnow
from tests.helpers import BOTH_DATABASES

TARGET = "inputs/input_file/note.txt"


def finish(app, settings, request_id, files=None, status="succeeded"):
    """End the run of `request_id` with `status`, its directory holding `files`."""
    with app.extensions["db"]() as session:
        run_id = session.get(Request, request_id).run_id
        session.execute(
            update(Run).where(Run.id == run_id).values(status=status, finished_at=utcnow())
        )
        session.commit()
    run_dir = settings.runs_dir / run_id
    for rel, text in (files or {}).items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(text)
    return run_id


def source(client, app, settings, note="10", document=None):
    """A succeeded first step (never served from the cache: each is a run of its own, with
    the same cache key) whose workspace holds artifacts/note.txt and its result document."""
    rid = client.post(
        "/v1/jobs",
        json={
            "skill_id": "fenced-json",
            "input": {"text": "hi"},
            "runtime_options": {"no_cache": True},
        },
    ).json["request_id"]
    run_id = finish(
        app,
        settings,
        rid,
        {
            "artifacts/note.txt": note,
            "result/result.json": json.dumps(document or {"status": "succeeded"}),
        },
    )
    return rid, run_id


def step(client, source_rid, binding=None, value=TARGET, **workspace):
    """A second step (demo-prime-number, one required file input) reusing `source_rid`."""
    bind = {
        "input_key": "input_file",
        "source_request_id": source_rid,
        "source_path": "artifacts/note.txt",
        "target_path": TARGET,
        **(binding or {}),
    }
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": "demo-prime-number",
            "input": {"input_file": value},
            "runtime_options": {
                "workspace": {
                    "mode": "reuse",
                    "request_id": source_rid,
                    "file_bindings": [bind],
                    **workspace,
                }
            },
        },
    )


def error_code(resp):
    return resp.status_code, resp.json["error"]["code"]


@BOTH_DATABASES
def test_bound_step_needs_no_upload_and_is_sent_at_once(client, app, settings, queue):
    src, src_run = source(client, app, settings)
    resp = step(client, src)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    assert resp.json["cache_hit"] is False
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["waiting_for_upload"] is False and status["status"] == "queued"
    assert queue.sent[-1][0] == status["run_id"]  # sent with no upload
    pinned = settings.requests_dir / rid / "bound" / TARGET
    assert pinned.read_text() == "10"
    # a hard link: the source's file, kept whatever happens to the source's directory
    assert (
        pinned.stat().st_ino == (settings.runs_dir / src_run / "artifacts/note.txt").stat().st_ino
    )
    with app.extensions["db"]() as session:
        run = session.get(Run, status["run_id"])
        stored = run.runtime_options["workspace"]
        payload = session.get(Request, rid).payload
    assert stored["source_run_id"] == src_run and stored["cache_token"]
    assert "source_run_id" not in payload["runtime_options"]["workspace"]  # as the client sent


def test_status_says_where_the_files_are(client, app, settings):
    src, src_run = source(client, app, settings)
    status = client.get(f"/v1/jobs/{src}").json
    run_dir = settings.runs_dir / src_run
    assert status["workspace_dir"] == status["workspaceDir"] == str(run_dir)
    assert status["resultJsonPath"] == str(run_dir / "result" / "result.json")
    (run_dir / "result" / "fenced-json.1").mkdir()
    (run_dir / "result" / "fenced-json.1" / "result.json").write_text("{}")
    status = client.get(f"/v1/jobs/{src}").json
    assert status["resultJsonPath"] == str(run_dir / "result" / "fenced-json.1" / "result.json")


def test_unknown_source_is_404(client, app, settings):
    assert error_code(step(client, "no-such-request")) == (404, "WORKSPACE_SOURCE_NOT_FOUND")
    src, _ = source(client, app, settings)
    resp = step(client, src, {"source_request_id": "nope"})
    assert error_code(resp) == (404, "WORKSPACE_SOURCE_NOT_FOUND")


@BOTH_DATABASES
def test_source_that_did_not_succeed_is_409(client, app, settings, queue):
    rid = client.post("/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "x"}}).json[
        "request_id"
    ]
    resp = step(client, rid)  # still queued
    assert error_code(resp) == (409, "WORKSPACE_SOURCE_NOT_READY")
    assert resp.json["error"]["details"]["status"] == "queued"
    finish(app, settings, rid, {"artifacts/note.txt": "10"}, status="failed")
    assert error_code(step(client, rid)) == (409, "WORKSPACE_SOURCE_NOT_READY")
    sent = len(queue.sent)
    assert error_code(step(client, rid)) == (409, "WORKSPACE_SOURCE_NOT_READY")
    assert len(queue.sent) == sent  # nothing was created


def test_source_whose_files_are_gone_is_409(client, app, settings):
    src, src_run = source(client, app, settings)
    shutil.rmtree(settings.runs_dir / src_run)
    assert error_code(step(client, src)) == (409, "WORKSPACE_SOURCE_NOT_READY")


@pytest.mark.parametrize(
    "binding, value",
    [
        ({}, "inputs/input_file/other.txt"),  # target_path is not input[input_key]
        ({"source_path": "../../../etc/passwd"}, TARGET),  # leaves the run
        ({"source_path": "/etc/passwd"}, TARGET),
        ({"source_path": "artifacts/missing.txt"}, TARGET),  # no such file
        ({"source_path": "logs/stderr.txt"}, TARGET),  # the run's own records
        ({"source_path": ".codex/auth.json"}, TARGET),  # hidden: engine homes
        ({"target_path": "../escape.txt"}, "../escape.txt"),
        ({"input_key": "divisor"}, TARGET),  # not a file input
    ],
)
def test_bad_binding_is_422(client, app, settings, binding, value):
    src, _ = source(client, app, settings)
    resp = step(client, src, binding, value)
    assert error_code(resp) == (422, "WORKSPACE_BINDING_INVALID"), resp.json


def test_symlink_out_of_the_source_run_is_422(client, app, settings, tmp_path):
    src, src_run = source(client, app, settings)
    secret = tmp_path / "secret.txt"
    secret.write_text("42")
    (settings.runs_dir / src_run / "artifacts" / "link.txt").symlink_to(secret)
    resp = step(client, src, {"source_path": "artifacts/link.txt"})
    assert error_code(resp) == (422, "WORKSPACE_BINDING_INVALID")
    assert "leads out of the run" in resp.json["error"]["message"]


@pytest.mark.parametrize(
    "workspace",
    [
        {"mode": "sideways"},
        {"request_id": ""},
        {"file_bindings": "not-a-list"},
        {"file_bindings": [{"input_key": "input_file"}]},
    ],
)
def test_malformed_workspace_option_is_422(client, app, settings, workspace):
    src, _ = source(client, app, settings)
    body = {"mode": "reuse", "request_id": src, **workspace}
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "demo-prime-number",
            "input": {"input_file": TARGET},
            "runtime_options": {"workspace": body},
        },
    )
    assert error_code(resp) == (422, "WORKSPACE_BINDING_INVALID")


def test_mode_new_is_a_plain_job(client, queue):
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "fenced-json",
            "input": {"text": "x"},
            "runtime_options": {"workspace": {"mode": "new"}},
        },
    )
    assert resp.status_code == 200 and len(queue.sent) == 1


@BOTH_DATABASES
def test_the_sources_output_is_in_the_cache_key(client, app, settings, queue):
    src, _ = source(client, app, settings, note="10")
    first = step(client, src).json
    finish(app, settings, first["request_id"])
    assert step(client, src).json["cache_hit"] is True  # same source, same file
    # a source of the same request (same cache key) that made the same output: a hit
    twin, _ = source(client, app, settings, note="10")
    assert step(client, twin).json["cache_hit"] is True
    # ... whose bound file differs: a miss
    other, _ = source(client, app, settings, note="20")
    assert step(client, other).json["cache_hit"] is False
    # ... whose bound file is the same but whose result document differs: a miss too
    third, _ = source(client, app, settings, note="10", document={"status": "x", "data": 1})
    assert step(client, third).json["cache_hit"] is False
