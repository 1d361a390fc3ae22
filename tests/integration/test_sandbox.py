"""Runs stay in their box: a real worker runs the `box-probe` script skill (network off,
workspace_only) under bubblewrap and the resource limits; what the probe tries is refused or
ends that run alone with RESOURCE_LIMIT_EXCEEDED, and the worker goes on serving."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from urllib.parse import urlparse

import psutil
import pytest

from runner_core.sandbox import find_bwrap
from runner_core.settings import REPO_ROOT
from tests.helpers import wait_for
from tests.integration.services import STACK_ENV, api_stack, broker_settings

pytestmark = pytest.mark.integration

LIMITS = {
    "SKILL_RUNNER_RUN_PROCESSES_MAX": "64",
    "SKILL_RUNNER_RUN_MEMORY_MAX": str(2 * 1024**3),
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
}


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # the box does not depend on the database


@pytest.fixture(scope="module")
def greeter():
    """A service on the host's loopback that the operator lets every boxed run reach
    (SKILL_RUNNER_EGRESS_ALLOW); it greets whoever connects."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello from the host")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


@pytest.fixture(scope="module")
def boxed(backend, tmp_path_factory, greeter):
    """One boxed worker for the module: each test shows that what its runs tried ended those
    runs alone, and the worker goes on serving the next test."""
    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    root = tmp_path_factory.mktemp("boxed")
    with (
        broker_settings(root, backend, **STACK_ENV) as settings,
        api_stack(settings, backend) as stack,
    ):
        stack.start_worker(
            extra_env={**LIMITS, "SKILL_RUNNER_EGRESS_ALLOW": f"127.0.0.1:{greeter}"}
        )
        yield stack


def probe(stack, action: str, target: str = "", skill: str = "box-probe") -> tuple[dict, dict]:
    """Run the probe; never answered from the result cache (a probe repeated by another test
    must run again, in this test's box)."""
    rid = stack.client.post(
        "/v1/jobs",
        json={
            "skill_id": skill,
            "input": {"action": action, "target": target},
            "runtime_options": {"no_cache": True},
        },
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


def test_network_off_script_cannot_reach_the_test_redis(boxed, redis_url):
    url = urlparse(redis_url)
    address = (url.hostname or "127.0.0.1", url.port or 6379)
    socket.create_connection(address, timeout=5).close()  # reachable from outside the box
    status, result = probe(boxed, "connect", f"{address[0]}:{address[1]}")
    assert status["status"] == "succeeded", status
    assert result["data"]["outcome"] == "refused", result
    assert not [w for w in result["validation_warnings"] if w["code"] == "NETWORK_NOT_ENFORCED"]


def test_an_allowlist_script_reaches_what_is_allowed_only_and_refusals_are_reported(
    boxed, greeter, redis_url
):
    url = urlparse(redis_url)
    redis = f"{url.hostname or '127.0.0.1'}:{url.port or 6379}"
    allowlist = "box-probe-allowlist"
    status, result = probe(boxed, "connect", f"127.0.0.1:{greeter}", allowlist)
    assert status["status"] == "succeeded", status
    assert result["data"] == {
        "action": "connect",
        "outcome": "connected",
        "detail": "hello from the host",
    }
    assert probe(boxed, "connect", redis, allowlist)[1]["data"]["outcome"] == "refused"
    status, result = probe(boxed, "proxy_connect", redis, allowlist)
    assert result["data"]["detail"].startswith("HTTP/1.1 403"), result
    events = boxed.client.get(f"/v1/jobs/{status['request_id']}/events/history").json["events"]
    refusals = [
        e["data"]
        for e in events
        if e["type"] == "diagnostic.warning" and e["data"].get("code") == "NETWORK_REFUSED"
    ]
    assert [(r["details"]["host"], r["details"]["port"]) for r in refusals] == [
        (redis.rsplit(":", 1)[0], int(redis.rsplit(":", 1)[1]))
    ]
    assert not [w for w in result["validation_warnings"] if w["code"] == "NETWORK_NOT_ENFORCED"]
    metrics = boxed.client.get("/metrics").get_data(as_text=True)
    assert 'skill_runner_egress_refused_total{engine="script",host="127.0.0.1"} 1.0' in metrics
    # a script with network off has no way out at all, the operator's hosts included
    assert probe(boxed, "connect", f"127.0.0.1:{greeter}")[1]["data"]["outcome"] == "refused"


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


def run_processes(run_id: str) -> list[psutil.Process]:
    """Live processes carrying the run's id in their environment (as the reaper tells a run's
    processes), seen from outside the box: inside, they have pids of their own."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and (
                proc.environ().get("SKILL_RUNNER_RUN_ID") == run_id
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_boxed_tree_is_gone_after_its_timeout(boxed):
    rid = boxed.client.post(
        "/v1/jobs", json={"skill_id": "stubborn-tree", "parameter": {"sleep": 60, "children": 2}}
    ).json["request_id"]
    run_id = boxed.wait(rid, until=("running",))["run_id"]
    wait_for(lambda: len(run_processes(run_id)) >= 3, 10)  # the script and its two children
    status = boxed.wait(rid, timeout=20)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    wait_for(lambda: run_processes(run_id) == [], 5)


def test_a_canceled_boxed_run_leaves_no_process_even_one_that_left_its_group(boxed):
    rid = boxed.client.post(
        "/v1/jobs",
        json={"skill_id": "slow-counter", "parameter": {"sleep": 30, "escapes": 2, "children": 1}},
    ).json["request_id"]
    run_id = boxed.wait(rid, until=("running",))["run_id"]
    escaped = boxed.settings.runs_dir / run_id / "raw" / "escaped_pids.txt"
    wait_for(lambda: escaped.is_file() and len(escaped.read_text().split()) == 2, 10)
    assert len(run_processes(run_id)) >= 4  # the script, its child, two in sessions of their own
    assert boxed.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    status = boxed.wait(rid, timeout=15)
    assert status["status"] == "canceled", status
    wait_for(lambda: run_processes(run_id) == [], 5)


def test_each_pool_process_holds_its_own_pids_group(boxed):
    """Its runs' processes are born in its group: no join (an RCU grace period, ~10 ms) per
    command (runner_core/cgroups.py, hold_own_group)."""
    from runner_core.cgroups import pids_root

    if pids_root() is None:
        pytest.skip("no writable cgroup v1 pids hierarchy here: process limits use RLIMIT_NPROC")
    pool = psutil.Process(boxed.worker.proc.pid).children()
    assert len(pool) == 2  # the worker's default concurrency in these tests
    for proc in pool:
        with open(f"/proc/{proc.pid}/cgroup") as cgroups:
            (pids,) = [line for line in cgroups if ":pids:" in line]
        assert pids.strip().endswith(f"/skill-runner/worker-{proc.pid}"), pids
    status, result = probe(boxed, "ok")  # and its runs still go
    assert status["status"] == "succeeded" and result["data"]["outcome"] == "ok"
