"""The management API (/v1/management): each route answers as the jobs, skills or engines route
it mirrors, plus a run's conversation state, file tree and previews with their refusals."""

from __future__ import annotations

import json
import os

import pytest

from api import create_app
from runner_core.store.models import Request
from tests.api.test_interaction_routes import waiting_job
from tests.helpers import migrated_settings, upload_body

M = "/v1/management"


def run_dir(app, rid):
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
    return app.config["SETTINGS"].runs_dir / run_id


def prime_job(client):
    rid = client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "100\n"}))
    return rid


def test_skills_list_detail_and_schemas_are_the_skills_routes(client):
    listed = client.get(f"{M}/skills").json["skills"]  # in an envelope, as Skill-Runner's
    assert listed == client.get("/v1/skills").json
    prime = next(s for s in listed if s["id"] == "demo-prime-number")
    assert prime["health"] == "ok" and "effective_engines" in prime
    detail = client.get(f"{M}/skills/pick-title").json
    assert detail == client.get("/v1/skills/pick-title").json
    assert detail["execution_modes"] == ["auto", "interactive"]
    assert detail["entrypoints"] == detail["entrypoint"]  # the spec's SkillDetail field
    assert detail["entrypoint"]["type"] == "prompt"
    schemas = client.get(f"{M}/skills/pick-title/schemas").json
    assert schemas["skill_id"] == "pick-title"
    assert schemas["input"] == detail["schemas"]["input"]
    assert schemas["parameter"] == detail["schemas"]["parameter"]
    assert schemas["output"]["type"] == "object"
    missing = client.get(f"{M}/skills/nope/schemas")
    assert missing.status_code == 404 and missing.json["error"]["code"] == "SKILL_NOT_FOUND"


def test_engines_carry_sandbox_status_and_detail_upgrade_status(client):
    engines = {e["engine"]: e for e in client.get(f"{M}/engines").json["engines"]}
    plain = {e["engine"]: e for e in client.get("/v1/engines").json}
    assert set(engines) == set(plain)
    assert engines["codex"]["sandbox_status"] == "workspace-write"
    assert engines["gemini"]["sandbox_status"] == "none"
    for name, summary in engines.items():
        assert {k: v for k, v in summary.items() if k != "sandbox_status"} == plain[name]
    detail = client.get(f"{M}/engines/codex").json
    assert detail["upgrade_status"] == "idle" and detail["sandbox_status"] == "workspace-write"
    assert detail["models"] == client.get("/v1/engines/codex/models").json["models"]
    assert "last_error" in detail
    assert client.get(f"{M}/engines/nope").json["error"]["code"] == "ENGINE_NOT_FOUND"


def test_runs_list_is_the_jobs_list_with_its_filters_and_pages(client):
    rids = [prime_job(client) for _ in range(3)]
    page = client.get(f"{M}/runs?limit=2").json
    assert [i["request_id"] for i in page["items"]] == rids[::-1][:2]
    assert page["runs"] == page["items"]  # the plugin reads `runs`
    rest = client.get(f"{M}/runs?limit=2&cursor={page['next_cursor']}").json
    assert [i["request_id"] for i in rest["items"]] == [rids[0]] and rest["next_cursor"] is None
    assert client.get(f"{M}/runs?skill_id=pick-title").json["items"] == []
    bad = client.get(f"{M}/runs?cursor=nonsense")
    assert bad.status_code == 400 and bad.json["error"]["code"] == "INVALID_CURSOR"
    assert client.get(f"{M}/runs?status=bogus").status_code == 422


