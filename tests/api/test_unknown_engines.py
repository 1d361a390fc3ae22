"""A skill declaring an engine this service has no adapter for (a newer CLI, a typo): it is
listed with that engine named in its warnings, and a job for it is refused with the code of any
other unsupported engine, never queued where no worker would take it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from runner_core.store.models import Run

FUTURE = "future-engine"  # declares nova only
MIXED = "mixed-engines"  # declares codex and nova


def add_skill(skills: Path, skill_id: str, engines: list[str]) -> None:
    """echo-prompt under another id, declaring `engines`."""
    dest = skills / skill_id
    shutil.copytree(skills / "echo-prompt", dest)
    runner = dest / "assets" / "runner.json"
    data = json.loads(runner.read_text()) | {"id": skill_id, "engines": engines}
    runner.write_text(json.dumps(data))
    skill_md = dest / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("name: echo-prompt", f"name: {skill_id}"))


@pytest.fixture(autouse=True)
def skills(skills_root: Path) -> None:
    add_skill(skills_root, FUTURE, ["nova"])
    add_skill(skills_root, MIXED, ["codex", "nova"])


def job(client, skill_id: str, **body):
    return client.post("/v1/jobs", json={"skill_id": skill_id, "input": {"text": "hi"}, **body})


def test_the_skill_is_listed_with_the_engine_named_in_its_warnings(client):
    listed = {s["id"]: s for s in client.get("/v1/skills").json}
    future, mixed = listed[FUTURE], listed[MIXED]
    assert future["health"] == "ok" and future["effective_engines"] == []
    assert any("nova" in warning for warning in future["warnings"]), future
    assert mixed["effective_engines"] == ["codex"]
    assert any("nova" in warning for warning in mixed["warnings"]), mixed


@pytest.mark.parametrize(
    "skill_id, body",
    [(FUTURE, {"engine": "nova"}), (FUTURE, {}), (MIXED, {"engine": "nova"})],
    ids=["only-nova", "only-nova-no-engine", "nova-beside-codex"],
)
def test_a_job_for_the_engine_is_refused_and_nothing_queued(client, app, queue, skill_id, body):
    resp = job(client, skill_id, **body)
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "SKILL_ENGINE_UNSUPPORTED"
    assert resp.json["error"]["details"]["effective_engines"] == (
        ["codex"] if skill_id == MIXED else []
    )
    assert queue.sent == []
    with app.extensions["db"]() as session:
        assert session.scalars(select(Run)).all() == []


def test_the_engine_it_has_an_adapter_for_still_runs(client, queue):
    resp = job(client, MIXED, engine="codex")
    assert resp.status_code == 200, resp.json
    assert [q for _, q in queue.sent] == ["runs.codex"]
