"""Pipeline composites under the periodic sweep (a real worker with beat, Redis, SQL): a parent
holds no process and no lease, so the sweep never judges it gone; it sends it an `advance`
instead, which ends a composite whose step's worker died (its step-end callback never ran)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.helpers import wait_for
from tests.integration.openevo_stack import install_node_runners, openevo_stack, start

pytestmark = pytest.mark.integration
SWEEPING = {
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "0.5",
    "SKILL_RUNNER_LEASE_SEC": "3",
}


@pytest.fixture(scope="module", autouse=True)
def node_runners():
    install_node_runners()


@pytest.fixture(params=["sqlite", "postgres"])
def stack(request, tmp_path):
    with openevo_stack(
        tmp_path,
        request.param,
        concurrency=4,
        beat=True,
        extra_env=SWEEPING,
    ) as stack:
        yield stack


def test_a_composite_outlives_many_sweeps(stack):
    rid = start(stack, "parallel_pair", {"ms": 4000})  # 8 sweeps while its steps sleep
    status = stack.wait(rid, 60)
    assert status["status"] == "succeeded", status.get("error")
    assert status["attempt"] == 1


def test_a_step_whose_worker_died_ends_its_composite(stack):
    rid = start(stack, "parallel_pair", {"ms": 60000})
    run_id = stack.client.get(f"/v1/jobs/{rid}").json["run_id"]

    def steps_running():
        rows = stack.client.get("/v1/jobs", query_string={"status": "running"}).json["items"]
        return len(rows) >= 3  # the parent, a and b

    wait_for(steps_running, 30, interval=0.1)
    os.killpg(stack.worker.proc.pid, signal.SIGKILL)  # the worker and its pool: no callback
    stack.worker.stop()
    stack.start_worker("again", concurrency=4, beat=True, extra_env=SWEEPING)
    status = stack.wait(rid, 60)
    assert status["status"] == "failed", status
    error = status["error"]
    assert error["code"] == "COMPOSITE_STEP_FAILED", error
    assert error["details"]["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED"
    assert stack.client.get(f"/v1/jobs/{rid}").json["run_id"] == run_id
