"""Several hosts, as docs/operating.md ("Several hosts") lays them out, made of namespaces: the
API (gunicorn and beat) on one host, two workers on two others, each worker host with its own
host name and its own mount of the shared directory (data and skills) at a path of its own.
Redis and Postgres are reached over the bridge, not loopback. Jobs spread over both workers,
every result, artifact and bundle is served by the API, and a worker host that dies mid-run has
its run reconciled by the other host's sweep while the other host's run goes on."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT
from tests.databases import create_postgres_db
from tests.helpers import copy_skills, wait_for
from tests.integration.hosts import Network, Relay

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces (ip netns) need root"),
]
BIN = Path(sys.executable).parent
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(base: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    try:
        with NO_PROXY.open(request, timeout=70) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_ready(log: Path, marker: bytes, timeout: float = 40) -> None:
    wait_for(lambda: log.is_file() and marker in log.read_bytes(), timeout, 0.2, what=str(log))


@pytest.fixture
def hosts(tmp_path):
    """Redis and Postgres on this machine's bridge address, the API host and two worker hosts
    started; yields (API base URL, {host name: Host}); everything is torn down after."""
    shared = tmp_path / "shared"
    copy_skills(shared / "skills")
    (shared / "data").mkdir(parents=True)
    database_url, drop = create_postgres_db()
    net = Network()
    redis = relay = None
    try:
        redis = subprocess.Popen(
            ["redis-server", "--bind", net.address, "--port", "6379", "--save", "", "--protected-mode", "no",
             "--appendonly", "no"],
            stdout=(tmp_path / "redis.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        relay = Relay(
            (net.address, 5432), ("127.0.0.1", int(database_url.split(":")[-1].split("/")[0]))
        )
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(
            PYTHONPATH=str(REPO_ROOT),
            DATABASE_URL=database_url.replace("127.0.0.1", net.address),
            CELERY_BROKER_URL=f"redis://{net.address}:6379/0",
            SKILL_RUNNER_LEASE_SEC="3",
            SKILL_RUNNER_SWEEP_GRACE_SEC="2",
            SKILL_RUNNER_SWEEP_INTERVAL_SEC="1",
            SKILL_RUNNER_KILL_GRACE_SEC="1",
        )
        api = net.host("api-host", 10)
        api_env = dict(
            env,
            SKILL_RUNNER_DATA_DIR=str(shared / "data"),
            SKILL_RUNNER_SKILLS_DIR=str(shared / "skills"),
            HOST=api.address,
            PORT="8000",
            WEB_CONCURRENCY="1",
        )
        web_log, beat_log = tmp_path / "web.log", tmp_path / "beat.log"
        api.start([str(BIN / "gunicorn"), "-c", "deploy/gunicorn.conf.py", "api.wsgi:app"],
                  api_env, web_log, REPO_ROOT)  # fmt: skip
        api.start([str(BIN / "celery"), "-A", "worker.celery_app", "beat", "--schedule",
                   str(tmp_path / "beat-schedule")], api_env, beat_log, REPO_ROOT)  # fmt: skip
        workers = {}
        for number in (1, 2):
            host = net.host(f"runner-host-{number}", 10 + number)
            mount = tmp_path / f"host{number}" / "srv"  # this host's path to the shared dir
            log = tmp_path / f"host{number}" / "worker.log"
            # its local disk, at the scratch path every worker host is configured with
            local = tmp_path / f"host{number}" / "local-disk"
            local.mkdir(parents=True)
            host.start(
                [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
                 "--concurrency", "1", "-n", "w@%h", "--without-gossip", "--without-mingle",
                 "-O", "fair", "--loglevel", "info"],
                dict(env, SKILL_RUNNER_DATA_DIR=str(mount / "data"),
                     SKILL_RUNNER_SKILLS_DIR=str(mount / "skills"),
                     SKILL_RUNNER_WORK_DIR=str(tmp_path / "scratch")),
                log, REPO_ROOT, binds=[(shared, mount), (local, tmp_path / "scratch")],
            )  # fmt: skip
            workers[host.name] = (host, log)
        for _, log in workers.values():
            wait_ready(log, b"ready.")
        base = f"http://{api.address}:8000"
        wait_for(lambda: api_answers(base), 40, 0.2, what="the API host")
        yield base, {name: host for name, (host, _) in workers.items()}
    finally:
        net.close()
        if relay:
            relay.close()
        if redis:
            redis.kill()
            redis.wait()
        drop()


def api_answers(base: str) -> bool:
    """True once the API host answers /healthz (refused while gunicorn is still starting)."""
    try:
        return call(base, "/healthz")[0] == 200
    except OSError:  # urllib's URLError included
        return False


def in_scratch(tmp_path: Path, number: int) -> list[str]:
    """The run directories on worker host `number`'s local disk (its scratch)."""
    runs = tmp_path / f"host{number}" / "local-disk" / "runs"
    return sorted(os.listdir(runs)) if runs.is_dir() else []


