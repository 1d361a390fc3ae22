"""Scaling workers on one host, as docs/operating.md tells operators to: a worker on one queue
only (`-Q`), several named workers draining one queue together, `--autoscale`, and the systemd
template's instances as distinct nodes. Real worker processes on real Redis and Postgres."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest
from celery import Celery

from runner_core.settings import REPO_ROOT
from runner_core.statuses import TERMINAL_STATUSES
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import create_job, job, job_states
from tests.integration.services import WorkerProcess, message_count, service_env, stop_workers

pytestmark = pytest.mark.integration

SYSTEMD_WORKER = REPO_ROOT / "deploy" / "systemd" / "skill-runner-worker@.service"


@pytest.fixture(scope="module")
def backend():
    """Postgres only: what several workers share in production; the queues and node names
    under test do not depend on the database (the limits are tested on both)."""
    return "postgres"


@pytest.fixture
def workers(bare_stack):
    """Start named workers for one stack (no beat: nothing here needs the sweep); all are
    stopped at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, concurrency: int = 1, **kwargs) -> WorkerProcess:
        proc = WorkerProcess(
            bare_stack.settings,
            f"{name}-{bare_stack.backend}",
            bare_stack.settings.data_dir / f"worker-{name}.log",
            concurrency=concurrency,
            **kwargs,
        )
        started.append(proc)
        return proc

    yield start
    stop_workers(started)


def ran_on(status: dict) -> int:
    """The pool process (pid) that ran a job: its `worker` field is `host:pid`."""
    return int(status["worker"].rsplit(":", 1)[1])


def test_a_worker_on_one_queue_leaves_other_queues_runs_queued(bare_stack, workers):
    codex = workers("codex", queues="runs.codex")
    script_rid = create_job(bare_stack, "slow-counter", sleep=0)
    resp = bare_stack.client.post(
        "/v1/jobs", json={"skill_id": "demo-echo", "engine": "codex", "input": {"text": "hi"}}
    )
    codex_rid = resp.json["request_id"]
    # claimed by the codex worker (what the CLI then does is not this test's business)
    codex_run = bare_stack.wait(codex_rid, until=("running", *TERMINAL_STATUSES))
    assert ran_on(codex_run) in codex.pool_pids(), codex_run
    bare_stack.client.post(f"/v1/jobs/{codex_rid}/cancel")
    assert bare_stack.wait(codex_rid)["status"] in TERMINAL_STATUSES
    time.sleep(1.0)  # checks that something does NOT happen: the codex worker never takes it
    assert job(bare_stack, script_rid)["status"] == "queued"
    assert message_count(bare_stack.settings.broker_url, "runs.script") == 1
    script = workers("script", queues="runs.script")
    done = bare_stack.wait(script_rid)
    assert done["status"] == "succeeded" and ran_on(done) in script.pool_pids(), done


def test_two_named_workers_on_one_host_both_drain_one_queue(bare_stack, workers):
    first, second = workers("a"), workers("b")
    rids = [create_job(bare_stack, "slow-counter", sleep=0.4) for _ in range(6)]
    statuses = [bare_stack.wait(rid, timeout=40) for rid in rids]
    assert [s["status"] for s in statuses] == ["succeeded"] * 6
    by_worker = [sum(ran_on(s) in w.pool_pids() for s in statuses) for w in (first, second)]
    assert sum(by_worker) == 6 and min(by_worker) >= 1, by_worker
    control = Celery("ping", broker=bare_stack.settings.broker_url, set_as_current=False)
    names = {name for reply in control.control.ping(timeout=1.0) for name in reply}
    host = socket.gethostname()
    assert {f"{w.name}@{host}" for w in (first, second)} <= names, names


def test_autoscale_grows_the_pool_to_its_maximum_under_load(bare_stack, workers):
    worker = workers("auto", extra_args=["--autoscale", "3,1"])
    assert len(worker.pool_pids()) == 1  # starts at its minimum
    rids = [create_job(bare_stack, "slow-counter", sleep=3) for _ in range(3)]
    wait_for(
        lambda: job_states(bare_stack, rids, "slow-counter").count("running") == 3,
        20,
        what="three runs at once on a worker that started with one process",
    )
    assert len(worker.pool_pids()) == 3
    assert all(bare_stack.wait(rid, timeout=30)["status"] == "succeeded" for rid in rids)


def systemd_argv(instance: str) -> list[str]:
    """The worker template's ExecStart for one instance, as systemd expands it: `%i` is the
    instance, `%%` a literal `%`, `${VAR}` from the unit's environment file."""
    line = next(ln for ln in SYSTEMD_WORKER.read_text().splitlines() if ln.startswith("ExecStart="))
    command = line.removeprefix("ExecStart=").replace("%i", instance).replace("%%", "%")
    command = re.sub(r"\$\{WORKER_CONCURRENCY\}", "1", command)
    argv = command.split()
    assert argv[0].endswith("/.venv/bin/celery"), argv
    return [sys.executable, "-m", "celery", *argv[1:]]


def test_systemd_worker_instances_are_distinct_nodes(bare_stack, tmp_path):
    procs, logs = [], []
    try:
        for instance in ("1", "2"):
            log = (tmp_path / f"worker{instance}.log").open("wb")
            logs.append(log)
            procs.append(
                subprocess.Popen(
                    systemd_argv(instance),
                    cwd=REPO_ROOT,
                    env=service_env(bare_stack.settings),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        control = Celery("ping", broker=bare_stack.settings.broker_url, set_as_current=False)
        names: set[str] = set()

        def both_answer() -> bool:
            names.update(name for reply in control.control.ping(timeout=0.5) for name in reply)
            return len(names) >= 2

        wait_for(both_answer, 30, what="both instances answering a ping")
        rid = create_job(bare_stack, "slow-counter", sleep=0)
        assert bare_stack.wait(rid)["status"] == "succeeded"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
        for log in logs:
            log.close()
    host = socket.gethostname()
    assert names == {f"worker1@{host}", f"worker2@{host}"}, names
