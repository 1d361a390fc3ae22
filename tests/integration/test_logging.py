"""Logging as deployed: gunicorn, a Celery worker and a separate beat process all write JSON
lines to one LOG_FILE, rotated by size across the processes; the lines about a run carry its
run_id and request_id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT
from tests.helpers import wait_for
from tests.integration.services import WorkerProcess, broker_settings, service_env
from tests.integration.test_serve import call, free_port, health

pytestmark = pytest.mark.integration


def lines_of(log_dir: Path) -> list[dict]:
    """Every line of service.log and its backups, oldest first; each must be whole JSON."""

    def age(path: Path) -> int:  # service.log.3 is older than service.log.1
        return int(path.suffix[1:]) if path.suffix[1:].isdigit() else 0

    files = [p for p in log_dir.glob("service.log*") if not p.name.endswith(".lock")]
    out = []
    for path in sorted(files, key=age, reverse=True):
        for raw in path.read_text().splitlines():
            out.append(json.loads(raw))  # a torn or interleaved line fails here
    return out


def test_api_worker_and_beat_write_one_rotated_json_log_with_run_ids(tmp_path):
    log_dir = tmp_path / "logs"
    logging_env = {
        "LOG_FILE": str(log_dir / "service.log"),
        "LOG_FORMAT": "json",
        "LOG_MAX_BYTES": "20000",
        "LOG_BACKUP_COUNT": "50",
        "SKILL_RUNNER_SWEEP_INTERVAL_SEC": "0.2",  # beat's lines come quickly
    }
    with broker_settings(tmp_path) as settings:
        env = {**service_env(settings), **logging_env}
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
        api = subprocess.Popen(
            [gunicorn, "-c", str(REPO_ROOT / "deploy" / "gunicorn.conf.py"), "api.wsgi:app"],
            env={**env, "PORT": str(port), "WEB_CONCURRENCY": "1"},
            cwd=REPO_ROOT,
        )
        worker = WorkerProcess(settings, "logs", tmp_path / "worker.out", extra_env=logging_env)
        beat = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "worker.celery_app",
                "beat",
                "--schedule",
                str(tmp_path / "beat-schedule"),
            ],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_for(lambda: health(base), 30, 0.1, "the API answers")
            body = json.dumps({"skill_id": "slow-counter", "parameter": {"sleep": 0}}).encode()
            rids = [
                call("POST", f"{base}/v1/jobs", body, "application/json")[1]["request_id"]
                for _ in range(3)
            ]
            for rid in rids:
                wait_for(
                    lambda r=rid: call("GET", f"{base}/v1/jobs/{r}")[1]["status"] == "succeeded",
                    30,
                    0.1,
                )
            for rid in rids:
                call("POST", f"{base}/v1/jobs/{rid}/cancel", b"{}", "application/json")
            wait_for(lambda: (log_dir / "service.log.1").exists(), 60, 0.5, "a rotation")
        finally:
            api.send_signal(signal.SIGTERM)
            api.wait(30)
            stop_process_group(beat, 10)
            worker.stop()
        lines = lines_of(log_dir)

    backups = [p for p in log_dir.glob("service.log.*") if p.suffix[1:].isdigit()]
    assert backups and all(p.stat().st_size <= 20000 for p in backups)
    loggers = {line["logger"] for line in lines}
    assert {
        "celery.beat",
        "celery.worker.strategy",
        "worker.recorder",
        "api.jobs.actions",
    } <= loggers, loggers
    beat_pids = {line["pid"] for line in lines if line["logger"] == "celery.beat"}
    api_pids = {line["pid"] for line in lines if line["logger"].startswith("api.")}
    assert beat_pids and api_pids and not beat_pids & api_pids
    for rid in rids:
        about = [line for line in lines if line["request_id"] == rid]
        ended = [line for line in about if line["logger"] == "worker.recorder"]
        canceled = [line for line in about if line["logger"] == "api.jobs.actions"]
        assert len(ended) == 1 and "ended succeeded" in ended[0]["message"], about
        assert len(canceled) == 1 and canceled[0]["run_id"] == ended[0]["run_id"]
        run_lines = [line for line in lines if line["run_id"] == ended[0]["run_id"]]
        assert all(line["request_id"] == rid for line in run_lines), run_lines
