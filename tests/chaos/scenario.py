"""The chaos scenario: the service on Postgres + Redis + gunicorn + 2 Celery workers + beat,
`in_flight` jobs kept queued or running, and one fault after another. `run` returns what
happened; the test asserts on it and `python -m bench chaos` prints it as a figure.

Jobs are `chaos-ledger` script runs (one ledger line per execution, one declared retry) and,
every `codex_every`-th, an `echo-prompt` codex run against the fake LLM.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from fake_llm import FakeLLM, Script
from runner_core.settings import REPO_ROOT
from runner_core.store.migrate import upgrade
from tests.chaos.faults import DISK_HOLD_SEC, POSTGRES_GAP_SEC, Fault, inject, measure
from tests.chaos.load import Job, Load
from tests.chaos.report import Report, verify
from tests.chaos.servers import RedisServer, SmallDisk, make_postgres
from tests.chaos.service import Service
from tests.helpers import copy_skills, make_settings, wait_for

# Redis last: the queued runs it loses wait out the sweep's grace, and a fault after it would
# meet idle workers
FAULTS = ("worker_kill", "postgres_restart", "api_restart", "disk_full", "redis_restart")
# the codex run's one tool call reads the text back from the prompt: the answer is the input's
ECHO = (
    "python3 -c \"import json,re; t=re.search(r'on this text: (\\S+)', "
    "open('logs/prompt.txt').read()).group(1); print(json.dumps({'text': t, 'length': len(t)}))\""
)
SERVICE_ENV = {
    "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "2",
    "SKILL_RUNNER_SWEEP_GRACE_SEC": "10",
    "SKILL_RUNNER_LEASE_SEC": "15",
    "SKILL_RUNNER_KILL_GRACE_SEC": "1",
}


@dataclass
class Plan:
    in_flight: int = 300
    baseline_sec: float = 40.0  # load with no fault, after the ramp
    spacing_sec: float = 20.0  # after each fault cleared, before the next
    # after the load stops, every job must end: the wait fails when the count of unended jobs
    # stays the same for stall_sec (a job lost or stuck), or after drain_sec on a slow machine
    stall_sec: float = 90.0
    drain_sec: float = 420.0
    codex_every: int = 0  # every n-th job is a codex run (0: none)
    sleep: float = 0.2  # the script's work per execution
    disk_mb: int = 192
    faults: tuple[str, ...] = FAULTS
    postgres_url: str = "postgresql://postgres@127.0.0.1:5432/postgres"  # the stand-in's server


@dataclass
class Phase:
    """Successful completions per second in a window of the run."""

    start: float = 0.0
    end: float = 0.0
    succeeded: int = 0

    @property
    def rate(self) -> float:
        return self.succeeded / (self.end - self.start) if self.end > self.start else 0.0


@dataclass
class Outcome:
    report: Report
    faults: list[Fault]
    baseline: Phase
    faulted: Phase
    real_postgres: bool
    logs: Path
    notes: list[str] = field(default_factory=list)


def run(root: Path, plan: Plan) -> Outcome:
    root.mkdir(parents=True, exist_ok=True)
    pg = make_postgres(plan.postgres_url)
    redis = RedisServer(root / "redis")
    disk = SmallDisk(data_root() / "data", plan.disk_mb)
    service = None
    try:
        with fake_codex(root) as engine_env:
            copy_skills(root / "skills")
            settings = make_settings(
                root, DATABASE_URL=pg.url, CELERY_BROKER_URL=redis.url, **SERVICE_ENV,
                SKILL_RUNNER_DATA_DIR=str(disk.path),
            )  # fmt: skip
            upgrade(settings.database_url)
            ledger = root / "ledger"
            ledger.mkdir()
            service = Service(settings, root / "logs", {**SERVICE_ENV, **engine_env})
            load = Load(service.base_url, pg.url, job_maker(plan, ledger), plan.in_flight)
            actions = fault_actions(service, redis, pg, disk)
            faults = [Fault(kind) for kind in plan.faults]
            load.start()
            wait_for(lambda: load.active >= plan.in_flight * 0.9, 120, 0.5, "the load ramped up")
            baseline = Phase(start=time.time())
            time.sleep(plan.baseline_sec)
            baseline.end = faulted_start = time.time()
            for fault in faults:
                if fault.kind == "disk_full" and not disk.mounted:
                    fault.skipped = f"no small disk: mounting a tmpfs needs root ({disk.why_not})"
                    continue
                inject(fault, pg.url, actions[fault.kind])
                time.sleep(plan.spacing_sec)
            faulted = Phase(start=faulted_start, end=time.time())
            load.stop()
            drain(pg.url, plan.stall_sec, plan.drain_sec)
            for fault in faults:
                measure(fault, pg.url)
            for phase in (baseline, faulted):
                phase.succeeded = succeeded_between(pg.url, phase.start, phase.end)
            report = verify(service.base_url, load, ledger, retries=1)
            keep_failed(settings.runs_dir, report, root / "failed-runs")
            return Outcome(report, faults, baseline, faulted, pg.real, root / "logs")
    finally:
        if service is not None:
            service.stop()
        redis.stop()
        disk.unmount()
        shutil.rmtree(disk.path.parent, ignore_errors=True)
        pg.stop()


def data_root() -> Path:
    """Where the data directory goes: not under /tmp, where (without the run box) codex's own
    sandbox cannot start its shell tool's helper (deploy/install-sandbox.sh)."""
    return Path(tempfile.mkdtemp(prefix="chaos-data-", dir="/var/tmp"))


