"""Run lifecycle with real worker processes: timeouts, cancel, signals, running limits,
crashes, lost broker messages and startup reconciliation, on SQLite and Postgres (the two tests
of what becomes of a run's processes and output run on SQLite: no SQL of their own)."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import time
from datetime import timedelta

import psutil
import pytest

from api import create_app
from api.queue import CeleryQueue
from runner_core.events import is_terminal, read_events
from runner_core.store.models import Run, utcnow
from runner_core.sweep_mark import SweepMark
from tests.helpers import upload_body, wait_for
from tests.integration.lifecycle_helpers import (
    PrivateRedis,
    create_job,
    job,
    job_states,
    live_group,
    live_pids,
    parse_iso,
    recorded_processes,
    run_row,
)
from tests.integration.services import (
    POSTGRES_ONLY,
    SQLITE_ONLY,
    STACK_ENV,
    Stack,
    WorkerProcess,
    api_stack,
    broker_settings,
    stop_workers,
)

pytestmark = pytest.mark.integration

FAST = {
    # these tests read the pids a script records from inside; a boxed run has a pid namespace
    # of its own (boxed runs' kills: tests/integration/test_sandbox.py)
    "SKILL_RUNNER_SANDBOX": "off",
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "1",
    "SKILL_RUNNER_LIMIT_RETRY_SEC": "0.3",
}


@pytest.fixture(scope="module")
def stack(backend, tmp_path_factory):
    """One worker (with beat) for the module's tests that neither kill it nor change its
    settings; they may signal its pool processes, which it replaces. Each test reads only the
    jobs it created."""
    root = tmp_path_factory.mktemp(f"lifecycle-{backend}")
    with (
        broker_settings(root, backend, **STACK_ENV) as settings,
        api_stack(settings, backend) as stack,
    ):
        stack.start_worker(beat=True, extra_env=FAST)
        yield stack


@pytest.fixture
def workers(bare_stack):
    """Start several named workers for one stack; all are stopped at the end. Each runs beat
    by default: the shared test Redis may lose a message (another test run flushing it), and
    the sweep re-sends it as it would in production."""
    started: list[WorkerProcess] = []

    def start(
        name: str, concurrency: int = 2, beat: bool = True, queues: str | None = None, **env: str
    ) -> WorkerProcess:
        proc = WorkerProcess(
            bare_stack.settings,
            f"{name}-{bare_stack.backend}",
            bare_stack.settings.data_dir / f"worker-{name}.log",
            concurrency=concurrency,
            beat=beat,
            extra_env={**FAST, **env},
            queues=queues,
        )
        started.append(proc)
        return proc

    yield start
    stop_workers(started)


def hard_kill(worker: WorkerProcess) -> None:
    """SIGKILL the worker's main process and its pool children, as an OOM kill or a power cut
    of the worker would: no cleanup code runs."""
    children = psutil.Process(worker.proc.pid).children()
    worker.kill(signal.SIGKILL)
    for child in children:
        child.send_signal(signal.SIGKILL)


def test_healthz_says_how_long_ago_the_sweep_ran(stack):
    """The sweep marks its end in the broker; /healthz reports it, so an API whose workers or
    beat are gone shows a sweep far in the past (here: an old mark, then the worker's sweep
    every second replaces it)."""
    SweepMark(stack.settings.broker_url).swept(time.time() - 1000)
    assert stack.client.get("/healthz").json["last_sweep_sec_ago"] >= 999
    wait_for(
        lambda: stack.client.get("/healthz").json["last_sweep_sec_ago"] < 5, 30, 0.2,
        what="a sweep after the old mark",
    )  # fmt: skip
    assert stack.client.get("/healthz").json["status"] == "ok"


def test_timeout_kills_the_whole_process_tree(stack):
    rid = create_job(stack, "stubborn-tree", sleep=60, children=2)
    status = stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(stack, status["run_id"], expect=4)
    status = stack.wait(rid, timeout=15)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    took = (parse_iso(status["finished_at"]) - parse_iso(status["started_at"])).total_seconds()
    print(f"timeout: started -> finished {took:.2f}s (timeout 2 s, grace 1 s)")
    assert 2 <= took < 6, took  # 2 s timeout + 1 s grace (one child ignores SIGTERM)
    assert live_group(pgid) == [] and live_pids(kids) == []


@SQLITE_ONLY
@pytest.mark.parametrize("sleep, cancel", [(0.3, False), (30, True)])
def test_processes_that_leave_the_group_do_not_outlive_their_run(stack, sleep, cancel):
    worker = stack.worker
    rid = create_job(stack, "slow-counter", sleep=sleep, escapes=2, children=1)
    status = stack.wait(rid, until=("running", "succeeded"))
    escaped_file = stack.settings.runs_dir / status["run_id"] / "raw" / "escaped_pids.txt"
    wait_for(lambda: escaped_file.is_file() and len(escaped_file.read_text().split()) == 2, 10)
    escaped = [int(p) for p in escaped_file.read_text().split()]
    pgid, kids = recorded_processes(stack, status["run_id"], expect=1)
    assert all(os.getpgid(p) != pgid for p in escaped)  # really out of the run's group
    if cancel:
        assert stack.client.post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    ended = stack.wait(rid, timeout=20)
    assert ended["status"] == ("canceled" if cancel else "succeeded"), ended
    wait_for(lambda: live_pids(escaped) == [] and live_pids(kids) == [], 5)
    pool = psutil.Process(worker.proc.pid).children()
    assert [c.pid for p in pool for c in p.children()] == []  # adopted ones reaped, no zombie


@SQLITE_ONLY
def test_a_run_that_floods_its_output_is_killed_at_the_limit(bare_stack, workers):
    workers("w", SKILL_RUNNER_MAX_OUTPUT_BYTES=str(1024**2))
    # 10 KB lines, 1,000 of them over 20 s: 1 MiB is passed after ~2 s
    rid = create_job(
        bare_stack, "slow-counter", sleep=20, ticks=1000, tick_bytes=10_000, children=1
    )
    status = bare_stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(bare_stack, status["run_id"], expect=1)
    status = bare_stack.wait(rid, timeout=15)
    assert status["status"] == "failed" and status["error"]["code"] == "OUTPUT_TOO_LARGE", status
    written = status["error"]["written_bytes"]
    assert 1024**2 < written < 20 * 1024**2, written  # stopped soon after the limit
    assert live_group(pgid) == [] and live_pids(kids) == []
    logs = bare_stack.client.get(f"/v1/jobs/{rid}/logs").json
    assert logs["stdout"].startswith("tick 0 ")  # what it wrote is kept for a look


def test_a_job_whose_upload_never_comes_fails_with_upload_timeout(bare_stack, workers):
    workers("w", SKILL_RUNNER_UPLOAD_WAIT_SEC="2")
    rid = create_job(bare_stack, "demo-prime-number")
    assert job(bare_stack, rid)["waiting_for_upload"] is True
    status = bare_stack.wait(rid, timeout=15)
    assert status["status"] == "failed" and status["error"]["code"] == "UPLOAD_TIMEOUT", status
    assert "within 2 s" in status["error"]["message"] and not status["waiting_for_upload"]
    run_dir = bare_stack.settings.runs_dir / status["run_id"]  # never started: made for its end
    ended = wait_for(lambda: [e for e in read_events(run_dir) if is_terminal(e)], 5)
    assert [(e["data"]["from"], e["data"]["terminal"]["error"]["code"]) for e in ended] == [
        ("queued", "UPLOAD_TIMEOUT")
    ]
    late = bare_stack.client.post(
        f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"})
    )
    assert late.status_code == 409 and late.json["error"]["code"] == "UPLOAD_NOT_ALLOWED"


def test_cancel_of_a_queued_run_holds_even_when_the_revoke_is_lost(bare_stack, workers):
    rid = create_job(bare_stack, "slow-counter", sleep=0)  # no worker online: revoke is lost
    resp = bare_stack.client.post(f"/v1/jobs/{rid}/cancel").json
    assert resp["accepted"] is True and resp["status"] == "canceled"
    worker = workers("w")  # now the message is delivered; the claim guard refuses it
    run_id = job(bare_stack, rid)["run_id"]
    wait_for(lambda: f"run {run_id} not claimed" in worker.log_path.read_text(), 15)
    status = job(bare_stack, rid)
    assert status["status"] == "canceled" and status["error"]["code"] == "CANCELED_BY_USER"
    assert status["started_at"] is None and status["finished_at"] and status["attempt"] == 0
    assert not (bare_stack.settings.runs_dir / run_id / "artifacts" / "calls.txt").exists()


def test_cancel_of_a_running_run_kills_its_group_within_2_seconds(stack):
    rid = create_job(stack, "slow-counter", sleep=30, children=2)
    status = stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(stack, status["run_id"], expect=2)
    asked = time.monotonic()
    resp = stack.client.post(f"/v1/jobs/{rid}/cancel").json
    assert resp["accepted"] is True
    status = stack.wait(rid, timeout=5)
    took = time.monotonic() - asked
    assert status["status"] == "canceled" and status["error"]["code"] == "CANCELED_BY_USER"
    print(f"cancel -> canceled with the group dead: {took:.2f}s")
    assert took < 2.0, took
    assert live_group(pgid) == [] and live_pids(kids) == []
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["status"] == "canceled" and result["error"]["code"] == "CANCELED_BY_USER"


def test_cancel_after_success_is_not_accepted_and_changes_nothing(stack):
    rid = create_job(stack, "slow-counter", sleep=0, no_cache=True)
    before = stack.wait(rid)
    assert before["status"] == "succeeded"
    resp = stack.client.post(f"/v1/jobs/{rid}/cancel").json
    assert resp == {
        "request_id": rid,
        "run_id": before["run_id"],
        "accepted": False,
        "status": "succeeded",
        "message": "the run had already ended (succeeded): nothing to cancel",
    }
    assert job(stack, rid) == before


@pytest.mark.parametrize(
    "sig, status, code",
    [
        (signal.SIGTERM, "canceled", "CANCELED_BY_USER"),  # Flower's revoke with terminate
        (signal.SIGUSR1, "failed", "TIMEOUT"),  # Celery's soft time limit
    ],
)
def test_signal_to_the_pool_child_leaves_no_orphan(stack, sig, status, code):
    rid = create_job(stack, "slow-counter", sleep=30, children=2)
    running = stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(stack, running["run_id"], expect=2)
    pool_child = int(running["worker"].rsplit(":", 1)[1])
    os.kill(pool_child, sig)
    ended = stack.wait(rid, timeout=10)
    assert ended["status"] == status and ended["error"]["code"] == code, ended
    assert live_group(pgid) == [] and live_pids(kids) == []
    again = create_job(stack, "slow-counter", sleep=0, no_cache=True)  # the worker still serves
    assert stack.wait(again)["status"] == "succeeded"


def max_overlap(stack, statuses: list[dict]) -> int:
    """The most skill processes alive at one instant, from the intervals the slow-counter
    script records itself (row timestamps are taken before their commits, so they can overlap
    by a few milliseconds even when the claims never did)."""
    edges = []
    for s in statuses:
        raw = stack.settings.runs_dir / s["run_id"] / "raw" / "interval.txt"
        start, end = map(float, raw.read_text().split())
        edges += [(start, 1), (end, -1)]
    current = peak = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
        current += step
        peak = max(peak, current)
    return peak


def test_global_running_limit_holds_across_two_workers(bare_stack, workers):
    for name in ("a", "b"):
        workers(name, concurrency=2, SKILL_RUNNER_MAX_RUNNING="2")
    rids = [create_job(bare_stack, "slow-counter", sleep=1) for _ in range(5)]
    seen_queued_while_full = False
    end = time.monotonic() + 30
    while time.monotonic() < end:
        states = job_states(bare_stack, rids, "slow-counter")
        assert states.count("running") <= 2, states
        seen_queued_while_full |= states.count("running") == 2 and "queued" in states
        if all(s == "succeeded" for s in states):
            break
        time.sleep(0.05)
    statuses = [job(bare_stack, rid) for rid in rids]
    assert [s["status"] for s in statuses] == ["succeeded"] * 5
    assert max_overlap(bare_stack, statuses) <= 2 and seen_queued_while_full
    assert {s["worker"].split(":")[0] for s in statuses} and all(
        s["attempt"] == 1 for s in statuses
    )


def test_per_engine_running_limit(bare_stack, workers):
    workers("w", concurrency=3, SKILL_RUNNER_MAX_RUNNING_SCRIPT="1")
    rids = [create_job(bare_stack, "slow-counter", sleep=0.7) for _ in range(3)]
    statuses = [bare_stack.wait(rid, timeout=30) for rid in rids]
    assert [s["status"] for s in statuses] == ["succeeded"] * 3
    assert max_overlap(bare_stack, statuses) == 1


def test_killed_worker_run_is_reconciled_and_its_group_reaped(bare_stack, workers):
    first = workers("a", concurrency=1, beat=False)
    rid = create_job(bare_stack, "slow-counter", sleep=60, children=2)
    status = bare_stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(bare_stack, status["run_id"], expect=2)
    wait_for(lambda: run_row(bare_stack, status["run_id"]).pgid == pgid, 5)
    hard_kill(first)
    killed = time.monotonic()
    assert live_group(pgid)  # the engine's group outlives the worker: an orphan
    workers("b")
    ended = bare_stack.wait(rid, timeout=20)
    latency = time.monotonic() - killed
    assert ended["status"] == "failed", ended
    assert ended["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED"
    assert ended["recovery_state"] == "failed_reconciled" and ended["recovered_at"]
    assert ended["recovery_reason"] == "orchestrator_restart_interrupted"
    assert ended["finished_at"] and ended["started_at"] == status["started_at"]
    print(f"hard kill -> reconciled (worker restarted): {latency:.2f}s")
    assert latency < 10, latency
    wait_for(lambda: live_group(pgid) == [] and live_pids(kids) == [], 5)
    assert run_row(bare_stack, status["run_id"]).pgid is None
    # the sweep commits the run's end, then appends its event: read once it is there
    run_dir = bare_stack.settings.runs_dir / status["run_id"]
    wait_for(lambda: "terminal" in read_events(run_dir)[-1]["data"], 5)
    last = read_events(run_dir)[-1]
    assert last["data"]["trigger"] == "reconciled" and last["data"]["terminal"] == {
        "status": "failed",
        "error": ended["error"],
    }


def test_killed_pool_child_is_reconciled_by_its_own_worker(stack):
    worker = stack.worker
    rid = create_job(stack, "slow-counter", sleep=60, children=1)
    status = stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(stack, status["run_id"], expect=1)
    wait_for(lambda: run_row(stack, status["run_id"]).pgid == pgid, 5)
    os.kill(int(status["worker"].rsplit(":", 1)[1]), signal.SIGKILL)  # OOM killer, hard limit
    killed = time.monotonic()
    ended = stack.wait(rid, timeout=20)
    print(f"pool child killed -> reconciled by the sweep: {time.monotonic() - killed:.2f}s")
    assert ended["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED", ended
    wait_for(lambda: live_group(pgid) == [] and live_pids(kids) == [], 5)
    assert worker.proc.poll() is None


def test_killed_worker_run_is_retried_when_the_skill_declares_retries(bare_stack, workers):
    first = workers("a", concurrency=1, beat=False)
    rid = create_job(bare_stack, "retry-counter", sleep=1.5, children=1)
    status = bare_stack.wait(rid, until=("running",))
    pgid, kids = recorded_processes(bare_stack, status["run_id"], expect=1)
    wait_for(lambda: run_row(bare_stack, status["run_id"]).pgid == pgid, 5)
    hard_kill(first)
    workers("b")
    ended = bare_stack.wait(rid, timeout=30)
    assert ended["status"] == "succeeded" and ended["attempt"] == 2, ended
    assert ended["recovery_reason"] == "requeued_after_worker_lost" and ended["recovered_at"]
    assert ended["worker"] != status["worker"] and ended["queued_at"] == status["queued_at"]
    calls = bare_stack.settings.runs_dir / status["run_id"] / "artifacts" / "calls.txt"
    assert len(calls.read_text().split()) == 2
    assert live_group(pgid) == [] and live_pids(kids) == []


def test_a_backlog_is_not_sent_again_while_it_waits(bare_stack, workers):
    """Runs waiting behind others longer than the grace are still in the broker: the sweep
    (on a worker of its own, so it runs every second) must not send them again."""
    workers("w", concurrency=1, beat=False)
    sweeper = workers("sweep", queues="maintenance", SKILL_RUNNER_SWEEP_GRACE_SEC="1")
    ids = [create_job(bare_stack, "slow-counter", sleep=1.0) for _ in range(6)]
    for rid in ids:  # one process: the last waits ~5 s, five sweeps past the grace
        assert bare_stack.wait(rid, timeout=40)["status"] == "succeeded"
    log = sweeper.log_path.read_text()
    resent = sum(int(n) for n in re.findall(r"'resent': (\d+)", log))
    waiting = sum(int(n) for n in re.findall(r"'still_queued': (\d+)", log))
    print(f"sweeps saw {waiting} stale runs still in the broker, re-sent {resent}")
    assert waiting >= 4  # the sweep did look at the backlog (each pass counts it again)
    # a sweep may catch a message in the instant a worker has popped it and not yet
    # recorded it as reserved: at most one such re-send (the claim guard drops it)
    assert resent <= 1, resent


def test_with_the_broker_view_off_a_backlog_is_sent_again_and_each_run_runs_once(
    bare_stack, workers
):
    """SKILL_RUNNER_BROKER_VIEW=0 (the public API only): the sweep cannot tell a waiting
    message from a lost one, so it sends the backlog again; the claim guard drops the
    duplicates."""
    workers("w", concurrency=1, beat=False)
    sweeper = workers(
        "sweep",
        queues="maintenance",
        SKILL_RUNNER_SWEEP_GRACE_SEC="1",
        SKILL_RUNNER_BROKER_VIEW="0",
    )
    ids = [create_job(bare_stack, "slow-counter", sleep=1.0) for _ in range(6)]
    statuses = [bare_stack.wait(rid, timeout=40) for rid in ids]
    assert [s["status"] for s in statuses] == ["succeeded"] * len(ids)
    resent = sum(int(n) for n in re.findall(r"'resent': (\d+)", sweeper.log_path.read_text()))
    assert resent >= 3, resent  # the last runs waited several graces
    for status in statuses:
        calls = bare_stack.settings.runs_dir / status["run_id"] / "artifacts" / "calls.txt"
        assert len(calls.read_text().split()) == 1 and status["attempt"] == 1, status


def test_lost_broker_message_never_loses_an_accepted_run(bare_stack, tmp_path):
    redis = PrivateRedis(tmp_path / "redis")
    try:
        settings = dataclasses.replace(bare_stack.settings, broker_url=redis.url)
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(redis.url)})
        stack = Stack(settings, app.test_client(), app, None, bare_stack.backend)
        rid = create_job(stack, "slow-counter", sleep=0)  # in the broker, no worker yet
        queued = job(stack, rid)
        assert redis.client().llen("runs.script") == 1
        redis.restart()  # no persistence: the message is gone
        assert redis.client().llen("runs.script") == 0
        restarted = time.monotonic()
        worker = WorkerProcess(
            settings, f"w-{stack.backend}", settings.data_dir / "w.log", beat=True, extra_env=FAST
        )
        try:
            ended = stack.wait(rid, timeout=20)
            latency = time.monotonic() - restarted
        finally:
            worker.stop()
        print(f"broker restart -> lost run re-sent and succeeded: {latency:.2f}s")
        assert ended["status"] == "succeeded" and ended["attempt"] == 1, ended
        assert ended["queued_at"] == queued["queued_at"] and latency < 15
        app.extensions["db"].kw["bind"].dispose()
    finally:
        redis.stop()


def test_startup_reconciliation_of_waiting_and_orphaned_runs(bare_stack, workers):
    rids = [create_job(bare_stack, "slow-counter", sleep=0) for _ in range(3)]
    run_ids = [job(bare_stack, rid)["run_id"] for rid in rids]
    old = utcnow() - timedelta(hours=1)
    with bare_stack.app.extensions["db"]() as session:
        with_handle, without_handle, running = (session.get(Run, r) for r in run_ids)
        with_handle.status, with_handle.session_handle = "waiting_user", "thread-1"
        with_handle.pending_interaction_id = 1
        without_handle.status, without_handle.pending_interaction_id = "waiting_user", 1
        running.status, running.started_at, running.heartbeat_at = "running", old, old
        running.worker, running.attempt = f"{os.uname().nodename}:999999999", 1
        session.commit()
    for run_id in run_ids:  # as if each had run a turn: their event logs have a place
        (bare_stack.settings.runs_dir / run_id).mkdir(parents=True)
    workers("a", beat=False)  # "ready." is logged after the startup reconciliation
    kept, failed, interrupted = (job(bare_stack, rid) for rid in rids)
    assert kept["status"] == "waiting_user" and kept["recovery_state"] == "recovered_waiting"
    assert kept["recovery_reason"] == "resumable_waiting_preserved" and kept["recovered_at"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "SESSION_RESUME_FAILED"
    assert failed["recovery_state"] == "failed_reconciled"
    assert failed["recovery_reason"] == "session_handle_invalid"
    assert interrupted["error"]["code"] == "ORCHESTRATOR_RESTART_INTERRUPTED"
    ends = [
        [e["data"] for e in read_events(bare_stack.settings.runs_dir / r) if is_terminal(e)]
        for r in run_ids
    ]
    assert ends[0] == []  # still waiting
    assert [(d["from"], d["trigger"], d["terminal"]["error"]["code"]) for d in ends[1]] == [
        ("waiting_user", "resume_failed", "SESSION_RESUME_FAILED")
    ]
    assert [(d["from"], d["trigger"], d["terminal"]["status"]) for d in ends[2]] == [
        ("running", "reconciled", "failed")
    ]
    workers("b", beat=False)  # idempotent: a second start changes nothing
    assert [job(bare_stack, rid) for rid in rids] == [kept, failed, interrupted]


def test_cancel_of_a_waiting_run_ends_it_at_once(bare_stack):
    rid = create_job(bare_stack, "slow-counter", sleep=0)  # no worker: no process exists
    with bare_stack.app.extensions["db"]() as session:
        session.get(Run, job(bare_stack, rid)["run_id"]).status = "waiting_user"
        session.commit()
    resp = bare_stack.client.post(f"/v1/jobs/{rid}/cancel").json
    assert resp["accepted"] is True and resp["status"] == "canceled"
    status = job(bare_stack, rid)
    assert status["error"]["code"] == "CANCELED_BY_USER" and status["finished_at"]


@POSTGRES_ONLY
def test_a_database_outage_during_a_run_loses_neither_the_run_nor_its_result(bare_stack):
    """Postgres refuses every connection for ~3 s while the run works and then ends: the lease
    polls fail and are ridden out, the finish is retried until it lands."""
    import psycopg

    from tests.databases import POSTGRES_URL

    stack = bare_stack
    stack.start_worker(extra_env={"SKILL_RUNNER_LEASE_SEC": "60"})
    name = stack.settings.database_url.rsplit("/", 1)[1]
    rid = create_job(stack, "slow-counter", sleep=3)
    stack.wait(rid, until=("running",))
    time.sleep(1.0)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        time.sleep(3.0)  # the run's sleep ends in here: its finish meets the outage
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded", status
    log = stack.worker.log_path.read_text()
    assert "does not answer" in log and "not refreshed" in log  # both paths were taken