def test_run_state_of_a_waiting_interactive_run(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue)
    run_dir(app, rid).mkdir(parents=True)  # the worker's, where the API writes its events
    state = client.get(f"{M}/runs/{rid}").json
    assert state["status"] == "waiting_user" and state["run_id"] == run_id
    assert state["pending_interaction_id"] == iid and state["interaction_count"] == 1
    assert state["poll_logs"] is False and state["recovery_state"] == "none"
    assert state["auto_decision_count"] == 0 and state["last_auto_decision_at"] is None
    pending = client.get(f"{M}/runs/{rid}/pending").json
    assert pending == client.get(f"/v1/jobs/{rid}/interaction/pending").json
    assert pending["pending"]["options"][1]["value"] == "b"
    wrong = client.post(f"{M}/runs/{rid}/reply", json={"interaction_id": iid, "response": "z"})
    assert wrong.status_code == 400 and wrong.json["error"]["code"] == "INTERACTION_REPLY_INVALID"
    done = client.post(f"{M}/runs/{rid}/reply", json={"interaction_id": iid, "response": "b"})
    assert done.json == {"request_id": rid, "status": "queued", "accepted": True}
    assert queue.sent == [(run_id, "runs.codex")]  # the next turn, once
    again = client.post(f"{M}/runs/{rid}/reply", json={"interaction_id": iid, "response": "b"})
    assert again.status_code == 409 and again.json["error"]["code"] == "RUN_NOT_WAITING"
    state = client.get(f"{M}/runs/{rid}").json
    assert state["status"] == "queued" and state["poll_logs"] is True
    history = client.get(f"{M}/runs/{rid}/events/history").json
    assert history == client.get(f"/v1/jobs/{rid}/events/history").json
    assert [e["type"] for e in history["events"]][-2:] == [
        "interaction.reply.accepted",
        "conversation.state.changed",
    ]
    canceled = client.post(f"{M}/runs/{rid}/cancel").json
    assert (canceled["request_id"], canceled["accepted"], canceled["status"]) == (
        rid,
        True,
        "canceled",
    )
    assert client.post(f"{M}/runs/{rid}/cancel").json["accepted"] is False


def test_pending_of_an_auto_run_is_400_and_unknown_runs_404(client):
    rid = prime_job(client)
    answer = client.get(f"{M}/runs/{rid}/pending")
    assert answer.status_code == 400 and answer.json["error"]["code"] == "RUN_NOT_INTERACTIVE"
    for path in ("", "/files", "/file?path=x", "/pending", "/events/history", "/logs/range"):
        missing = client.get(f"{M}/runs/nope{path}")
        assert missing.status_code == 404, path
        assert missing.json["error"]["code"] == "REQUEST_NOT_FOUND"


def test_logs_range_is_the_jobs_route(client, app):
    rid = prime_job(client)
    logs = run_dir(app, rid) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "stdout.txt").write_text("héllo world")
    answer = client.get(f"{M}/runs/{rid}/logs/range?stream=stdout&byte_from=0&byte_to=2").json
    assert answer == client.get(f"/v1/jobs/{rid}/logs/range?byte_from=0&byte_to=2").json
    assert answer["text"] == "h" and answer["byte_to"] == 1  # never half a character
    inside = client.get(f"{M}/runs/{rid}/logs/range?stream=stdout&byte_from=2&byte_to=5").json
    assert (inside["text"], inside["byte_from"], inside["byte_to"]) == ("ll", 3, 5)
    bad = client.get(f"{M}/runs/{rid}/logs/range?byte_from=5&byte_to=1")
    assert bad.json["error"]["code"] == "INVALID_LOG_RANGE"


