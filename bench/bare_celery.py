"""The baseline: a bare Celery app whose one task spawns a command with subprocess.

It runs as its own `celery -A bench.bare_celery worker` (2 processes) on the SAME broker as
the service, with the same reliability settings (acks_late, prefetch 1), and keeps results in
that Redis so the bench can wait for them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from celery import Celery

QUEUE = "bench.bare"
TASK = "bench.spawn"


def make_app(broker_url: str) -> Celery:
    """The bare app on `broker_url` (results in the same Redis)."""
    app = Celery("bench_bare", broker=broker_url, backend=broker_url)
    app.conf.update(
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        broker_connection_retry_on_startup=True,
        result_expires=3600,
        worker_hijack_root_logger=False,
    )

    @app.task(name=TASK)
    def spawn(argv: list[str], cwd: str) -> str:
        """Run `argv` in `cwd` and hand back its stdout."""
        proc = subprocess.run(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=True
        )
        return proc.stdout.decode()

    return app


app = make_app(os.environ.get("BENCH_BARE_BROKER", "redis://127.0.0.1:6379/0"))


class BareWorker:
    """`celery -A bench.bare_celery worker --concurrency N -Q bench.bare` as a subprocess."""

    def __init__(self, root: Path, broker_url: str, concurrency: int = 2) -> None:
        from bench.processes import bin_path, wait_for_log
        from bench.stack import REPO_ROOT

        root.mkdir(parents=True, exist_ok=True)
        self.log_path = root / "bare-worker.log"
        self._log = self.log_path.open("ab")
        env = dict(os.environ, BENCH_BARE_BROKER=broker_url, PYTHONPATH=str(REPO_ROOT))
        self.proc = subprocess.Popen(
            [
                bin_path("celery"),
                "-A",
                "bench.bare_celery",
                "worker",
                "--loglevel",
                "info",
                "--concurrency",
                str(concurrency),
                "-Q",
                QUEUE,
                "-n",
                "bare@%h",
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_log(self.proc, self.log_path, 0, b"ready.")
        self.client = make_app(broker_url)

    def send(self, argv: list[str], cwd: Path):
        return self.client.send_task(TASK, args=[argv, str(cwd)], queue=QUEUE)

    def processes(self):
        from bench.processes import family

        return family(self.proc)

    def stop(self) -> None:
        from bench.processes import stop_group

        stop_group(self.proc)
        self._log.close()

    def __enter__(self) -> BareWorker:
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()