def create(base: str, sleep: float) -> str:
    status, body = call(
        base, "/v1/jobs", {"skill_id": "slow-counter", "parameter": {"sleep": sleep, "children": 0}}
    )
    assert status == 200, body
    return json.loads(body)["request_id"]


def status_of(base: str, rid: str) -> dict:
    return json.loads(call(base, f"/v1/jobs/{rid}")[1])


def finished(base: str, rid: str, timeout: float = 40) -> dict:
    done = ("succeeded", "failed", "canceled")
    return wait_for(lambda: (s := status_of(base, rid))["status"] in done and s, timeout, 0.2)


def test_workers_on_two_hosts_share_the_jobs_and_the_api_serves_their_files(hosts, tmp_path):
    base, workers = hosts
    rids = [create(base, 1.0) for _ in range(4)]
    statuses = [finished(base, rid) for rid in rids]
    assert [s["status"] for s in statuses] == ["succeeded"] * 4, statuses
    ran_on = {s["worker"].rsplit(":", 1)[0] for s in statuses}
    assert ran_on == set(workers), ran_on  # both hosts took jobs
    for rid in rids:
        result = json.loads(call(base, f"/v1/jobs/{rid}/result")[1])["result"]
        pid = result["data"]["pid"]
        listed = json.loads(call(base, f"/v1/jobs/{rid}/artifacts")[1])
        assert "calls.txt" in json.dumps(listed), listed
        code, calls = call(base, f"/v1/jobs/{rid}/artifacts/calls.txt")
        assert code == 200 and calls.decode().split() == [str(pid)]
        code, bundle = call(base, f"/v1/jobs/{rid}/bundle")
        assert code == 200 and any(
            "calls.txt" in n for n in zipfile.ZipFile(io.BytesIO(bundle)).namelist()
        )
    # the runs worked on each host's local disk and left nothing there; the run directories
    # made ahead for the next runs are there too
    assert in_scratch(tmp_path, 1) == in_scratch(tmp_path, 2) == []
    pools = [tmp_path / f"host{number}" / "local-disk" / "run-pool" for number in (1, 2)]
    wait_for(lambda: all(p.is_dir() for p in pools), 10)  # made on each worker's refill thread
    assert not (tmp_path / "shared" / "data" / "run-pool").exists()


def test_a_worker_host_that_dies_mid_run_is_reconciled_and_the_other_goes_on(hosts, tmp_path):
    base, workers = hosts
    rids = [create(base, 8.0) for _ in range(2)]

    def both_running() -> dict[str, str] | None:
        states = [status_of(base, rid) for rid in rids]
        if all(s["status"] == "running" for s in states):
            return {s["worker"].rsplit(":", 1)[0]: rid for rid, s in zip(rids, states)}
        return None

    by_host = wait_for(both_running, 20, 0.2, what="one run on each worker host")
    assert set(by_host) == set(workers)
    # `running` is recorded at the claim, before the run's local copy is made
    wait_for(
        lambda: in_scratch(tmp_path, 1) and in_scratch(tmp_path, 2),
        20,
        0.1,
        what="each host's local copy of its run",
    )
    workers["runner-host-1"].power_off()
    lost, kept = by_host["runner-host-1"], by_host["runner-host-2"]
    ended = finished(base, lost, timeout=20)
    assert ended["status"] == "failed", ended
    assert ended["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED"
    assert ended["recovery_state"] == "failed_reconciled"
    assert finished(base, kept)["status"] == "succeeded"
    # the dead host's local copy of its run is lost with it; the API answers from the row
    # and the run's logs, written to the shared runs/ as it went
    lost_run = status_of(base, lost)["run_id"]
    assert in_scratch(tmp_path, 1) == [lost_run] and in_scratch(tmp_path, 2) == []
    assert call(base, f"/v1/jobs/{lost}/logs")[0] == 200
    assert (tmp_path / "shared" / "data" / "runs" / lost_run / "logs").is_dir()
    after = finished(base, create(base, 0))
    assert after["status"] == "succeeded" and after["worker"].startswith("runner-host-2:")
