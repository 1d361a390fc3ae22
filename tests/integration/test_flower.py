"""Flower as an operator uses it: a real `celery flower` process against the stack's Redis. Its
HTTP API lists runs by skill, engine and request id (queued ones too), and its revoke endpoint
cancels a queued and a running run as POST .../cancel would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from ast import literal_eval
from pathlib import Path

import pytest

from api import create_app
from runner_core.events import read_events
from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT, Settings
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import create_job, job, live_group, recorded_processes
from tests.integration.services import SQLITE_ONLY, service_env
from tests.integration.test_serve import free_port

pytestmark = pytest.mark.integration

FAST = {
    # the tests read the pids a script records from inside; a boxed run has a pid namespace
    # of its own (boxed runs' kills: tests/integration/test_sandbox.py)
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "1",
}


class Flower:
    """`celery -A worker.celery_app flower` on a free port, its API open (no auth in tests)."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        self.log_path = settings.data_dir / "flower.log"
        self.log = self.log_path.open("ab")
        env = {**service_env(settings), "FLOWER_UNAUTHENTICATED_API": "true"}
        argv = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "flower"]
        argv += ["--address=127.0.0.1", f"--port={self.port}"]
        self.proc = subprocess.Popen(
            argv,
            cwd=settings.data_dir,
            env={**env, "PYTHONPATH": str(REPO_ROOT)},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def call(self, path: str, method: str = "GET") -> dict:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=b"" if method == "POST" else None,
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def sees_worker(self, name: str) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"flower exited: {self.log_path.read_text()[-3000:]}")
        try:
            return any(w.startswith(name) for w in self.call("/api/workers?refresh=1"))
        except OSError:
            return False

    def task(self, task_id: str) -> dict | None:
        return self.call("/api/tasks").get(task_id)

    def stop(self) -> None:
        stop_process_group(self.proc, 10)
        self.log.close()


@pytest.fixture
def flower(bare_stack):
    # the API as deployed: its queue client from the settings (task-sent events on by default)
    bare_stack.app = create_app({"SETTINGS": bare_stack.settings})
    bare_stack.client = bare_stack.app.test_client()
    started = Flower(bare_stack.settings)
    yield started
    started.stop()
    bare_stack.app.extensions["db"].kw["bind"].dispose()


def watched_by_flower(flower: Flower, worker) -> None:
    """Flower lists the worker and has switched its task events on."""
    wait_for(lambda: flower.sees_worker(worker.name), 30, 0.5, "flower sees the worker")
    enabled = "Events of group {task} enabled by remote"
    wait_for(lambda: enabled in worker.log_path.read_text(), 30, 0.2, "events enabled")


def task_id_of(stack, request_id: str) -> str:
    return job_row(stack, request_id).celery_task_id


def job_row(stack, request_id: str):
    from runner_core.store.models import Run

    with stack.app.extensions["db"]() as session:
        return session.get(Run, job(stack, request_id)["run_id"])


def terminal_events(run_dir: Path) -> list[dict]:
    """The run's terminal events, once there is one: the end is recorded in the database first
    and its event written just after, so a status read can come before the event is there."""

    def ended() -> list[dict]:
        return [e for e in read_events(run_dir) if "terminal" in e["data"]]

    wait_for(ended, 10, 0.05, f"a terminal event in {run_dir.name}")
    return ended()


