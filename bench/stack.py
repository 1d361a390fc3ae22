"""The service under test, started from scratch in a temp dir: broker, database, gunicorn
(`deploy/gunicorn.conf.py`, `api.wsgi:app`) and a `celery -A worker.celery_app worker`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.client import Client
from bench.databases import PostgresDatabase
from bench.processes import bin_path, family, is_python, stop_group, wait_for_log

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_SKILLS = Path(__file__).resolve().parent / "skills"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_skills(dest: Path) -> Path:
    """The built-in skills plus the bench skills, in a directory of their own."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in (REPO_ROOT / "skills", BENCH_SKILLS):
        for skill in source.iterdir():
            if skill.is_dir():
                shutil.copytree(
                    skill,
                    dest / skill.name,
                    dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
    return dest


@dataclass
class StackOptions:
    """How to start the service; the defaults are the project's defaults."""

    db: str = "sqlite"  # sqlite | postgres
    worker: bool = True
    concurrency: int = 2  # WORKER_CONCURRENCY default
    access_log: bool = False  # gunicorn access log with the request time (%(D)s, µs)
    extra_env: dict[str, str] = field(default_factory=dict)
    code: Path = REPO_ROOT  # the checkout whose API and worker run (bench.ab: another)


class Stack:
    """Broker + database + gunicorn (+ celery worker) under `root`; a context manager."""

    def __init__(self, root: Path, options: StackOptions | None = None) -> None:
        from launcher.embedded_broker import EmbeddedBroker

        self.root, self.options = root, options or StackOptions()
        root.mkdir(parents=True, exist_ok=True)
        self.data_dir, self.skills_dir = root / "data", root / "skills"
        self.broker = EmbeddedBroker(root / "broker" / "redis.sock")
        self.broker_url = (
            os.environ.get("BENCH_BROKER_URL") or f"redis+socket://{self.broker.socket_path}"
        )
        self.pg: PostgresDatabase | None = None
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.web: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self.access_log = root / "access.log"
        self._logs: list[Any] = []

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Stack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()

    @property
    def database_url(self) -> str:
        return self.pg.url if self.pg else f"sqlite:///{self.data_dir / 'runs.db'}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "SKILL_RUNNER_DATA_DIR": str(self.data_dir),
                "SKILL_RUNNER_SKILLS_DIR": str(self.skills_dir),
                "DATABASE_URL": self.database_url,
                "CELERY_BROKER_URL": self.broker_url,
                "PORT": str(self.port),
                "HOST": "127.0.0.1",
                "PYTHONPATH": str(self.options.code),
            }
        )
        env.update(self.options.extra_env)
        return env

    def start(self) -> None:
        copy_skills(self.skills_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.options.db == "postgres":
            self.pg = PostgresDatabase()
        if "BENCH_BROKER_URL" not in os.environ:
            self.broker.start()
        subprocess.run(
            [bin_path("skill-runner"), "migrate"],
            env=self.env(),
            cwd=self.options.code,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.start_web()
        if self.options.worker:
            self.start_worker()

    def start_web(self) -> None:
        argv = [bin_path("gunicorn"), "-c", str(self.options.code / "deploy" / "gunicorn.conf.py")]
        if self.options.access_log:
            argv += [
                "--access-logfile",
                str(self.access_log),
                "--access-logformat",
                "%(m)s %(U)s %(s)s %(D)s",
            ]
        argv.append("api.wsgi:app")
        log = (self.root / "web.log").open("ab")
        self._logs.append(log)
        self.web = subprocess.Popen(
            argv,
            cwd=self.options.code,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        client = Client(self.base_url, timeout=5)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if self.web.poll() is not None:
                raise RuntimeError(
                    f"gunicorn exited: {(self.root / 'web.log').read_text()[-2000:]}"
                )
            try:
                if client.get("/healthz").status == 200:
                    break
            except OSError:
                client.close()
            time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not answer /healthz")
        client.close()
        # wait until every gunicorn worker is up (they are what handles requests)
        while len(self.web_processes()) < 1 + int(self.env().get("WEB_CONCURRENCY", "2")):
            time.sleep(0.05)

    def start_worker(self, name: str = "bench") -> None:
        log_path = self.root / "worker.log"
        argv = [
            bin_path("celery"),
            "-A",
            "worker.celery_app",
            "worker",
            "--loglevel",
            "info",
            "--concurrency",
            str(self.options.concurrency),
            "-n",
            f"{name}@%h",
        ]
        log = log_path.open("ab")
        self._logs.append(log)
        offset = log_path.stat().st_size
        self.worker = subprocess.Popen(
            argv,
            cwd=self.options.code,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_log(self.worker, log_path, offset, b"ready.")

    def stop_worker(self) -> None:
        stop_group(self.worker)
        self.worker = None

    def stop_processes(self) -> None:
        """Stop gunicorn and the worker, keep the broker and the database."""
        stop_group(self.worker)
        stop_group(self.web)
        self.worker = self.web = None

    def stop(self) -> None:
        self.stop_processes()
        if "BENCH_BROKER_URL" not in os.environ:
            self.broker.stop()
        for log in self._logs:
            log.close()
        self._logs.clear()
        if self.pg is not None:
            self.pg.close()
            self.pg = None

    # -- processes -------------------------------------------------------------------------
    def web_processes(self) -> list[psutil.Process]:
        """The gunicorn master and its workers."""
        return family(self.web)

    def web_workers(self) -> list[psutil.Process]:
        return family(self.web)[1:]

    def worker_processes(self) -> list[psutil.Process]:
        """The celery main process and its pool children (not the engines they spawn)."""
        procs = family(self.worker)
        if not procs:
            return []
        return [procs[0]] + [p for p in procs[0].children() if is_python(p)]

    # -- helpers ---------------------------------------------------------------------------
    def client(self) -> Client:
        return Client(self.base_url)

    def server_times(self, method: str, prefix: str, since: int = 0) -> list[float]:
        """Request times (seconds) from the access log for `method` on paths starting `prefix`."""
        if not self.access_log.is_file():
            return []
        with self.access_log.open("rb") as fh:
            fh.seek(since)
            lines = fh.read().decode(errors="replace").splitlines()
        out = []
        for line in lines:
            parts = line.split()
            if len(parts) == 4 and parts[0] == method and parts[1].startswith(prefix):
                out.append(int(parts[3]) / 1e6)
        return out

    def access_log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.is_file() else 0
