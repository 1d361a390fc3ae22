"""Cleanup removes finished runs older than the cutoff, never active ones."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from runner_core.store.models import Request, Run, utcnow


def make_job(client, app, settings, status, age_sec):
    rid = client.post(
        "/v1/jobs",
        json={
            "skill_id": "fenced-json",
            "input": {"text": "x"},
            "runtime_options": {"no_cache": True},
        },
    ).json["request_id"]
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
        finished = utcnow() - timedelta(seconds=age_sec) if status != "running" else None
        session.execute(
            update(Run).where(Run.id == run_id).values(status=status, finished_at=finished)
        )
        session.commit()
    (settings.runs_dir / run_id / "result").mkdir(parents=True)
    return rid, run_id


def test_cleanup_respects_age_and_never_touches_active_runs(client, app, settings):
    old_rid, old_run = make_job(client, app, settings, "succeeded", 3600)
    new_rid, new_run = make_job(client, app, settings, "failed", 10)
    act_rid, act_run = make_job(client, app, settings, "running", 3600)
    body = client.post("/v1/jobs/cleanup", json={"older_than_sec": 600}).json
    assert body["runs_deleted"] == 1 and body["requests_deleted"] == 1
    with app.extensions["db"]() as session:
        remaining = set(session.scalars(select(Run.id)))
    assert remaining == {new_run, act_run}
    assert not (settings.runs_dir / old_run).exists()
    assert not (settings.requests_dir / old_rid).exists()
    assert (settings.runs_dir / act_run).exists()
    assert client.get(f"/v1/jobs/{old_rid}").status_code == 404
    assert client.get(f"/v1/jobs/{act_rid}").status_code == 200


def test_a_waiting_run_is_deleted_only_when_its_status_is_named(client, app, settings):
    wait_rid, wait_run = make_job(client, app, settings, "waiting_user", 0)
    with app.extensions["db"]() as session:
        old = utcnow() - timedelta(hours=2)
        session.execute(
            update(Run).where(Run.id == wait_run).values(finished_at=None, updated_at=old)
        )
        session.commit()
    body = client.post("/v1/jobs/cleanup", json={"older_than_sec": 600}).json
    assert body["runs_deleted"] == 0 and (settings.runs_dir / wait_run).exists()
    named = {"older_than_sec": 600, "statuses": ["waiting_user"]}
    body = client.post("/v1/jobs/cleanup", json=named).json
    assert body["runs_deleted"] == 1 and body["requests_deleted"] == 1
    assert not (settings.runs_dir / wait_run).exists()
    assert client.get(f"/v1/jobs/{wait_rid}").status_code == 404
    young = {"older_than_sec": 600, "statuses": ["waiting_user"]}
    _rid, young_run = make_job(client, app, settings, "waiting_user", 0)
    assert client.post("/v1/jobs/cleanup", json=young).json["runs_deleted"] == 0
    assert (settings.runs_dir / young_run).exists()


def test_cleanup_rejects_a_negative_age(client):
    resp = client.post("/v1/jobs/cleanup", json={"older_than_sec": -1})
    assert resp.status_code == 422 and resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"


def test_cleanup_goes_in_batches_and_says_when_there_is_more(client, app, settings, monkeypatch):
    import uuid

    from sqlalchemy import func, insert

    from api.resources import cleanup

    old = utcnow() - timedelta(hours=1)
    runs = [
        dict(
            id=str(uuid.uuid4()),
            request_id=f"r{i}",
            kind="job",
            skill_id="fenced-json",
            status="succeeded",
            created_at=old,
            updated_at=old,
            finished_at=old,
            parameter={},
            input={},
            runtime_options={},
            warnings=[],
        )
        for i in range(1200)
    ]
    requests = [
        dict(
            id=run["request_id"],
            kind="job",
            skill_id="fenced-json",
            run_id=run["id"],
            cache_hit=False,
            payload={},
            created_at=old,
        )
        for run in runs
    ]
    requests += [
        dict(
            id=f"hit{i}",
            kind="job",
            skill_id="fenced-json",
            run_id=runs[0]["id"],
            cache_hit=True,
            payload={},
            created_at=old,
        )
        for i in range(3)
    ]
    with app.extensions["db"]() as session:
        session.execute(insert(Run), runs)
        session.execute(insert(Request), requests)
        session.commit()
    monkeypatch.setattr(cleanup, "TIME_BUDGET_SEC", 0.0)  # one batch per call
    first = client.post("/v1/jobs/cleanup", json={}).json
    assert first["runs_deleted"] == cleanup.BATCH and first["more"] is True
    rest = [client.post("/v1/jobs/cleanup", json={}).json for _ in range(3)]
    assert [r["runs_deleted"] for r in rest] == [500, 200, 0]
    assert [r["more"] for r in rest] == [True, False, False]
    assert first["requests_deleted"] + sum(r["requests_deleted"] for r in rest) == 1203
    monkeypatch.setattr(cleanup, "TIME_BUDGET_SEC", 20.0)
    with app.extensions["db"]() as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 0
        assert session.scalar(select(func.count()).select_from(Request)) == 0
