"""GET /metrics as Prometheus scrapes it: real gunicorn with two workers, a real Celery worker,
Redis and SQLite. The values follow the runs (status, durations, failures by code, queue depth,
busy slots, waiting runs, open event streams) whichever process recorded them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update

from runner_core.settings import REPO_ROOT
from runner_core.store.db import make_engine
from runner_core.store.models import Run
from tests.helpers import wait_for
from tests.integration.services import WorkerProcess, broker_settings, service_env
from tests.integration.test_serve import free_port, health

pytestmark = pytest.mark.integration
TOKEN = "metrics-test-token-0123456789"


class Served:
    """gunicorn (two workers) + one Celery worker (one slot) on a stack of their own."""

    def __init__(self, settings) -> None:
        self.settings = settings
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {**service_env(settings), "PORT": str(port), "WEB_CONCURRENCY": "2"}
        env["SKILL_RUNNER_API_TOKEN"] = TOKEN
        gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
        argv = [gunicorn, "-c", str(REPO_ROOT / "deploy" / "gunicorn.conf.py"), "api.wsgi:app"]
        self.api = subprocess.Popen(argv, env=env, cwd=REPO_ROOT)
        self.worker = WorkerProcess(
            settings,
            "metrics",
            settings.data_dir / "worker.log",
            concurrency=1,
            extra_env={"SKILL_RUNNER_MAX_OUTPUT_BYTES": "2000", "SKILL_RUNNER_KILL_GRACE_SEC": "1"},
        )
        wait_for(lambda: health(self.base), 30, 0.1, "the API answers")

    def call(self, method: str, path: str, body: dict | None = None, token: str | None = TOKEN):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def job(self, **parameter) -> str:
        status, body = self.call(
            "POST", "/v1/jobs", {"skill_id": "slow-counter", "parameter": parameter}
        )
        assert status == 200, body
        return json.loads(body)["request_id"]

    def status(self, rid: str) -> dict:
        return json.loads(self.call("GET", f"/v1/jobs/{rid}")[1])

    def wait(self, rid: str, *statuses: str) -> dict:
        return wait_for(lambda: (s := self.status(rid))["status"] in statuses and s, 30, 0.1)

    def scrape(self) -> dict[tuple, float]:
        status, text = self.call("GET", "/metrics")
        assert status == 200, text
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def stop(self) -> None:
        self.api.send_signal(signal.SIGTERM)
        self.api.wait(30)
        self.worker.stop()


@pytest.fixture
def served(tmp_path):
    with broker_settings(tmp_path) as settings:
        stack = Served(settings)
        try:
            yield stack
        finally:
            stack.stop()


def value(scraped: dict, name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_follow_the_runs_across_processes_behind_the_token(served):
    status, body = served.call("GET", "/metrics", token=None)
    assert status == 401 and json.loads(body)["error"]["code"] == "UNAUTHORIZED"
    assert (
        value(
            served.scrape(),
            "skill_runner_runs",
            status="succeeded",
            engine="script",
            skill="slow-counter",
        )
        == 0
    )

    ok = served.job(sleep=0.3)
    flood = served.job(sleep=2, ticks=40, tick_bytes=200)  # over the output cap: fails
    assert served.wait(ok, "succeeded")
    assert served.wait(flood, "failed")["error"]["code"] == "OUTPUT_TOO_LARGE"
    scraped = served.scrape()
    runs = {"engine": "script", "skill": "slow-counter"}
    assert value(scraped, "skill_runner_runs", status="succeeded", **runs) == 1
    assert value(scraped, "skill_runner_runs", status="failed", **runs) == 1
    duration = "skill_runner_run_duration_seconds"
    assert value(scraped, f"{duration}_count", status="succeeded", **runs) == 1
    assert value(scraped, f"{duration}_sum", status="succeeded", **runs) >= 0.3
    assert value(scraped, f"{duration}_bucket", status="succeeded", le="60.0", **runs) == 1
    assert value(scraped, f"{duration}_count", status="failed", **runs) == 1
    failures = "skill_runner_run_failures_total"
    assert value(scraped, failures, engine="script", code="OUTPUT_TOO_LARGE") == 1

    # one run holds the only slot, two wait in the broker; a client follows the running one
    running = served.job(sleep=30)
    served.wait(running, "running")
    queued = [served.job(sleep=0) for _ in range(2)]
    scraped = wait_for(
        lambda: (
            (s := served.scrape())
            and value(s, "skill_runner_queue_depth", queue="runs.script") == 2
            and s
        ),
        10,
        0.2,
    )
    host = os.uname().nodename
    assert value(scraped, "skill_runner_worker_slots_busy", host=host) == 1
    assert value(scraped, "skill_runner_runs", status="queued", **runs) == 2
    assert value(scraped, "skill_runner_event_subscribers") == 0
    stream = threading.Thread(
        target=lambda: served.call("GET", f"/v1/jobs/{running}/events"), daemon=True
    )
    stream.start()
    wait_for(lambda: value(served.scrape(), "skill_runner_event_subscribers") == 1, 10, 0.2)
    # a waiting interactive run is counted as such (set here: these test skills never ask)
    engine = make_engine(served.settings.database_url)
    with engine.begin() as conn:
        run_id = served.status(queued[0])["run_id"]
        conn.execute(update(Run).where(Run.id == run_id).values(status="waiting_user"))
    engine.dispose()
    assert value(served.scrape(), "skill_runner_runs_waiting_user") == 1

    for rid in [*queued, running]:  # the queued first: none of them may start meanwhile
        served.call("POST", f"/v1/jobs/{rid}/cancel")
    stream.join(15)  # the stream closes after the run's terminal event
    assert not stream.is_alive()
    ran = {"status": "canceled", **runs}  # only the running one has a duration
    scraped = wait_for(
        lambda: (s := served.scrape()) and value(s, f"{duration}_count", **ran) == 1 and s, 10, 0.2
    )
    assert value(scraped, "skill_runner_event_subscribers") == 0
    assert value(scraped, "skill_runner_runs", status="canceled", **runs) == 3
    assert value(scraped, "skill_runner_runs_waiting_user") == 0
    assert value(scraped, "skill_runner_worker_slots_busy", host=host) == 0


def test_an_empty_queue_reads_zero_not_no_data():
    """Redis drops a queue's list with its last message: the depth is 0 then, not left out
    (a gauge that vanished whenever the workers kept up read as "no data")."""
    from api.queue import CeleryQueue
    from tests.integration.services import redis_database

    with redis_database() as url:
        queue = CeleryQueue(url)
        assert queue.depths(["runs.script", "maintenance"]) == {"runs.script": 0, "maintenance": 0}
        assert queue.enqueue("some-run", "runs.script")
        assert queue.depths(["runs.script", "maintenance"]) == {"runs.script": 1, "maintenance": 0}
    assert CeleryQueue("redis://127.0.0.1:1/0").depths(["runs.script"]) == {}  # broker away