@pytest.fixture
def files_job(client, app, tmp_path):
    """A job whose run directory holds results, an image, an engine home and two symlinks."""
    rid = prime_job(client)
    root = run_dir(app, rid)
    (root / "result").mkdir(parents=True, exist_ok=True)
    (root / "result" / "result.json").write_text('{"status":"succeeded","data":{"n":1}}')
    (root / "artifacts").mkdir(exist_ok=True)
    (root / "artifacts" / "notes.md").write_text("# Notes\n" + "x" * 300_000)
    (root / "artifacts" / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    (root / ".codex-home").mkdir()
    (root / ".codex-home" / "auth.json").write_text('{"OPENAI_API_KEY": "sk-secret"}')
    (root / "opencode.json").write_text('{"provider": {"apiKey": "sk-secret"}}')
    outside = tmp_path / "outside.txt"
    outside.write_text("not the run's")
    os.symlink(outside, root / "artifacts" / "escape.txt")
    os.symlink(root / "result" / "result.json", root / "artifacts" / "inside.json")
    return rid


def test_the_file_tree_leaves_out_engine_homes_configs_and_escaping_links(client, files_job):
    body = client.get(f"{M}/runs/{files_job}/files").json
    paths = {e["path"]: e for e in body["entries"]}
    assert paths["result/result.json"]["type"] == "file"
    assert paths["artifacts"]["type"] == "dir" and paths["artifacts"]["size"] is None
    assert "artifacts/inside.json" in paths and "artifacts/escape.txt" not in paths
    assert not [p for p in paths if p.startswith(".") or "opencode.json" in p]
    assert body["truncated"] is False and "sk-secret" not in json.dumps(body)


def test_previews_pretty_json_cap_text_and_inline_images(client, files_job):
    preview = client.get(f"{M}/runs/{files_job}/file?path=result/result.json").json
    assert preview["kind"] == "json" and preview["text"].startswith('{\n  "status"')
    note = client.get(f"{M}/runs/{files_job}/file?path=artifacts/notes.md").json
    assert note["kind"] == "text" and note["truncated"] is True
    assert len(note["text"].encode()) == 256 * 1024 and note["size"] > 300_000
    image = client.get(f"{M}/runs/{files_job}/file?path=artifacts/dot.png").json
    assert image["kind"] == "image" and image["data_url"].startswith("data:image/png;base64,")
    linked = client.get(f"{M}/runs/{files_job}/file?path=artifacts/inside.json").json
    assert linked["kind"] == "json"


@pytest.mark.parametrize(
    "path,reason",
    [
        ("../../etc/passwd", "traversal"),
        ("/etc/passwd", "traversal"),
        ("artifacts/../../x", "traversal"),
        (".codex-home/auth.json", "secret"),
        ("opencode.json", "secret"),
        ("artifacts/escape.txt", "symlink"),
    ],
)
def test_previews_refuse_paths_out_of_the_run_and_secrets(client, files_job, path, reason):
    answer = client.get(f"{M}/runs/{files_job}/file", query_string={"path": path})
    assert answer.status_code == 403, answer.json
    assert answer.json["error"]["code"] == "RUN_FILE_REFUSED"
    assert answer.json["error"]["details"] == {"path": path, "reason": reason}
    assert "sk-secret" not in answer.get_data(as_text=True)


def test_a_preview_of_nothing_or_a_directory_is_404(client, files_job):
    for path in ("artifacts/none.txt", "artifacts"):
        answer = client.get(f"{M}/runs/{files_job}/file", query_string={"path": path})
        assert answer.status_code == 404 and answer.json["error"]["code"] == "RUN_FILE_NOT_FOUND"
    assert client.get(f"{M}/runs/{files_job}/file").status_code == 422  # path is required


def test_the_event_stream_replays_an_ended_run_and_closes(tmp_path, skills_root, queue, redis_url):
    settings = migrated_settings(tmp_path, CELERY_BROKER_URL=redis_url)
    client = create_app({"SETTINGS": settings, "QUEUE": queue, "TESTING": True}).test_client()
    rid = client.post(
        "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
    ).json["request_id"]
    with client.application.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
    (settings.runs_dir / run_id).mkdir(parents=True)  # the worker's, where events are written
    assert client.post(f"{M}/runs/{rid}/cancel").json["status"] == "canceled"
    answer = client.get(f"{M}/runs/{rid}/events")
    assert answer.mimetype == "text/event-stream"
    text = answer.get_data(as_text=True)
    assert text == client.get(f"/v1/jobs/{rid}/events").get_data(as_text=True)
    assert text.startswith("event: snapshot\n") and '"status":"canceled"' in text
    assert "event: chat_event\nid: 1\n" in text and '"terminal"' in text


@pytest.mark.parametrize(
    "route", ["/v1/management/runs/{}/file", "/v1/jobs/{}/file", "/ui/runs/{}/preview"]
)
@pytest.mark.parametrize("path", ["\0", "artifacts/notes.md\0x", "a\0b"])
def test_a_preview_path_with_a_nul_byte_is_refused_not_a_500(client, files_job, route, path):
    answer = client.get(route.format(files_job), query_string={"path": path})
    if route.startswith("/ui/"):  # the page's fragment shows the API's error
        assert answer.status_code == 200 and "RUN_FILE_REFUSED" in answer.get_data(as_text=True)
        return
    assert answer.status_code == 403, answer.json
    assert answer.json["error"]["code"] == "RUN_FILE_REFUSED"
    assert answer.json["error"]["details"] == {"path": path, "reason": "traversal"}


def test_the_runs_page_keeps_a_filter_on_a_skill_no_longer_installed(client):
    """Runs outlive their skill: filtering on a deleted skill's id lists its runs, and the
    skill list shows that filter, not `any` over a list that is not every run."""
    rid = prime_job(client)
    assert client.delete("/v1/skills/demo-prime-number").status_code == 200
    page = client.get("/ui/runs?skill_id=demo-prime-number").get_data(as_text=True)
    assert rid[:8] in page
    assert "<option selected>demo-prime-number</option>" in page


def test_the_run_page_says_a_job_waits_for_its_input_files(client):
    """A job created without its upload is `queued` with nothing to show: its page says what
    it waits for, and a job that got its files does not."""
    waiting = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    page = client.get(f"/ui/runs/{waiting}").get_data(as_text=True)
    assert '<p id="awaiting-upload" class="hint" >The run waits for its input files' in page
    uploaded = client.get(f"/ui/runs/{prime_job(client)}").get_data(as_text=True)
    assert '<p id="awaiting-upload" class="hint" hidden>' in uploaded


def test_the_page_of_a_skill_whose_runner_json_does_not_parse_shows_why(client, settings):
    """The skills list links every skill, the invalid ones too: the page of one whose
    runner.json is not JSON says why it is invalid (and cannot run) instead of a 500."""
    broken = settings.skills_dir / "broken-skill"
    (broken / "assets").mkdir(parents=True)
    (broken / "SKILL.md").write_text('---\nname: broken-skill\ndescription: "x"\n---\n')
    (broken / "assets" / "runner.json").write_text("{not json")
    assert 'href="/ui/skills/broken-skill"' in client.get("/ui/skills").get_data(as_text=True)
    answer = client.get("/ui/skills/broken-skill")
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert "This skill is invalid: assets/runner.json: invalid JSON" in page
    assert '<button type="submit" id="run-button" disabled>' in page
    assert "A script skill" not in page  # nothing is known of how it would run


def test_run_pages_date_the_finish_and_say_an_answered_runs_time_is_its_last_turns(
    client, app, queue
):
    """started_at is the last turn's: the page of a run that was answered says 'Last turn ran';
    the runs list dates each finish (a time alone reads as today's)."""
    from datetime import timedelta

    from runner_core.store.models import Run, utcnow

    rid, run_id, iid = waiting_job(client, app, queue)
    plain = prime_job(client)
    ended = utcnow() - timedelta(days=3)
    with app.extensions["db"]() as session:
        for request_id, count in ((rid, 1), (plain, 0)):
            run = session.get(Run, session.get(Request, request_id).run_id)
            run.status, run.interaction_count = "succeeded", count
            run.started_at, run.finished_at = ended - timedelta(seconds=2), ended
        session.commit()
    assert "Last turn ran 2.0 s" in client.get(f"/ui/runs/{rid}").get_data(as_text=True)
    page = client.get(f"/ui/runs/{plain}").get_data(as_text=True)
    assert "Ran 2.0 s" in page and "Last turn" not in page
    assert ended.strftime("%Y-%m-%d %H:%M:%S") in client.get("/ui/runs").get_data(as_text=True)


def test_a_run_canceled_while_waiting_times_its_last_turn_to_the_question_not_the_cancel(
    client, app, queue
):
    """The wait for an answer is no part of the turn: the turn ended when it asked."""
    from datetime import timedelta

    from runner_core.store.models import Interaction, Run, utcnow

    rid, run_id, iid = waiting_job(client, app, queue)
    assert client.post(f"/v1/jobs/{rid}/cancel").status_code == 200
    ended = utcnow()
    with app.extensions["db"]() as session:
        run = session.get(Run, run_id)
        assert run.status == "canceled"
        run.started_at, run.finished_at = ended - timedelta(seconds=30), ended
        session.get(Interaction, iid).created_at = ended - timedelta(seconds=28)
        session.commit()
    page = client.get(f"/ui/runs/{rid}").get_data(as_text=True)
    assert "Last turn ran 2.0 s, then waited 28.0 s for an answer" in page
    state = client.get(f"/v1/management/runs/{rid}").json
    assert state["turn_ended_at"] == (ended - timedelta(seconds=28)).isoformat().replace(
        "+00:00", "Z"
    )


def test_an_older_page_of_the_runs_list_links_back_to_the_newest(client):
    for _ in range(3):
        prime_job(client)
    first = client.get("/ui/runs?limit=2&skill_id=demo-prime-number").get_data(as_text=True)
    assert "Older runs" in first and "Newest runs" not in first
    link = next(part.split('"')[0] for part in first.split('href="') if "cursor=" in part)
    page = client.get(link.replace("&amp;", "&")).get_data(as_text=True)
    assert 'href="/ui/runs?skill_id=demo-prime-number">← Newest runs</a>' in page
