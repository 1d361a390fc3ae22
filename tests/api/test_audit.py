"""The audit log: installs, cleanups, cancels and replies with the token name, the target and
the answer; read by admin tokens only at GET /v1/management/audit, newest first, keyset pages."""

from __future__ import annotations

from tests.helpers import BOTH_DATABASES, bearer
from tests.packages import echo_skill, package_upload

JOB = {"skill_id": "fenced-json", "input": {"text": "hi"}}


def entries(client, query=""):
    resp = client.get(f"/v1/management/audit{query}", headers=bearer("root"))
    assert resp.status_code == 200, resp.json
    return resp.json


@BOTH_DATABASES
def test_each_audited_action_is_one_row_with_who_what_and_how_it_ended(scoped):
    rid = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    scoped.post(f"/v1/jobs/{rid}/cancel", headers={**bearer("alice"), "X-Request-ID": "c-1"})
    scoped.post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"interaction_id": 1, "response": "x"},
        headers=bearer("alice"),
    )
    scoped.post(f"/v1/jobs/{rid}/cancel", headers=bearer("bob"))  # not bob's: 404, audited
    scoped.post("/v1/jobs/cleanup", json={}, headers=bearer("root"))
    installed = scoped.post(
        "/v1/skill-packages", data=package_upload(echo_skill()), headers=bearer("root")
    )
    assert installed.status_code == 200, installed.json
    scoped.post("/v1/skill-packages", data=package_upload(echo_skill()), headers=bearer("alice"))
    scoped.get(f"/v1/jobs/{rid}", headers=bearer("alice"))  # reads are not audited
    got = [
        (e["token_name"], e["action"], e["target"], e["status_code"])
        for e in entries(scoped)["items"]
    ]
    assert got == [
        ("alice", "skill.install", None, 403),  # refused by scope: still written down
        ("root", "skill.install", installed.json["skill_id"], 200),
        ("root", "runs.cleanup", None, 200),
        ("bob", "run.cancel", rid, 404),
        ("alice", "run.reply", rid, 400),  # not an interactive run
        ("alice", "run.cancel", rid, 200),
    ]
    newest_cancel = entries(scoped, "?action=run.cancel")["items"][-1]
    assert newest_cancel["http_request_id"] == "c-1"
    assert newest_cancel["details"] == {"accepted": True, "status": "canceled"}


def test_the_audit_pages_newest_first_with_a_cursor(scoped):
    for _ in range(5):
        scoped.post("/v1/jobs/cleanup", json={}, headers=bearer("alice"))
    first = entries(scoped, "?limit=2")
    ids = [e["id"] for e in first["items"]]
    assert ids == sorted(ids, reverse=True) and first["next_cursor"] == ids[-1]
    second = entries(scoped, f"?limit=2&cursor={first['next_cursor']}")
    third = entries(scoped, f"?limit=2&cursor={second['next_cursor']}")
    walked = ids + [e["id"] for e in second["items"] + third["items"]]
    assert len(walked) == len(set(walked)) == 5 and third["next_cursor"] is None


def test_only_admin_reads_the_audit(scoped):
    resp = scoped.get("/v1/management/audit", headers=bearer("alice"))
    assert resp.status_code == 403 and resp.json["error"]["code"] == "FORBIDDEN"


def test_without_tokens_actions_are_audited_without_a_name(client):
    rid = client.post("/v1/jobs", json=JOB).json["request_id"]
    client.post(f"/v1/jobs/{rid}/cancel")
    (entry,) = client.get("/v1/management/audit").json["items"]
    assert entry["token_name"] is None and entry["action"] == "run.cancel"


@BOTH_DATABASES
def test_an_admin_deletes_a_skill_archived_and_audited(scoped, settings):
    installed = scoped.post(
        "/v1/skill-packages", data=package_upload(echo_skill()), headers=bearer("root")
    ).json
    skill_id = installed["skill_id"]
    refused = scoped.delete(f"/v1/skills/{skill_id}", headers=bearer("alice"))
    assert (
        refused.status_code == 403 and refused.json["error"]["details"]["required_scope"] == "admin"
    )
    gone = scoped.delete(f"/v1/skills/{skill_id}", headers=bearer("root"))
    assert gone.status_code == 200, gone.json
    assert (settings.data_dir / gone.json["archive_path"] / "SKILL.md").is_file()
    assert not (settings.skills_dir / skill_id).exists()
    assert scoped.get(f"/v1/skills/{skill_id}", headers=bearer("root")).status_code == 404
    again = scoped.delete(f"/v1/skills/{skill_id}", headers=bearer("root"))
    assert again.status_code == 404 and again.json["error"]["code"] == "SKILL_NOT_FOUND"
    deletes = entries(scoped, "?action=skill.delete")["items"]
    assert [(e["token_name"], e["target"], e["status_code"]) for e in deletes] == [
        ("root", skill_id, 404),
        ("root", skill_id, 200),
        ("alice", skill_id, 403),
    ]
    assert deletes[1]["details"]["archive_path"] == gone.json["archive_path"]
