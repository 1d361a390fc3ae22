"""Jobs endpoints through the test client: validation, SQL-first, enqueue by task name."""

from __future__ import annotations

import io
from datetime import datetime, timedelta

from sqlalchemy import select

from api import create_app
from runner_core.store.models import Request, Run
from tests.helpers import BOTH_DATABASES, migrated_settings, upload_body, zip_bytes


def create(client, **body):
    body.setdefault("skill_id", "demo-prime-number")
    return client.post("/v1/jobs", json=body)


def client_with(tmp_path, queue, **env):
    """Settings of a test's own (`env` on top of the defaults) and a test client on them."""
    settings = migrated_settings(tmp_path, **env)
    return settings, create_app({"SETTINGS": settings, "QUEUE": queue}).test_client()


def test_an_upload_while_another_is_coming_in_is_409_and_touches_nothing(client, queue, settings):
    import fcntl
    import os

    rid = create(client).json["request_id"]
    body = upload_body({"input_file.txt": "30"})
    request_dir = settings.requests_dir / rid
    fd = os.open(request_dir / ".upload.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what the first upload holds while its body streams in
    try:
        second = client.post(f"/v1/jobs/{rid}/upload", data=body)
    finally:
        os.close(fd)
    assert second.status_code == 409
    assert second.json["error"]["code"] == "UPLOAD_IN_PROGRESS"
    assert sorted(p.name for p in request_dir.iterdir()) == [".upload.lock", "uploads"]
    assert queue.sent == [] and client.get(f"/v1/jobs/{rid}").json["waiting_for_upload"] is True
    body = upload_body({"input_file.txt": "30"})
    assert client.post(f"/v1/jobs/{rid}/upload", data=body).status_code == 200
    assert len(queue.sent) == 1


def test_create_with_file_input_waits_for_upload(client, queue):
    resp = create(client, parameter={"divisor": 3})
    assert resp.status_code == 200
    assert resp.json["status"] == "queued" and resp.json["cache_hit"] is False
    assert queue.sent == []
    status = client.get(f"/v1/jobs/{resp.json['request_id']}").json
    assert status["waiting_for_upload"] is True


def test_upload_starts_the_run_and_writes_input_manifest(client, queue, settings):
    rid = create(client).json["request_id"]
    resp = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    assert resp.status_code == 200, resp.json
    assert len(queue.sent) == 1 and queue.sent[0][1] == "runs.script"
    manifest = (settings.requests_dir / rid / "input_manifest.json").read_text()
    assert "input_file.txt" in manifest
    again = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    assert again.status_code == 409
    assert again.json["error"]["code"] == "UPLOAD_NOT_ALLOWED"


def test_skill_without_file_inputs_is_enqueued_on_create(client, queue, app):
    resp = create(client, skill_id="fenced-json", input={"text": "hi"})
    assert resp.status_code == 200
    assert len(queue.sent) == 1
    with app.extensions["db"]() as session:
        run = session.scalars(select(Run)).one()
        assert run.queued_at is not None and run.celery_task_id == queue.task_ids[0] is not None


def test_parameter_defaults_are_applied(client, app):
    create(client)
    with app.extensions["db"]() as session:
        assert session.scalars(select(Run)).one().parameter == {"divisor": 1}


def test_parameter_violation_is_400_with_seed_error_body(client, app):
    resp = create(client, parameter={"divisor": 0})
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED"
    assert error["details"]["errors"][0]["path"] == "divisor"
    assert set(error) == {"code", "message", "details", "request_id"}
    with app.extensions["db"]() as session:  # nothing was written
        assert session.scalars(select(Request)).all() == []


def test_unknown_parameter_is_rejected_when_schema_forbids_it(client):
    resp = create(client, parameter={"divisor": 2, "bogus": 1})
    assert resp.status_code == 400


def test_unknown_skill_is_404(client):
    resp = create(client, skill_id="no-such-skill")
    assert resp.status_code == 404
    assert resp.json["error"]["code"] == "SKILL_NOT_FOUND"


def test_engine_outside_effective_set_is_400(client):
    resp = create(client, engine="not-an-engine")
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "SKILL_ENGINE_UNSUPPORTED"


def test_execution_mode_not_declared_is_400(client):
    resp = create(client, runtime_options={"execution_mode": "interactive"})
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "EXECUTION_MODE_UNSUPPORTED"


def test_inline_value_for_file_field_is_refused(client):
    resp = create(client, input={"input_file": "/etc/passwd"})
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "INPUT_FILE_AS_INLINE"


def test_missing_body_field_is_422_with_seed_body(client):
    resp = client.post("/v1/jobs", json={"parameter": {}})
    assert resp.status_code == 422
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    assert "skill_id" in str(resp.json["error"]["details"])


def test_validation_message_names_the_fields(client):
    resp = client.post("/v1/jobs", json={"parameter": {}, "limit": 3})
    assert resp.json["error"]["message"] == "json.skill_id: Missing data for required field."
    resp = client.get("/v1/jobs?limit=0&status=bogus")
    message = resp.json["error"]["message"]
    assert resp.status_code == 422 and "query.limit:" in message and "query.status:" in message


def test_body_that_is_not_json_is_400_saying_why(client, settings):
    resp = client.post("/v1/jobs", data="{bad", content_type="application/json")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "INVALID_REQUEST"
    assert "not valid JSON" in resp.json["error"]["message"]
    assert "line 1 column 2" in resp.json["error"]["message"]
    resp = client.post("/v1/jobs", data=b'{"skill_id": "\xff"}', content_type="application/json")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "INVALID_REQUEST"


def test_json_nested_past_the_parser_limit_is_400_not_500(client, settings):
    deep = (
        '{"skill_id": "demo-prime-number", "input": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    )
    resp = client.post("/v1/jobs", data=deep, content_type="application/json")
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "INVALID_REQUEST"
    assert resp.json["error"]["message"] == "json: the JSON body is nested too deeply"
    assert not settings.requests_dir.exists() or not any(settings.requests_dir.iterdir())


def test_unknown_job_is_404_with_request_id(client):
    resp = client.get("/v1/jobs/nope")
    assert resp.status_code == 404
    assert resp.json["error"]["code"] == "REQUEST_NOT_FOUND"
    assert resp.json["error"]["request_id"] == "nope"


def test_wrong_method_is_405_with_seed_body(client):
    resp = client.delete("/v1/jobs")
    assert resp.status_code == 405
    assert resp.json["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert {"GET", "POST"} <= set(resp.headers["Allow"].split(", "))  # what it does take
    assert resp.headers["Content-Type"] == "application/json"


def test_non_zip_upload_is_400_and_writes_nothing(client, settings, queue):
    rid = create(client).json["request_id"]
    resp = client.post(f"/v1/jobs/{rid}/upload", data=b"not a zip", content_type="application/zip")
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "UPLOAD_NOT_ZIP"
    assert list((settings.requests_dir / rid / "uploads").iterdir()) == []
    assert queue.sent == []


def test_result_of_unfinished_run_is_409(client):
    rid = create(client).json["request_id"]  # demo-prime-number: waits for its upload
    resp = client.get(f"/v1/jobs/{rid}/result?wait_sec=5")  # answered at once: needs the client
    assert resp.status_code == 409
    assert resp.json["error"]["code"] == "RUN_NOT_FINISHED"
    assert resp.json["error"]["details"] == {"status": "queued", "waiting_for_upload": True}
    assert "upload" in resp.json["error"]["message"]
    queued = create(client, skill_id="fenced-json", input={"text": "x"}).json["request_id"]
    resp = client.get(f"/v1/jobs/{queued}/result")
    assert resp.json["error"]["details"] == {"status": "queued", "waiting_for_upload": False}


def test_cancel_queued_run_and_then_again(client, queue):
    rid = create(client, skill_id="fenced-json", input={"text": "x"}).json["request_id"]
    first = client.post(f"/v1/jobs/{rid}/cancel").json
    assert {k: first[k] for k in ("request_id", "accepted", "status")} == {
        "request_id": rid,
        "accepted": True,
        "status": "canceled",
    }
    assert queue.revoked == [queue.task_ids[0]]
    second = client.post(f"/v1/jobs/{rid}/cancel").json
    assert second["accepted"] is False and second["status"] == "canceled"
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["error"]["code"] == "CANCELED_BY_USER"


def test_queue_bound_answers_429(tmp_path, skills_root, queue):
    _, client = client_with(tmp_path, queue, SKILL_RUNNER_QUEUE_MAX="2")
    for _ in range(2):
        assert create(client, skill_id="fenced-json", input={"text": "x"}).status_code == 200
    resp = create(client, skill_id="fenced-json", input={"text": "x"})
    assert resp.status_code == 429
    assert resp.json["error"]["code"] == "QUEUE_FULL" and resp.headers["Retry-After"] == "5"
    assert resp.json["error"]["details"] == {"queued": 2, "limit": 2}


def test_jobs_waiting_for_their_upload_do_not_fill_the_queue_bound(tmp_path, skills_root, queue):
    _, client = client_with(tmp_path, queue, SKILL_RUNNER_QUEUE_MAX="2")
    for _ in range(3):  # never uploaded: not in any queue
        assert create(client).json["status"] == "queued"
    for _ in range(2):
        assert create(client, skill_id="fenced-json", input={"text": "x"}).status_code == 200
    assert create(client, skill_id="fenced-json", input={"text": "x"}).status_code == 429


def hostile_zip(name: str, content: bytes = b"x", attr: int | None = None) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo(name)
        if attr is not None:
            info.external_attr = attr
        zf.writestr(info, content)
    return buf.getvalue()


def test_zip_slip_is_refused_and_nothing_is_written_outside(client, settings, tmp_path):
    rid = create(client).json["request_id"]
    resp = client.post(
        f"/v1/jobs/{rid}/upload",
        data=hostile_zip("../../../escaped.txt"),
        content_type="application/zip",
    )
    assert resp.status_code == 400 and resp.json["error"]["code"] == "UPLOAD_UNSAFE_PATH"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_symlink_entry_is_refused(client):
    rid = create(client).json["request_id"]
    resp = client.post(
        f"/v1/jobs/{rid}/upload",
        data=hostile_zip("input_file", b"/etc/passwd", attr=0o120777 << 16),
        content_type="application/zip",
    )
    assert resp.status_code == 400 and resp.json["error"]["code"] == "UPLOAD_SYMLINK"


def test_upload_size_limit_is_configurable(tmp_path, skills_root, queue):
    _, client = client_with(tmp_path, queue, SKILL_RUNNER_UPLOAD_MAX_BYTES="100")
    rid = create(client).json["request_id"]
    resp = client.post(
        f"/v1/jobs/{rid}/upload",
        data=zip_bytes({"input_file.txt": "7" * 500}),
        content_type="application/zip",
    )
    assert resp.status_code == 400 and resp.json["error"]["code"] == "UPLOAD_TOO_LARGE"
    assert queue.sent == []


def test_a_body_over_the_limit_is_413_and_nothing_of_it_is_kept(tmp_path, skills_root, queue):
    settings, client = client_with(
        tmp_path,
        queue,
        SKILL_RUNNER_UPLOAD_MAX_BYTES="1000",
        SKILL_RUNNER_UPLOAD_MAX_ENTRIES="10",
        SKILL_RUNNER_MAX_REQUEST_BYTES="2000",
    )
    rid = create(client).json["request_id"]
    cap = 1000 + 10 * 1024 + 1024 * 1024
    big = b"x" * (cap + 1)
    for kwargs in (
        {"data": big, "content_type": "application/zip"},
        {"data": {"file": (io.BytesIO(big), "inputs.zip")}},
    ):
        resp = client.post(f"/v1/jobs/{rid}/upload", **kwargs)
        assert resp.status_code == 413, resp.json
        assert resp.json["error"]["code"] == "UPLOAD_TOO_LARGE"
        assert resp.json["error"]["details"] == {"limit_bytes": cap}
        assert sorted(p.name for p in (settings.requests_dir / rid).iterdir()) == [
            ".upload.lock",
            "uploads",
        ]
        assert list((settings.requests_dir / rid / "uploads").iterdir()) == []
    json_body = create(client, skill_id="fenced-json", input={"text": "x" * 3000})
    assert json_body.status_code == 413
    assert json_body.json["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert create(client, skill_id="fenced-json", input={"text": "x"}).status_code == 200
    assert len(queue.sent) == 1


@BOTH_DATABASES
def test_job_list_filters_and_pages_newest_first(client):
    ids = [
        create(client, skill_id="fenced-json", input={"text": str(i)}).json["request_id"]
        for i in range(5)
    ]
    create(client)  # a demo-prime-number job, filtered out below
    page = client.get("/v1/jobs?skill_id=fenced-json&limit=2").json
    assert [j["request_id"] for j in page["items"]] == ids[::-1][:2]
    seen = [j["request_id"] for j in page["items"]]
    while page["next_cursor"]:
        page = client.get(
            "/v1/jobs",
            query_string={"skill_id": "fenced-json", "limit": 2, "cursor": page["next_cursor"]},
        ).json
        seen += [j["request_id"] for j in page["items"]]
    assert seen == ids[::-1]
    assert client.get("/v1/jobs?status=running").json["items"] == []
    assert client.get("/v1/jobs?status=bogus").status_code == 422
    assert client.get("/v1/jobs?cursor=garbage").json["error"]["code"] == "INVALID_CURSOR"


@BOTH_DATABASES
def test_job_list_items_are_the_status_documents_the_schema_describes(client):
    from api.schemas import JobList

    rid = create(client, skill_id="fenced-json", input={"text": "x"}).json["request_id"]
    listed = client.get("/v1/jobs?skill_id=fenced-json").json
    item = listed["items"][0]
    assert set(item) == set(JobList().fields["items"].inner.schema.fields)
    assert item["created_at"].endswith("Z") and item["queued_at"].endswith("Z")
    assert datetime.fromisoformat(item["created_at"]).utcoffset() == timedelta(0)
    assert item["warnings"] == [] and item["waiting_for_upload"] is False
    single = client.get(f"/v1/jobs/{rid}").json
    assert listed["items"][0] == single  # the same document as GET /v1/jobs/{id}


@BOTH_DATABASES
def test_list_pages_split_ties_on_created_at_by_id(client, app):
    from sqlalchemy import update as sql_update

    from runner_core.store.models import Run as RunRow

    ids = [
        create(client, skill_id="fenced-json", input={"text": f"t{i}"}).json["request_id"]
        for i in range(5)
    ]
    with app.extensions["db"]() as session:
        same = session.get(Request, ids[0]).created_at
        session.execute(sql_update(Request).where(Request.id.in_(ids)).values(created_at=same))
        session.execute(
            sql_update(RunRow).where(RunRow.request_id.in_(ids)).values(created_at=same)
        )
        session.commit()
        run_of = {rid: session.get(Request, rid).run_id for rid in ids}
    for status, order in (
        (None, sorted(ids, reverse=True)),  # requests index: ties by request id
        ("queued", sorted(ids, key=run_of.get, reverse=True)),
    ):  # runs index
        seen, cursor = [], None
        while True:
            query = {"skill_id": "fenced-json", "limit": 2}
            query.update({"status": status} if status else {})
            query.update({"cursor": cursor} if cursor else {})
            page = client.get("/v1/jobs", query_string=query).json
            seen += [j["request_id"] for j in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert seen == order, status


@BOTH_DATABASES
def test_rare_status_list_pages_newest_first(client, app):
    from sqlalchemy import update as sql_update

    from runner_core.store.models import Run as RunRow

    ids = [
        create(client, skill_id="fenced-json", input={"text": f"f{i}"}).json["request_id"]
        for i in range(5)
    ]
    with app.extensions["db"]() as session:
        failed = ids[1:4]
        run_ids = [session.get(Request, rid).run_id for rid in failed]
        session.execute(sql_update(RunRow).where(RunRow.id.in_(run_ids)).values(status="failed"))
        session.commit()
    seen, cursor = [], None
    while True:
        query = {"status": "failed", "skill_id": "fenced-json", "limit": 2}
        if cursor:
            query["cursor"] = cursor
        page = client.get("/v1/jobs", query_string=query).json
        seen += [j["request_id"] for j in page["items"]]
        assert all(j["status"] == "failed" for j in page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == failed[::-1]


def test_wait_sec_out_of_range_is_422_with_seed_error_body(client):
    rid = create(client, parameter={"divisor": 3}).json["request_id"]
    for bad in ("61", "-1", "soon"):
        resp = client.get(f"/v1/jobs/{rid}?wait_sec={bad}")
        assert resp.status_code == 422, bad
        assert set(resp.json["error"]) >= {"code", "message", "details", "request_id"}
    assert client.get(f"/v1/jobs/{rid}/result?wait_sec=0").status_code == 409


def test_logs_range_reads_a_log_in_pieces_on_character_boundaries(client, settings, monkeypatch):
    from api.jobs import actions

    rid = create(client, skill_id="fenced-json", input={"text": "x"}).json["request_id"]
    empty = client.get(f"/v1/jobs/{rid}/logs/range").json
    assert empty == {
        "request_id": rid,
        "stream": "stdout",
        "byte_from": 0,
        "byte_to": 0,
        "size": 0,
        "status": "queued",
        "text": "",
        "chunk": "",
    }
    run_id = client.get(f"/v1/jobs/{rid}").json["run_id"]
    logs = settings.runs_dir / run_id / "logs"
    logs.mkdir(parents=True)
    text = "a\u00e9\u2713\U0001f600 tail\n" * 3  # 1-, 2-, 3- and 4-byte characters
    (logs / "stderr.txt").write_bytes(text.encode())
    monkeypatch.setattr(actions, "RANGE_CAP", 5)  # every answer would split a character
    pieces, offset = [], 0
    while True:
        part = client.get(f"/v1/jobs/{rid}/logs/range?stream=stderr&byte_from={offset}").json
        assert part["size"] == len(text.encode()) and "\ufffd" not in part["text"]
        assert 0 < part["byte_to"] - part["byte_from"] <= 5 or part["byte_to"] == part["size"]
        pieces.append(part["text"])
        if part["byte_to"] == offset:
            break
        offset = part["byte_to"]
    assert "".join(pieces) == text
    (logs / "stdout.txt").write_bytes("ok \u2713".encode()[:-1])  # a writer mid-character
    live = client.get(f"/v1/jobs/{rid}/logs/range").json
    assert live["text"] == "ok " and live["byte_to"] == 3 and live["size"] == 5
    window = client.get(f"/v1/jobs/{rid}/logs/range?stream=stderr&byte_from=1&byte_to=3").json
    assert window["text"] == "\u00e9" and window["byte_to"] == 3
    past = client.get(f"/v1/jobs/{rid}/logs/range?stream=stderr&byte_from=999").json
    assert past["byte_from"] == past["byte_to"] == past["size"] and past["text"] == ""
    backwards = client.get(f"/v1/jobs/{rid}/logs/range?byte_from=4&byte_to=2")
    assert backwards.status_code == 400
    assert backwards.json["error"]["code"] == "INVALID_LOG_RANGE"
    # pty (the spec's terminal stream) is stdout here, and byte_to=0 (Skill-Runner's
    # clients) means "to the end"; `chunk` repeats the text under their name
    pty = client.get(f"/v1/jobs/{rid}/logs/range?stream=pty&byte_from=0&byte_to=0").json
    assert (pty["stream"], pty["text"], pty["chunk"]) == ("pty", "ok ", "ok ")
    assert client.get(f"/v1/jobs/{rid}/logs/range?stream=tty").status_code == 422
    assert client.get("/v1/jobs/nope/logs/range").status_code == 404
    assert client.get(f"/v1/temp-skill-runs/{rid}/logs/range").status_code == 404


def test_logs_range_starting_inside_a_character_starts_after_it(client, settings):
    rid = create(client, skill_id="fenced-json", input={"text": "x"}).json["request_id"]
    run_id = client.get(f"/v1/jobs/{rid}").json["run_id"]
    logs = settings.runs_dir / run_id / "logs"
    logs.mkdir(parents=True)
    (logs / "prompt.txt").write_bytes(("x" * 299 + "日本語\n").encode())  # 299-307
    part = client.get(f"/v1/jobs/{rid}/logs/range?stream=prompt&byte_from=300&byte_to=309").json
    assert (part["text"], part["byte_from"], part["byte_to"]) == ("本語\n", 302, 309)
    inner = client.get(f"/v1/jobs/{rid}/logs/range?stream=prompt&byte_from=301&byte_to=307").json
    assert (inner["text"], inner["byte_from"], inner["byte_to"]) == ("本", 302, 305)
    for start in range(296, 309):  # each answer is exactly its bytes, whatever the start
        got = client.get(f"/v1/jobs/{rid}/logs/range?stream=prompt&byte_from={start}").json
        assert "\ufffd" not in got["text"] and start <= got["byte_from"] <= start + 2
        assert len(got["text"].encode()) == got["byte_to"] - got["byte_from"]


def test_a_full_disk_at_create_is_507_and_leaves_no_job(client, queue, app, settings, monkeypatch):
    import errno
    from pathlib import Path

    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "uploads":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    resp = create(client, skill_id="demo-prime-number")
    assert resp.status_code == 507
    assert resp.json["error"]["code"] == "STORAGE_FULL" and resp.headers["Retry-After"] == "60"
    with app.extensions["db"]() as session:  # the job was never committed
        assert (
            session.scalars(select(Run)).all() == []
            and session.scalars(select(Request)).all() == []
        )
    assert queue.sent == []
    monkeypatch.setattr(Path, "mkdir", real_mkdir)
    assert create(client, skill_id="demo-prime-number").status_code == 200


def test_runtime_options_of_the_wrong_type_are_400_before_any_run(client, queue):
    for options, path in (
        ({"repair_rounds": "two"}, "repair_rounds"),
        ({"repair_rounds": 7}, "repair_rounds"),
        ({"timeout_sec": 0}, "timeout_sec"),
        ({"timeout_sec": "60"}, "timeout_sec"),
        ({"no_cache": "yes"}, "no_cache"),
        ({"codex_config": "model=x"}, "codex_config"),
    ):
        resp = create(client, skill_id="fenced-json", input={"text": "hi"}, runtime_options=options)
        assert resp.status_code == 400, (options, resp.json)
        error = resp.json["error"]
        assert error["code"] == "SCHEMA_VALIDATION_FAILED"
        assert error["message"].startswith(f"runtime_options.{path}: ")
        assert error["details"]["schema"] == "runtime_options"
    assert queue.sent == []
    ok = create(
        client,
        skill_id="fenced-json",
        input={"text": "hi"},
        runtime_options={
            "repair_rounds": 2,
            "timeout_sec": 30,
            "no_cache": True,
            "debug": False,
            "codex_config": {"a": 1},
            "custom": "kept",
        },
    )
    assert ok.status_code == 200, ok.json


def test_a_runtime_option_sent_at_the_top_is_the_runs_not_dropped(client, app, queue):
    """`execution_mode` beside runtime_options (not in it) made an auto run without a word."""
    resp = create(
        client,
        skill_id="pick-title",
        engine="codex",
        input={"text": "hello"},
        execution_mode="interactive",
        timeout_sec=30,
        runtime_options={"no_cache": True},
        client_extra="ignored",  # fields nobody reads are still accepted
    )
    assert resp.status_code == 200, resp.json
    with app.extensions["db"]() as session:
        run = session.get(Run, session.get(Request, resp.json["request_id"]).run_id)
        assert run.runtime_options == {
            "execution_mode": "interactive",
            "timeout_sec": 30,
            "no_cache": True,
        }
    again = create(
        client,
        skill_id="pick-title",
        engine="codex",
        input={"text": "hello"},
        execution_mode="interactive",
        runtime_options={"execution_mode": "interactive", "no_cache": True},
    )
    assert again.status_code == 200, again.json


def test_a_runtime_option_sent_at_the_top_and_inside_with_other_values_is_refused(client, queue):
    resp = create(
        client,
        skill_id="pick-title",
        engine="codex",
        input={"text": "hello"},
        execution_mode="interactive",
        runtime_options={"execution_mode": "auto"},
    )
    assert resp.status_code == 422, resp.json
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    assert "execution_mode" in resp.json["error"]["message"] + str(resp.json["error"]["details"])
    assert queue.sent == []
    # a top-level option with a wrong type is refused as in runtime_options
    wrong = create(client, skill_id="fenced-json", input={"text": "hi"}, timeout_sec="60")
    assert wrong.status_code == 400
    assert wrong.json["error"]["message"].startswith("runtime_options.timeout_sec: ")


def test_each_message_carries_celery_time_limits_just_above_the_runs_own(client, queue):
    create(client, skill_id="fenced-json", input={"text": "x"})  # no skill timeout: 600 s
    create(client, skill_id="fenced-json", input={"text": "y"}, runtime_options={"timeout_sec": 30})
    create(client, skill_id="slow-counter")  # automation.timeout_sec 30
    create(
        client, skill_id="fenced-json", input={"text": "z"}, runtime_options={"timeout_sec": 10**6}
    )  # capped by the server maximum (3600 s)
    assert queue.time_limits == [(720, 660), (150, 90), (150, 90), (3720, 3660)]


def test_status_reports_the_token_usage_the_run_finished_with(client, app):
    from sqlalchemy import update

    from runner_core.store.runs import finish_run

    rid = create(client, skill_id="echo-prompt", input={"text": "hi"}).json["request_id"]
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["token_usage"] is None  # nothing ran yet
    with app.extensions["db"]() as session:
        session.execute(update(Run).where(Run.id == status["run_id"]).values(status="running"))
        session.commit()
        assert finish_run(
            session,
            status["run_id"],
            "succeeded",
            token_usage={"input_tokens": 120, "output_tokens": 7},
        )
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["token_usage"] == {"input_tokens": 120, "output_tokens": 7}
    assert client.get("/v1/jobs").json["items"][0]["token_usage"] == status["token_usage"]


def test_the_message_sent_after_an_upload_names_skill_engine_and_request(client, queue):
    rid = create(client).json["request_id"]
    client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    (label,) = queue.labels  # what Flower shows as the task's kwargs
    shown = {"skill": "demo-prime-number", "engine": "script", "request_id": rid}
    assert label == {"kwargsrepr": repr(shown)}


def test_the_queue_bound_sees_other_processes_runs_once_its_count_is_stale(
    tmp_path, skills_root, queue
):
    """Two apps on one database stand for two API processes; each counts the queued runs at
    most once per FRESH_SEC while under the bound (api/jobs/queue_bound.py). Their clock is
    the test's: a slow machine cannot age a count between two requests."""
    from api.jobs.queue_bound import FRESH_SEC, QueueBound

    now = [0.0]
    settings = migrated_settings(tmp_path, SKILL_RUNNER_QUEUE_MAX="2")
    apps = [create_app({"SETTINGS": settings, "QUEUE": queue}) for _ in "12"]
    for app in apps:
        app.extensions["queue_bound"] = QueueBound(lambda: now[0])
    one, two = (app.test_client() for app in apps)
    assert create(one, skill_id="fenced-json", input={"text": "a"}).status_code == 200
    assert create(two, skill_id="fenced-json", input={"text": "b"}).status_code == 200
    refused = create(two, skill_id="fenced-json", input={"text": "c"})
    assert refused.status_code == 429 and refused.json["error"]["details"]["queued"] == 2
    # `one` counted before `two` accepted its run: within FRESH_SEC it lets one more pass
    assert create(one, skill_id="fenced-json", input={"text": "d"}).status_code == 200
    now[0] += FRESH_SEC
    late = create(one, skill_id="fenced-json", input={"text": "e"})
    assert late.status_code == 429 and late.json["error"]["details"] == {"queued": 3, "limit": 2}


def test_a_parameter_nested_too_deeply_to_check_is_400(client, queue):
    deep = "[" * 600 + "]" * 600  # parses, but copying it recursed past the limit
    body = '{"skill_id": "demo-prime-number", "parameter": {"x": ' + deep + "}}"
    resp = client.post("/v1/jobs", data=body, content_type="application/json")
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED"
    assert error["details"]["errors"][0]["validator"] == "depth"
    assert queue.sent == []
