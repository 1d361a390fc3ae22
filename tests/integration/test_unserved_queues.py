"""A run queued where no live worker consumes is failed QUEUE_NOT_SERVED by the sweep after
SKILL_RUNNER_QUEUE_UNSERVED_SEC, never left queued; a run waiting as long behind a backlog on a
served queue is left to run. Real workers started with `-Q`, beat running the sweep. And a job
for an engine this service has no adapter for is refused at once, nothing sent to a queue."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import redis

from runner_core.events import is_terminal, read_events
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import create_job, parse_iso
from tests.integration.services import WorkerProcess

pytestmark = pytest.mark.integration

BOUND_SEC = 2
SWEEPING = {
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "0.5",
    "SKILL_RUNNER_QUEUE_UNSERVED_SEC": str(BOUND_SEC),
}


@pytest.fixture
def workers(bare_stack):
    """Start named workers for the stack; all are stopped at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, queues: str, beat: bool = False) -> WorkerProcess:
        settings = bare_stack.settings
        log = settings.data_dir / f"worker-{name}.log"
        started.append(
            WorkerProcess(
                settings,
                f"{name}-{bare_stack.backend}",
                log,
                concurrency=1,
                beat=beat,
                extra_env=SWEEPING,
                queues=queues,
            )
        )
        return started[-1]

    yield start
    for worker in started:
        worker.stop()


def test_a_run_on_a_queue_no_worker_consumes_fails_queue_not_served(bare_stack, workers):
    worker = workers("scripts", queues="runs.script,maintenance", beat=True)
    resp = bare_stack.client.post(
        "/v1/jobs",
        json={"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hi"}},
    )
    assert resp.status_code == 200, resp.json
    ended = bare_stack.wait(resp.json["request_id"], timeout=30)
    assert ended["status"] == "failed", ended
    error = ended["error"]
    assert error["code"] == "QUEUE_NOT_SERVED" and error["queue"] == "runs.codex", error
    assert "runs.script" in error["served_queues"] and "runs.codex" not in error["served_queues"]
    waited = parse_iso(ended["finished_at"]) - parse_iso(ended["created_at"])
    assert waited.total_seconds() >= BOUND_SEC and ended["started_at"] is None
    assert "no live worker consumes its queue runs.codex" in worker.log_path.read_text()
    run_dir = bare_stack.settings.runs_dir / ended["run_id"]  # never started: made for its end
    last = wait_for(lambda: read_events(run_dir), 5)[-1]
    assert is_terminal(last) and last["data"]["terminal"]["error"]["code"] == "QUEUE_NOT_SERVED"


def test_a_run_behind_a_backlog_on_a_served_queue_is_left_to_run(bare_stack, workers):
    workers("runner", queues="runs.script")  # one slot: the second run waits behind the first
    sweeper = workers("sweeper", queues="maintenance", beat=True)
    first = create_job(bare_stack, "slow-counter", sleep=3 * BOUND_SEC)
    bare_stack.wait(first, until=("running",))
    second = create_job(bare_stack, "slow-counter", sleep=0)
    ended = bare_stack.wait(second, timeout=60)
    assert ended["status"] == "succeeded", ended
    waited = parse_iso(ended["started_at"]) - parse_iso(ended["created_at"])
    assert waited.total_seconds() > BOUND_SEC + 1  # past the bound while the sweep ran
    # the sweep saw it queued past the bound and asked: its queue is served, so it waited on
    passes = re.findall(r"'long_queued_served': (\d+)", sweeper.log_path.read_text())
    assert any(int(n) >= 1 for n in passes), passes
    assert bare_stack.wait(first)["status"] == "succeeded"


def test_a_job_for_an_engine_without_an_adapter_is_refused_and_never_queued(bare_stack, workers):
    workers("all", queues="runs.script,runs.codex,maintenance", beat=True)
    skill = bare_stack.settings.skills_dir / "nova-only"
    shutil.copytree(bare_stack.settings.skills_dir / "echo-prompt", skill)
    runner = skill / "assets" / "runner.json"
    runner.write_text(
        json.dumps(json.loads(runner.read_text()) | {"id": "nova-only", "engines": ["nova"]})
    )
    skill_md = skill / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("name: echo-prompt", "name: nova-only"))
    listed = next(s for s in bare_stack.client.get("/v1/skills").json if s["id"] == "nova-only")
    assert listed["health"] == "ok" and any("nova" in w for w in listed["warnings"]), listed
    resp = bare_stack.client.post(
        "/v1/jobs", json={"skill_id": "nova-only", "engine": "nova", "input": {"text": "hi"}}
    )
    assert resp.status_code == 400 and resp.json["error"]["code"] == "SKILL_ENGINE_UNSUPPORTED"
    assert bare_stack.client.get("/v1/jobs").json["items"] == []
    broker = redis.Redis.from_url(bare_stack.settings.broker_url)
    assert broker.exists("runs.nova") == 0
