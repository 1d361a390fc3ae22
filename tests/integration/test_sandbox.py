"""Runs stay in their box: a real worker runs the `box-probe` script skill (network off,
workspace_only) under bubblewrap and the resource limits; what the probe tries is refused or
ends that run alone with RESOURCE_LIMIT_EXCEEDED, and the worker goes on serving."""

from __future__ import annotations

import os
import socket
import uuid
from urllib.parse import urlparse

import pytest

from runner_core.sandbox import find_bwrap
from runner_core.settings import REPO_ROOT
from tests.integration.services import require_redis

pytestmark = pytest.mark.integration

LIMITS = {"SKILL_RUNNER_RUN_PROCESSES_MAX": "64", "SKILL_RUNNER_RUN_MEMORY_MAX": str(2 * 1024**3)}


@pytest.fixture
def backend():
    return "sqlite"  # the box does not depend on the database


@pytest.fixture
def boxed(bare_stack):
    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    bare_stack.start_worker(extra_env=LIMITS)
    return bare_stack


def probe(stack, action: str, target: str = "") -> tuple[dict, dict]:
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "box-probe", "input": {"action": action, "target": target}}
    ).json["request_id"]
    status = stack.wait(rid, timeout=60)
    return status, stack.client.get(f"/v1/jobs/{rid}/result").json["result"]


def test_a_fork_bomb_ends_its_run_alone_and_the_worker_goes_on(boxed):
    neighbour = boxed.client.post(
        "/v1/jobs", json={"skill_id": "box-probe", "input": {"action": "sleep", "target": "2"}}
    ).json["request_id"]
    status, result = probe(boxed, "fork_bomb")
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "RESOURCE_LIMIT_EXCEEDED"
    assert status["error"]["limit"] == "processes"
    assert boxed.wait(neighbour)["status"] == "succeeded"  # the run beside it was untouched
    after, result = probe(boxed, "ok")
    assert after["status"] == "succeeded" and result["data"]["outcome"] == "ok"


def test_allocating_20_gib_fails_that_run_with_the_memory_limit(boxed):
    status, result = probe(boxed, "allocate", "20")
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "RESOURCE_LIMIT_EXCEEDED"
    assert status["error"]["limit"] == "memory"
    assert probe(boxed, "ok")[0]["status"] == "succeeded"


def test_network_off_script_cannot_reach_the_test_redis(boxed):
    url = urlparse(require_redis(14))
    address = (url.hostname or "127.0.0.1", url.port or 6379)
    socket.create_connection(address, timeout=5).close()  # reachable from outside the box
    status, result = probe(boxed, "connect", f"{address[0]}:{address[1]}")
    assert status["status"] == "succeeded", status
    assert result["data"]["outcome"] == "refused", result
    assert not [w for w in result["validation_warnings"] if w["code"] == "NETWORK_NOT_ENFORCED"]


def test_writes_outside_the_run_directory_are_refused(boxed):
    settings = boxed.settings
    targets = [
        settings.data_dir / f"escaped-{uuid.uuid4().hex}.txt",  # the data dir (database, broker)
        settings.skills_dir / f"escaped-{uuid.uuid4().hex}.txt",
        REPO_ROOT / f"escaped-{uuid.uuid4().hex}.txt",  # the read-only root
    ]
    for target in targets:
        status, result = probe(boxed, "write", str(target))
        assert status["status"] == "succeeded", status
        assert result["data"]["outcome"] == "refused", (target, result)
        assert not target.exists()
    earlier = settings.runs_dir / status["run_id"] / "artifacts" / "inside.txt"
    status, result = probe(boxed, "write", str(earlier))
    assert result["data"]["outcome"] == "refused" and not earlier.exists()  # another run's
    status, result = probe(boxed, "write", "../../artifacts/inside.txt")  # from the skill root
    assert result["data"]["outcome"] == "written", result  # its own directory is writable
    assert (settings.runs_dir / status["run_id"] / "artifacts" / "inside.txt").is_file()


def test_a_run_sees_its_own_directory_and_no_other_run(boxed):
    first, _ = probe(boxed, "ok")
    status, result = probe(boxed, "list", str(boxed.settings.runs_dir))
    assert result["data"]["outcome"] == "listed"
    assert result["data"]["detail"] == status["run_id"]  # only its own folder
    status, result = probe(boxed, "list", str(boxed.settings.runs_dir / first["run_id"]))
    assert result["data"]["outcome"] == "refused"
    assert os.listdir(boxed.settings.runs_dir / first["run_id"])  # it is there, outside
