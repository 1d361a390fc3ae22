"""Outages found by the chaos test (tests/chaos) or by operators, each kept here as a focused
regression. A database outage is made by closing a Postgres database to connections: those tests
run on Postgres only; the sweep after an outage runs on both databases. A broker outage is a
redis-server of the test's own shut down and started again."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
import redis

from api import create_app
from api.queue import CeleryQueue
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.store.models import Request, Run, utcnow
from tests.databases import POSTGRES_URL
from tests.helpers import wait_for
from tests.integration.lifecycle_helpers import PrivateRedis, create_job, recorded_processes
from tests.integration.services import POSTGRES_ONLY, SQLITE_ONLY, Stack, WorkerProcess
from worker.recovery.sweep import recover
from worker.recovery.sweep_clock import DATABASE_AWAY, JUDGE_FROM, clock_of

pytestmark = pytest.mark.integration


def closed(name: str, seconds: float) -> None:
    """Every backend of database `name` cut and new connections refused for `seconds`."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        time.sleep(seconds)  # the outage itself
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')


@POSTGRES_ONLY
def test_a_finish_that_meets_a_long_outage_is_recorded_once_the_database_is_back(bare_stack):
    """The run ends 1 s into a 6 s outage. Its finish used to be retried for half a lease
    (here 4 s) and then given up: the run stayed `running`, and the sweep later ran it again
    (the skill declares a retry) although it had succeeded. Now the finish outlasts the outage
    and the run is executed once."""
    stack = bare_stack
    stack.start_worker(extra_env={"SKILL_RUNNER_LEASE_SEC": "8"})
    rid = create_job(stack, "retry-counter", sleep=1.5)
    running = stack.wait(rid, until=("running",))
    recorded_processes(stack, running["run_id"], expect=0)  # the script has started
    closed(stack.settings.database_url.rsplit("/", 1)[1], 6.0)
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded" and status["attempt"] == 1, status
    calls = stack.settings.runs_dir / running["run_id"] / "artifacts" / "calls.txt"
    assert len(calls.read_text().split()) == 1
    assert "does not answer" in stack.worker.log_path.read_text()


def test_leases_are_not_judged_right_after_the_database_was_away(stack_settings):
    """Found by following the chaos test's Postgres restart past a lease: every live run's
    heartbeat is then as old as the outage, and the first sweep to reach the database again
    failed them all. A worker that finds the database away now notes it in the broker, and the
    next sweep gives running runs a lease to beat before it judges them by age."""
    settings = stack_settings
    engine = make_engine(settings.database_url)
    sessions = make_sessionmaker(engine)
    silent = utcnow() - timedelta(seconds=settings.lease_sec + 5)
    with sessions() as session:
        session.add(Request(id="req", skill_id="slow-counter"))
        session.add(Run(id="run", request_id="req", skill_id="slow-counter", status="running",
                        attempt=1, started_at=silent, heartbeat_at=silent,
                        worker="another-host:1"))  # fmt: skip
        session.commit()
    broker = redis.Redis.from_url(settings.broker_url)
    clock_of(settings).database_away()  # as a lease refresh that met the outage does

    def sweep() -> dict:
        return recover(settings, sessions, lambda run: "task")

    assert sweep()["reconciled"] == 0
    assert float(broker.get(JUDGE_FROM)) > time.time() + settings.lease_sec - 5
    assert broker.get(DATABASE_AWAY) is None  # read once
    assert sweep()["reconciled"] == 0  # still within the lease given
    broker.set(JUDGE_FROM, time.time() - 1)  # that lease has passed and the run never beat
    assert sweep()["reconciled"] == 1
    with sessions() as session:
        assert session.get(Run, "run").error_code == "ORCHESTRATOR_RESTART_INTERRUPTED"
    engine.dispose()