def test_flower_shows_runs_by_skill_engine_and_request_and_its_revoke_cancels_them(
    bare_stack, flower
):
    worker = bare_stack.start_worker(concurrency=1, beat=True, extra_env=FAST)
    watched_by_flower(flower, worker)
    done = create_job(bare_stack, "slow-counter", sleep=0.5)
    assert bare_stack.wait(done)["status"] == "succeeded"
    running = create_job(bare_stack, "slow-counter", sleep=30, children=1)
    status = bare_stack.wait(running, until=("running",))
    pgid, kids = recorded_processes(bare_stack, status["run_id"], expect=1)
    queued = create_job(bare_stack, "slow-counter", sleep=0)  # behind it: concurrency 1

    # named by skill and engine, with the request id; the finished one with its runtime
    shown = {
        rid: wait_for(lambda r=rid: flower.task(task_id_of(bare_stack, r)), 30, 0.2)
        for rid in (done, running, queued)
    }
    for rid, task in shown.items():
        assert task["name"] == "worker.tasks.execute_run", task  # routable, filterable
        assert literal_eval(task["kwargs"]) == {
            "skill": "slow-counter",
            "engine": "script",
            "request_id": rid,
        }
        assert literal_eval(task["args"]) == [job(bare_stack, rid)["run_id"]]
    wait_for(lambda: flower.task(task_id_of(bare_stack, done))["state"] == "SUCCESS", 30, 0.2)
    assert 0.5 <= flower.task(task_id_of(bare_stack, done))["runtime"] < 10
    assert flower.task(task_id_of(bare_stack, running))["state"] == "STARTED"
    assert flower.task(task_id_of(bare_stack, queued))["state"] == "PENDING"  # task-sent only

    # a revoke (no terminate) of the queued run ends it at once, message still in the broker
    flower.call(f"/api/task/revoke/{task_id_of(bare_stack, queued)}", "POST")
    ended = bare_stack.wait(queued, timeout=20)
    assert ended["status"] == "canceled" and ended["error"]["code"] == "CANCELED_BY_USER"
    assert ended["error"]["message"].startswith("revoked by an operator")
    assert job(bare_stack, running)["status"] == "running"
    # a revoke without terminate of the running run: its group is killed within seconds
    asked = time.monotonic()
    flower.call(f"/api/task/revoke/{task_id_of(bare_stack, running)}", "POST")
    ended = bare_stack.wait(running, timeout=30)
    assert ended["status"] == "canceled" and ended["error"]["code"] == "CANCELED_BY_USER"
    assert ended["error"]["message"].startswith("revoked by an operator")  # no user asked
    assert time.monotonic() - asked < 15  # within seconds, not at the next lease expiry
    assert live_group(pgid) == [] and kids
    run_dir = bare_stack.settings.runs_dir / job(bare_stack, running)["run_id"]
    (last,) = terminal_events(run_dir)  # a run that never started has no directory to log in
    assert last["data"]["terminal"]["status"] == "canceled", last
    # the worker drops the revoked message; the sweep (every 1 s, grace 2 s) never re-sends it
    queued_dir = bare_stack.settings.runs_dir / job(bare_stack, queued)["run_id"]
    wait_for(lambda: "Discarding revoked task" in worker.log_path.read_text(), 15)
    time.sleep(4)  # checks that nothing happens: two sweeps past the grace
    after = job(bare_stack, queued)
    assert after["status"] == "canceled" and after["attempt"] == 0 and after["started_at"] is None
    assert not (queued_dir / "artifacts" / "calls.txt").exists()
    assert job_row(bare_stack, queued).celery_task_id == shown[queued]["uuid"]  # not re-sent
    # and the worker still serves
    again = create_job(bare_stack, "slow-counter", sleep=0)
    assert bare_stack.wait(again)["status"] == "succeeded"


def test_flower_revoke_with_terminate_cancels_a_running_run_and_kills_its_group(bare_stack, flower):
    worker = bare_stack.start_worker(concurrency=1, extra_env=FAST)
    watched_by_flower(flower, worker)
    rid = create_job(bare_stack, "slow-counter", sleep=30, children=2)
    status = bare_stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(bare_stack, status["run_id"], expect=2)
    task_id = task_id_of(bare_stack, rid)
    wait_for(lambda: (flower.task(task_id) or {}).get("state") == "STARTED", 30, 0.2)
    flower.call(f"/api/task/revoke/{task_id}?terminate=true", "POST")
    ended = bare_stack.wait(rid, timeout=30)
    assert ended["status"] == "canceled" and ended["error"]["code"] == "CANCELED_BY_USER"
    assert live_group(pgid) == []
    (last,) = terminal_events(bare_stack.settings.runs_dir / status["run_id"])
    assert last["data"]["terminal"]["status"] == "canceled"
    again = create_job(bare_stack, "slow-counter", sleep=0)
    assert bare_stack.wait(again)["status"] == "succeeded"


# SQLite only: what is checked is the label Flower keeps through a limit retry (the running
# limit's claims run on both databases in test_lifecycle.py)
@SQLITE_ONLY
def test_a_run_held_back_by_the_running_limit_keeps_its_label_in_flower(bare_stack, flower):
    limits = {**FAST, "SKILL_RUNNER_MAX_RUNNING": "1", "SKILL_RUNNER_LIMIT_RETRY_SEC": "1"}
    worker = bare_stack.start_worker(concurrency=2, extra_env=limits)
    watched_by_flower(flower, worker)
    first = create_job(bare_stack, "slow-counter", sleep=3)
    bare_stack.wait(first, until=("running",))
    held = create_job(bare_stack, "slow-counter", sleep=0)  # a free slot, but over the limit
    wait_for(lambda: "retry" in worker.log_path.read_text().lower(), 20, 0.2, "a limit retry")
    assert bare_stack.wait(held, timeout=30)["status"] == "succeeded"
    task = wait_for(
        lambda: (t := flower.task(task_id_of(bare_stack, held))) and t["state"] == "SUCCESS" and t,
        30,
        0.2,
    )
    assert literal_eval(task["kwargs"]) == {
        "skill": "slow-counter",
        "engine": "script",
        "request_id": held,
    }
