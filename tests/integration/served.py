"""The service as a client meets it: gunicorn (deploy/gunicorn.conf.py, api.wsgi:app) on a free
loopback port and a real Celery worker, on settings from `broker_settings`."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT, Settings
from tests.helpers import wait_for
from tests.integration.services import WorkerProcess, service_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    settings: Settings
    base_url: str
    web: subprocess.Popen
    worker: WorkerProcess | None
    env: dict[str, str]  # the services' environment (for client subprocesses too)


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:  # a degraded 503 is an answer too
        return True
    except OSError:
        return False
    return True


@contextmanager
def served_stack(
    settings: Settings, worker: bool = True, concurrency: int = 2, **env: str
) -> Iterator[Served]:
    """gunicorn + (optionally) a worker; both stopped, process groups and all, on exit."""
    port = free_port()
    full_env = {**service_env(settings), "HOST": "127.0.0.1", "PORT": str(port), **env}
    log = (settings.data_dir / "web.log").open("ab")
    web = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "deploy/gunicorn.conf.py"]
        + ["api.wsgi:app"],
        cwd=REPO_ROOT,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    served = Served(settings, f"http://127.0.0.1:{port}", web, None, full_env)
    try:

        def up() -> bool:
            if web.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {log.name}")
            return _answers(served.base_url + "/healthz")

        wait_for(up, 60, 0.1, "gunicorn answering /healthz")
        if worker:
            served.worker = WorkerProcess(
                settings,
                "served",
                settings.data_dir / "worker-served.log",
                concurrency=concurrency,
                extra_env=env,
            )
        yield served
    finally:
        if served.worker is not None:
            served.worker.stop()
        stop_process_group(web, 20)
        log.close()