class Holding:
    """A queue that keeps the messages of the API's jobs, to be sent when the test says."""

    def __init__(self, real: CeleryQueue) -> None:
        self.real, self.held = real, []

    def enqueue(self, run_id: str, queue: str, *args, **kwargs) -> str:
        self.held.append((run_id, queue))
        return "held"

    def __getattr__(self, name: str):
        return getattr(self.real, name)


@POSTGRES_ONLY
def test_a_message_that_meets_the_outage_is_held_not_dropped(bare_stack):
    """Found by the chaos test's Postgres restart: every message a worker took while the
    database was away failed its claim and was dropped (acked), so a restart drained the queue
    and each run waited for the sweep to send it again. The claim is now retried while the
    database is away. Here no sweep runs: a dropped message would leave the run queued."""
    stack = bare_stack
    stack.start_worker(extra_env={"SKILL_RUNNER_LEASE_SEC": "30"})  # claims retried up to 30 s
    queue = Holding(CeleryQueue(stack.settings.broker_url))
    app = create_app({"SETTINGS": stack.settings, "QUEUE": queue})
    resp = app.test_client().post(
        "/v1/jobs", json={"skill_id": "slow-counter", "parameter": {"sleep": 0}}
    )
    rid, (run_id, name) = resp.json["request_id"], queue.held[0]
    app.extensions["db"].kw["bind"].dispose()
    database = stack.settings.database_url.rsplit("/", 1)[1]
    outage = threading.Thread(target=closed, args=(database, 4.0))
    outage.start()
    wait_for(lambda: not answers(stack.settings.database_url), 10)
    queue.real.enqueue(run_id, name)  # taken by the worker while the database is away
    wait_for(lambda: "claim of run" in stack.worker.log_path.read_text(), 10)
    outage.join()
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded" and status["attempt"] == 1, status


def answers(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.Error:
        return False
    return True


@SQLITE_ONLY  # a broker outage: the database answers throughout
def test_a_worker_holding_a_run_survives_a_redis_restart(bare_stack, tmp_path):
    """Found by an operator: Redis shut down (`shutdown nosave`) while a worker of the
    Procfile's held a running run's message made the worker exit (kombu's AttributeError on
    putting the message back through a closed connection), and honcho stopped the whole service
    with it. Now the run goes on and ends recorded, once, and the worker takes new jobs from the
    restarted Redis. No beat runs here: nothing is sent again by a sweep."""
    redis = PrivateRedis(tmp_path / "redis")
    try:
        settings = dataclasses.replace(bare_stack.settings, broker_url=redis.url)
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(redis.url)})
        stack = Stack(settings, app.test_client(), app, None, bare_stack.backend)
        worker = WorkerProcess(settings, "w", settings.data_dir / "w.log", as_procfile=True)
        try:
            rid = create_job(stack, "slow-counter", sleep=6)
            run_id = stack.wait(rid, until=("running",))["run_id"]
            recorded_processes(stack, run_id, expect=0)  # the script has started
            redis.shut_down()
            log = worker.log_path.read_text
            wait_for(lambda: "Connection to broker lost" in log(), 10)
            redis.start()
            ended = stack.wait(rid, timeout=30)
            assert ended["status"] == "succeeded" and ended["attempt"] == 1, ended
            after = create_job(stack, "slow-counter", sleep=0, no_cache=True)
            assert stack.wait(after, timeout=30)["status"] == "succeeded"
            assert worker.proc.poll() is None, log()[-3000:]
            assert "Unrecoverable error" not in log()
            # what kombu could not put back, dumped at the disconnection (docs/operating.md)
            dumped = re.search(r"EMERGENCY DUMP STATE TO FILE -> (\S+) <-", log())
            assert dumped, log()[-3000:]
            Path(dumped.group(1)).unlink()
            for request_id in (rid, after):
                run = stack.client.get(f"/v1/jobs/{request_id}").json["run_id"]
                calls = settings.runs_dir / run / "artifacts" / "calls.txt"
                assert len(calls.read_text().split()) == 1  # executed once
        finally:
            worker.stop()
            app.extensions["db"].kw["bind"].dispose()
    finally:
        redis.stop()
