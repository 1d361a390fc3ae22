"""Ownership: a run belongs to the token (name) that created it. Another token that is not
admin gets the 404 of an unknown id on every per-run route and does not see it in lists;
admin sees everything; without tokens nothing changes (owner null)."""

from __future__ import annotations

from sqlalchemy import select, update

from runner_core.store.models import IdempotencyKey, Request, Run, utcnow
from tests.helpers import BOTH_DATABASES, bearer
from tests.packages import echo_skill, package_upload

JOB = {"skill_id": "fenced-json", "input": {"text": "hi"}}
UNKNOWN = "00000000-0000-0000-0000-000000000000"

# every per-run route of a job, by method (the management API's included)
JOB_ROUTES = [
    ("GET", "/v1/jobs/{rid}"),
    ("GET", "/v1/jobs/{rid}/result"),
    ("GET", "/v1/jobs/{rid}/logs"),
    ("GET", "/v1/jobs/{rid}/logs/range?stream=stdout"),
    ("GET", "/v1/jobs/{rid}/events"),
    ("GET", "/v1/jobs/{rid}/events/history"),
    ("GET", "/v1/jobs/{rid}/interaction/pending"),
    ("POST", "/v1/jobs/{rid}/interaction/reply"),
    ("POST", "/v1/jobs/{rid}/interaction/reply/files"),
    ("POST", "/v1/jobs/{rid}/cancel"),
    ("POST", "/v1/jobs/{rid}/upload"),
    ("GET", "/v1/jobs/{rid}/bundle"),
    ("GET", "/v1/jobs/{rid}/artifacts"),
    ("GET", "/v1/jobs/{rid}/webhooks"),
    ("GET", "/v1/management/runs/{rid}"),
    ("GET", "/v1/management/runs/{rid}/files"),
    ("GET", "/v1/management/runs/{rid}/file?path=result/result.json"),
    ("GET", "/v1/management/runs/{rid}/events"),
    ("GET", "/v1/management/runs/{rid}/events/history"),
    ("GET", "/v1/management/runs/{rid}/logs/range?stream=stdout"),
    ("GET", "/v1/management/runs/{rid}/pending"),
    ("POST", "/v1/management/runs/{rid}/reply"),
    ("POST", "/v1/management/runs/{rid}/cancel"),
]


def finish(app, rid):
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
        session.execute(
            update(Run).where(Run.id == run_id).values(status="succeeded", finished_at=utcnow())
        )
        session.commit()


def call(client, method, route, rid, who):
    body = {"interaction_id": 1, "response": "x"} if route.endswith("reply") else None
    return client.open(route.format(rid=rid), method=method, json=body, headers=bearer(who))


def without_ids(resp, rid):
    """The error body with the request id's traces taken out (to compare two 404s)."""
    error = dict(resp.json["error"])
    error.pop("request_id")
    error["message"] = error["message"].replace(rid, "ID")
    return resp.status_code, error


@BOTH_DATABASES
def test_another_tokens_run_is_404_like_an_unknown_id_on_every_route(scoped, scoped_app, queue):
    rid = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    finish(scoped_app, rid)
    for method, route in JOB_ROUTES:
        theirs = call(scoped, method, route, rid, "bob")
        unknown = call(scoped, method, route, UNKNOWN, "bob")
        assert theirs.status_code == 404, (route, theirs.status_code)
        assert without_ids(theirs, rid) == without_ids(unknown, UNKNOWN), route
        mine = call(scoped, method, route, rid, "alice")
        error = (mine.get_json(silent=True) or {}).get("error") or {}
        assert error.get("code") != "REQUEST_NOT_FOUND", route
    # the owner and admin still see it; the refused cancel changed nothing
    assert scoped.get(f"/v1/jobs/{rid}", headers=bearer("root")).json["status"] == "succeeded"


@BOTH_DATABASES
def test_lists_show_only_the_callers_runs_and_admin_sees_all(scoped):
    mine = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    theirs = scoped.post(
        "/v1/jobs", json={**JOB, "input": {"text": "bob"}}, headers=bearer("bob")
    ).json["request_id"]
    for path in ("/v1/jobs", "/v1/management/runs", "/v1/jobs?status=queued"):
        listed = {
            who: {j["request_id"] for j in scoped.get(path, headers=bearer(who)).json["items"]}
            for who in ("alice", "bob", "root")
        }
        assert listed == {"alice": {mine}, "bob": {theirs}, "root": {mine, theirs}}, path


