"""The result cache binds identical requests to a succeeded run without a worker."""

from __future__ import annotations

from sqlalchemy import func, select, update

from runner_core.store.models import Request, Run, utcnow
from tests.helpers import upload_body


def finish(app, request_id, status="succeeded"):
    with app.extensions["db"]() as session:
        run_id = session.get(Request, request_id).run_id
        session.execute(
            update(Run).where(Run.id == run_id).values(status=status, finished_at=utcnow())
        )
        session.commit()
        return run_id


def post(client, text="hi", **options):
    return client.post(
        "/v1/jobs",
        json={"skill_id": "fenced-json", "input": {"text": text}, "runtime_options": options},
    ).json


def test_identical_request_hits_a_succeeded_run(client, app, queue):
    first = post(client)
    run_id = finish(app, first["request_id"])
    second = post(client)
    assert second["cache_hit"] is True and second["status"] == "succeeded"
    assert len(queue.sent) == 1  # no second enqueue
    status = client.get(f"/v1/jobs/{second['request_id']}").json
    assert status["run_id"] == run_id and status["cache_hit"] is True


def test_different_input_misses(client, app, queue):
    finish(app, post(client)["request_id"])
    assert post(client, text="other")["cache_hit"] is False
    assert len(queue.sent) == 2


def test_failed_runs_are_never_cached(client, app, queue):
    finish(app, post(client)["request_id"], status="failed")
    assert post(client)["cache_hit"] is False


def test_no_cache_opts_out(client, app):
    finish(app, post(client)["request_id"])
    assert post(client, no_cache=True)["cache_hit"] is False


def test_an_auto_request_is_not_served_by_an_interactive_run(client, app, queue):
    """An interactive run's output follows the user's answers and its prompt asks for them; it
    was cached under the key of the same request in auto mode, so an auto request got another
    person's choices as its result, without a run."""
    body = {"skill_id": "pick-title", "engine": "codex", "input": {"text": "hi"}}
    asked = client.post(
        "/v1/jobs", json={**body, "runtime_options": {"execution_mode": "interactive"}}
    ).json
    finish(app, asked["request_id"])
    auto = client.post("/v1/jobs", json=body).json
    assert auto["cache_hit"] is False and auto["status"] == "queued"
    assert len(queue.sent) == 2
    finish(app, auto["request_id"])
    assert client.post("/v1/jobs", json=body).json["cache_hit"] is True  # auto runs still are


def test_changed_skill_script_misses(client, app, skills_root):
    finish(app, post(client)["request_id"])
    script = skills_root / "fenced-json" / "scripts" / "run.py"
    script.write_text(script.read_text() + "\n# changed\n")
    assert post(client)["cache_hit"] is False


def test_upload_with_same_files_hits_and_drops_the_placeholder_run(client, app, queue):
    def job():
        rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
        upload = upload_body({"input_file.txt": "42"})
        return rid, client.post(f"/v1/jobs/{rid}/upload", data=upload).json

    rid1, body1 = job()
    assert body1["cache_hit"] is False
    finish(app, rid1)
    rid2, body2 = job()
    assert body2 == {
        "request_id": rid2,
        "cache_hit": True,
        "status": "succeeded",
        "extracted_files": ["input_file.txt"],
    }
    with app.extensions["db"]() as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 1
    assert len(queue.sent) == 1
