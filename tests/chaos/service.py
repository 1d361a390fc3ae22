"""The service as deployed (Procfile): gunicorn, two Celery workers and beat, each a process
group the chaos test can kill and start again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT, Settings
from tests.helpers import wait_for
from tests.integration.served import _answers, free_port
from tests.integration.services import WorkerProcess, service_env

BIN = Path(sys.executable).parent


class Service:
    """API + `workers` Celery workers (`concurrency` slots each) + beat on `settings`; logs go
    to `logs` (off the service's data disk, which the test fills)."""

    def __init__(
        self, settings: Settings, logs: Path, env: dict[str, str], workers: int = 2,
        concurrency: int = 2,
    ) -> None:  # fmt: skip
        self.settings, self.logs, self.concurrency = settings, logs, concurrency
        logs.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**service_env(settings), "HOST": "127.0.0.1", "PORT": str(self.port), **env}
        self.starts = 0
        self.web: subprocess.Popen | None = None
        self.beat: subprocess.Popen | None = None
        self.workers: list[WorkerProcess | None] = [None] * workers
        self.start_web()
        for i in range(workers):
            self.start_worker(i)
        self.start_beat()

    def _log(self, name: str):
        self.starts += 1
        return (self.logs / f"{name}-{self.starts}.log").open("ab")

    def start_web(self) -> None:
        log = self._log("web")
        self.web = subprocess.Popen(
            [str(BIN / "gunicorn"), "-c", "deploy/gunicorn.conf.py", "api.wsgi:app"],
            cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        web = self.web

        def up() -> bool:
            if web.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {log.name}")
            return _answers(self.base_url + "/healthz")

        wait_for(up, 60, 0.1, "gunicorn answering /healthz")

    def start_worker(self, i: int) -> WorkerProcess:
        self.starts += 1
        worker = WorkerProcess(
            self.settings, f"w{i}", self.logs / f"worker{i}-{self.starts}.log",
            concurrency=self.concurrency, extra_env=self.env,
        )  # fmt: skip
        self.workers[i] = worker
        return worker

    def start_beat(self) -> None:
        log = self._log("beat")
        argv = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "beat"]
        argv += ["--loglevel", "info", "--schedule", str(self.logs / "beat-schedule")]
        self.beat = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()

    def kill_worker(self, i: int) -> None:
        """SIGKILL a worker's main process and its pool children, as an OOM kill or a lost
        machine would: no cleanup runs; the skill processes it started are left orphaned."""
        worker = self.workers[i]
        assert worker is not None
        children = psutil.Process(worker.proc.pid).children()
        worker.kill(signal.SIGKILL)
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        worker.log.close()

    def kill_web(self) -> None:
        """SIGKILL gunicorn's whole group: requests in flight get no answer."""
        assert self.web is not None
        try:
            os.killpg(self.web.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.web.wait(30)

    def stop(self) -> None:
        for worker in self.workers:
            if worker is not None:
                worker.stop()
        for proc in (self.beat, self.web):
            if proc is not None:
                stop_process_group(proc, 10)
