"""Skills listing, health, OpenAPI and docs."""

from __future__ import annotations

import shutil


def test_healthz(client, queue):
    resp = client.get("/healthz")
    assert resp.status_code == 200
    body = dict(resp.json)
    assert set(body.pop("sandbox")) == {
        "mode",
        "box",
        "process_limit",
        "network",
    }  # the host's: varies
    assert body == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "disk": "ok",
        "demo_llm": False,
        "last_sweep_sec_ago": None,  # the test's broker does not run: none recorded
    }
    queue.broker_state = "error: ConnectionError"
    resp = client.get("/healthz")
    assert resp.status_code == 503 and resp.json["status"] == "degraded"
    assert resp.json["broker"] == "error: ConnectionError"


def test_healthz_says_when_runs_are_not_boxed(settings, queue):
    import dataclasses

    from api import create_app

    off = dataclasses.replace(settings, sandbox="off")
    resp = create_app({"SETTINGS": off, "QUEUE": queue}).test_client().get("/healthz")
    assert resp.json["sandbox"] == {
        "mode": "off",
        "box": None,
        "process_limit": None,
        "network": "open",
    }


def test_healthz_reports_a_disk_that_is_nearly_full(settings, queue):
    import dataclasses
    import shutil

    from api import create_app

    free = shutil.disk_usage(settings.data_dir).free
    tight = dataclasses.replace(settings, min_free_bytes=free + 2**40)
    resp = create_app({"SETTINGS": tight, "QUEUE": queue}).test_client().get("/healthz")
    assert resp.status_code == 503 and resp.json["status"] == "degraded"
    assert resp.json["disk"].startswith("low: ") and resp.json["disk"].endswith(" MiB free")
    assert resp.json["database"] == resp.json["broker"] == "ok"


def test_broker_ping_reports_a_broker_that_does_not_answer():
    import time

    from api.queue import CeleryQueue

    started = time.monotonic()
    assert CeleryQueue("redis://127.0.0.1:1/0").ping().startswith("error: ")
    assert time.monotonic() - started < 5


def test_skills_list_includes_demo_with_health(client):
    skills = {s["id"]: s for s in client.get("/v1/skills").json}
    demo = skills["demo-prime-number"]
    assert demo["health"] == "ok" and demo["version"] == "1.0.0"
    assert "codex" in demo["effective_engines"]


def test_broken_skill_is_listed_invalid_not_crashing(client, skills_root):
    broken = skills_root / "broken-one"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no frontmatter")
    skills = {s["id"]: s for s in client.get("/v1/skills").json}
    assert skills["broken-one"]["health"] == "invalid"
    assert skills["broken-one"]["errors"]
    resp = client.post("/v1/jobs", json={"skill_id": "broken-one"})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SKILL_INVALID"


def test_skill_with_a_file_not_in_utf8_is_listed_invalid_and_the_others_still_work(
    client, skills_root
):
    bad = skills_root / "badenc"
    shutil.copytree(skills_root / "demo-prime-number", bad)
    (bad / "SKILL.md").write_bytes(b"\xff\xfe")
    skills = {s["id"]: s for s in client.get("/v1/skills").json}
    assert skills["badenc"]["health"] == "invalid"
    assert "SKILL.md: not valid UTF-8 (byte 0xff at offset 0)" in skills["badenc"]["errors"]
    assert skills["demo-prime-number"]["health"] == "ok"
    assert client.get("/v1/skills/badenc").json["health"] == "invalid"
    listed = client.get("/v1/management/skills").json["skills"]
    assert {s["id"]: s["health"] for s in listed}["badenc"] == "invalid"
    refused = client.post("/v1/jobs", json={"skill_id": "badenc"})
    assert refused.status_code == 400 and refused.json["error"]["code"] == "SKILL_INVALID"
    other = client.post("/v1/jobs", json={"skill_id": "demo-prime-number", "input": {}})
    assert other.status_code == 200, other.json


def test_skill_detail_has_schemas_and_artifacts(client):
    detail = client.get("/v1/skills/demo-prime-number").json
    assert detail["schemas"]["input"]["properties"]["input_file"]["x-input-source"] == "file"
    assert {"role": "report", "pattern": "primes.md", "mime": None, "required": True} in detail[
        "artifacts"
    ]
    assert "scripts/run.py" in detail["files"]


def test_unknown_skill_detail_is_404(client):
    resp = client.get("/v1/skills/../etc")
    assert resp.status_code == 404


def test_openapi_and_docs_are_served(client):
    spec = client.get("/openapi.json").json
    assert "/v1/jobs" in spec["paths"] and "/v1/jobs/{request_id}/upload" in spec["paths"]
    assert client.get("/docs").status_code == 200
    assert client.get("/docs-static/swagger-ui-bundle.js").status_code == 200


def test_unknown_route_is_404_with_seed_body(client):
    resp = client.get("/nope")
    assert resp.status_code == 404
    assert resp.json["error"]["code"] == "NOT_FOUND"
    assert resp.headers["X-Request-ID"] == resp.json["error"]["request_id"]


def test_a_client_request_id_is_echoed_only_when_it_is_a_safe_token(client):
    given = client.get("/nope", headers={"X-Request-ID": "batch-7:item.42"})
    assert given.headers["X-Request-ID"] == "batch-7:item.42"
    assert given.json["error"]["request_id"] == "batch-7:item.42"
    for unsafe in ("a" * 129, "<script>", "two words"):
        resp = client.get("/nope", headers={"X-Request-ID": unsafe})
        assert resp.headers["X-Request-ID"] != unsafe
        assert len(resp.headers["X-Request-ID"]) == 32  # one of ours instead


def test_a_database_that_does_not_answer_is_503_with_retry_after(tmp_path, skills_root, queue):
    from api import create_app
    from tests.helpers import make_settings

    settings = make_settings(tmp_path, DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    client = create_app({"SETTINGS": settings, "QUEUE": queue}).test_client()
    resp = client.post("/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "x"}})
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
    assert resp.json["error"]["code"] == "DATABASE_UNAVAILABLE"
    assert client.get("/v1/jobs/abc").status_code == 503
    health = client.get("/healthz")
    assert health.status_code == 503 and health.json["database"].startswith("error: ")
    assert queue.sent == []


def test_healthz_is_degraded_on_a_database_behind_the_code(client, settings):
    """An API started on a database nobody migrated answered `ok` while its queries failed
    (a new column missing: every POST /v1/jobs a 500)."""
    from sqlalchemy import text

    from runner_core.store.db import make_engine
    from runner_core.store.schema_revision import SCHEMA_REVISION

    engine = make_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0010'"))
    resp = client.get("/healthz")
    assert resp.status_code == 503 and resp.json["status"] == "degraded"
    assert resp.json["database"] == (
        f"error: schema at 0010, this code needs {SCHEMA_REVISION}; run `skill-runner migrate`"
    )
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE alembic_version"))
    assert client.get("/healthz").json["database"] == (
        "error: not migrated; run `skill-runner migrate`"
    )
    with engine.begin() as conn:  # a host that migrated first: newer is fine
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('9999')"))
    assert client.get("/healthz").json["database"] == "ok"
    engine.dispose()
