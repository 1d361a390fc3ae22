"""An install holding data at any older revision upgrades cleanly: from the first revision to
the head, one step at a time, every table as it stands is filled with a few rows (each column a
value of its type, NULLs where allowed; runs and requests as the code of the time wrote them),
and at the head every row is still there and the API reads the old rows. Then a downgrade to
the first revision and back up to the head keeps the first revision's rows. SQLite and
Postgres: one database each, one pass."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import MetaData, create_engine

from api import create_app
from runner_core.store.db import normalize_url
from runner_core.store.migrate import alembic_config, upgrade
from tests.databases import create_postgres_db
from tests.helpers import make_settings
from tests.migration_rows import (
    ERRORS,
    REVISIONS,
    TERMINAL,
    Filler,
    missing_rows,
    schema_diff,
)


@pytest.fixture(params=["sqlite", "postgres"])
def empty_database(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old-install.db'}"
        return
    url, drop = create_postgres_db(migrated=False)
    yield url
    drop()


def test_an_install_with_data_at_every_revision_upgrades_and_reads(
    empty_database, tmp_path, skills_root
):
    url = empty_database
    engine = create_engine(normalize_url(url))
    filler = Filler(engine)
    try:
        for revision in REVISIONS:
            upgrade(url, revision)
            filler.fill(revision)
        assert missing_rows(engine, filler) == []
        assert schema_diff(engine) == []

        settings = make_settings(tmp_path, DATABASE_URL=url)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        app = create_app({"SETTINGS": settings, "QUEUE": None, "TESTING": True})
        client = app.test_client()
        assert client.get("/healthz").get_json()["database"] == "ok"
        check_the_api_reads_every_job(client, filler)

        # down to the first revision and up again: the first revision's rows stay as they were
        command.downgrade(alembic_config(url), REVISIONS[0])
        for run in filler.inserted["runs"]:  # their questions went with 0008's table
            run["pending_interaction_id"] = None
        assert missing_rows(engine, filler, only={"runs", "requests"}) == []
        first = MetaData()
        first.reflect(engine)
        upgrade(url)
        assert schema_diff(engine) == []
        kept = {name: set(first.tables[name].c.keys()) for name in ("runs", "requests")}
        assert missing_rows(engine, filler, only=kept) == []
        check_the_api_reads_every_job(client, filler, questions=False)  # gone below 0008
    finally:
        engine.dispose()


def check_the_api_reads_every_job(client, filler: Filler, questions: bool = True) -> None:
    listed = client.get("/v1/jobs?limit=200")
    assert listed.status_code == 200, listed.get_json()
    listed_ids = {item["request_id"] for item in listed.get_json()["items"]}
    runs = client.get("/v1/management/runs?page_size=200")
    assert runs.status_code == 200, runs.get_json()
    run_ids = {item["request_id"] for item in runs.get_json()["runs"]}
    for revision, request_id, status in filler.jobs:
        where = f"a {status} job written at {revision}"
        assert request_id in listed_ids and request_id in run_ids, where
        got = client.get(f"/v1/jobs/{request_id}")
        assert got.status_code == 200, (where, got.get_json())
        assert got.get_json()["status"] == status, where
        result = client.get(f"/v1/jobs/{request_id}/result")
        assert result.status_code == (200 if status in TERMINAL else 409), (where, result.json)
        if status in ERRORS:
            assert result.get_json()["result"]["error"]["code"] == ERRORS[status]["code"], where
        state = client.get(f"/v1/management/runs/{request_id}")
        assert state.status_code == 200, (where, state.get_json())
        assert state.get_json()["status"] == status, where
        if questions and request_id in filler.questions:
            pending = client.get(f"/v1/jobs/{request_id}/interaction/pending")
            assert pending.status_code == 200, (where, pending.get_json())
            asked = pending.get_json()["pending"]
            assert asked["interaction_id"] == filler.questions[request_id], where
            assert asked["kind"] == "choose_one" and len(asked["options"]) == 2, where
