"""A retired engine (iflow: its service is gone): listed as retired with the reason, left out of
the engines of a skill that names none, a new run on it refused with ENGINE_RETIRED and nothing
queued, a job naming no engine takes the skill's first engine that can still run, and a skill
declaring it says so in its warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from runner_core.store.models import Run
from tests.api.test_unknown_engines import add_skill, job

IFLOW_FIRST = "iflow-first"  # declares iflow, then codex


@pytest.fixture(autouse=True)
def skills(skills_root: Path) -> None:
    add_skill(skills_root, IFLOW_FIRST, ["iflow", "codex"])


def test_the_engine_is_listed_as_retired_with_the_reason(client):
    listed = client.get("/v1/engines").json
    listed = listed["engines"] if isinstance(listed, dict) else listed  # either envelope
    engines = {e["engine"]: e for e in listed}
    assert engines["iflow"]["retired"] is True
    assert "shut down" in engines["iflow"]["retired_reason"]
    assert engines["codex"]["retired"] is False and engines["codex"]["retired_reason"] is None


def test_a_run_on_it_is_refused_and_nothing_queued(client, app, queue):
    resp = job(client, IFLOW_FIRST, engine="iflow")
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "ENGINE_RETIRED" and error["details"]["engine"] == "iflow"
    assert "shut down" in error["details"]["reason"] and "retired" in error["message"]
    assert queue.sent == []
    with app.extensions["db"]() as session:
        assert session.scalars(select(Run)).all() == []


def test_a_job_naming_no_engine_takes_the_first_that_still_runs(client, queue):
    resp = job(client, IFLOW_FIRST)
    assert resp.status_code == 200, resp.json
    assert [q for _, q in queue.sent] == ["runs.codex"]


def test_the_skill_declaring_it_is_warned(client):
    listed = {s["id"]: s for s in client.get("/v1/skills").json}
    assert any("iflow is retired" in w for w in listed[IFLOW_FIRST]["warnings"])


def test_a_skill_naming_no_engines_runs_on_every_engine_but_the_retired(client):
    listed = {s["id"]: s for s in client.get("/v1/skills").json}
    assert "iflow" not in listed["headline"]["effective_engines"]  # skill.json llm: no engines
    assert "codex" in listed["headline"]["effective_engines"]
    resp = job(client, "headline", engine="iflow")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "ENGINE_RETIRED"
