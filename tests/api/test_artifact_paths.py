"""Artifact downloads by path: an absolute path (`//etc/passwd`, `/%2Fetc`) is refused with the
API's JSON error, never answered with werkzeug's slash-merging redirect and its HTML body."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from sqlalchemy import update

from runner_core.store.models import Run, utcnow
from tests.api.test_management import prime_job, run_dir


def finished_job(client, app) -> str:
    """A succeeded job whose run holds artifacts/notes.md."""
    rid = prime_job(client)
    root = run_dir(app, rid)
    with app.extensions["db"]() as session:
        done = {"status": "succeeded", "finished_at": utcnow()}
        session.execute(update(Run).where(Run.id == root.name).values(**done))
        session.commit()
    (root / "artifacts").mkdir(parents=True, exist_ok=True)
    (root / "artifacts" / "notes.md").write_text("# notes\n")
    return rid


@pytest.mark.parametrize("path", ["//etc/passwd", "/%2Fetc%2Fpasswd", "//", "///x"])
def test_an_absolute_artifact_path_is_a_json_400_not_a_redirect(client, app, path):
    rid = finished_job(client, app)
    resp = client.get(f"/v1/jobs/{rid}/artifacts{path}")
    assert resp.status_code == 400, resp.data[:200]
    assert resp.is_json and "Location" not in resp.headers
    error = resp.json["error"]
    assert error["code"] == "INVALID_ARTIFACT_PATH" and error["request_id"]


def test_a_one_off_runs_artifact_route_takes_the_path_as_sent_too(client):
    resp = client.get("/v1/temp-skill-runs/nope/artifacts//etc/passwd")
    assert resp.status_code == 404 and "Location" not in resp.headers
    assert resp.json["error"]["code"] == "REQUEST_NOT_FOUND"


def test_artifact_paths_that_stay_inside_are_served_as_before(client, app):
    rid = finished_job(client, app)
    for path in ("notes.md", "artifacts/notes.md", "artifacts//notes.md"):
        resp = client.get(f"/v1/jobs/{rid}/artifacts/{path}")
        assert resp.status_code == 200 and resp.data == b"# notes\n", path
    missing = client.get(f"/v1/jobs/{rid}/artifacts/none.md")
    assert missing.status_code == 404 and missing.json["error"]["code"] == "ARTIFACT_NOT_FOUND"
    # a doubled slash elsewhere in the URL is still werkzeug's redirect to the merged route
    assert client.get(f"/v1/jobs//{rid}/artifacts/notes.md").status_code == 308


def test_listed_artifacts_carry_the_specs_path_rel_beside_path(client, app):
    rid = finished_job(client, app)
    entry = {"role": "output", "path": "artifacts/notes.md", "filename": "notes.md"}
    entry |= {"mime": "text/markdown", "size": 8, "sha256": "0" * 64, "required": False}
    # a manifest as written before `path_rel` was added to it
    (run_dir(app, rid) / "manifest.json").write_text(json.dumps({"artifacts": [entry]}))
    for answer in (
        client.get(f"/v1/jobs/{rid}/artifacts").json["artifacts"],
        client.get(f"/v1/jobs/{rid}/result").json["artifacts"],
    ):
        assert answer[0]["path_rel"] == answer[0]["path"] == "artifacts/notes.md"


@pytest.mark.parametrize("name", ["line\nbreak.txt", "tab\there.txt", 'q"uote\r.txt'])
def test_an_artifact_whose_name_holds_a_control_character_is_served(client, app, name):
    rid = finished_job(client, app)
    (run_dir(app, rid) / "artifacts" / name).write_text("x\n")
    resp = client.get(f"/v1/jobs/{rid}/artifacts/{quote(name)}")
    assert resp.status_code == 200 and resp.data == b"x\n", resp.data[:200]
    disposition = resp.headers["Content-Disposition"]
    assert "\n" not in disposition and "\r" not in disposition
    assert disposition.startswith("attachment; filename=")