def test_the_owner_pages_through_its_own_runs_only(scoped):
    mine = [
        scoped.post(
            "/v1/jobs", json={**JOB, "input": {"text": f"{n}"}}, headers=bearer("alice")
        ).json["request_id"]
        for n in range(3)
    ]
    scoped.post("/v1/jobs", json=JOB, headers=bearer("bob"))
    seen, cursor = [], ""
    while True:
        page = scoped.get(f"/v1/jobs?limit=2{cursor}", headers=bearer("alice")).json
        seen += [j["request_id"] for j in page["items"]]
        if not page["next_cursor"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert seen == mine[::-1]


def test_admin_acts_on_any_run(scoped):
    rid = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    assert scoped.post(f"/v1/jobs/{rid}/cancel", headers=bearer("bob")).status_code == 404
    assert scoped.post(f"/v1/jobs/{rid}/cancel", headers=bearer("root")).json["accepted"]


@BOTH_DATABASES
def test_the_owner_is_stored_on_the_run_and_its_request(scoped, scoped_app):
    rid = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    with scoped_app.extensions["db"]() as session:
        req = session.get(Request, rid)
        assert req.owner == "alice" and session.get(Run, req.run_id).owner == "alice"


def test_without_tokens_the_owner_is_null_and_everything_is_visible(client, app):
    rid = client.post("/v1/jobs", json=JOB).json["request_id"]
    with app.extensions["db"]() as session:
        req = session.get(Request, rid)
        assert req.owner is None and session.get(Run, req.run_id).owner is None
    assert [j["request_id"] for j in client.get("/v1/jobs").json["items"]] == [rid]


def test_one_off_runs_belong_to_their_creator(scoped):
    created = scoped.post(
        "/v1/temp-skill-runs", data=package_upload(echo_skill()), headers=bearer("alice")
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    assert scoped.get(f"/v1/temp-skill-runs/{rid}", headers=bearer("alice")).status_code == 200
    for method, suffix in (("GET", ""), ("POST", "/cancel"), ("GET", "/bundle")):
        resp = scoped.open(
            f"/v1/temp-skill-runs/{rid}{suffix}", method=method, headers=bearer("bob")
        )
        assert resp.status_code == 404 and resp.json["error"]["code"] == "REQUEST_NOT_FOUND"


@BOTH_DATABASES
def test_idempotency_keys_are_per_owner(scoped, scoped_app):
    key = {"Idempotency-Key": "same-key"}
    first = scoped.post("/v1/jobs", json=JOB, headers={**bearer("alice"), **key})
    other = scoped.post(
        "/v1/jobs", json={**JOB, "input": {"text": "bob"}}, headers={**bearer("bob"), **key}
    )
    assert first.status_code == other.status_code == 200  # not IDEMPOTENCY_KEY_REUSED
    assert first.json["request_id"] != other.json["request_id"]
    again = scoped.post("/v1/jobs", json=JOB, headers={**bearer("alice"), **key})
    assert again.json["request_id"] == first.json["request_id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    with scoped_app.extensions["db"]() as session:
        owners = sorted(session.scalars(select(IdempotencyKey.owner)))
    assert owners == ["alice", "bob"]


@BOTH_DATABASES
def test_a_cache_hit_never_binds_another_owners_run(scoped, scoped_app):
    rid = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    finish(scoped_app, rid)
    assert scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["cache_hit"]
    theirs = scoped.post("/v1/jobs", json=JOB, headers=bearer("bob")).json
    assert theirs["cache_hit"] is False and theirs["status"] == "queued"


def test_cleanup_by_a_non_admin_deletes_only_its_own_runs(scoped, scoped_app):
    mine = scoped.post("/v1/jobs", json=JOB, headers=bearer("alice")).json["request_id"]
    theirs = scoped.post(
        "/v1/jobs", json={**JOB, "input": {"text": "bob"}}, headers=bearer("bob")
    ).json["request_id"]
    finish(scoped_app, mine)
    finish(scoped_app, theirs)
    done = scoped.post("/v1/jobs/cleanup", json={}, headers=bearer("alice")).json
    assert done["runs_deleted"] == 1
    assert scoped.get(f"/v1/jobs/{mine}", headers=bearer("root")).status_code == 404
    assert scoped.get(f"/v1/jobs/{theirs}", headers=bearer("root")).status_code == 200
    assert (
        scoped.post("/v1/jobs/cleanup", json={}, headers=bearer("root")).json["runs_deleted"] == 1
    )


def test_a_non_admins_list_walks_its_owner_index_without_sorting(tmp_path):
    from sqlalchemy import create_engine

    from api.jobs.listing import _list_statement
    from runner_core.store.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    engine = create_engine(url)
    compiled = _list_statement(False, ("owner",), True).limit(51).compile(engine)
    values = compiled.construct_params({"owner_": "alice", "when_": utcnow(), "last_id_": "x"})
    positional = tuple(values[name] for name in compiled.positiontup or ())
    with engine.connect() as conn:
        plan = " | ".join(
            row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", positional)
        )
    engine.dispose()
    assert "ix_requests_owner_created" in plan and "TEMP B-TREE" not in plan, plan
