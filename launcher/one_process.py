"""`skill-runner serve` in one Python process: the API on waitress's threads, a Celery worker
with a pool of threads on the main thread (it owns the signals), the sweep's schedule on a
thread of its own; beside it only the embedded redis-server (and the demo LLM).

Each run's command is still a child process in its own group with its own watch (timeout,
cancel, box), so a run that crashes ends alone. The production layout (gunicorn, workers and
beat as separate processes) is `serve --layout processes` or the Procfile.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

from launcher.service_children import ServiceChildren
from runner_core.settings import Settings, hold_service_secrets

log = logging.getLogger(__name__)
# An event stream or a long poll holds one of these for its whole life (one is kept free
# for other requests: api.max_waiters).
DEFAULT_WEB_THREADS = 32
# waitress's loop wakes this often when idle only to close idle connections
IDLE_LOOP_SEC = 10
# The sweep's period unless configured: its worker and API share this process, so it finds
# no dead worker's lease to reconcile; it re-sends what a restarted broker lost
SWEEP_INTERVAL_SEC = "30"
MAX_RESTARTS, RESTART_WINDOW_SEC = 5, 60.0  # the worker's own stops tolerated in a window


# The libraries the API and the worker import, none of which touches the database
WARM_IMPORTS = ("flask", "flask_smorest", "sqlalchemy.orm", "celery.apps.worker", "jsonschema")


def warm_imports() -> None:
    """Import the heavy libraries ahead (about 1 s), e.g. while the migration runs."""
    import importlib

    for name in WARM_IMPORTS:
        importlib.import_module(name)


class ServeError(RuntimeError):
    """The service could not start (its port is taken); one line for the command line."""


@dataclass
class Exit:
    """The service's exit code, set by whichever part stopped it first."""

    code: int = 0
    stopping: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, why: str) -> None:
        """Stop the service with exit code 1 (Celery's handler makes SIGTERM a warm stop)."""
        with self.lock:
            if self.code or self.stopping:
                return
            self.code = 1
        log.error("%s; stopping the service", why)
        os.kill(os.getpid(), signal.SIGTERM)


def serve_one_process(
    settings: Settings, children: ServiceChildren, concurrency: int, banner: str
) -> int:
    """Run until SIGTERM/SIGINT (or a part fails); returns the exit code. Raises what starting
    the broker or the demo LLM raised."""
    exit_ = Exit()
    early = _hold_signals()
    children.start(on_lost=exit_.fail)
    # read by the settings the API and the worker load below, as a child's environment was
    os.environ.update(service_env(settings, children))
    os.environ.setdefault("SKILL_RUNNER_SWEEP_INTERVAL_SEC", SWEEP_INTERVAL_SEC)
    os.environ["WEB_WORKER_CLASS"] = "gthread"  # api.max_waiters: each waiter holds a thread
    threads = int(os.environ.setdefault("WEB_THREADS", str(DEFAULT_WEB_THREADS)))
    try:
        web = _web_server(settings, threads)
    except OSError as exc:  # the port is taken: the broker started above must not outlive us
        children.stop()
        where = f"{settings.host}:{settings.port}"
        raise ServeError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    from celery import beat

    from worker.celery_app import app

    hold_service_secrets(settings)  # the runs' commands are children of this process
    # in memory: the sweep's last run needs no file (a restart sweeps at once anyway)
    sweeps = beat.Service(app, scheduler_cls=beat.Scheduler)
    threading.Thread(target=_serve_web, args=(web, exit_), name="web", daemon=True).start()
    threading.Thread(target=sweeps.start, name="beat", daemon=True).start()
    if children.demo is not None:
        print(children.demo.banner(), file=sys.stderr, flush=True)
    print(banner, flush=True)
    try:
        code = 0 if early else _run_worker(app, settings, concurrency, early)
    finally:
        exit_.stopping = True
        sweeps.stop()
        web.close()
        children.stop()
    return exit_.code or code


def _hold_signals() -> list[int]:
    """Until the worker sets its own handlers, a stop signal is noted in the list returned
    (and passed on once the worker is ready), so that the service still stops cleanly."""
    early: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: early.append(signum))
    return early


def _run_worker(app, settings: Settings, concurrency: int, early: list[int]) -> int:
    """The worker on this thread until a signal stops it. A worker that stops on its own (an
    unrecoverable error) is started again, as a supervisor would restart its process; too
    often, and the service ends."""
    from celery.signals import worker_ready, worker_shutting_down

    from worker.celery_app import RunThreadPool

    asked: list[int] = []
    worker_shutting_down.connect(lambda **_: asked.append(1), weak=False)

    def on_ready(**_kwargs) -> None:
        # SIGHUP stops the service, as before: Celery's own handler re-executes the command
        signal.signal(signal.SIGHUP, lambda *_: os.kill(os.getpid(), signal.SIGTERM))
        if early:  # came between the check before the worker and its own handlers
            os.kill(os.getpid(), signal.SIGTERM)

    worker_ready.connect(on_ready, weak=False)
    restarts: list[float] = []
    while True:
        worker = app.Worker(
            pool=RunThreadPool,  # Celery's threads, whose cold stop cancels the runs
            concurrency=concurrency,
            hostname=f"worker@{socket.gethostname()}",  # the CLI's -n worker@%h
            loglevel=settings.log_level.upper(),
            # alone on its broker: no heartbeat every 2 s, no gossip or mingle with other
            # workers (Flower then lists it from its replies, not its heartbeats)
            without_heartbeat=True,
            without_gossip=True,
            without_mingle=True,
        )
        worker.start()  # returns on a warm stop (SIGTERM, SIGINT), running tasks finished
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < RESTART_WINDOW_SEC] + [now]
        if asked or len(restarts) > MAX_RESTARTS:
            return worker.exitcode or 0
        log.error("the worker stopped (exit code %s); starting it again", worker.exitcode)
        time.sleep(1.0)


def service_env(settings: Settings, children: ServiceChildren) -> dict[str, str]:
    """The variables the API and the worker read beside the user's: where the data, skills,
    broker and demo LLM are."""
    env = {
        "SKILL_RUNNER_DATA_DIR": str(settings.data_dir),
        "SKILL_RUNNER_SKILLS_DIR": str(settings.skills_dir),
    }
    if children.demo is not None:
        env.update(children.demo.env())
    if children.broker is not None:
        env["CELERY_BROKER_URL"] = settings.broker_url
    return env


def _web_server(settings: Settings, threads: int):
    import waitress

    from api.wsgi import app

    return waitress.create_server(
        app,
        host=settings.host,
        port=settings.port,
        threads=threads,
        asyncore_loop_timeout=IDLE_LOOP_SEC,
        ident="skill-runner",
    )


def _serve_web(web, exit_: Exit) -> None:
    try:
        web.run()
    except Exception as exc:  # a closed server ends run() with an error on its socket
        exit_.fail(f"the API server stopped: {exc}")