def keep_failed(runs_dir: Path, report: Report, dest: Path) -> None:
    """Copy the failed runs' directories (but a full disk's) off the small disk for a look."""
    for run_id, what in report.failed.items():
        if "STORAGE_FULL" not in what and (runs_dir / run_id).is_dir():
            shutil.copytree(runs_dir / run_id, dest / run_id, symlinks=True)
            (dest / run_id / "chaos-failure.txt").write_text(what)


def job_maker(plan: Plan, ledger: Path) -> Callable[[int], Job]:
    def make(i: int) -> Job:
        options = {"no_cache": True}
        if plan.codex_every and i % plan.codex_every == plan.codex_every - 1:
            text = f"chaos-{i}"
            body = {"skill_id": "echo-prompt", "engine": "codex", "input": {"text": text},
                    "runtime_options": options}  # fmt: skip
            return Job(f"chaos-{i}", body, {"text": text, "length": len(text)})
        parameter = {"n": i, "ledger": str(ledger), "sleep": plan.sleep}
        body = {"skill_id": "chaos-ledger", "parameter": parameter, "runtime_options": options}
        return Job(f"chaos-{i}", body, {"n": i, "double": 2 * i})

    return make


def fault_actions(service: Service, redis: RedisServer, pg, disk: SmallDisk) -> dict:
    def worker_kill() -> None:
        service.kill_worker(0)
        service.start_worker(0)

    def redis_restart() -> None:
        redis.crash()  # no persistence: every queued message is gone
        redis.start()

    def api_restart() -> None:
        service.kill_web()
        service.start_web()

    def disk_full() -> None:
        disk.fill()
        time.sleep(DISK_HOLD_SEC)  # runs meet the full disk
        disk.free()

    return {
        "worker_kill": worker_kill,
        "redis_restart": redis_restart,
        "postgres_restart": lambda: pg.outage(POSTGRES_GAP_SEC),
        "api_restart": api_restart,
        "disk_full": disk_full,
    }


@contextmanager
def fake_codex(root: Path) -> Iterator[dict[str, str]]:
    """The fake LLM and an engine config dir pointing codex at it: the workers' environment."""
    script = Script(command=ECHO, final_text="$tool_output_last_line")
    with FakeLLM(script) as llm:
        config_dir = root / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
        (config_dir / "codex").mkdir(exist_ok=True)
        (config_dir / "codex" / "enforced.json").write_text(
            json.dumps({"base_url": f"{llm.base_url}/v1", "api_key": "fake-key",
                        "model": "fake-model"})
        )  # fmt: skip
        yield {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)}


def active_runs(database_url: str) -> int:
    try:
        with psycopg.connect(database_url, connect_timeout=2) as conn:
            row = conn.execute(
                "SELECT count(*) FROM runs WHERE status IN ('queued', 'running')"
            ).fetchone()
            return row[0] if row else 0
    except psycopg.Error:
        return -1


def drain(database_url: str, stall_sec: float, limit_sec: float) -> None:
    """Wait for every run to end, while their count keeps going down."""
    start = changed = time.monotonic()
    left = active_runs(database_url)
    while left != 0:
        time.sleep(1.0)
        now, count = time.monotonic(), active_runs(database_url)
        if count != left:
            left, changed = count, now
        elif now - changed > stall_sec or now - start > limit_sec:
            raise AssertionError(
                f"{left} runs not ended {now - start:.0f} s after the load stopped (none for"
                f" {now - changed:.0f} s): {active_rows(database_url)}"
            )


def active_rows(database_url: str, limit: int = 20) -> list[tuple]:
    """The runs still queued or running, with what says where each one stands."""
    with psycopg.connect(database_url, connect_timeout=2) as conn:
        return conn.execute(
            "SELECT id, engine, status, attempt, worker, recovery_state, created_at, queued_at,"
            " dispatched_at, started_at, heartbeat_at FROM runs"
            " WHERE status IN ('queued', 'running') ORDER BY created_at LIMIT %s",
            (limit,),
        ).fetchall()


def succeeded_between(database_url: str, start: float, end: float) -> int:
    from datetime import datetime

    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM runs WHERE status = 'succeeded' AND finished_at >= %s "
            "AND finished_at < %s",
            (datetime.fromtimestamp(start).astimezone(), datetime.fromtimestamp(end).astimezone()),
        ).fetchone()
    return row[0] if row else 0
